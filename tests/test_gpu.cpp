// On a GPU: every shipped config runs and verifies, fused and separate agree, odd sizes (of
// attention too) and every vector width are right, a warm run loads the cubin from the cache, the
// exp formula's NaN shows up as a FAIL, and a kernel that never ends fails its run. Where there is
// no usable driver or device this program says why and exits 77, which CTest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "cuda/cuda_gpu.hpp"
#include "report/files.hpp"
#include "helpers.hpp"
#include "family/attention/problem.hpp"
#include "family/gemm/policy.hpp"
#include "run/runner.hpp"
#include "util/fs.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {

cuda::probe_result g_driver;

struct session {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache{dir.path()};
    codegen::template_set templates = codegen::template_set::embedded();
    cuda::open_times times;
    std::unique_ptr<run::gpu> device = cuda::open_gpu(g_driver, 0, times);

    report::record run(const config::pipeline& p) {
        report::record rec = run::new_record("run", p, "gpu test");
        run::run_variant(p, *device, {templates, &cache, jit::cache_mode::use}, rec);
        return rec;
    }
};

/// A test's timing: one that shows the kernel ran, not a benchmark.
constexpr config::measure_spec k_brief_measure{.warmup = 1, .repeat = 3, .noise = 0.05, .max_ms = 5};

/// k_brief_measure as a config's measure block.
json brief_measure() {
    const auto& m = k_brief_measure;
    return {{"warmup", m.warmup}, {"repeat", m.repeat}, {"noise", m.noise}, {"max_ms", m.max_ms}};
}

/// `p` timed by k_brief_measure.
config::pipeline with_measure(config::pipeline p) {
    p.measure = k_brief_measure;
    return p;
}

/// configs/mlp_layer.json as an M × K by K × N product in `dtype`, `fusion` and `launch`, briefly timed.
config::document matmul_document(long long m, long long n, long long k, const std::string& dtype, const char* fusion,
                                 const json& launch) {
    auto doc = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/mlp_layer.json");
    doc.json.erase("sweep");
    doc.json["shape"] = {m, k};
    doc.json["inputs"]["W"]["shape"] = {k, n};
    doc.json["dtype"] = dtype;
    doc.json["fusion"] = fusion;
    doc.json["launch"] = launch;
    doc.json["measure"] = brief_measure();
    return doc;
}

/// A launch the matmul tests run at each of their sizes: the dtype, the launch, and the compile
/// section where it sets one (TF32).
struct matmul_launch {
    std::string dtype;
    json launch;
    json compile = nullptr;
};

/// Runs `check` on the pipeline of each size × launch × fusion, whose values are CAPTUREd for a
/// failure's message; its second argument is M · N · K.
template <class Check>
void for_each_matmul(const std::vector<std::array<long long, 3>>& sizes, const std::vector<matmul_launch>& launches,
                     const std::vector<const char*>& fusions, Check check) {
    // (No structured bindings: clang does not let CAPTURE's lambda name them.)
    for (const auto& size : sizes)
        for (const auto& one : launches)
            for (const char* fusion : fusions) {
                const long long m = size[0], n = size[1], k = size[2];
                CAPTURE(m);
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(one.dtype);
                CAPTURE(one.launch.dump());
                CAPTURE(std::string(fusion));
                auto doc = matmul_document(m, n, k, one.dtype, fusion, one.launch);
                if (!one.compile.is_null()) doc.json["compile"] = one.compile;
                check(family::load(doc), static_cast<double>(m * n * k));
            }
}

/// An attention the tests run: `heads` query heads over `kv_heads` K/V heads, `tokens` queries and
/// keys of head dim `dim`, scored by `score`, in `dtype`, `fusion` and `launch`.
struct attention_case {
    long long tokens, dim, heads, kv_heads;
    std::string score, dtype;
    const char* fusion;
    json launch;
    long long queries = 0;  ///< queries a head where fewer than the keys' tokens (decoding)
};
/// configs/attention.json as `c`, over 2 batches, briefly timed.
config::pipeline attention_pipeline(const attention_case& c) {
    constexpr long long batch = 2;
    auto doc = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/attention.json");
    doc.json["shape"] = {batch * c.heads * (c.queries > 0 ? c.queries : c.tokens), c.dim};
    const json kv_shape = {batch * c.kv_heads * c.tokens, c.dim};
    doc.json["inputs"]["k"]["shape"] = kv_shape;
    doc.json["inputs"]["v"]["shape"] = kv_shape;
    json& stage = doc.json["stages"][0];
    stage["batch"] = batch;
    stage["heads"] = c.heads;
    stage["kv_heads"] = c.kv_heads;
    stage["score"] = c.score;
    doc.json["dtype"] = c.dtype;
    doc.json["fusion"] = c.fusion;
    doc.json["launch"] = c.launch;
    doc.json["measure"] = brief_measure();
    return family::load(doc);
}

