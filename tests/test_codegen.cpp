// Codegen: what each variant's source contains and the template override. The generated loops
// themselves are run as host code in test_generated_host.cpp.
#include <fstream>

#include "codegen/codegen.hpp"
#include "helpers.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {
codegen::generated_source generate(const config::pipeline& p) {
    return codegen::generate(p, codegen::template_set::embedded());
}
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("fused: one kernel reading both inputs, no intermediates, no headers") {
    const auto g = generate(config::from_json(kjit::testing::default_document()));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].name == "hidden_layer_fused");
    CHECK(g.kernels[0].reads == std::vector<std::string>{"greyscales", "weights"});
    CHECK(g.kernels[0].writes == "out");
    CHECK(g.temporaries.empty());
    CHECK(contains(g.source, "extern \"C\" __global__ void hidden_layer_fused("));
    CHECK(contains(g.source, "tanhf(x)"));
    CHECK_FALSE(contains(g.source, "\n#include"));
    CHECK_FALSE(contains(g.source, "op_tanh_exp"));
    CHECK_FALSE(contains(g.source, "{{"));
}

TEST_CASE("separate: one kernel per stage, chained through intermediate arrays") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["fusion"] = "separate"; }));
    REQUIRE(g.kernels.size() == 3);
    CHECK(g.kernels[0].reads == std::vector<std::string>{"greyscales"});
    CHECK(g.kernels[0].writes == "tmp0");
    CHECK(g.kernels[1].reads == std::vector<std::string>{"tmp0", "weights"});
    CHECK(g.kernels[1].writes == "tmp1");
    CHECK(g.kernels[2].reads == std::vector<std::string>{"tmp1"});
    CHECK(g.kernels[2].writes == "out");
    CHECK(g.temporaries == std::vector<std::string>{"tmp0", "tmp1"});
    CHECK(contains(g.source, "hidden_layer_s1_weigh("));
}

TEST_CASE("dtype and formula choose the functions") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) {
        j["dtype"] = "float64";
        j["stages"][2]["formula"] = "exp";
    }));
    CHECK(contains(g.source, "typedef double real;"));
    CHECK(contains(g.source, "exp(x)"));
    CHECK_FALSE(contains(g.source, "expf"));
    CHECK_FALSE(contains(g.source, "op_tanh_builtin"));
    CHECK(g.vector_width == 2);
    CHECK(contains(g.source, "__align__(16)"));
}

TEST_CASE("vector width 1 has no vector loop") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["launch"]["vector_width"] = 1; }));
    CHECK_FALSE(contains(g.source, "reinterpret_cast<const vec*>"));
    CHECK(contains(g.source, "for (long long i = done + first; i < n; i += stride)"));
}

TEST_CASE("an input read twice is one parameter") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["stages"][1]["by"] = "greyscales"; }));
    CHECK(g.kernels[0].reads == std::vector<std::string>{"greyscales"});
}

TEST_CASE("--templates DIR overrides the embedded templates") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "elementwise.cu.mustache") << "// custom {{name}}\n{{#kernels}}void {{kernel}}(\n{{/kernels}}";
    std::ofstream(dir.path() / "copy.cu.mustache") << "// copy\n";
    std::ofstream(dir.path() / "rows.cu.mustache") << "";
    const auto templates = codegen::template_set::from_directory(dir.path());
    const auto g = codegen::generate(config::from_json(kjit::testing::default_document()), templates);
    CHECK(g.source == "// custom hidden_layer\nvoid hidden_layer_fused(\n");
}

TEST_CASE("a template that renders without a kernel (a typo like {{kernel}, or empty) is a template error") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "copy.cu.mustache") << "";
    std::ofstream(dir.path() / "rows.cu.mustache") << "";
    const auto p = config::from_json(kjit::testing::default_document());
    for (const std::string& text : {std::string("{{#kernels}}extern \"C\" __global__ void {{kernel}({{name}})\n{{/kernels}}"), std::string()}) {
        std::ofstream(dir.path() / "elementwise.cu.mustache") << text;
        const auto templates = codegen::template_set::from_directory(dir.path());
        const auto m = kjit::testing::error_message([&] { (void)codegen::generate(p, templates); });
        CAPTURE(m);
        CHECK(m.find("defines no kernel 'hidden_layer_fused('") != std::string::npos);
    }
}

