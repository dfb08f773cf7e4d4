// The family seam: which family takes a pipeline, each family's own launch keys and their errors,
// the transpose family's policy, program and float64 reference, and names that only kjit's own
// generated identifiers used to take.
#include "codegen/codegen.hpp"
#include "family/rows/geometry.hpp"
#include "helpers.hpp"

using namespace kjit;
using kjit::testing::error_message;
using json = kjit::config::json_value;

namespace {
json transpose_config(long long rows, long long cols, const std::string& dtype = "float32") {
    return {{"name", "t"},
            {"shape", {rows, cols}},
            {"dtype", dtype},
            {"inputs", {{"a", {{"fill", "uniform"}, {"low", -1}, {"high", 1}}}}},
            {"stages", json::array({{{"op", "transpose"}, {"input", "a"}}})}};
}
config::pipeline parsed(const json& j) { return family::load({j, "t.json"}); }
std::string failure(const json& j) { return error_message([&] { (void)parsed(j); }); }
reference::input_arrays arrays(const config::pipeline& p, const std::map<std::string, std::vector<double>>& values) {
    reference::input_arrays in;
    for (const auto& [name, list] : values) {
        reference::typed_array a(p.type, list.size());
        for (std::size_t i = 0; i < list.size(); ++i) a.set(i, list[i]);
        in.emplace(name, std::move(a));
    }
    return in;
}
}  // namespace

TEST_CASE("the registry gives every shipped config one family, once, as the config is loaded") {
    const std::map<std::string, std::string> expected{
        {"hidden_layer.json", "elementwise"}, {"seed_vectorize.json", "elementwise"}, {"softmax.json", "rows"},
        {"layernorm.json", "rows"},          {"row_sum.json", "rows"},               {"transpose.json", "transpose"}};
    for (const auto& entry : expected) {
        const std::string &file = entry.first, &name = entry.second;  // CAPTURE takes no structured binding
        CAPTURE(file);
        const auto p = family::load(config::load_document(kjit::testing::config_path(file)));
        CHECK(p.family == name);
        CHECK(family::family_of(p).name() == name);
    }
    auto unresolved = config::from_json(kjit::testing::default_document());
    CHECK(unresolved.family.empty());
    error_message([&] { (void)family::family_of(unresolved); }, error_kind::usage);
}

TEST_CASE("an op no family has lists every op there is, the families' own included") {
    json j = transpose_config(4, 4);
    j["stages"][0]["op"] = "transpsoe";
    const auto m = failure(j);
    CHECK(m.find("t.json: stages[0].op: expected one of \"map\", \"reduce\", \"activate\"") == 0);
    CHECK(m.find("\"transpose\", \"matmul\", \"attention\", got \"transpsoe\"") != std::string::npos);
}

TEST_CASE("launch keys belong to a family: another's is named as its, an unknown one lists the family's") {
    json j = transpose_config(4, 4);
    j["launch"] = {{"row_cache", "shared"}};
    CHECK(failure(j) == "t.json: launch.row_cache: a launch key of rows pipelines (stages with a reduce); this "
                        "pipeline is transpose, whose keys are \"tile\", \"block\", \"layout\", \"padding\", \"vector_width\"");
    j["launch"] = {{"tyle", 32}};
    CHECK(failure(j) ==
          "t.json: launch.tyle: unknown key; expected one of \"tile\", \"block\", \"layout\", \"padding\", \"vector_width\"");
}