/// Runs `c` and checks that it verifies, its values CAPTUREd for a failure's message.
void check_attention(session& s, const attention_case& c) {
    CAPTURE(c.tokens);
    CAPTURE(c.queries);
    CAPTURE(c.dim);
    CAPTURE(c.heads / c.kv_heads);
    CAPTURE(c.score);
    CAPTURE(c.dtype);
    CAPTURE(std::string(c.fusion));
    CAPTURE(c.launch.dump());
    const auto rec = s.run(attention_pipeline(c));
    CHECK(rec.status == report::outcome::pass);
    CHECK((rec.check && rec.check->nan_count == 0));
}

}  // namespace

TEST_CASE("NVML reads the device's clocks and temperature before and after the timed loops") {
    session s;
    const auto rec = s.run(with_measure(family::load(kjit::testing::default_document())));
    REQUIRE_MESSAGE(!rec.state_before.empty(), "NVML gave nothing: is libnvidia-ml.so.1 missing?");
    CHECK(rec.state_before.sm_clock_mhz.value_or(0) > 0);
    CHECK(rec.state_after.memory_clock_mhz.value_or(0) > 0);
    CHECK(rec.state_after.temperature_c.value_or(0) > 0);
    CHECK(rec.kernel_cold_noise.has_value());
    MESSAGE("SM " << rec.state_before.sm_clock_mhz.value_or(0) << " -> " << rec.state_after.sm_clock_mhz.value_or(0)
                  << " MHz, memory " << rec.state_after.memory_clock_mhz.value_or(0) << " MHz, "
                  << rec.state_after.temperature_c.value_or(0) << " C, " << rec.state_after.power_w.value_or(0)
                  << " W, limits " << rec.state_after.clock_limits.value_or(0) << ", cold noise "
                  << *rec.kernel_cold_noise * 100 << " % over " << rec.kernel_cold->count << " samples");
}

TEST_CASE("every shipped config runs on the GPU and verifies") {
    session s;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(KJIT_SOURCE_DIR) + "/configs")) {
        const std::string name = entry.path().filename().string();
        CAPTURE(name);
        auto doc = config::load_document(entry.path().string());
        doc.json.erase("sweep");  // the base point; sweeps run in scripts/gpu-check.sh
        const auto rec = s.run(family::load(doc));
        CHECK(rec.status == report::outcome::pass);
        CHECK(rec.check->nan_count == 0);
        CHECK(rec.kernel_cold->median > 0);
        CHECK(rec.kernel_graph->median > 0);
        // A graph removes launch gaps, which weigh where kernels are short. A long one's replays
        // (the 0.84 ms matmul) drift with the clock under the power cap by more than that.
        if (rec.kernel_batch->median < 0.1) CHECK(rec.kernel_graph->median <= rec.kernel_batch->median * 1.05);
        MESSAGE(std::string(name) << ": cold median " << rec.kernel_cold->median * 1e3 << " us, batch "
                     << rec.kernel_batch->median * 1e3 << " us, graph " << rec.kernel_graph->median * 1e3
                     << " us, max ulp " << rec.check->max_ulp_error);
    }
}

TEST_CASE("the transpose verifies at odd shapes, in every dtype, tile and vector width, with maps on either side or both, padded and swizzled") {
    session s;
    const json before = {{"op", "map"}, {"expr", "x * k + b"}, {"input", "a"}}, transpose = {{"op", "transpose"}},
               after = {{"op", "map"}, {"expr", "x - b"}};
    // Maps on both sides take a padded tile; on one side, a swizzled tile holds the stored values.
    const std::vector<std::pair<json, const char*>> variants{{json::array({before, transpose, after}), "padded"},
                                                              {json::array({before, transpose}), "swizzled"},
                                                              {json::array({{{"op", "transpose"}, {"input", "a"}}, after}), "swizzled"}};
    for (const auto& shape : std::vector<std::pair<int, int>>{{1, 1}, {3, 4097}, {1000, 33}, {12, 1028}, {65, 130}})
        for (const char* dtype : {"float32", "bfloat16", "float64"})
            for (int tile : {16, 32, 64})
                for (const json& width : {json(1), json("auto")})
                    for (const auto& variant : variants) {
                        const int rows = shape.first, cols = shape.second;
                        const std::string layout = variant.second;
                        CAPTURE(rows);
                        CAPTURE(cols);
                        CAPTURE(std::string(dtype));
                        CAPTURE(tile);
                        CAPTURE(layout);
                        auto doc = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/transpose.json");
                        doc.json.erase("sweep");
                        doc.json["shape"] = {rows, cols};
                        doc.json["dtype"] = dtype;
                        doc.json["launch"] = {{"tile", tile}, {"vector_width", width}, {"layout", layout}};
                        doc.json["measure"] = brief_measure();
                        doc.json["inputs"]["b"] = {{"fill", "normal"}};
                        doc.json["params"] = {{"k", 2.5}};
                        doc.json["stages"] = variant.first;
                        const auto rec = s.run(family::load(doc));
                        CHECK(rec.status == report::outcome::pass);
                    }
}