TEST_CASE("a broken template is a config error naming the file; a missing one a usage error") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "elementwise.cu.mustache") << "{{#kernels}} unterminated";
    std::ofstream(dir.path() / "copy.cu.mustache") << "";
    std::ofstream(dir.path() / "rows.cu.mustache") << "";
    const auto templates = codegen::template_set::from_directory(dir.path());
    const auto p = config::from_json(kjit::testing::default_document());
    const auto m = kjit::testing::error_message([&] { (void)codegen::generate(p, templates); });
    CHECK(m.find("elementwise.cu.mustache") != std::string::npos);
    CHECK(m.find("template error") != std::string::npos);

    kjit::testing::temp_dir empty;
    kjit::testing::error_message([&] { (void)codegen::template_set::from_directory(empty.path()); }, error_kind::usage);
}

// ---- row kernels

namespace {
config::pipeline shipped(const std::string& name, const std::string& fusion = "fused") {
    auto doc = config::load_document(kjit::testing::config_path(name));
    doc.json["fusion"] = fusion;
    return config::from_json(doc);
}
}  // namespace

TEST_CASE("fused softmax: one row kernel, a block per row, the row read once and written once") {
    const auto g = generate(shipped("softmax.json"));
    REQUIRE(g.kernels.size() == 1);
    const auto& k = g.kernels[0];
    CHECK(k.per_row);
    CHECK(k.output == codegen::kernel_plan::result::elements);
    CHECK(k.reads == std::vector<std::string>{"logits"});
    CHECK(k.row_reads.empty());
    CHECK(g.temporaries.empty());
    CHECK(g.row_values.empty());
    CHECK(contains(g.source, "__launch_bounds__(128) void softmax_fused(const store_t* __restrict__ logits, "
                             "store_t* __restrict__ out, long long rows, long long cols)"));
    CHECK(contains(g.source, "real x[32];"));  // 4096 columns over 128 threads (launch.block "auto")
    CHECK(contains(g.source, "m = kjit_row_reduce<kjit_max>(part);"));
    CHECK(contains(g.source, "s = kjit_row_reduce<kjit_sum>(part);"));
    CHECK(contains(g.source, "return x * (1.0f / s); }  // stages[3]: map(x * (1 / s))"));
}

TEST_CASE("separate softmax: a kernel per stage; row values and the intermediate in memory") {
    const auto g = generate(shipped("softmax.json", "separate"));
    REQUIRE(g.kernels.size() == 4);
    CHECK(g.row_values == std::vector<std::string>{"m", "s"});
    CHECK(g.temporaries == std::vector<std::string>{"tmp1"});
    using result = codegen::kernel_plan::result;
    CHECK(g.kernels[0].output == result::row_value);
    CHECK(g.kernels[0].writes == "m");
    CHECK(g.kernels[1].reads == std::vector<std::string>{"logits"});
    CHECK(g.kernels[1].row_reads == std::vector<std::string>{"m"});
    CHECK(g.kernels[1].writes == "tmp1");
    CHECK(g.kernels[2].reads == std::vector<std::string>{"tmp1"});  // x flows past the reduce
    CHECK(g.kernels[3].row_reads == std::vector<std::string>{"s"});
    CHECK(g.kernels[3].writes == "out");
    CHECK(contains(g.source, "const real* __restrict__ kjit_row_m"));
    CHECK(contains(g.source, "if (first == 0) kjit_row_m[row] = m;"));
}

TEST_CASE("a final reduce writes one stored value per row; a mean divides by cols") {
    auto doc = config::load_document(kjit::testing::config_path("row_sum.json"));
    doc.json["stages"][0]["fn"] = "mean";
    const auto g = generate(config::from_json(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].output == codegen::kernel_plan::result::row_output);
    CHECK(contains(g.source, "kjit_result = kjit_row_reduce<kjit_sum>(part) / (real)cols;"));
    CHECK(contains(g.source, "if (first == 0) out[row] = store(kjit_result);"));
}

