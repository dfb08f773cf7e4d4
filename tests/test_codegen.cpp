// Codegen: what each variant's source contains and the template override. The generated loops
// themselves are run as host code in test_generated_host.cpp.
#include <algorithm>
#include <fstream>

#include "codegen/codegen.hpp"
#include "helpers.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {
family::program generate(const config::pipeline& p) {
    return family::plan(p, codegen::template_set::embedded());
}
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// A kernel's buffers by what it does with them, from its arguments: the arrays it reads, the
/// row values it reads, what it writes first and the row values it writes besides.
std::vector<std::string> buffers_where(const family::kernel& k, bool written, bool row_value) {
    std::vector<std::string> names;
    for (const auto& a : k.args)
        if (a.what == family::argument::kind::buffer && a.written == written &&
            a.cuda_name.starts_with("kjit_row_") == row_value)
            names.push_back(a.name);
    return names;
}
std::vector<std::string> reads(const family::kernel& k) { return buffers_where(k, false, false); }
std::vector<std::string> row_reads(const family::kernel& k) { return buffers_where(k, false, true); }
std::string writes(const family::kernel& k) {
    for (const auto& a : k.args)
        if (a.written) return a.name;
    return "";
}
std::vector<std::string> also_writes(const family::kernel& k) {
    auto names = buffers_where(k, true, true);
    names.erase(std::remove(names.begin(), names.end(), writes(k)), names.end());
    return names;
}
/// The program's buffers of one role, in order.
std::vector<std::string> buffers(const family::program& g, family::buffer_role role) {
    std::vector<std::string> names;
    for (const auto& b : g.buffers)
        if (b.role == role) names.push_back(b.name);
    return names;
}
/// How many times a kernel reads its one array of `p`'s n elements: its bytes read over the array's.
double passes(const config::pipeline& p, const family::kernel& k) {
    return k.bytes_read / static_cast<double>(p.n * static_cast<long long>(config::element_size(p.type)));
}
}  // namespace

TEST_CASE("fused: one kernel reading both inputs, no intermediates, no headers") {
    const auto g = generate(family::load(kjit::testing::default_document()));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].name == "hidden_layer_fused");
    CHECK(reads(g.kernels[0]) == std::vector<std::string>{"greyscales", "weights"});
    CHECK(writes(g.kernels[0]) == "out");
    CHECK(buffers(g, family::buffer_role::temporary).empty());
    CHECK(contains(g.source, "extern \"C\" __global__ void hidden_layer_fused("));
    CHECK(contains(g.source, "tanhf(x)"));
    CHECK_FALSE(contains(g.source, "\n#include"));
    CHECK_FALSE(contains(g.source, "op_tanh_exp"));
    CHECK_FALSE(contains(g.source, "{{"));
}

TEST_CASE("separate: one kernel per stage, chained through intermediate arrays") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["fusion"] = "separate"; }));
    REQUIRE(g.kernels.size() == 3);
    CHECK(reads(g.kernels[0]) == std::vector<std::string>{"greyscales"});
    CHECK(writes(g.kernels[0]) == "tmp0");
    CHECK(reads(g.kernels[1]) == std::vector<std::string>{"tmp0", "weights"});
    CHECK(writes(g.kernels[1]) == "tmp1");
    CHECK(reads(g.kernels[2]) == std::vector<std::string>{"tmp1"});
    CHECK(writes(g.kernels[2]) == "out");
    CHECK(buffers(g, family::buffer_role::temporary) == std::vector<std::string>{"tmp0", "tmp1"});
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
    CHECK(reads(g.kernels[0]) == std::vector<std::string>{"greyscales"});
}

TEST_CASE("--templates DIR overrides the embedded templates") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "elementwise.cu.mustache") << "// custom {{name}}\n{{#kernels}}void {{kernel}}(\n{{/kernels}}";
    std::ofstream(dir.path() / "copy.cu.mustache") << "// copy\n";
    std::ofstream(dir.path() / "rows.cu.mustache") << "";
    const auto templates = codegen::template_set::from_directory(dir.path());
    const auto g = family::plan(family::load(kjit::testing::default_document()), templates);
    CHECK(g.source == "// custom hidden_layer\nvoid hidden_layer_fused(\n");
}