TEST_CASE("matmuls verify at odd shapes on every rung and dtype, fused and separate, at the auto launch and a small one") {
    session s;
    const std::vector<matmul_launch> launches{
            {"float32", {{"rung", "simt"}}},
            {"float64", {{"rung", "simt"}}},
            {"bfloat16", {{"rung", "simt"}, {"tile_m", 64}, {"tile_n", 32}, {"tile_k", 16}}},
            {"float16", {{"rung", "mma"}}},
            {"bfloat16", {{"rung", "mma"}, {"tile_m", 64}, {"tile_n", 64}, {"tile_k", 16}, {"buffers", 2}, {"group_m", 1}}},
            {"bfloat16", {{"rung", "wgmma"}}},
            {"float16", {{"rung", "wgmma"}, {"tile_m", 256}, {"tile_n", 128}, {"buffers", 2}, {"group_m", 1}}},
            {"bfloat16", {{"rung", "wgmma"}, {"tile_m", 64}, {"tile_n", 128}, {"buffers", 3}, {"schedule", "pingpong"}}},
            {"float16", {{"rung", "wgmma"}, {"schedule", "pingpong"}, {"tile_n", 128}}},
            {"bfloat16", {{"rung", "wgmma"}, {"cluster_m", 2}}},
            {"float16", {{"rung", "wgmma"}, {"cluster_m", 2}, {"schedule", "pingpong"}, {"tile_n", 128}, {"buffers", 3}}}};
    for_each_matmul({{1, 1, 1}, {17, 1000, 24}, {1000, 17, 4097}, {130, 264, 64}}, launches, {"fused", "separate"},
                    [&](const config::pipeline& p, double mnk) {
                        const auto rec = s.run(p);
                        CHECK(rec.status == report::outcome::pass);
                        CHECK(rec.flops == 2.0 * mnk);
                    });
}

TEST_CASE("decode steps of up to 64 rows verify on the stream rung's tensor cores, at odd shapes, fused and separate") {
    session s;
    // The rule's launch in both 16-bit types; narrow and wide warps' columns, few and many warps,
    // the depth split over clusters of 2, 4 and 8, one and two steps in flight.
    const std::vector<matmul_launch> launches{
            {"bfloat16", {{"rung", "stream"}, {"cores", "tensor"}}},
            {"float16", {{"rung", "stream"}, {"cores", "tensor"}}},
            {"bfloat16", {{"rung", "stream"}, {"cores", "tensor"}, {"tile_n", 16}, {"warps_n", 2}, {"buffers", 1}}},
            {"bfloat16", {{"rung", "stream"}, {"cores", "tensor"}, {"tile_n", 32}, {"warps_n", 8}, {"split_k", 4}}},
            {"float16", {{"rung", "stream"}, {"cores", "tensor"}, {"tile_n", 64}, {"warps_n", 4}, {"split_k", 1}, {"buffers", 2}}},
            {"bfloat16", {{"rung", "stream"}, {"cores", "tensor"}, {"tile_n", 64}, {"warps_n", 8}, {"split_k", 8}, {"buffers", 2}}}};
    for_each_matmul({{1, 8, 8}, {5, 24, 1000}, {16, 4096, 4096}, {33, 264, 4104}, {64, 1000, 3072}, {64, 8, 24}, {9, 4104, 40}},
                    launches, {"fused", "separate"}, [&](const config::pipeline& p, double) {
                        REQUIRE(family::gemm::policy_of(p).tensor);
                        CHECK(s.run(p).status == report::outcome::pass);
                    });
}