TEST_CASE("a row too long for one block: a cluster per row, its blocks' values shared in rank order") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["shape"] = {2, 65536};
    const auto p = config::from_json(doc);
    const auto g = generate(p);
    CHECK(contains(g.source, "__cluster_dims__(2, 1, 1) __launch_bounds__(1024) void softmax_fused("));
    CHECK(contains(g.source, "const long long first = (long long)__clusterRelativeBlockRank() * 1024 + threadIdx.x;\n"
                             "    kjit_softmax_fused_row(blockIdx.x / 2, first, "));
    CHECK(contains(g.source, "__cluster_map_shared_rank((void*)&block_value, rank)"));
    doc.json["shape"] = {2, 4096};
    CHECK_FALSE(contains(generate(config::from_json(doc)).source, "__cluster"));
}

TEST_CASE("row_cache \"inputs\": the row kept as loaded, the maps applied again where x is used") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["dtype"] = "bfloat16";
    doc.json["launch"]["row_cache"] = "inputs";
    const auto g = generate(config::from_json(doc));
    CHECK(contains(g.source, "vec x[4];"));
    CHECK_FALSE(contains(g.source, "x[j * 8 + k] = kjit_softmax_fused_s1("));  // no map in place
    CHECK(contains(g.source, "add(part, kjit_softmax_fused_s2(kjit_softmax_fused_s1(load(x[j].e[k]), m)))"));
    CHECK(contains(g.source, "store(kjit_softmax_fused_s3(kjit_softmax_fused_s1(load(x[j].e[k]), m), s))"));
}

TEST_CASE("row_cache \"none\": no row in registers; each pass reads the row again, and counts its bytes") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["row_cache"] = "none";
    const auto g = generate(config::from_json(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].passes == 3);  // the max, the sum, the store
    CHECK_FALSE(contains(g.source, "real x["));
    CHECK(contains(g.source, "for (long long v = first; v < vectors; v += 128) {"));
    CHECK(contains(g.source, "const vec in = reinterpret_cast<const vec*>(logits + base)[v];"));
    CHECK(contains(g.source, "add(part, kjit_softmax_fused_s2(kjit_softmax_fused_s1(load(in.e[k]), m)))"));
    // A separate kernel passes over its row once, whatever the cache.
    doc.json["fusion"] = "separate";
    for (const auto& k : generate(config::from_json(doc)).kernels) CHECK(k.passes == 1);
}

TEST_CASE("row_cache \"shared\": the row copied to shared memory once, every pass reading it there") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["row_cache"] = "shared";
    auto g = generate(config::from_json(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].passes == 1);
    CHECK(g.kernels[0].shared_bytes == 4096 * 4);
    CHECK(contains(g.source, "extern __shared__ vec kjit_rows[];"));
    CHECK(contains(g.source, "cp.async.ca.shared.global [%0], [%1], 16;"));
    CHECK(contains(g.source, "kjit_copy_row(kjit_rows, logits, blockIdx.x, cols, threadIdx.x);\n    kjit_wait_for_copies<0>();"));
    CHECK(contains(g.source, "kjit_softmax_fused_row(blockIdx.x, threadIdx.x, kjit_rows, logits, out, rows, cols);"));
    CHECK(contains(g.source, "const vec in = kjit_row[kjit_slot(v)];"));
    CHECK(contains(g.source, "long long kjit_slot(long long v) { return v; }"));
    CHECK_FALSE(contains(g.source, "real x["));
    // A 2-byte vector (bfloat16, an odd row) is copied through a register: cp.async takes 4 bytes or more.
    doc.json["dtype"] = "bfloat16";
    doc.json["shape"] = {3, 33};
    g = generate(config::from_json(doc));
    CHECK(g.kernels[0].shared_bytes == 33 * 2);
    CHECK_FALSE(contains(g.source, "asm volatile"));
    CHECK(contains(g.source, "{ *shared = kjit_read_once(global); }"));
    // Separate: each kernel holds the row it reads.
    doc.json["fusion"] = "separate";
    for (const auto& k : generate(config::from_json(doc)).kernels) CHECK(k.shared_bytes == 33 * 2);
}