TEST_CASE("a template that renders without a kernel (a typo like {{kernel}, or empty) is a template error") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "copy.cu.mustache") << "";
    std::ofstream(dir.path() / "rows.cu.mustache") << "";
    const auto p = family::load(kjit::testing::default_document());
    for (const std::string& text : {std::string("{{#kernels}}extern \"C\" __global__ void {{kernel}({{name}})\n{{/kernels}}"), std::string()}) {
        std::ofstream(dir.path() / "elementwise.cu.mustache") << text;
        const auto templates = codegen::template_set::from_directory(dir.path());
        const auto m = kjit::testing::error_message([&] { (void)family::plan(p, templates); });
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
    const auto p = family::load(kjit::testing::default_document());
    const auto m = kjit::testing::error_message([&] { (void)family::plan(p, templates); });
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
    return family::load(doc);
}
}  // namespace

TEST_CASE("fused softmax: one row kernel, a block per row, the row read once and written once") {
    const auto g = generate(shipped("softmax.json"));
    REQUIRE(g.kernels.size() == 1);
    const auto& k = g.kernels[0];
    CHECK(g.family == "rows");
    CHECK(writes(k) == "out");
    CHECK_FALSE(g.result_per_row);
    CHECK(reads(k) == std::vector<std::string>{"logits"});
    CHECK(row_reads(k).empty());
    CHECK(buffers(g, family::buffer_role::temporary).empty());
    CHECK(buffers(g, family::buffer_role::row_value).empty());
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
    CHECK(buffers(g, family::buffer_role::row_value) == std::vector<std::string>{"m", "s"});
    CHECK(buffers(g, family::buffer_role::temporary) == std::vector<std::string>{"tmp1"});
    CHECK(buffers(g, family::buffer_role::row_value).front() == writes(g.kernels[0]));  // a row value
    CHECK(writes(g.kernels[0]) == "m");
    CHECK(reads(g.kernels[1]) == std::vector<std::string>{"logits"});
    CHECK(row_reads(g.kernels[1]) == std::vector<std::string>{"m"});
    CHECK(writes(g.kernels[1]) == "tmp1");
    CHECK(reads(g.kernels[2]) == std::vector<std::string>{"tmp1"});  // x flows past the reduce
    CHECK(row_reads(g.kernels[3]) == std::vector<std::string>{"s"});
    CHECK(writes(g.kernels[3]) == "out");
    CHECK(contains(g.source, "const real* __restrict__ kjit_row_m"));
    CHECK(contains(g.source, "if (first == 0) kjit_row_m[row] = m;"));
}

TEST_CASE("a final reduce writes one stored value per row; a mean divides by cols") {
    auto doc = config::load_document(kjit::testing::config_path("row_sum.json"));
    doc.json["stages"][0]["fn"] = "mean";
    const auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.result_per_row);
    CHECK(g.buffers.back().bytes == 4096 * sizeof(float));  // one per row
    CHECK(contains(g.source, "kjit_result = kjit_row_reduce<kjit_sum>(part) / (real)cols;"));
    CHECK(contains(g.source, "if (first == 0) out[row] = store(kjit_result);"));
}

TEST_CASE("a row too long for one block: a cluster per row, its blocks' values shared in rank order") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["shape"] = {2, 65536};
    const auto p = family::load(doc);
    const auto g = generate(p);
    CHECK(contains(g.source, "__cluster_dims__(2, 1, 1) __launch_bounds__(1024) void softmax_fused("));
    CHECK(contains(g.source, "const long long first = (long long)__clusterRelativeBlockRank() * 1024 + threadIdx.x;\n"
                             "    kjit_softmax_fused_row(blockIdx.x / 2, first, "));
    CHECK(contains(g.source, "__cluster_map_shared_rank((void*)&block_value, rank)"));
    doc.json["shape"] = {2, 4096};
    CHECK_FALSE(contains(generate(family::load(doc)).source, "__cluster"));
}

TEST_CASE("row_cache \"inputs\": the row kept as loaded, the maps applied again where x is used") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["dtype"] = "bfloat16";
    doc.json["launch"]["row_cache"] = "inputs";
    const auto g = generate(family::load(doc));
    CHECK(contains(g.source, "vec x[4];"));
    CHECK_FALSE(contains(g.source, "x[j * 8 + k] = kjit_softmax_fused_s1("));  // no map in place
    CHECK(contains(g.source, "add(part, kjit_softmax_fused_s2(kjit_softmax_fused_s1(load(x[j].e[k]), m)))"));
    CHECK(contains(g.source, "store(kjit_softmax_fused_s3(kjit_softmax_fused_s1(load(x[j].e[k]), m), s))"));
}