TEST_CASE("decode steps verify on the stream rung, and float32 as TF32 on mma, at odd shapes, fused and separate") {
    session s;
    // The stream rung on CUDA cores in every dtype, narrow and wide launches, the depth split over
    // clusters of 2, 4 and 8; mma's TF32
    const json tf32 = {{"fp32_precision", "tf32"}};
    const std::vector<matmul_launch> launches{
            {"bfloat16", {{"rung", "stream"}, {"cores", "cuda"}}},
            {"float16", {{"rung", "stream"}, {"cores", "cuda"}}},
            {"float32", {{"rung", "stream"}}},
            {"float64", {{"rung", "stream"}}},
            {"bfloat16", {{"rung", "stream"}, {"cores", "cuda"}, {"tile_n", 8}, {"warps_n", 2}}},
            {"float32", {{"rung", "stream"}, {"tile_n", 32}, {"warps_n", 32}, {"split_k", 2}}},
            {"bfloat16", {{"rung", "stream"}, {"cores", "cuda"}, {"split_k", 4}, {"buffers", 4}}},
            {"float16", {{"rung", "stream"}, {"cores", "cuda"}, {"tile_n", 32}, {"split_k", 8}}},
            {"float32", {{"rung", "auto"}}, tf32},
            {"float32", {{"rung", "mma"}, {"tile_m", 64}, {"tile_n", 64}, {"tile_k", 32}, {"buffers", 2}}, tf32}};
    for_each_matmul({{1, 1, 1}, {1, 4096, 4096}, {3, 1001, 17}, {8, 264, 4097}, {5, 24, 1000}}, launches, {"fused", "separate"},
                    [&](const config::pipeline& p, double) {
                        const family::gemm::policy& t = family::gemm::policy_of(p);
                        if (p.compile.tf32)  // TF32 on mma (auto streams a decode step of at most 4 rows, in float)
                            CHECK(t.tf32 == (t.kind == family::gemm::rung::mma));
                        else
                            CHECK((t.kind == family::gemm::rung::stream && !t.tensor));
                        CHECK(s.run(p).status == report::outcome::pass);
                    });
}

TEST_CASE("wgmma's split depth and 192-column tiles verify at odd depths and widths (operands padded first), schedules and dtypes") {
    session s;
    const std::vector<matmul_launch> launches{
            {"bfloat16", {{"rung", "wgmma"}, {"tile_m", 64}, {"tile_n", 64}, {"schedule", "pingpong"}, {"split_k", 2}}},
            {"float16", {{"rung", "wgmma"}, {"tile_m", 64}, {"tile_n", 128}, {"schedule", "pingpong"}, {"buffers", 4}, {"split_k", 4}}},
            {"bfloat16", {{"rung", "wgmma"}, {"tile_m", 128}, {"tile_n", 128}, {"buffers", 2}, {"split_k", 4}}},
            {"bfloat16", {{"rung", "wgmma"}, {"tile_n", 192}, {"buffers", 4}}},
            {"float16", {{"rung", "wgmma"}, {"tile_m", 64}, {"tile_n", 192}, {"schedule", "pingpong"}, {"buffers", 2}, {"split_k", 2}}},
            {"bfloat16", {{"rung", "auto"}}}};
    for_each_matmul({{1, 1000, 4097}, {16, 4096, 4096}, {300, 264, 1000}, {64, 768, 3072}, {130, 1001, 1000}}, launches, {"fused"},
                    [&](const config::pipeline& p, double) { CHECK(s.run(p).status == report::outcome::pass); });
}

TEST_CASE("attention verifies at odd shapes on both rungs, fused and separate: 1, 17, 1000 and 4097 tokens, head dims 64, 96 and 128, 1, 4 and 8 query heads a K/V head, causal and not") {
    session s;
    const std::vector<std::pair<const char*, json>> launches{
            {"fused", {{"rung", "mma"}}}, {"fused", {{"rung", "wgmma"}}}, {"separate", json::object()}};
    int turn = 0;  // the grouped-query ratio turns with the shape
    for (const long long tokens : {1, 17, 1000, 4097})
        for (const long long dim : {64, 96, 128}) {
            const long long ratio = std::array{1, 4, 8}[turn++ % 3];
            const std::string dtype = dim == 96 ? "float16" : "bfloat16";
            for (const char* score : {"x", "col > row ? -inf : x"})
                for (const auto& [fusion, launch] : launches)
                    check_attention(s, {tokens, dim, 8, 8 / ratio, score, dtype, fusion, launch});
        }
}