TEST_CASE("launch.grid on a row kernel: its blocks loop over the rows; with row_cache \"shared\" the next row is copied during this one") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["grid"] = "resident";
    doc.json["launch"]["row_cache"] = "none";
    auto g = generate(config::from_json(doc));
    CHECK(contains(g.source, "for (long long row = blockIdx.x; row < rows; row += gridDim.x) "
                             "kjit_softmax_fused_row(row, threadIdx.x, logits, out, rows, cols);"));
    CHECK(g.kernels[0].shared_bytes == 0);
    // A row in registers: the next row's loads are issued before this row is worked on.
    doc.json["launch"]["row_cache"] = "values";
    g = generate(config::from_json(doc));
    CHECK(contains(g.source, "if (row + gridDim.x < rows) kjit_load_row(next, logits, row + gridDim.x, cols);\n"
                             "        kjit_softmax_fused_row(row, threadIdx.x, now, logits, out, rows, cols);"));
    CHECK(contains(g.source, "const vec in = loaded[j];"));
    doc.json["launch"]["row_cache"] = "shared";
    g = generate(config::from_json(doc));
    CHECK(g.kernels[0].shared_bytes == 2 * 4096 * 4);  // this row and the next
    CHECK(contains(g.source, "kjit_copy_row(kjit_rows + (turn ^ 1) * vectors, logits, row + gridDim.x, cols, threadIdx.x);\n"
                             "            kjit_wait_for_copies<1>();"));
    CHECK(contains(g.source, "kjit_softmax_fused_row(row, threadIdx.x, kjit_rows + turn * vectors, logits, out, rows, cols);"));
    // "auto" (the default): a block per row, no loop.
    doc.json["launch"]["grid"] = "auto";
    g = generate(config::from_json(doc));
    CHECK_FALSE(contains(g.source, "row += gridDim.x"));
    CHECK(g.kernels[0].shared_bytes == 4096 * 4);
}

TEST_CASE("the generated source has no blank line in a body and never two in a row") {
    for (const char* cache : {"values", "shared"}) {
        auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
        doc.json["launch"]["row_cache"] = cache;
        const auto source = generate(config::from_json(doc)).source;
        CAPTURE(cache);
        CHECK_FALSE(contains(source, "\n\n\n"));
        CHECK_FALSE(contains(source, "{\n\n"));
    }
}

TEST_CASE("formula \"online\": the max and the sum in one pass, by a running max and a rescaled sum") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["stages"][2]["formula"] = "online";
    auto g = generate(config::from_json(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].passes == 1);
    CHECK(contains(g.source, "real s;  // stages[2], computed in the same pass"));
    CHECK(contains(g.source, "const kjit_max_sum both = kjit_row_reduce<kjit_online>(part);"));
    CHECK(contains(g.source, "vector[k] = kjit_softmax_fused_s0(x[j * 4 + k]);"));
    CHECK(contains(g.source, "part = kjit_online::add(part, vector);"));
    CHECK(contains(g.source, "a.sum * expf(a.max - max)"));
    CHECK_FALSE(contains(g.source, "kjit_row_reduce<kjit_sum>"));
    doc.json["launch"]["row_cache"] = "none";
    CHECK(generate(config::from_json(doc)).kernels[0].passes == 2);  // one read fewer than classic's 3

    // Separate: the max's kernel computes and writes the sum too; the sum has no kernel.
    doc.json["fusion"] = "separate";
    g = generate(config::from_json(doc));
    REQUIRE(g.kernels.size() == 3);
    CHECK(g.kernels[0].writes == "m");
    CHECK(g.kernels[0].also_writes == std::vector<std::string>{"s"});
    CHECK(g.kernels[0].stages == std::vector<std::size_t>{0, 2});
    CHECK(g.row_values == std::vector<std::string>{"m", "s"});
    CHECK(g.kernels[2].row_reads == std::vector<std::string>{"s"});
    CHECK(contains(g.source, "real* __restrict__ kjit_row_m, real* __restrict__ kjit_row_s, long long rows"));
    CHECK(contains(g.source, "if (first == 0) kjit_row_s[row] = s;"));

    // Fast math spells the rescale as the stages spell exp.
    doc.json["compile"]["fast_math"] = true;
    CHECK(contains(generate(config::from_json(doc)).source, "a.sum * __expf(a.max - max)"));
}

TEST_CASE("other arrays are read a vector at a time; a per-column input at the column, not the element") {
    const auto g = generate(shipped("layernorm.json"));
    CHECK(contains(g.source, "const vec kjit_v_gamma = reinterpret_cast<const vec*>(gamma)[v];"));
    CHECK(contains(g.source, "const vec kjit_v_beta = reinterpret_cast<const vec*>(beta)[v];"));
    CHECK(contains(g.source, "load(kjit_v_gamma.e[k]), load(kjit_v_beta.e[k])"));
    CHECK_FALSE(contains(g.source, "gamma + base"));
}