TEST_CASE("row_cache \"none\": no row in registers; each pass reads the row again, and counts its bytes") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["row_cache"] = "none";
    const auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(passes(family::load(doc), g.kernels[0]) == 3);  // the max, the sum, the store
    CHECK_FALSE(contains(g.source, "real x["));
    CHECK(contains(g.source, "for (long long v = first; v < vectors; v += 128) {"));
    CHECK(contains(g.source, "const vec in = reinterpret_cast<const vec*>(logits + base)[v];"));
    CHECK(contains(g.source, "add(part, kjit_softmax_fused_s2(kjit_softmax_fused_s1(load(in.e[k]), m)))"));
    // A separate kernel passes over its row once, whatever the cache.
    doc.json["fusion"] = "separate";
    for (const auto& k : generate(family::load(doc)).kernels) CHECK((reads(k).size() * 4096 + row_reads(k).size()) * 4096 * 4 == k.bytes_read);
}

TEST_CASE("row_cache \"shared\": the row copied to shared memory once, every pass reading it there") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["row_cache"] = "shared";
    auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(passes(family::load(doc), g.kernels[0]) == 1);
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
    g = generate(family::load(doc));
    CHECK(g.kernels[0].shared_bytes == 33 * 2);
    CHECK_FALSE(contains(g.source, "asm volatile"));
    CHECK(contains(g.source, "{ *shared = kjit_read_once(global); }"));
    // Separate: each kernel holds the row it reads.
    doc.json["fusion"] = "separate";
    for (const auto& k : generate(family::load(doc)).kernels) CHECK(k.shared_bytes == 33 * 2);
}

TEST_CASE("launch.grid on a row kernel: its blocks loop over the rows; with row_cache \"shared\" the next row is copied during this one") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["grid"] = "resident";
    doc.json["launch"]["row_cache"] = "none";
    auto g = generate(family::load(doc));
    CHECK(contains(g.source, "for (long long row = blockIdx.x; row < rows; row += gridDim.x) "
                             "kjit_softmax_fused_row(row, threadIdx.x, logits, out, rows, cols);"));
    CHECK(g.kernels[0].shared_bytes == 0);
    // A row in registers: the next row's loads are issued before this row is worked on.
    doc.json["launch"]["row_cache"] = "values";
    g = generate(family::load(doc));
    CHECK(contains(g.source, "if (row + gridDim.x < rows) kjit_load_row(next, logits, row + gridDim.x, cols);\n"
                             "        kjit_softmax_fused_row(row, threadIdx.x, now, logits, out, rows, cols);"));
    CHECK(contains(g.source, "const vec in = loaded[j];"));
    doc.json["launch"]["row_cache"] = "shared";
    g = generate(family::load(doc));
    CHECK(g.kernels[0].shared_bytes == 2 * 4096 * 4);  // this row and the next
    CHECK(contains(g.source, "kjit_copy_row(kjit_rows + (turn ^ 1) * vectors, logits, row + gridDim.x, cols, threadIdx.x);\n"
                             "            kjit_wait_for_copies<1>();"));
    CHECK(contains(g.source, "kjit_softmax_fused_row(row, threadIdx.x, kjit_rows + turn * vectors, logits, out, rows, cols);"));
    // "auto" (the default): a block per row, no loop.
    doc.json["launch"]["grid"] = "auto";
    g = generate(family::load(doc));
    CHECK_FALSE(contains(g.source, "row += gridDim.x"));
    CHECK(g.kernels[0].shared_bytes == 4096 * 4);
}

TEST_CASE("the generated source has no blank line in a body and never two in a row") {
    for (const char* cache : {"values", "shared"}) {
        auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
        doc.json["launch"]["row_cache"] = cache;
        const auto source = generate(family::load(doc)).source;
        CAPTURE(cache);
        CHECK_FALSE(contains(source, "\n\n\n"));
        CHECK_FALSE(contains(source, "{\n\n"));
    }
}

