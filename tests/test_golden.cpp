// The generated CUDA of one variant per template feature, compared with tests/golden/NAME.cu: a
// change to a template or a family shows as a diff of the source a learner reads. After an intended
// change, scripts/update-goldens.sh writes them again (review the diff before committing it).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "helpers.hpp"
#include "report/record.hpp"
#include "run/runner.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {

struct golden_case {
    const char* name;    ///< tests/golden/NAME.cu
    const char* config;  ///< configs/CONFIG
    std::vector<std::pair<std::string, json>> sets;  ///< as --set KEY=VALUE
};

const std::vector<golden_case>& cases() {
    static const std::vector<golden_case> all{
        {"hidden_layer", "hidden_layer.json", {}},
        {"hidden_layer_separate", "hidden_layer.json", {{"fusion", "separate"}}},
        {"hidden_layer_f64_exp", "hidden_layer.json", {{"dtype", "float64"}, {"stages[2].formula", "exp"}}},
        {"hidden_layer_scalar_loop", "hidden_layer.json", {{"launch.vector_width", 1}}},
        {"hidden_layer_bf16", "hidden_layer.json", {{"dtype", "bfloat16"}}},
        {"params_named_like_locals", "hidden_layer.json",
         {{"params", {{"k", 2.0}, {"next", 3.0}, {"first", 1.0}}},
          {"stages[2]", {{"op", "map"}, {"expr", "x * k + next - first"}}}}},
        {"softmax", "softmax.json", {}},
        {"softmax_separate", "softmax.json", {{"fusion", "separate"}}},
        // A row longer than shared memory, read again in each pass by a cluster of 8 blocks.
        {"softmax_cluster", "softmax.json",
         {{"shape", {2, 65536}}, {"launch.row_cache", "none"}, {"launch.cluster", 8}, {"launch.block", 1024}, {"launch.streaming", true}}},
        {"softmax_bf16_row_inputs", "softmax.json", {{"dtype", "bfloat16"}, {"launch.row_cache", "inputs"}}},
        {"softmax_row_none", "softmax.json", {{"launch.row_cache", "none"}}},
        {"softmax_row_shared", "softmax.json", {{"launch.row_cache", "shared"}}},
        {"softmax_row_shared_bf16_odd", "softmax.json",
         {{"launch.row_cache", "shared"}, {"dtype", "bfloat16"}, {"shape", {3, 33}}}},
        {"softmax_loop_none", "softmax.json", {{"launch.grid", "resident"}, {"launch.row_cache", "none"}}},
        {"softmax_loop_values", "softmax.json", {{"launch.grid", "resident"}}},
        {"softmax_loop_shared", "softmax.json", {{"launch.grid", "resident"}, {"launch.row_cache", "shared"}}},
        {"softmax_online", "softmax.json", {{"stages[2].formula", "online"}}},
        {"causal_softmax_bf16", "causal_softmax.json", {{"dtype", "bfloat16"}}},
        {"causal_softmax_warp_bf16", "causal_softmax.json", {{"dtype", "bfloat16"}, {"shape", {32768, 1024}}}},
        // Rows that start inside a vector (1001 columns), in registers: a masked vector is not read.
        {"causal_softmax_online_bf16_odd", "causal_softmax.json",
         {{"dtype", "bfloat16"}, {"shape", {7, 1001}}, {"stages[3].formula", "online"}, {"launch.block", 128}}},
        {"causal_softmax_online_row_none", "causal_softmax.json",
         {{"stages[3].formula", "online"}, {"launch.row_cache", "none"}}},
        {"elementwise_positions", "softmax.json",
         {{"shape", {11, 47}},
          {"stages", json::array({{{"op", "map"}, {"input", "logits"}, {"expr", "col > row ? -inf : x * (i + 1)"}}})}}},
        {"softmax_online_separate_fast", "softmax.json",
         {{"stages[2].formula", "online"}, {"fusion", "separate"}, {"compile.fast_math", true}}},
        {"row_mean", "row_sum.json", {{"stages[0].fn", "mean"}}},
        {"layernorm", "layernorm.json", {}},
        {"layernorm_streaming", "layernorm.json", {{"launch.streaming", true}}},
        {"layernorm_streaming_v8", "layernorm.json", {{"launch.streaming", true}, {"launch.vector_width", 8}}},
        {"layernorm_streaming_bf16_odd", "layernorm.json",
         {{"launch.streaming", true}, {"dtype", "bfloat16"}, {"shape", {3, 33}}}},
        {"layernorm_streaming_shared", "layernorm.json", {{"launch.streaming", true}, {"launch.row_cache", "shared"}}},
        {"layernorm_min_blocks", "layernorm.json",
         {{"launch.block", 512}, {"launch.row_cache", "shared"}, {"launch.min_blocks_per_sm", 3}}},
        {"layernorm_shared_cluster", "layernorm.json",
         {{"shape", {1024, 32768}}, {"launch.row_cache", "shared"}, {"launch.block", 512}, {"launch.cluster", 2}}},
        // A 128k vocabulary at the defaults: a cluster of 8 blocks holding the row in shared memory,
        // landing in groups of copies; the online sum.
        {"softmax_vocabulary_bf16", "softmax.json", {{"dtype", "bfloat16"}, {"shape", {1024, 128256}}}},
        // Clusters that loop over the rows, each block holding its share of two.
        {"softmax_cluster_loop", "softmax.json",
         {{"dtype", "bfloat16"}, {"shape", {1024, 128256}}, {"launch.row_cache", "shared"}, {"launch.block", 128},
          {"launch.cluster", 8}, {"launch.grid", 2048}}},
        {"transpose", "transpose.json", {}},
        {"transpose_bf16", "transpose.json", {{"dtype", "bfloat16"}}},
        {"transpose_maps", "transpose.json",
         {{"inputs", {{"a", {{"fill", "uniform"}}}, {"b", {{"fill", "normal"}}}}},
          {"params", {{"scale", 2.0}}},
          {"stages", json::array({{{"op", "map"}, {"expr", "x * scale + b"}, {"input", "a"}},
                                  {{"op", "transpose"}},
                                  {{"op", "activate"}, {"fn", "tanh"}},
                                  {{"op", "map"}, {"expr", "x - b"}}})}}},
        {"mlp_layer_mma", "mlp_layer.json", {{"launch", {{"rung", "mma"}}}}},
        {"mlp_layer_simt_f32", "mlp_layer.json", {{"dtype", "float32"}}},
        // float32 as TF32 on the mma rung: A by ldmatrix, B by plain loads, each rounded.
        {"mlp_layer_mma_tf32", "mlp_layer.json", {{"dtype", "float32"}, {"compile", {{"fp32_precision", "tf32"}, {"target", "h200"}}}}},
        // Rows not 16-byte aligned (K = 17): copied element by element; an odd N: stored singly.
        {"mlp_layer_mma_odd_separate", "mlp_layer.json",
         {{"shape", {1000, 17}}, {"inputs.W.shape", {17, 1001}}, {"fusion", "separate"}, {"params", {{"scale", 0.5}}},
          {"stages[2]", {{"op", "map"}, {"expr", "tanh(x) * scale"}}}, {"launch", {{"rung", "mma"}}}}},
        // Two blocks a cluster, sharing the weights' tile by TMA multicast.
        {"mlp_layer_wgmma_cluster", "mlp_layer.json", {{"launch", {{"rung", "wgmma"}, {"cluster_m", 2}}}}},
        // A decode step of one row at the defaults: CUDA cores stream the weights, each cluster of
        // two blocks on a tile of 64 columns, a half of the depth each.
        {"mlp_layer_stream_split", "mlp_layer.json", {{"shape", {1, 4096}}, {"compile", {{"target", "h200"}}}}},
        // A decode step of 16 rows at the defaults: tensor cores stream the weights, 64 columns
        // of them a warp's mma rows, each cluster of two blocks on a half of the depth.
        {"mlp_layer_stream_tensor", "mlp_layer.json", {{"shape", {16, 4096}}, {"compile", {{"target", "h200"}}}}},
        // The same on wgmma, at its rule for thin products: few tiles, each split along the depth
        // over a cluster of blocks.
        {"mlp_layer_wgmma_split", "mlp_layer.json",
         {{"shape", {16, 4096}}, {"compile", {{"target", "h200"}}}, {"launch", {{"rung", "wgmma"}}}}},
        // K = 17 and N = 1001 again: a kernel each copies A and B to rows 16-byte aligned, which
        // the TMA unit copies; C's pieces go straight to C; the consumers take turns.
        {"mlp_layer_wgmma_odd", "mlp_layer.json",
         {{"shape", {1000, 17}},
          {"inputs.W.shape", {17, 1001}},
          {"launch", {{"rung", "wgmma"}, {"tile_n", 64}, {"schedule", "pingpong"}}}}},
        // Fused attention at the defaults on sm_90: the wgmma rung, a producer warp group and two
        // consumers.
        {"attention", "attention.json", {}},
        // Causal with grouped heads, float16, on the mma rung with a warp per piece: masked tiles
        // are skipped, found from their corners.
        {"attention_causal_f16", "attention_causal.json",
         {{"dtype", "float16"}, {"launch", {{"block_m", 128}, {"warps", 8}}}}},
        // An output gate as the attention's epilogue: applied to each element as it is stored.
        {"attention_gated", "attention_gated.json", {}},
        // Decoding: the mma rung's warp of 16 queries, the keys split among blocks whose partials
        // a second kernel joins.
        {"attention_decode", "attention_decode.json", {}},
        // Documents: an input read at the query's and the key's token, inside a causal mask.
        {"attention_documents", "attention_documents.json", {}},
        // A sliding window inside a causal mask: tiles masked and tiles plain, each found from
        // their corners by two comparisons.
        {"attention_window", "attention_causal.json", {{"stages[0].score", "col > row || row - col >= 1024 ? -inf : x"}}},
        // A band within a causal mask: the band's abs split into two comparisons told at the
        // corners, the conditions nested three deep as clang-format lays them out.
        {"attention_band", "attention_causal.json", {{"stages[0].score", "abs(row - col) >= 1500 || col > row ? -inf : x"}}},
        // Soft-capping inside a causal mask (Gemma 2's score): its constant factors taken out, the
        // division by 30 into the products' scale, the 30 into the exponents' multiply-add.
        {"attention_softcap", "attention_causal.json", {{"stages[0].score", "col > row ? -inf : 30 * tanh(x / 30)"}}},
        // Separate, as eager frameworks run it: Q · Kᵀ into memory through the causal score, each
        // row's softmax in place, then P · V, three kernels of the mma rung's warps.
        {"attention_separate", "attention_causal.json", {{"fusion", "separate"}}},
    };
    return all;
}