TEST_CASE("persistent attention blocks finish and verify where whole work items are masked") {
    // On 2026-12-06 and 2026-12-07 (H100s) a persistent launch of three consumers (head dim 64)
    // did not finish here now and then: its items past query 1000 take no tile, so the queries'
    // barriers run through phase after phase, and two kinds of waiter that arrived nowhere (the
    // producer warp's other lanes; a consumer's warps but its leader) could fall two phases behind
    // and wait for one gone by. The issuing lane alone waits now, and every consumer thread frees
    // the queries (docs/attention.md). Three consumers (head dim 64) and two, a block an item
    // beside.
    session s;
    for (const long long dim : {64, 128})
        for (const bool persistent : {true, false})
            for (const char* score : {"row >= 1000 ? -inf : x", "col > row || row >= 1000 ? -inf : x"})
                check_attention(s, {4097, dim, 8, 2, score, "bfloat16", "fused", {{"rung", "wgmma"}, {"persistent", persistent}}});
}

TEST_CASE("masks written with abs, min, max and chunks (row // 256) skip the tiles they mask, and verify") {
    // Their tile tests (src/family/attention/tile_mask.cpp) split each call into the comparisons
    // it holds by, and bound a chunk's index by its values at a tile's edges; a tile wrongly
    // skipped would leave its queries' sums short.
    session s;
    for (const char* score : {"abs(row - col) < 100 ? x : -inf", "col > max(row, 300) ? -inf : x",
                              "col < min(row - 50, 2000) ? -inf : x", "row // 256 != col // 256 ? -inf : x",
                              "col > row || (row + 100) // 256 != (col + 100) // 256 ? -inf : x"})
        for (const char* rung : {"mma", "wgmma"})
            check_attention(s, {1000, 128, 8, 2, score, "bfloat16", "fused", {{"rung", rung}}});
}

TEST_CASE("decoding packs grouped heads, splits the keys among blocks and joins their partials: 1 and 16 queries, head dims 64 to 256, masked shares, a fixed base") {
    // src/family/attention/split_keys.hpp: each block's partial softmax in float, joined by a
    // second kernel; a share whose keys are all masked (col > 700) joins with no weight, and
    // soft-capping's partials are taken from its fixed base rather than a max. The 4 query heads
    // of a head of K and V are packed where the score reads no query's place (not the last).
    session s;
    int turn = 0;  // the head dim and dtype turn with the case
    for (const long long keys : {1000, 4097})
        for (const long long queries : {1, 16})
            for (const char* score : {"x", "col > 700 ? -inf : x", "30 * tanh(x / 30)", "col > row + 990 ? -inf : x"}) {
                const long long dim = std::array{64, 96, 128, 256}[turn++ % 4];
                const std::string dtype = dim == 96 ? "float16" : "bfloat16";
                for (const json& launch : {json::object(), json{{"splits", 3}, {"pack_heads", false}}}) {
                    const auto p = attention_pipeline({keys, dim, 8, 2, score, dtype, "fused", launch, queries});
                    CHECK(family::attention::policy_of(p).splits > 1);
                    check_attention(s, {keys, dim, 8, 2, score, dtype, "fused", launch, queries});
                }
            }
}

TEST_CASE("fused and separate agree with the same reference, for both formulas and dtypes") {
    session s;
    for (const char* dtype : {"float32", "float64"})
        for (const char* formula : {"builtin", "exp"}) {
            std::vector<double> errors;
            for (const char* fusion : {"fused", "separate"}) {
                CAPTURE(dtype);
                CAPTURE(formula);
                CAPTURE(fusion);
                const auto rec = s.run(with_measure(kjit::testing::pipeline_with([&](json& j) {
                    j["dtype"] = dtype;
                    j["fusion"] = fusion;
                    j["stages"][2]["formula"] = formula;
                })));
                CHECK(rec.status == report::outcome::pass);
                errors.push_back(rec.check->max_abs_error);
            }
            // Same arithmetic in one kernel or three: the rounding is the same, so are the errors.
            CHECK(errors[0] == errors[1]);
        }
}