TEST_CASE("transpose: auto resolves per element size, once, into the policy's columns") {
    const auto f32 = parsed(transpose_config(4096, 4096));
    CHECK(family::family_of(f32).policy(f32) ==
          json{{"tile", 64}, {"block", 256}, {"layout", "padded"}, {"padding", 1}, {"vector_width", 4}});
    const auto bf16 = parsed(transpose_config(4096, 4096, "bfloat16"));
    CHECK(family::family_of(bf16).policy(bf16) ==
          json{{"tile", 64}, {"block", 128}, {"layout", "swizzled"}, {"padding", 0}, {"vector_width", 8}});
    const auto f64 = parsed(transpose_config(4096, 4096, "float64"));
    CHECK(family::family_of(f64).policy(f64) ==
          json{{"tile", 32}, {"block", 256}, {"layout", "padded"}, {"padding", 1}, {"vector_width", 1}});
    // Tiles too few for the SMs' threads at that block (768 of 64² beside 132 SMs × 16 blocks of
    // 128) take twice the threads; 4096 tiles do not.
    CHECK(parsed(transpose_config(4096, 768, "bfloat16")).launch.block == 256);
    CHECK(parsed(transpose_config(4096, 4096, "bfloat16")).launch.block == 128);
    // A swizzled tile holds the stored type: with maps on both sides, auto pads instead.
    json both = transpose_config(4096, 4096, "bfloat16");
    both["stages"] = json::array({{{"op", "map"}, {"expr", "x * 2"}, {"input", "a"}}, {{"op", "transpose"}}, {{"op", "map"}, {"expr", "x + 1"}}});
    const auto padded = parsed(both);
    CHECK(family::family_of(padded).policy(padded)["layout"] == "padded");
    // A vector must not straddle rows of the input or of the output: 33 columns take single elements.
    CHECK(parsed(transpose_config(1000, 33)).launch.vector_width == 1);
    CHECK(config::variant_label(f32) == "fused float32 block=256 vec=4 tile=64 layout=padded padding=1");
}

TEST_CASE("transpose: what it refuses, each in one line naming the key") {
    json j = transpose_config(4, 4);
    j.erase("shape");
    j["n"] = 16;
    CHECK(failure(j).find("t.json: stages[0]: a transpose needs a matrix") == 0);
    j = transpose_config(4, 4);
    j["fusion"] = "separate";
    CHECK(failure(j).find("t.json: fusion: a transpose runs its maps in its own kernel") == 0);
    j = transpose_config(4, 4);
    j["stages"].push_back({{"op", "transpose"}});
    CHECK(failure(j) == "t.json: stages: a pipeline transposes once at most");
    j = transpose_config(4, 4);
    j["stages"][0]["tile"] = 32;
    CHECK(failure(j) == "t.json: stages[0].tile: unknown key; expected one of \"op\", \"input\"");
    j = transpose_config(4, 4);
    j["launch"] = {{"tile", 48}};
    CHECK(failure(j) == "t.json: launch.tile: expected 16, 32, 64 or \"auto\", got 48");
    j["launch"] = {{"tile", 32}, {"vector_width", 1}, {"block", 2048}};
    CHECK(failure(j).find("t.json: launch.block: expected") == 0);
    j["launch"] = {{"tile", 32}, {"vector_width", 1}, {"block", 96}};  // 3 rows of 32 do not divide the tile
    CHECK(failure(j).find("t.json: launch.block: a tile of 32 is moved by rows of 32 threads (1 elements each), as "
                          "many rows as divide 32: expected 32 × 1, 2, 4, … up to 1024, got 96") == 0);
    j = transpose_config(6, 33);
    j["launch"] = {{"vector_width", 2}};
    CHECK(failure(j).find("t.json: launch.vector_width: 2 elements must divide rows and cols (6 × 33)") == 0);
    j = transpose_config(65535LL * 64 + 1, 1);
    CHECK(failure(j).find("t.json: shape: a transpose's grid has a block row per 64 rows, at most 65535") == 0);
    j = transpose_config(4, 4);
    j["launch"] = {{"layout", "swizzled"}, {"padding", 1}};
    CHECK(failure(j) == "t.json: launch.padding: pads a \"padded\" layout only; this one is swizzled");
    j["launch"] = {{"layout", "diagonal"}};
    CHECK(failure(j) == "t.json: launch.layout: expected one of \"padded\", \"swizzled\", got \"diagonal\"");
    j["launch"] = {{"layout", "swizzled"}};
    j["stages"] = json::array({{{"op", "map"}, {"expr", "x * 2"}, {"input", "a"}}, {{"op", "transpose"}}, {{"op", "map"}, {"expr", "x + 1"}}});
    CHECK(failure(j).find("t.json: launch.layout: a swizzled tile holds the stored type") == 0);
    j = transpose_config(4, 4);
    j["inputs"]["w"] = {{"fill", "normal"}, {"per", "column"}};
    CHECK(failure(j).find("t.json: inputs.w.per: \"column\" is for row pipelines") == 0);
}