std::string source_of(const golden_case& c) {
    auto doc = config::load_document(kjit::testing::config_path(c.config));
    for (const auto& [key, value] : c.sets) config::set_path(doc.json, key, value, "golden");
    return family::plan(family::load(doc), codegen::template_set::embedded()).source;
}

std::filesystem::path golden_path(const golden_case& c) {
    return std::filesystem::path(KJIT_SOURCE_DIR) / "tests" / "golden" / (std::string(c.name) + ".cu");
}

}  // namespace

TEST_CASE("golden: every variant's source is its golden file, line for line") {
    const bool update = std::getenv("KJIT_UPDATE_GOLDENS") != nullptr;
    for (const auto& c : cases()) {
        CAPTURE(std::string(c.name));
        const std::string source = source_of(c);
        if (update) {
            std::filesystem::create_directories(golden_path(c).parent_path());
            std::ofstream(golden_path(c), std::ios::binary) << source;
            continue;
        }
        REQUIRE_MESSAGE(std::filesystem::exists(golden_path(c)), "no golden file: run scripts/update-goldens.sh");
        const std::string golden = fs::read_file(golden_path(c));
        if (source == golden) continue;
        // The first line that differs, as a diff would show it.
        std::istringstream got(source), want(golden);
        std::string got_line, want_line;
        for (int line = 1;; ++line) {
            const bool more_got = static_cast<bool>(std::getline(got, got_line));
            const bool more_want = static_cast<bool>(std::getline(want, want_line));
            if (got_line != want_line || more_got != more_want) {
                FAIL_CHECK("line " << line << " differs:\n  golden:    " << want_line << "\n  generated: " << got_line);
                break;
            }
        }
    }
}