TEST_CASE("row kernels verify at odd shapes: one row, one column, rows no multiple of a vector or a block, a cluster per row, blocks and clusters that loop over rows, streaming, capped registers, shared rows over a cluster, a warp per row in blocks of several") {
    session s;
    // Each fusion and row cache; softmax's sum classic and online, the others' as "auto" takes it.
    const std::vector<json> variants = {{{"fusion", "fused"}},
                                        {{"fusion", "separate"}},
                                        {{"fusion", "fused"}, {"launch", {{"row_cache", "inputs"}}}},
                                        {{"fusion", "fused"}, {"launch", {{"row_cache", "none"}}}},
                                        {{"fusion", "fused"}, {"launch", {{"row_cache", "shared"}}}},
                                        // Blocks that loop over the rows: fewer than the rows, or as many as are resident.
                                        {{"fusion", "fused"}, {"launch", {{"grid", 7}}}},
                                        {{"fusion", "separate"}, {"launch", {{"grid", "resident"}, {"row_cache", "none"}}}},
                                        {{"fusion", "fused"}, {"launch", {{"grid", 7}, {"row_cache", "shared"}}}},
                                        {{"fusion", "fused"}, {"launch", {{"grid", "resident"}, {"row_cache", "shared"}}}},
                                        // Evict-first loads and stores.
                                        {{"fusion", "fused"}, {"launch", {{"streaming", true}}}},
                                        {{"fusion", "fused"}, {"launch", {{"streaming", true}, {"row_cache", "shared"}}}},
                                        // A row in shared memory, each block of a cluster holding its share.
                                        {{"fusion", "fused"}, {"launch", {{"row_cache", "shared"}, {"cluster", 2}}}},
                                        {{"fusion", "separate"}, {"launch", {{"row_cache", "shared"}, {"cluster", 4}}}},
                                        // Clusters that loop over the rows, each block holding its share of two.
                                        {{"fusion", "fused"}, {"launch", {{"row_cache", "shared"}, {"cluster", 2}, {"grid", 6}}}},
                                        // A row in shared memory landing in more groups of copies than a thread has vectors, or fewer.
                                        {{"fusion", "fused"}, {"launch", {{"row_cache", "shared"}, {"copy_groups", 3}}}},
                                        {{"fusion", "fused"}, {"launch", {{"row_cache", "shared"}, {"cluster", 4}, {"copy_groups", 16}}}},
                                        // Registers capped for 4 blocks per SM.
                                        {{"fusion", "fused"}, {"launch", {{"row_cache", "none"}, {"block", 256}, {"min_blocks_per_sm", 4}}}},
                                        // A warp per row, several rows a block (the last block's spare warps idle): in
                                        // registers, in shared memory, read in each pass; looping over rows or not.
                                        {{"fusion", "fused"}, {"launch", {{"row_mapping", "warp"}, {"block", 128}, {"row_cache", "values"}}}},
                                        {{"fusion", "separate"}, {"launch", {{"row_mapping", "warp"}, {"block", 128}, {"row_cache", "values"}, {"grid", 7}}}},
                                        {{"fusion", "fused"}, {"launch", {{"row_mapping", "warp"}, {"block", 128}, {"row_cache", "shared"}}}},
                                        {{"fusion", "fused"}, {"launch", {{"row_mapping", "warp"}, {"block", 96}, {"row_cache", "shared"}, {"grid", 5}}}},
                                        {{"fusion", "fused"}, {"launch", {{"row_mapping", "warp"}, {"block", 64}, {"row_cache", "none"}, {"grid", "resident"}}}}};
    // The causal softmax computes from positions: a column where a row starts inside a vector.
    for (const char* name : {"softmax.json", "causal_softmax.json", "layernorm.json", "rmsnorm.json", "row_sum.json"})
        for (const json& shape : {json::array({1, 1}), json::array({3, 33}), json::array({1000, 4097}), json::array({3, 70001})})
            for (const char* dtype : {"float32", "bfloat16"})
                for (const char* formula : {"classic", "online"})
                    for (const json& variant : variants) {
                        const std::string config = name, type = dtype, sum = formula;
                        const bool online = sum == "online";
                        if (online && config != "softmax.json") continue;
                        // Config errors at 70001 columns: more floats than a block's shared memory holds, or
                        // two rows of bfloat16 for a looping block; a cluster (registers) cannot loop.
                        const json launch = variant.value("launch", json::object());
                        const bool shared = launch.value("row_cache", "") == "shared";
                        const bool in_registers = !launch.contains("row_cache") || launch.value("row_cache", "") == "values";
                        const bool loops = launch.contains("grid");
                        const bool warps = launch.contains("row_mapping");
                        if (shape[1] == 70001 && ((shared && (type == "float32" || loops || warps)) || (loops && in_registers))) continue;
                        if (warps && in_registers && shape[1] > 1024) continue;  // longer than a warp's registers hold
                        auto doc = config::load_document(kjit::testing::config_path(name));
                        doc.json["shape"] = shape;
                        doc.json["dtype"] = dtype;
                        doc.json.merge_patch(config::json_value(variant));
                        if (config == "softmax.json") doc.json["stages"][2]["formula"] = sum;  // else "auto"'s
                        CAPTURE(config);
                        CAPTURE(shape.dump());
                        CAPTURE(type);
                        CAPTURE(sum);
                        CAPTURE(variant.dump());
                        const auto rec = s.run(with_measure(family::load(doc)));
                        CHECK(rec.status == report::outcome::pass);
                        CHECK(rec.check->nan_count == 0);
                    }
}