TEST_CASE("transpose: one kernel on a 2-D grid of tiles, its arguments in order, its bytes counted") {
    json j = transpose_config(1000, 36);
    j["inputs"]["b"] = {{"fill", "normal"}};
    j["params"] = {{"scale", 2.0}};
    j["stages"] = json::array({{{"op", "map"}, {"expr", "x * scale"}, {"input", "a"}},
                               {{"op", "transpose"}},
                               {{"op", "map"}, {"expr", "x + b"}}});
    const auto p = parsed(j);
    const auto prog = family::plan(p, codegen::template_set::embedded());
    CHECK(prog.family == "transpose");
    REQUIRE(prog.kernels.size() == 1);
    const auto& k = prog.kernels[0];
    CHECK(k.name == "t_transpose");
    CHECK(k.grid == family::dims{1, 16, 1});   // 36 columns in one tile of 64, 1000 rows in 16
    CHECK(k.block == family::dims{16, 32, 1}); // 64 / 4 lanes; 16 tiles: 512 threads, in 32 rows
    std::vector<std::string> order;
    for (const auto& a : k.args) order.push_back(a.cuda);
    CHECK(order == std::vector<std::string>{"const store_t* __restrict__ a", "const store_t* __restrict__ b",
                                            "store_t* __restrict__ out", "real scale", "long long rows", "long long cols"});
    CHECK(k.bytes_read == 2 * 36000 * 4);
    CHECK(k.bytes_written == 36000 * 4);
    CHECK(prog.output_rows == 36);
    CHECK(prog.output_cols == 1000);
    CHECK_FALSE(prog.inputs_align_with_output);
}

TEST_CASE("transpose's reference: out[c][r] is the maps after of in[r][c] through the maps before, exactly") {
    json j = transpose_config(2, 3, "float64");
    j["inputs"]["b"] = {{"fill", "normal"}};
    j["params"] = {{"k", 10.0}};
    j["stages"] = json::array({{{"op", "map"}, {"expr", "x * k + b"}, {"input", "a"}},
                               {{"op", "transpose"}},
                               {{"op", "map"}, {"expr", "x - b"}}});
    const auto p = parsed(j);
    // a = [[1, 2, 3], [4, 5, 6]]; b is read at the input's place before, at the output's after.
    const auto in = arrays(p, {{"a", {1, 2, 3, 4, 5, 6}}, {"b", {0.5, 0.25, 0, 1, 2, 3}}});
    const auto ref = family::family_of(p).reference(p, in);
    const std::vector<double> b{0.5, 0.25, 0, 1, 2, 3};
    const std::vector<double> before{10.5, 20.25, 30, 41, 52, 63};  // a·k + b, row by row
    REQUIRE(ref.values.size() == 6);
    for (std::size_t c = 0; c < 3; ++c)
        for (std::size_t r = 0; r < 2; ++r) {
            CAPTURE(c);
            CAPTURE(r);
            CHECK(ref.values[c * 2 + r] == before[r * 3 + c] - b[c * 2 + r]);
        }
}

TEST_CASE("transpose's reference at odd shapes: a permutation of the input, nothing lost") {
    for (const auto& [rows, cols] : std::vector<std::pair<long long, long long>>{{1, 1}, {3, 17}, {17, 3}, {40, 33}}) {
        const auto p = parsed(transpose_config(rows, cols));
        std::vector<double> values;
        for (long long i = 0; i < rows * cols; ++i) values.push_back(static_cast<double>(i));
        const auto ref = family::family_of(p).reference(p, arrays(p, {{"a", values}}));
        for (long long r = 0; r < rows; ++r)
            for (long long c = 0; c < cols; ++c) REQUIRE(ref.values[static_cast<std::size_t>(c * rows + r)] == r * cols + c);
    }
}

TEST_CASE("the rows family's sum depth is its template's order of additions: items, two butterflies, the cluster") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    auto p = family::load(doc);
    // 4096 columns, vectors of 4, blocks of 256: 16 items a thread, then 5 + 5 levels, cluster 1.
    CHECK(family::rows::row_items_per_thread(p) == 16);
    CHECK(family::rows::sum_depths(p).depth == 16 + 2 * family::rows::k_warp_levels);
    CHECK(family::family_of(p).reference_key(p) == json{{"sum_depth", 26}});
    doc.json["shape"] = {2, 65536};  // in registers: a cluster of 2 blocks of 1024
    doc.json["launch"]["row_cache"] = "values";
    p = family::load(doc);
    CHECK(family::rows::sum_depths(p).depth == 32 + 10 + 1);
}