TEST_CASE("golden: the record's columns (schema 1.10.0) are tests/golden/record_columns.txt") {
    // A real compile record of the transpose: its family's policy, its params, a sweep axis.
    auto doc = config::load_document(kjit::testing::config_path("transpose.json"));
    doc.json["params"] = {{"k", 1.0}};
    const auto point = family::expand_sweep(doc, std::nullopt, std::vector<std::size_t>{0}).front();
    report::record rec = run::new_record("compile", point.pipeline, "golden");
    rec.sweep_values = point.values;
    std::string columns;
    for (const auto& [name, value] : report::flatten(rec)) columns += name + "\n";
    const auto path = std::filesystem::path(KJIT_SOURCE_DIR) / "tests" / "golden" / "record_columns.txt";
    if (std::getenv("KJIT_UPDATE_GOLDENS")) {
        std::ofstream(path, std::ios::binary) << columns;
        return;
    }
    REQUIRE_MESSAGE(std::filesystem::exists(path), "no golden file: run scripts/update-goldens.sh");
    CHECK(columns == fs::read_file(path));  // a column added, renamed or moved: bump k_schema_version
    CHECK(std::string(report::k_schema_version) == "1.10.0");
}

TEST_CASE("golden: no generated source has a blank line in a body, or two in a row, or an unrendered tag") {
    for (const auto& c : cases()) {
        CAPTURE(std::string(c.name));
        const std::string source = source_of(c);
        CHECK(source.find("\n\n\n") == std::string::npos);
        CHECK(source.find("{\n\n") == std::string::npos);
        CHECK(source.find("{{") == std::string::npos);
    }
}