TEST_CASE("odd sizes and every vector width write every element correctly") {
    session s;
    for (long long n : {1LL, 3LL, 4097LL, 1000003LL})
        for (int width : {1, 2, 4})
            for (const char* dtype : {"float32", "float64", "float16", "bfloat16"})
                for (const char* fusion : {"fused", "separate"}) {
                    CAPTURE(n);
                    CAPTURE(width);
                    CAPTURE(dtype);
                    CAPTURE(fusion);
                    const auto rec = s.run(with_measure(kjit::testing::pipeline_with([&](json& j) {
                        j["n"] = n;
                        j["launch"]["vector_width"] = width;
                        j["dtype"] = dtype;
                        j["fusion"] = fusion;
                    })));
                    CHECK(rec.status == report::outcome::pass);
                }
}

TEST_CASE("explicit small grids still cover n (grid-stride)") {
    session s;
    for (long long grid : {1LL, 7LL}) {
        CAPTURE(grid);
        const auto rec = s.run(with_measure(kjit::testing::pipeline_with([&](json& j) {
            j["n"] = 100003;
            j["launch"]["grid"] = grid;
        })));
        CHECK(rec.status == report::outcome::pass);
        CHECK(rec.kernels[0].grid == grid);
    }
}

TEST_CASE("a warm run loads the cubin from the cache: no NVRTC, no PTX → cubin, fast module load") {
    session s;
    const auto p = with_measure(family::load(kjit::testing::default_document()));
    const auto cold = s.run(p);
    CHECK(cold.cache_status == "miss");
    CHECK(cold.get(report::phase::nvrtc).has_value());
    const auto warm = s.run(p);
    CHECK(warm.cache_status == "hit");
    CHECK_FALSE(warm.get(report::phase::nvrtc).has_value());
    CHECK_FALSE(warm.get(report::phase::ptx_to_cubin).has_value());
    CHECK(*warm.get(report::phase::module_load) < 1.0);
    MESSAGE("warm module load " << *warm.get(report::phase::module_load) * 1e3 << " us, get function "
                                << *warm.get(report::phase::get_function) * 1e3 << " us, first launch "
                                << *warm.get(report::phase::first_launch) * 1e3 << " us");
}

TEST_CASE("the exp formula overflows to NaN for |x| >= 88.7 in float32, and kjit says FAIL") {
    session s;
    const auto rec = s.run(with_measure(kjit::testing::pipeline_with([](json& j) {
        j["stages"][2]["formula"] = "exp";
        j["stages"][0]["scale"] = 1;  // x = greyscale · weight, up to ~150
    })));
    CHECK(rec.status == report::outcome::fail);
    CHECK(rec.check->nan_count > 0);
    CHECK(rec.check->first_bad.find("out=nan") != std::string::npos);
    MESSAGE("exp formula, x up to ~150: " << rec.check->nan_count << " NaN of 1000000; " << rec.check->first_bad);
}

TEST_CASE("every activation and formula verifies in every storage type, on inputs in [-10, 10]") {
    session s;
    auto doc = config::load_document(kjit::testing::config_path("activations.json"));
    doc.json["n"] = 100003;
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    for (const auto& point : family::expand_sweep(doc)) {
        CAPTURE(point.label);
        const auto rec = s.run(point.pipeline);
        CHECK(rec.status == report::outcome::pass);
        MESSAGE(point.label << ": max " << rec.check->max_ulp_error << " ulp, max abs " << rec.check->max_abs_error);
    }
}

TEST_CASE("softplus: the naive formula overflows to inf above 88.7 and FAILs naming the element; stable passes") {
    session s;
    auto doc = config::load_document(kjit::testing::config_path("softplus.json"));
    const auto points = family::expand_sweep(doc);
    REQUIRE(points.size() == 2);
    const auto stable = s.run(with_measure(points[0].pipeline));
    CHECK(stable.status == report::outcome::pass);
    const auto naive = s.run(with_measure(points[1].pipeline));
    CHECK(naive.status == report::outcome::fail);
    CHECK(naive.check->inf_count > 0);
    CHECK(naive.check->first_bad.find("out=inf") != std::string::npos);
    MESSAGE("softplus naive: " << naive.check->inf_count << " inf; " << naive.check->first_bad);
}