TEST_CASE("names like ordinary variables are a user's: k, n2, scale, alpha_1, and what the templates once used") {
    for (const std::string name : {"k", "n2", "scale", "alpha_1", "j", "v", "first", "base", "part", "next",
                                   "turn", "now", "loaded", "both", "in", "rowid"}) {
        CAPTURE(name);
        const auto p = kjit::testing::pipeline_with([&](json& j) {
            j["params"] = {{name, 2.0}};
            j["stages"][2] = {{"op", "map"}, {"expr", "x * " + name}};
        });
        CHECK(p.scalars.front().name == name);
    }
    for (const std::string name : {"x", "i", "row", "col", "inf", "nan", "pi", "out", "n", "rows", "cols", "real",
                                   "store_t", "load", "kjit_a", "__a", "threadIdx", "expf", "float"}) {
        CAPTURE(name);
        const auto m = error_message([&] {
            (void)kjit::testing::pipeline_with([&](json& j) { j["params"] = {{name, 2.0}}; });
        });
        CHECK(m.find("params." + name + ": expected a C identifier that is not a reserved name") != std::string::npos);
    }
}

TEST_CASE("every family counts its flops, and the unit they run on, for the roofline") {
    const auto plan_of = [](const std::string& config, const std::vector<std::string>& sets) {
        auto doc = config::load_document(kjit::testing::config_path(config));
        for (const auto& s : sets) config::apply_override(doc, s);
        return family::plan(family::load(doc), codegen::template_set::embedded());
    };
    // row_sum: each element squared (one ×) and added in (one more).
    const auto sums = plan_of("row_sum.json", {});
    CHECK(sums.kernels.at(0).flops == 2.0 * 4096 * 4096);
    CHECK(sums.kernels.at(0).flops_on == family::math_unit::fma);
    // A map of x * 2 + 1 then tanh: three operations an element, the function one of them.
    const auto map = plan_of("hidden_layer.json", {"stages=[{\"op\":\"map\",\"input\":\"greyscales\",\"expr\":\"tanh(x * 2 + 1)\"}]"});
    CHECK(map.kernels.at(0).flops == 3.0 * 1000000);
    // A comparison and a selection are no operations: only the × counts.
    const auto relu = plan_of("hidden_layer.json", {"stages=[{\"op\":\"map\",\"input\":\"greyscales\",\"expr\":\"x > 0 ? x * 3 : 0\"}]"});
    CHECK(relu.kernels.at(0).flops == 1.0 * 1000000);
    // The GEMM: 2·M·N·K on the CUDA cores for the simt rung, on the tensor cores for the others.
    const auto simt = plan_of("mlp_layer.json", {"launch.rung=\"simt\""});
    CHECK(simt.kernels.at(0).flops == 2.0 * 8192 * 4096 * 4096);
    CHECK(simt.kernels.at(0).flops_on == family::math_unit::fma);
    CHECK(plan_of("mlp_layer.json", {"launch.rung=\"mma\""}).kernels.at(0).flops_on == family::math_unit::tensor);
    CHECK(plan_of("attention.json", {}).kernels.at(0).flops_on == family::math_unit::tensor);
}

TEST_CASE("rows: a causal mask's skipped vectors are not counted as read, so the model matches the counters") {
    const auto plan_of = [](const std::string& config) {
        return family::plan(family::load(config::load_document(kjit::testing::config_path(config))),
                            codegen::template_set::embedded());
    };
    const double array = 4096.0 * 4096 * 4;  // the scores, float32
    const auto causal = plan_of("causal_softmax.json").kernels.at(0);
    // Row i reads the vectors that hold any of columns 0..i: half the matrix, and half a vector a row.
    CHECK(causal.bytes_read / array == doctest::Approx(0.5).epsilon(0.01));
    CHECK(causal.bytes_written == array);
    const auto plain = plan_of("softmax.json").kernels.at(0);
    CHECK(plain.bytes_read == array);
}