TEST_CASE("launch.streaming: the row's read and the result's write are marked evict-first; per-column inputs are not") {
    auto doc = config::load_document(kjit::testing::config_path("layernorm.json"));
    auto g = generate(config::from_json(doc));
    CHECK(contains(g.source, "const vec in = kjit_read_once(reinterpret_cast<const vec*>(activations + base) + v);"));
    CHECK(contains(g.source, "kjit_write_once(reinterpret_cast<vec*>(out + base) + v, y);"));
    CHECK(contains(g.source, "    return *at;\n"));
    CHECK_FALSE(contains(g.source, "__ldcs"));

    doc.json["launch"]["streaming"] = true;
    g = generate(config::from_json(doc));
    CHECK(contains(g.source, "reinterpret_cast<uint4*>(&v)[i] = __ldcs(reinterpret_cast<const uint4*>(at) + i);"));
    CHECK(contains(g.source, "__stcs(reinterpret_cast<uint4*>(at) + i, reinterpret_cast<const uint4*>(&v)[i]);"));
    CHECK_FALSE(contains(g.source, "return *at;"));
    CHECK(contains(g.source, "const vec kjit_v_gamma = reinterpret_cast<const vec*>(gamma)[v];"));
    // 32 bytes a vector: two 16-byte words.
    doc.json["launch"]["vector_width"] = 8;
    CHECK(contains(generate(config::from_json(doc)).source, "for (int i = 0; i < 2; ++i) reinterpret_cast<uint4*>"));
    // A row of 33 bfloat16: 2-byte words.
    doc.json["launch"]["vector_width"] = "auto";
    doc.json["dtype"] = "bfloat16";
    doc.json["shape"] = {3, 33};
    CHECK(contains(generate(config::from_json(doc)).source, "__ldcs(reinterpret_cast<const unsigned short*>(at) + i)"));
    // Shared rows: a 16-byte copy bypasses L1.
    doc.json["shape"] = {3, 4096};
    doc.json["launch"]["row_cache"] = "shared";
    CHECK(contains(generate(config::from_json(doc)).source, "cp.async.cg.shared.global [%0], [%1], 16;"));
    doc.json["launch"]["streaming"] = false;
    CHECK(contains(generate(config::from_json(doc)).source, "cp.async.ca.shared.global [%0], [%1], 16;"));
}

TEST_CASE("launch.min_blocks_per_sm is __launch_bounds__'s second argument") {
    auto doc = config::load_document(kjit::testing::config_path("layernorm.json"));
    doc.json["launch"]["block"] = 512;
    doc.json["launch"]["row_cache"] = "shared";
    CHECK(contains(generate(config::from_json(doc)).source, "__launch_bounds__(512) void layernorm_fused("));
    doc.json["launch"]["min_blocks_per_sm"] = 3;
    CHECK(contains(generate(config::from_json(doc)).source, "__launch_bounds__(512, 3) void layernorm_fused("));
}

TEST_CASE("row_cache \"shared\" in a cluster: each block copies and reads its share of the row") {
    auto doc = config::load_document(kjit::testing::config_path("layernorm.json"));
    doc.json["shape"] = {1024, 32768};
    doc.json["launch"]["row_cache"] = "shared";
    doc.json["launch"]["block"] = 512;
    doc.json["launch"]["cluster"] = 2;
    const auto g = generate(config::from_json(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].shared_bytes == 32768 * 4 / 2);
    CHECK(contains(g.source, "long long kjit_slot(long long v) { return v / 1024 * 512 + threadIdx.x; }"));
    CHECK(contains(g.source, "    const long long first = (long long)__clusterRelativeBlockRank() * 512 + threadIdx.x;\n"
                             "    extern __shared__ vec kjit_rows[];\n"
                             "    kjit_copy_row(kjit_rows, activations, blockIdx.x / 2, cols, first);\n"
                             "    kjit_wait_for_copies<0>();\n"
                             "    kjit_layernorm_fused_row(blockIdx.x / 2, first, kjit_rows, "));
}