TEST_CASE("formula \"online\": the max and the sum in one pass, by a running max and a rescaled sum") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["stages"][2]["formula"] = "online";
    auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(passes(family::load(doc), g.kernels[0]) == 1);
    CHECK(contains(g.source, "real s;  // stages[2], computed in the same pass"));
    CHECK(contains(g.source, "const kjit_max_sum both = kjit_row_reduce<kjit_online>(part);"));
    CHECK(contains(g.source, "vector[k] = kjit_softmax_fused_s0(x[j * 4 + k]);"));
    CHECK(contains(g.source, "part = kjit_online::add(part, vector);"));
    CHECK(contains(g.source, "a.sum * expf(a.max - max)"));
    CHECK_FALSE(contains(g.source, "kjit_row_reduce<kjit_sum>"));
    doc.json["launch"]["row_cache"] = "none";
    CHECK(passes(family::load(doc), generate(family::load(doc)).kernels[0]) == 2);  // one read fewer than classic's 3

    // Separate: the max's kernel computes and writes the sum too; the sum has no kernel.
    doc.json["fusion"] = "separate";
    g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 3);
    CHECK(writes(g.kernels[0]) == "m");
    CHECK(also_writes(g.kernels[0]) == std::vector<std::string>{"s"});
    CHECK(g.kernels[0].stages == std::vector<std::size_t>{0, 2});
    CHECK(buffers(g, family::buffer_role::row_value) == std::vector<std::string>{"m", "s"});
    CHECK(row_reads(g.kernels[2]) == std::vector<std::string>{"s"});
    CHECK(contains(g.source, "real* __restrict__ kjit_row_m, real* __restrict__ kjit_row_s, long long rows"));
    CHECK(contains(g.source, "if (first == 0) kjit_row_s[row] = s;"));

    // Fast math spells the rescale as the stages spell exp.
    doc.json["compile"]["fast_math"] = true;
    CHECK(contains(generate(family::load(doc)).source, "a.sum * __expf(a.max - max)"));
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
    auto g = generate(family::load(doc));
    CHECK(contains(g.source, "const vec in = kjit_read_once(reinterpret_cast<const vec*>(activations + base) + v);"));
    CHECK(contains(g.source, "kjit_write_once(reinterpret_cast<vec*>(out + base) + v, y);"));
    CHECK(contains(g.source, "    return *at;\n"));
    CHECK_FALSE(contains(g.source, "__ldcs"));

    doc.json["launch"]["streaming"] = true;
    g = generate(family::load(doc));
    CHECK(contains(g.source, "reinterpret_cast<uint4*>(&v)[i] = __ldcs(reinterpret_cast<const uint4*>(at) + i);"));
    CHECK(contains(g.source, "__stcs(reinterpret_cast<uint4*>(at) + i, reinterpret_cast<const uint4*>(&v)[i]);"));
    CHECK_FALSE(contains(g.source, "return *at;"));
    CHECK(contains(g.source, "const vec kjit_v_gamma = reinterpret_cast<const vec*>(gamma)[v];"));
    // 32 bytes a vector: two 16-byte words.
    doc.json["launch"]["vector_width"] = 8;
    CHECK(contains(generate(family::load(doc)).source, "for (int i = 0; i < 2; ++i) reinterpret_cast<uint4*>"));
    // A row of 33 bfloat16: 2-byte words.
    doc.json["launch"]["vector_width"] = "auto";
    doc.json["dtype"] = "bfloat16";
    doc.json["shape"] = {3, 33};
    CHECK(contains(generate(family::load(doc)).source, "__ldcs(reinterpret_cast<const unsigned short*>(at) + i)"));
    // Shared rows: a 16-byte copy bypasses L1.
    doc.json["shape"] = {3, 4096};
    doc.json["launch"]["row_cache"] = "shared";
    CHECK(contains(generate(family::load(doc)).source, "cp.async.cg.shared.global [%0], [%1], 16;"));
    doc.json["launch"]["streaming"] = false;
    CHECK(contains(generate(family::load(doc)).source, "cp.async.ca.shared.global [%0], [%1], 16;"));
}

TEST_CASE("launch.min_blocks_per_sm is __launch_bounds__'s second argument") {
    auto doc = config::load_document(kjit::testing::config_path("layernorm.json"));
    doc.json["launch"]["block"] = 512;
    doc.json["launch"]["row_cache"] = "shared";
    CHECK(contains(generate(family::load(doc)).source, "__launch_bounds__(512) void layernorm_fused("));
    doc.json["launch"]["min_blocks_per_sm"] = 3;
    CHECK(contains(generate(family::load(doc)).source, "__launch_bounds__(512, 3) void layernorm_fused("));
}

TEST_CASE("row_cache \"shared\" in a cluster: each block copies and reads its share of the row") {
    auto doc = config::load_document(kjit::testing::config_path("layernorm.json"));
    doc.json["shape"] = {1024, 32768};
    doc.json["launch"]["row_cache"] = "shared";
    doc.json["launch"]["block"] = 512;
    doc.json["launch"]["cluster"] = 2;
    const auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].shared_bytes == 32768 * 4 / 2);
    CHECK(contains(g.source, "long long kjit_slot(long long v) { return v / 1024 * 512 + threadIdx.x; }"));
    CHECK(contains(g.source, "    const long long first = (long long)__clusterRelativeBlockRank() * 512 + threadIdx.x;\n"
                             "    extern __shared__ vec kjit_rows[];\n"
                             "    kjit_copy_row(kjit_rows, activations, blockIdx.x / 2, cols, first);\n"
                             "    kjit_wait_for_copies<0>();\n"
                             "    kjit_layernorm_fused_row(blockIdx.x / 2, first, kjit_rows, "));
}