TEST_CASE("golden: every generated line is within 100 columns, and every helper it defines is used") {
    const auto columns = [](const std::string& line) {  // UTF-8: count code points, not bytes
        return std::count_if(line.begin(), line.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
    };
    for (const auto& c : cases()) {
        CAPTURE(std::string(c.name));
        const std::string source = source_of(c);
        std::istringstream lines(source);
        std::string line;
        while (std::getline(lines, line)) {
            CAPTURE(line);
            CHECK(columns(line) <= 100);
        }
        // Each kjit_ function or struct it defines appears again: called, or named in a template argument.
        for (const std::string& kind : {std::string("__device__ __forceinline__ "), std::string("struct ")}) {
            for (std::size_t at = source.find(kind); at != std::string::npos; at = source.find(kind, at + 1)) {
                const std::size_t name = source.find("kjit_", at);
                const std::size_t end = source.find_first_of("( {", name);
                if (name == std::string::npos || source.find('\n', at) < name) continue;  // not a kjit_ name
                const std::string helper = source.substr(name, end - name);
                CAPTURE(helper);
                std::size_t uses = 0;
                for (std::size_t u = source.find(helper); u != std::string::npos; u = source.find(helper, u + 1)) {
                    const char after = source[u + helper.size()];
                    uses += std::isalnum(static_cast<unsigned char>(after)) || after == '_' ? 0 : 1;
                }
                CHECK(uses >= 2);
            }
        }
    }
}