TEST_CASE("a param is a kernel argument: changing it changes the result, not the binary") {
    session s;
    auto doc = config::load_document(kjit::testing::config_path("leaky_relu_expr.json"));
    const auto points = family::expand_sweep(doc);
    REQUIRE(points.size() == 3);
    const auto first = s.run(with_measure(points[0].pipeline));
    const auto third = s.run(with_measure(points[2].pipeline));
    CHECK(first.status == report::outcome::pass);
    CHECK(third.status == report::outcome::pass);
    CHECK(third.cache_status == "hit");
    CHECK(third.cache_key == first.cache_key);
}

TEST_CASE("the copy ceiling is measured and plausible") {
    session s;
    const double ceiling = run::copy_ceiling_bytes_per_s(*s.device, {s.templates, &s.cache, jit::cache_mode::use});
    CHECK(ceiling > 1e11);
    CHECK(ceiling < 2e13);
    MESSAGE("copy ceiling " << ceiling / 1e9 << " GB/s");
}

TEST_CASE("kjit first-call on the GPU: the warm cubin start has no NVRTC phase, PTX loading costs a JIT") {
    kjit::testing::temp_dir dir;
    const std::string json_file = (dir.path() / "fc.json").string();
    const std::string command = std::string(KJIT_BINARY) + " first-call --repeat 2 --json " + json_file + " > " +
                                (dir.path() / "out").string() + " 2>&1";
    REQUIRE(std::system(command.c_str()) == 0);
    std::map<std::string, std::vector<report::row>> by_state;
    for (auto& r : report::read_rows(json_file)) by_state[r["first_call_state"]].push_back(r);
    REQUIRE(by_state.size() == 5);
    for (const auto& r : by_state["cold"]) {
        CHECK(r["cache"] == "miss");
        CHECK(r["nvrtc_ms"].get<double>() > 0);
        CHECK(r["driver_init_ms"].get<double>() > 0);
    }
    for (const auto& r : by_state["warm-cubin"]) {
        CHECK(r["cache"] == "hit");
        CHECK(r["nvrtc_ms"].is_null());
        CHECK(r["ptx_to_cubin_ms"].is_null());
        CHECK(r["module_image"] == "cubin");
        CHECK(r["module_load_ms"].get<double>() < 1.0);
    }
    for (const auto& r : by_state["warm-ptx-nocache"]) {
        CHECK(r["module_image"] == "ptx");
        CHECK(r["status"] == "PASS");
    }
    for (const auto& r : by_state["second-call"]) {
        CHECK(r["call_index"] == 2);
        CHECK(r["driver_init_ms"].is_null());
        CHECK(r["context_ms"].is_null());
    }
    MESSAGE(fs::read_file(dir.path() / "out"));
}

TEST_CASE("a kernel that never ends: kjit gives up after KJIT_GPU_WAIT_LIMIT, says so, and its process ends") {
    // The elementwise template with a loop that never ends before its work.
    kjit::testing::temp_dir dir;
    const auto templates = dir.path() / "kernel_templates";
    std::filesystem::copy(std::string(KJIT_SOURCE_DIR) + "/kernel_templates", templates);
    const auto kernel = templates / "elementwise.cu.mustache";
    std::string text = fs::read_text_file(kernel);
    const std::string anchor = "    long long kjit_done = 0;";
    REQUIRE(text.find(anchor) != std::string::npos);
    text.insert(text.find(anchor), "    for (;;) __nanosleep(1000);  // never ends\n");
    std::ofstream(kernel) << text;

    const std::string out = (dir.path() / "out").string();
    const std::string command = "KJIT_GPU_WAIT_LIMIT=2 timeout 60 " + std::string(KJIT_BINARY) + " run --no-cache --templates " +
                                templates.string() + " > " + out + " 2>&1";
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system(command.c_str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string printed = fs::read_text_file(out);
    CAPTURE(printed);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);  // a failure while working, not timeout's 124
    CHECK(printed.find("did not finish in 2.00 s: a kernel that never ends?") != std::string::npos);
    CHECK(seconds < 30);
    MESSAGE("kjit gave up and ended in " << seconds << " s");
}

int main(int argc, char** argv) {
    g_driver = cuda::probe_driver();
    if (g_driver.state != cuda::availability::ok) {
        std::printf("gpu tests skipped: %s (%s)\n", g_driver.detail.c_str(), cuda::to_string(g_driver.state));
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
