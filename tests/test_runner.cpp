// The runner against a fake GPU: phase order, argument wiring, poisoning, verification, timing
// counts and failures. Needs NVRTC (the runner compiles for real), not a GPU.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>

#include "family/rows/policy.hpp"
#include "fake_gpu.hpp"
#include "helpers.hpp"
#include "report/files.hpp"
#include "report/table.hpp"
#include "run/runner.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {
float* floats(std::vector<unsigned char>* buffer) { return reinterpret_cast<float*>(buffer->data()); }

struct fixture {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache{dir.path()};
    codegen::template_set templates = codegen::template_set::embedded();
    kjit::testing::fake_gpu gpu;
    bool runs_kernels = true;  ///< false: a device whose kernels do nothing

    report::record run(const config::pipeline& p, const std::string& counter_set = {}) {
        report::record rec = run::new_record("run", p, "test");
        if (runs_kernels) gpu.on_launch = kjit::testing::plan_executor(std::vector<config::pipeline>{p});
        run::run_variant(p, gpu, {templates, &cache, jit::cache_mode::use}, rec, {.counter_set = counter_set});
        return rec;
    }
};

config::pipeline small(const std::string& fusion = "fused") {
    return kjit::testing::pipeline_with([&](json& j) {
        j["n"] = 4099;  // not a multiple of the vector width
        j["fusion"] = fusion;
        j["measure"] = {{"warmup", 2}, {"repeat", 5}};
    });
}
}  // namespace

TEST_CASE("a correct device passes, with every phase recorded") {
    fixture f;
    const auto rec = f.run(small());
    CHECK(rec.status == report::outcome::pass);
    REQUIRE(rec.check.has_value());
    CHECK(rec.check->nan_count == 0);
    CHECK(rec.check->max_ulp_error < 8);
    for (auto p : {report::phase::codegen, report::phase::nvrtc, report::phase::ptx_to_cubin, report::phase::module_load,
                   report::phase::get_function, report::phase::alloc, report::phase::h2d, report::phase::first_launch,
                   report::phase::d2h, report::phase::verify})
        CHECK(rec.get(p).has_value());
    CHECK(rec.cache_status == "miss");
    CHECK_FALSE(f.gpu.loaded_cubin.empty());
    CHECK(f.gpu.loaded_cubin.substr(1, 3) == "ELF");
    // first launch + warm-up + cold samples + batches + graph replays
    CHECK(f.gpu.launches == 1 + 2 + 5 + 2 * run::k_batches * 5);
    CHECK(f.gpu.flushes == 5);
    REQUIRE(rec.kernel_cold.has_value());
    CHECK(rec.kernel_cold->count == 5);
    CHECK(rec.kernel_cold->median == doctest::Approx(0.001));
    CHECK(rec.kernel_batch->count == run::k_batches);
    REQUIRE(rec.kernel_graph.has_value());
    CHECK(rec.kernel_graph->median == doctest::Approx(0.0005));
    CHECK(rec.get(report::phase::graph_build).has_value());
    CHECK(rec.kernels[0].occupancy == doctest::Approx(8 * 256 / 2048.0));
    CHECK(rec.bytes_moved == 3.0 * 4099 * 4);
    CHECK(f.gpu.last_block == 256);
    CHECK(f.gpu.last_grid == 5);  // ceil(ceil(4099 / 4) / 256), below 4 SMs × 8 resident
}

TEST_CASE("the output is poisoned first: a device that writes nothing fails with NaN") {
    fixture f;
    f.runs_kernels = false;
    const auto rec = f.run(small());
    CHECK(rec.status == report::outcome::fail);
    CHECK(rec.check->nan_count == 4099);
    CHECK(rec.check->first_bad.find("element 0:") == 0);
    CHECK(rec.check->first_bad.find("out=nan") != std::string::npos);
    const auto poison = std::find(f.gpu.calls.begin(), f.gpu.calls.end(), "fill_bytes");
    const auto first_launch = std::find(f.gpu.calls.begin(), f.gpu.calls.end(), "launch");
    CHECK(poison < first_launch);
}

TEST_CASE("one wrong element fails, named with its inputs") {
    fixture f;
    f.gpu.after_launch = [](const std::string&, const std::vector<std::vector<unsigned char>*>& buffers, const run::kernel_launch&) {
        floats(buffers.back())[1234] += 0.01f;
    };
    const auto rec = f.run(small());
    CHECK(rec.status == report::outcome::fail);
    CHECK(rec.check->mismatches == 1);
    CHECK(rec.check->first_bad.find("element 1234: greyscales=") == 0);
    CHECK(rec.check->first_bad.find("weights=") != std::string::npos);
}

TEST_CASE("a wrong attention output is named by its batch, head, query and column") {
    auto doc = config::load_document(kjit::testing::config_path("attention_causal.json"));
    doc.json["shape"] = {2 * 4 * 17, 32};
    doc.json["inputs"]["k"]["shape"] = {2 * 2 * 23, 32};
    doc.json["inputs"]["v"]["shape"] = {2 * 2 * 23, 32};
    doc.json["stages"][0]["batch"] = 2;
    doc.json["stages"][0]["heads"] = 4;
    doc.json["stages"][0]["kv_heads"] = 2;
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    fixture f;
    // batch 1, head 2, query 5, column 7: row (1 · 4 + 2) · 17 + 5 = 107 of 32 columns
    f.gpu.after_launch = [](const std::string&, const std::vector<std::vector<unsigned char>*>& buffers, const run::kernel_launch&) {
        std::vector<unsigned char>& out = *buffers.at(3);  // q, k, v, out
        const std::size_t at = (107 * 32 + 7) * 2;
        out[at + 1] ^= 0x40;  // a bfloat16's high byte: its exponent changes
    };
    const auto rec = f.run(family::load(doc));
    CHECK(rec.status == report::outcome::fail);
    CHECK(rec.check->first_bad.find("element 3431 (batch 1, head 2, query 5, column 7): → out=") == 0);
}

TEST_CASE("attention, separate: three kernels with the scores in memory between them, verified; a wrong score fails by name") {
    auto doc = config::load_document(kjit::testing::config_path("attention_causal.json"));
    // 23 keys: rows of scores padded to 24 (whole 16-byte chunks), which the softmax zeros
    doc.json["shape"] = {2 * 4 * 17, 64};
    doc.json["inputs"]["k"]["shape"] = {2 * 2 * 23, 64};
    doc.json["inputs"]["v"]["shape"] = {2 * 2 * 23, 64};
    doc.json["stages"][0]["batch"] = 2;
    doc.json["stages"][0]["heads"] = 4;
    doc.json["stages"][0]["kv_heads"] = 2;
    doc.json["fusion"] = "separate";
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    const config::pipeline p = family::load(doc);
    const family::program prog = family::plan(p, codegen::template_set::embedded());
    REQUIRE(prog.kernels.size() == 3);
    CHECK(prog.kernels[0].name == "attention_causal_scores");
    CHECK(prog.kernels[1].name == "attention_causal_softmax");
    CHECK(prog.kernels[2].name == "attention_causal_values");
    const std::size_t scores = 2 * 4 * 17 * 24 * 2;  // batch · heads · queries rows of 24 bfloat16s
    CHECK(std::any_of(prog.buffers.begin(), prog.buffers.end(), [&](const family::buffer& b) {
        return b.name == "scores" && b.bytes == scores && b.role == family::buffer_role::temporary;
    }));
    CHECK(prog.kernels[1].bytes_read == static_cast<double>(scores));
    fixture f;
    CHECK(f.run(p).status == report::outcome::pass);
    // After the scores kernel: batch 1, head 2, query 5's score of key 3 (row (1 · 4 + 2) · 17 + 5
    // of 24) made far larger, so its probability takes the whole row.
    f.gpu.after_launch = [](const std::string& name, const std::vector<std::vector<unsigned char>*>& buffers, const run::kernel_launch&) {
        if (name != "attention_causal_scores") return;
        std::vector<unsigned char>& held = *buffers.at(2);  // q, k, scores
        const std::size_t at = ((6 * 17 + 5) * 24 + 3) * 2;
        reference::set_element(config::dtype::bfloat16, held.data(), at / 2, 40.0);
    };
    const auto rec = f.run(p);
    CHECK(rec.status == report::outcome::fail);
    CHECK(rec.check->first_bad.find("(batch 1, head 2, query 5, column ") != std::string::npos);
}

TEST_CASE("attention, split keys: each block's partial softmax in float, joined by a second kernel, verified; a wrong partial fails by name") {
    auto doc = config::load_document(kjit::testing::config_path("attention_decode.json"));
    // 2 × 4 heads of one query over 2 heads of 1000 keys, head dim 64: 16 tiles of 64 keys
    doc.json["shape"] = {2 * 4, 64};
    doc.json["inputs"]["k"]["shape"] = {2 * 2 * 1000, 64};
    doc.json["inputs"]["v"]["shape"] = {2 * 2 * 1000, 64};
    doc.json["stages"][0]["batch"] = 2;
    doc.json["stages"][0]["heads"] = 4;
    doc.json["stages"][0]["kv_heads"] = 2;
    doc.json["launch"]["splits"] = 3;  // shares of 6, 6 and 4 tiles
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    const config::pipeline p = family::load(doc);
    const family::program prog = family::plan(p, codegen::template_set::embedded());
    REQUIRE(prog.kernels.size() == 2);
    CHECK(prog.kernels[0].name == "attention_decode_partials");
    CHECK(prog.kernels[0].grid == family::dims{2 * 2 * 3, 1, 1});  // a block a share of a head of K and V's (2 query heads, packed)
    CHECK(prog.kernels[1].name == "attention_decode_combine");
    const std::size_t partials = 8 * 3 * (64 + 2) * sizeof(float);  // rows · splits of a row, a max and a sum
    CHECK(std::any_of(prog.buffers.begin(), prog.buffers.end(), [&](const family::buffer& b) {
        return b.name == "partials" && b.bytes == partials && b.role == family::buffer_role::temporary && b.float_elements;
    }));
    fixture f;
    CHECK(f.run(p).status == report::outcome::pass);
    // 7 splits of the 16 tiles take 3 each: the last takes none, and joins with no weight
    doc.json["launch"]["splits"] = 7;
    CHECK(f.run(family::load(doc)).status == report::outcome::pass);
    // After the partials: batch 1, head 2's query's (row 6) second split's max made far larger, so
    // the join takes that split's weight for nothing.
    f.gpu.after_launch = [](const std::string& name, const std::vector<std::vector<unsigned char>*>& buffers, const run::kernel_launch&) {
        if (name != "attention_decode_partials") return;
        floats(buffers.at(3))[(6 * 3 + 1) * 66 + 64] += 50.0f;  // q, k, v, partials
    };
    const auto rec = f.run(p);
    CHECK(rec.status == report::outcome::fail);
    CHECK(rec.check->first_bad.find("(batch 1, head 2, query 0, column ") != std::string::npos);
}

namespace {
/// tanh(x · w + b) at 600 × 500 (a result large enough to be checked by a sample), depth 3.
config::pipeline small_gemm(const std::string& fusion) {
    auto doc = config::load_document(kjit::testing::config_path("mlp_layer.json"));
    doc.json.erase("sweep");
    doc.json["shape"] = {600, 3};
    doc.json["inputs"]["W"]["shape"] = {3, 500};
    doc.json["dtype"] = "float32";
    doc.json["fusion"] = fusion;
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    return family::load(doc);
}
}  // namespace

TEST_CASE("a matmul through the runner: a sample checked, flops counted; a tile left unwritten fails by name") {
    for (const std::string fusion : {"fused", "separate"}) {
        CAPTURE(fusion);
        fixture f;
        auto rec = f.run(small_gemm(fusion));
        CHECK(rec.status == report::outcome::pass);
        REQUIRE(rec.check.has_value());
        CHECK(rec.check->elements == 600u * 500u);
        CHECK(rec.check->compared >= 65536u);
        CHECK(rec.check->compared < rec.check->elements);
        CHECK(rec.flops == 2.0 * 600 * 500 * 3);
        // The last kernel skips the tile at rows 128… and columns 256… (it keeps the poison there).
        f.gpu.after_launch = [](const std::string&, const std::vector<std::vector<unsigned char>*>& buffers, const run::kernel_launch&) {
            for (int r = 128; r < 256; ++r)
                std::fill_n(buffers.back()->begin() + (r * 500 + 256) * 4, 128 * 4, kjit::reference::k_poison_byte);
        };
        rec = f.run(small_gemm(fusion));
        CHECK(rec.status == report::outcome::fail);
        CHECK(rec.check->mismatches == 128u * 128u);
        CHECK(rec.check->first_bad.find("element 64256 (row 128, col 256)") == 0);
    }
}

TEST_CASE("wgmma through the runner: its matrices go as tensor maps; a GPU other than sm_90 is refused") {
    auto doc = config::load_document(kjit::testing::config_path("mlp_layer.json"));
    doc.json.erase("sweep");
    doc.json["shape"] = {300, 64};
    doc.json["inputs"]["W"]["shape"] = {64, 512};
    doc.json["launch"] = {{"rung", "wgmma"}};
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    const auto p = family::load(doc);
    fixture f;
    const auto rec = f.run(p);  // the fake's kernels run only where each argument is as planned
    CHECK(rec.status == report::outcome::pass);
    CHECK(rec.arch == "sm_90a");
    f.gpu.set_arch(80);
    CHECK(kjit::testing::error_message([&] { (void)f.run(p); }) ==
          "mlp_layer: this variant runs on sm_90 alone (the wgmma rung: Hopper's warp-group tensor cores, the TMA unit and "
          "setmaxnreg), not on sm_80");
}

TEST_CASE("wgmma through the runner at rows TMA cannot copy: A and B padded first, each launch before the product's") {
    auto doc = config::load_document(kjit::testing::config_path("mlp_layer.json"));
    doc.json.erase("sweep");
    doc.json["shape"] = {300, 67};
    doc.json["inputs"]["W"]["shape"] = {67, 501};
    doc.json["launch"] = {{"rung", "wgmma"}};
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    const auto p = family::load(doc);
    fixture f;
    std::vector<std::string> order;
    f.gpu.after_launch = [&](const std::string& k, const std::vector<std::vector<unsigned char>*>&, const run::kernel_launch&) {
        if (order.size() < 3) order.push_back(k);
    };
    // The product reads the padded copies by their pitch (a copy left unwritten holds NaN), and
    // stores C's unaligned rows element by element.
    const auto rec = f.run(p);
    CHECK(rec.status == report::outcome::pass);
    CHECK(order == std::vector<std::string>{"mlp_layer_pad_a", "mlp_layer_pad_b", "mlp_layer_matmul"});
    CHECK(rec.kernels.size() == 3);
}

TEST_CASE("separate stages: three launches per chain, wired through intermediates") {
    fixture f;
    std::vector<std::string> order;
    f.gpu.after_launch = [&](const std::string& k, const std::vector<std::vector<unsigned char>*>&, const run::kernel_launch&) {
        if (order.size() < 3) order.push_back(k);
    };
    const auto rec = f.run(small("separate"));
    CHECK(rec.status == report::outcome::pass);
    CHECK(order == std::vector<std::string>{"hidden_layer_s0_normalize", "hidden_layer_s1_weigh", "hidden_layer_s2_tanh"});
    CHECK(f.gpu.launches == 3 * (1 + 2 + 5 + 2 * run::k_batches * 5));
    CHECK(rec.bytes_moved == (2.0 + 3.0 + 2.0) * 4099 * 4);
    CHECK(rec.kernels.size() == 3);
}

TEST_CASE("--metrics: a counter pass after the timed loops, each kernel's counters in its row, the chain's combined") {
    fixture f;
    const auto plain = f.run(small("separate"));
    CHECK(plain.counters.empty());
    CHECK(std::count(f.gpu.calls.begin(), f.gpu.calls.end(), "read_counters") == 0);

    fixture g;
    g.gpu.counters_missing = {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"};
    const auto rec = g.run(small("separate"), "memory");
    CHECK(rec.status == report::outcome::pass);
    // After everything timed: one chain of three launches under the profiler, and nothing else.
    const auto counted = std::find(g.gpu.calls.begin(), g.gpu.calls.end(), "read_counters");
    REQUIRE(counted != g.gpu.calls.end());
    CHECK(std::vector<std::string>(counted + 1, g.gpu.calls.end()) == std::vector<std::string>(3, "launch"));
    REQUIRE(rec.kernels.size() == 3);
    CHECK(rec.kernels[0].counters.at("dram_read_bytes") == 10);  // the fake's i-th launch counts 10·(i+1)
    CHECK(rec.kernels[2].counters.at("dram_read_bytes") == 30);
    CHECK(rec.kernels[1].counters.at("duration_ns") == 1000);
    CHECK_FALSE(rec.kernels[0].counters.contains("achieved_occupancy_pct"));  // not in the memory set
    CHECK(rec.counters.at("dram_read_bytes") == 60);                          // bytes add up
    CHECK(rec.counters.at("l2_hit_rate_pct") == doctest::Approx(20));         // rates average over time
    CHECK(rec.counters.at("duration_ns") == 3000);
    // The model's bytes against the counted: (60 read + 60 written) over 7 · 4099 · 4.
    CHECK(*rec.dram_bytes_over_model() == doctest::Approx(120.0 / (7.0 * 4099 * 4)));
    const auto row = report::rows_of({rec}).front();
    CHECK(row.at("metric_dram_write_bytes") == 60);
    std::ostringstream printed;
    report::print_record(printed, rec);
    CHECK(printed.str().find("bytes read from DRAM (HBM)") != std::string::npos);
    CHECK(printed.str().find("kjit's model says the pass moves") != std::string::npos);

    fixture all;
    all.gpu.counters_missing = g.gpu.counters_missing;
    const auto every = all.run(small(), "all");
    CHECK(every.counters.contains("stall_long_scoreboard"));
    CHECK(every.warnings.back().find("this GPU does not count sm__pipe_tensor_op_hmma") == 0);
    CHECK_FALSE(every.counters.contains("tensor_pipe_pct"));
    CHECK(every.counters.contains("fma_pipe_pct"));

    fixture none;
    none.gpu.counters_problem = "cannot load CUPTI (libcupti.so.13: cannot open shared object file)";
    const auto without = none.run(small(), "all");
    CHECK(without.status == report::outcome::pass);  // everything else as before
    CHECK(without.counters.empty());
    CHECK(without.warnings.back() == "no hardware counters: cannot load CUPTI (libcupti.so.13: cannot open shared object file)");
}

TEST_CASE("a second run is a cache hit: no NVRTC, no PTX → cubin") {
    fixture f;
    (void)f.run(small());
    const auto rec = f.run(small());
    CHECK(rec.cache_status == "hit");
    CHECK_FALSE(rec.get(report::phase::nvrtc).has_value());
    CHECK_FALSE(rec.get(report::phase::ptx_to_cubin).has_value());
    CHECK(rec.kernels.at(0).registers > 0);  // kept in the entry's metadata
}

TEST_CASE("a CUDA failure names the phase it happened in") {
    fixture f;
    f.gpu.fail_call = "allocate";
    const auto m = kjit::testing::error_message([&] { (void)f.run(small()); }, error_kind::driver);
    CHECK(m.rfind("device alloc: allocate failed: CUDA_ERROR_OUT_OF_MEMORY", 0) == 0);
}

TEST_CASE("buffers are released when a run fails part-way (a sweep goes on without them)") {
    fixture f;
    f.gpu.fail_call = "copy_to_device";
    const auto m = kjit::testing::error_message([&] { (void)f.run(small()); }, error_kind::driver);
    CHECK(m.rfind("copy H2D: copy_to_device failed", 0) == 0);
    CHECK(f.gpu.released == 3);  // greyscales, weights, out
}

TEST_CASE("a run unloads its module as it ends, also one that failed part-way") {
    fixture f;
    (void)f.run(small());
    CHECK(f.gpu.modules_loaded == 1);
    CHECK(f.gpu.unloaded_modules == std::vector<run::module_id>{0});
    f.gpu.fail_call = "copy_to_device";
    CHECK_THROWS((void)f.run(small()));
    CHECK(f.gpu.modules_loaded == 2);
    CHECK(f.gpu.unloaded_modules == std::vector<run::module_id>{0, 1});
}

TEST_CASE("an n the machine cannot hold is refused with one clear line before anything is allocated") {
    fixture f;
    const auto host = kjit::testing::error_message(
        [&] { (void)f.run(kjit::testing::pipeline_with([](json& j) { j["n"] = 1LL << 40; })); }, error_kind::memory);
    INFO(host);
    CHECK(host.find("n = 1099511627776 float32 needs 28.0 TiB of host memory") == 0);
    CHECK(host.find(" is available") != std::string::npos);
    f.gpu.free_bytes = 4099 * 4 * 5 - 1;  // two inputs, two intermediates, the output: one byte short
    const auto tight = kjit::testing::error_message([&] { (void)f.run(small("separate")); }, error_kind::memory);
    CHECK(tight.find("needs 80.1 KiB of GPU memory (5 buffers); Fake GPU has 80.1 KiB free") != std::string::npos);
    CHECK(std::find(f.gpu.calls.begin(), f.gpu.calls.end(), "allocate") == f.gpu.calls.end());
    CHECK(exit_status_for(error_kind::memory) == exit_status::failure);
}

TEST_CASE("a result kept for the next run is pinned once and copied back into; a run that keeps nothing pins nothing") {
    fixture f;
    f.gpu.on_launch = kjit::testing::plan_executor(std::vector<config::pipeline>{small(), small("separate")});
    const run::build_context ctx{f.templates, &f.cache, jit::cache_mode::use};
    report::record once = run::new_record("run", small(), "test");
    run::run_variant(small(), f.gpu, ctx, once);
    CHECK(std::ranges::count(f.gpu.calls, "pin") == 0);
    {
        run::host_data host;
        std::vector<std::ptrdiff_t> allocations;  // after each run
        for (const auto& p : {small(), small(), small("separate"), small("separate")}) {
            report::record rec = run::new_record("run", p, "test");
            run::run_variant(p, f.gpu, ctx, rec, {.reuse = &host, .keep_on_device = true});
            CHECK(rec.status == report::outcome::pass);
            allocations.push_back(std::ranges::count(f.gpu.calls, "allocate"));
        }
        // The second run allocates nothing (inputs and output kept); the separate pipeline's
        // temporaries are a new layout, allocated once; its second run allocates nothing either.
        CHECK(allocations[1] == allocations[0]);
        CHECK(allocations[2] > allocations[1]);
        CHECK(allocations[3] == allocations[2]);
        CHECK(std::ranges::count(f.gpu.calls, "pin") == 1);
        CHECK(*f.gpu.pinned == std::set<const void*>{host.result->data()});
        CHECK(f.gpu.last_copied_to == host.result->data());
    }
    CHECK(f.gpu.pinned->empty());  // the host data went, and its pin with it
}

TEST_CASE("host data is shared only while the stages agree: a changed op parameter recomputes the reference") {
    fixture f;
    f.gpu.on_launch = kjit::testing::plan_executor(std::vector<config::pipeline>{small()});  // the scale is bound per launch
    run::host_data host;
    report::record first = run::new_record("run", small(), "test");
    run::run_variant(small(), f.gpu, {f.templates, &f.cache, jit::cache_mode::use}, first, {false, &host});
    CHECK(first.status == report::outcome::pass);
    auto halved = small();
    halved = kjit::testing::pipeline_with([](json& j) {
        j["n"] = 4099;
        j["measure"] = {{"warmup", 0}, {"repeat", 1}};
        j["stages"][0]["scale"] = 2;
    });
    report::record second = run::new_record("run", halved, "test");
    run::run_variant(halved, f.gpu, {f.templates, &f.cache, jit::cache_mode::use}, second, {false, &host});
    CHECK(second.status == report::outcome::pass);  // a stale reference (x / 255) would fail every element
    CHECK_FALSE(second.get(report::phase::host_inputs).has_value());  // same inputs: reused
    CHECK(second.get(report::phase::host_reference).has_value());
    CHECK(second.cache_status == "hit");  // the scale is a kernel argument: same binary
}

TEST_CASE("cold samples: exactly `repeat` when the device is steady; more until the noise target when it is not") {
    fixture steady;
    const auto calm = steady.run(small());
    CHECK(calm.kernel_cold->count == 5);
    CHECK(calm.kernel_cold_noise == 0.0);
    CHECK(calm.warnings.empty());

    fixture noisy;
    noisy.gpu.jitter = 0.2;  // ±20 %: the median's error after 5 samples is several percent
    auto p = small();
    p.measure.noise = 0.01;
    p.measure.max_ms = 60000;
    const auto settled = noisy.run(p);
    CHECK(settled.kernel_cold->count > 50);
    CHECK(*settled.kernel_cold_noise <= 0.01);
    CHECK(settled.warnings.empty());
    CHECK(noisy.gpu.flushes == static_cast<int>(settled.kernel_cold->count));

    fixture hopeless;
    hopeless.gpu.jitter = 0.2;
    p.measure.noise = 1e-9;  // unreachable: the budget stops it
    p.measure.max_ms = 20;
    const auto stopped = hopeless.run(p);
    CHECK(stopped.kernel_cold->count > 5);
    CHECK(stopped.kernel_cold->count < 100000);
    CHECK(*stopped.kernel_cold_noise > 1e-9);
    REQUIRE(stopped.warnings.size() == 1);
    CHECK(stopped.warnings[0].find("cold median noise") == 0);
    CHECK(stopped.warnings[0].find("measure.max_ms = 20 ms") != std::string::npos);
}

TEST_CASE("batches are as long as k_batch_ms needs: fewer chains per batch for a slow chain, never more than repeat") {
    CHECK(run::chains_per_batch(0.001, 50) == 50);
    CHECK(run::chains_per_batch(0.3, 50) == 4);
    CHECK(run::chains_per_batch(5.0, 50) == 1);
    CHECK(run::chains_per_batch(0.0, 50) == 50);

    fixture slow;
    slow.gpu.launch_ms = 0.4;  // 0.4 ms per chain: 3 chains fill a 1 ms batch
    const auto rec = slow.run(small());
    CHECK(rec.kernel_batch->count == run::k_batches);
    CHECK(rec.kernel_batch->median == doctest::Approx(0.4));
    // first launch + warm-up + cold samples + batches and graph replays of 3 chains each
    CHECK(slow.gpu.launches == 1 + 2 + 5 + 2 * run::k_batches * 3);
}

TEST_CASE("the device's state is read before and after the timed loops; a clock that moved or a power cap warns") {
    fixture f;
    report::device_state before, after;
    before.sm_clock_mhz = 1980;
    before.memory_clock_mhz = 2619;
    before.temperature_c = 40;
    before.clock_limits = 0;
    after = before;
    after.sm_clock_mhz = 1755;
    after.temperature_c = 47;
    after.clock_limits = 0x4 | 0x1;  // power cap, and idle (which is no slowdown)
    f.gpu.states = {before, after};
    const auto rec = f.run(small());
    CHECK(rec.state_before.sm_clock_mhz == 1980);
    CHECK(rec.state_after.sm_clock_mhz == 1755);
    REQUIRE(rec.warnings.size() == 2);
    CHECK(rec.warnings[0] == "SM clock moved from 1980 to 1755 MHz during the timed loops");
    CHECK(rec.warnings[1] == "clocks held down (power cap) after the timed loops");

    const auto columns = report::flatten(rec);
    const auto column = [&](const std::string& name) {
        for (const auto& [key, value] : columns)
            if (key == name) return value;
        FAIL("no column " << name);
        return nlohmann::json();
    };
    CHECK(column("sm_clock_mhz_before") == 1980);
    CHECK(column("temperature_c_after") == 47);
    CHECK(column("clock_limits_after") == 5);
    CHECK(column("power_w_before").is_null());  // NVML gave no power reading
    CHECK(column("warnings").get<std::string>().find("; clocks held down") != std::string::npos);
    std::ostringstream table;
    report::print_record(table, rec);
    CHECK(table.str().find("SM 1980 → 1755 MHz, memory 2619 MHz, 40 → 47 °C") != std::string::npos);
    CHECK(table.str().find("warning  clocks held down (power cap)") != std::string::npos);
}

// ---- row kernels

namespace {
/// Softmax over rows of 33 floats, a block per row (short rows take a warp each where "auto").
config::pipeline softmax(const std::string& fusion, long long rows = 5, const std::string& mapping = "block") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["shape"] = {rows, 33};
    doc.json["fusion"] = fusion;
    doc.json["launch"]["row_mapping"] = mapping;
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    return family::load(doc);
}
/// p's row policy, changed by `change` after validation.
std::shared_ptr<const family::rows::policy> with_row_policy(const config::pipeline& p,
                                                            const std::function<void(family::rows::policy&)>& change) {
    family::rows::policy changed = family::rows::policy_of(p);
    change(changed);
    return std::make_shared<const family::rows::policy>(changed);
}
}  // namespace

TEST_CASE("row kernels: a block per row, rows and cols passed, fused and separate verified row by row") {
    fixture f;
    const auto fused = f.run(softmax("fused"));
    CHECK(fused.status == report::outcome::pass);
    CHECK(f.gpu.last_grid == 5);
    CHECK(f.gpu.last_block == 64);
    const auto& args = f.gpu.last_launch.args;  // logits, out, rows, cols
    REQUIRE(args.size() == 4);
    CHECK(args[2].what == run::argument_value::type::i64);
    CHECK(args[2].integer == 5);
    CHECK(args[3].integer == 33);
    CHECK(fused.bytes_moved == 2.0 * 165 * 4);  // one read and one write of the matrix

    auto clustered = softmax("fused");
    clustered.policy = with_row_policy(clustered, [](family::rows::policy& t) { t.cluster = 4; });  // the fake runs any plan
    f.run(clustered);
    CHECK(f.gpu.last_grid == 5 * 4);  // a cluster of blocks per row

    const auto separate = f.run(softmax("separate"));
    CHECK(separate.status == report::outcome::pass);
    REQUIRE(separate.kernels.size() == 4);
    // Each kernel reads what holds x (165 floats) and writes an array or a row value (5 floats);
    // the maps read a row value too.
    CHECK(separate.bytes_moved == (165 + 5) * 4.0 + (165 + 5 + 165) * 4.0 + (165 + 5) * 4.0 + (165 + 5 + 165) * 4.0);
}

TEST_CASE("row kernels: an online sum's buffer is bound after its max's; a streamed row counts once per pass; a shared one asks for its row of shared memory") {
    fixture f;
    auto online = softmax("separate");
    online.stages[2].online_with = 0;  // as "formula": "online" pairs them
    const auto separate = f.run(online);
    CHECK(separate.status == report::outcome::pass);
    REQUIRE(separate.kernels.size() == 3);
    // The max's kernel reads x and writes m and s; the maps as before.
    CHECK(separate.bytes_moved == (165 + 5 + 5) * 4.0 + (165 + 5 + 165) * 4.0 + (165 + 5 + 165) * 4.0);

    auto streamed = softmax("fused");
    streamed.policy = with_row_policy(streamed, [](family::rows::policy& t) { t.cache = family::rows::row_cache::none; });
    CHECK(f.run(streamed).bytes_moved == (3 + 1) * 165 * 4.0);  // max, sum and store each read the row
    streamed.stages[2].online_with = 0;
    CHECK(f.run(streamed).bytes_moved == (2 + 1) * 165 * 4.0);  // one read fewer

    auto in_shared = softmax("fused");
    in_shared.policy = with_row_policy(in_shared, [](family::rows::policy& t) { t.cache = family::rows::row_cache::shared; });
    CHECK(f.run(in_shared).bytes_moved == 2 * 165 * 4.0);  // read once, into shared memory
    CHECK(f.gpu.last_launch.shared_bytes == 9 * 16);  // a row: 33 floats touch 9 vectors of 4 at most
}

TEST_CASE("row kernels that loop over the rows: grid \"resident\" is SMs × blocks per SM, a given grid as given, at most one block per row") {
    fixture f;  // 4 SMs × 8 resident blocks
    auto p = softmax("fused", 100);
    p.launch.grid_resident = true;  // set after validation, as the parser would
    CHECK(f.run(p).status == report::outcome::pass);
    CHECK(f.gpu.last_grid == 32);
    p.launch.grid_resident = false;
    p.launch.grid = 7;
    f.run(p);
    CHECK(f.gpu.last_grid == 7);
    p.launch.grid = 1000;
    const auto rec = f.run(p);
    CHECK(f.gpu.last_grid == 100);
    CHECK(rec.config.at("grid") == 1000);
}

TEST_CASE("row kernels on a warp per row: a block per 4 rows (the last one's spare warps idle), a loop as many blocks at most") {
    fixture f;
    auto p = softmax("fused", 101, "warp");
    CHECK(p.launch.block == 128);
    CHECK(f.run(p).status == report::outcome::pass);
    CHECK(f.gpu.last_grid == 26);
    CHECK(f.gpu.last_block == 128);
    p.launch.grid = 1000;
    f.run(p);
    CHECK(f.gpu.last_grid == 26);
    p.launch.grid = std::nullopt;
    p.policy = with_row_policy(p, [](family::rows::policy& t) { t.cache = family::rows::row_cache::shared; });
    f.run(p);
    CHECK(f.gpu.last_launch.shared_bytes == 4 * 9 * 16);  // a row a warp: 33 floats touch 9 vectors of 4 at most
}

TEST_CASE("row kernels: a wrong element is named by its row and column") {
    fixture f;
    f.gpu.after_launch = [](const std::string&, const std::vector<std::vector<unsigned char>*>& b, const run::kernel_launch&) {
        floats(b.back())[2 * 33 + 7] *= 1.01f;
    };
    const auto rec = f.run(softmax("fused"));
    CHECK(rec.status == report::outcome::fail);
    CHECK(rec.check->mismatches == 1);
    CHECK(rec.check->first_bad.find("element 73 (row 2, col 7): logits=") == 0);
}

TEST_CASE("a per-column input is allocated, copied and counted at its own size") {
    fixture f;
    auto doc = config::load_document(kjit::testing::config_path("rmsnorm.json"));
    doc.json["shape"] = {5, 33};
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    std::vector<std::size_t> sizes;
    f.gpu.after_launch = [&](const std::string&, const std::vector<std::vector<unsigned char>*>& b, const run::kernel_launch&) {
        if (sizes.empty())
            for (const auto* buffer : b) sizes.push_back(buffer->size());
    };
    const auto rec = f.run(family::load(doc));
    // activations (165 floats), weight (33, per column), out (165)
    CHECK(sizes == std::vector<std::size_t>{165 * 4, 33 * 4, 165 * 4});
    CHECK(rec.bytes_moved == (165 + 33 + 165) * 4.0);
}

TEST_CASE("the fake runs any family's program as its plan says: each shipped kind of pipeline verifies") {
    struct variant {
        const char* config;
        json edit;
    };
    const std::vector<variant> variants{
        {"seed_vectorize.json", {{"n", 1001}}},
        {"bias_gelu.json", {{"n", 1001}, {"fusion", "separate"}}},
        {"softmax.json", {{"shape", {3, 40}}, {"fusion", "separate"}}},
        {"layernorm.json", {{"shape", {3, 40}}}},
        {"row_sum.json", {{"shape", {3, 40}}, {"fusion", "separate"}}},
        {"transpose.json", {{"shape", {6, 10}}, {"dtype", "bfloat16"}}},
        {"transpose.json",
         {{"shape", {6, 10}},
          {"inputs", {{"a", {{"fill", "uniform"}}}, {"b", {{"fill", "normal"}}}}},
          {"stages", json::array({{{"op", "map"}, {"expr", "x * 3 + b"}, {"input", "a"}},
                                  {{"op", "transpose"}},
                                  {{"op", "map"}, {"expr", "x - b"}}})}}},
        // 2 × 4 heads of 17 queries over 2 heads of 23 keys, head dim 32
        {"attention_causal.json",
         {{"shape", {2 * 4 * 17, 32}},
          {"inputs", {{"k", {{"shape", {2 * 2 * 23, 32}}}}, {"v", {{"shape", {2 * 2 * 23, 32}}}}}},
          {"stages", json::array({{{"op", "attention"}, {"input", "q"}, {"keys", "k"}, {"values", "v"}, {"batch", 2},
                                   {"heads", 4}, {"kv_heads", 2}, {"score", "col > row + 5 ? -inf : x"}}})}}},
        // with documents: the causal mask of each document, ids sorted in each batch
        {"attention_causal.json",
         {{"shape", {2 * 4 * 23, 32}},
          {"inputs",
           {{"k", {{"shape", {2 * 2 * 23, 32}}}},
            {"v", {{"shape", {2 * 2 * 23, 32}}}},
            {"doc", {{"fill", "uniform"}, {"low", 0}, {"high", 3}, {"round", "floor"}, {"sorted", true}, {"shape", {2, 23}}}}}},
          {"stages", json::array({{{"op", "attention"}, {"input", "q"}, {"keys", "k"}, {"values", "v"}, {"batch", 2},
                                   {"heads", 4}, {"kv_heads", 2}, {"score", "col > row || doc[row] != doc[col] ? -inf : x"}}})}}},
        // decoding: 2 × 4 heads of one query over 2 heads of 1000 keys, the keys split among 4
        // blocks (auto) whose last share is masked whole, with an epilogue the join applies
        {"attention_decode.json",
         {{"shape", {2 * 4, 32}},
          {"inputs", {{"k", {{"shape", {2 * 2 * 1000, 32}}}}, {"v", {{"shape", {2 * 2 * 1000, 32}}}}}},
          {"stages", json::array({{{"op", "attention"}, {"input", "q"}, {"keys", "k"}, {"values", "v"}, {"batch", 2},
                                   {"heads", 4}, {"kv_heads", 2}, {"score", "col > 700 ? -inf : x"}},
                                  {{"op", "map"}, {"expr", "x * 3 - 1"}}})}}},
        // and with an output gate as its epilogue
        {"attention_gated.json",
         {{"shape", {2 * 4 * 17, 32}},
          {"inputs", {{"k", {{"shape", {2 * 2 * 23, 32}}}}, {"v", {{"shape", {2 * 2 * 23, 32}}}}}},
          {"stages", json::array({{{"op", "attention"}, {"input", "q"}, {"keys", "k"}, {"values", "v"}, {"batch", 2},
                                   {"heads", 4}, {"kv_heads", 2}},
                                  {{"op", "map"}, {"expr", "x * sigmoid(gate)"}}})}}},
    };
    for (const auto& v : variants) {
        CAPTURE(v.config);
        CAPTURE(v.edit.dump());
        auto doc = config::load_document(kjit::testing::config_path(v.config));
        doc.json.erase("sweep");
        if (doc.json.contains("shape") && v.edit.contains("n")) doc.json.erase("shape");
        doc.json.merge_patch(v.edit);
        doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
        fixture f;
        const auto rec = f.run(family::load(doc));
        CHECK(rec.status == report::outcome::pass);
        CHECK(rec.check->nan_count == 0);
    }
}

TEST_CASE("a scalar goes to its kernel in the compute type, in the plan's place among the arguments") {
    fixture f;
    auto doc = config::load_document(kjit::testing::config_path("leaky_relu_expr.json"));
    doc.json.erase("sweep");
    doc.json["n"] = 100;
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    for (const char* dtype : {"float32", "float64"}) {
        CAPTURE(dtype);
        doc.json["dtype"] = dtype;
        const auto p = family::load(doc);
        CHECK(f.run(p).status == report::outcome::pass);
        const family::program program = family::plan(p, f.templates);
        const auto& planned = program.kernels.back().args;
        const auto& bound = f.gpu.last_launch.args;
        REQUIRE(bound.size() == planned.size());
        for (std::size_t i = 0; i < planned.size(); ++i) {
            using type = run::argument_value::type;
            if (planned[i].what != family::argument::kind::scalar) continue;
            CHECK(bound[i].what == (std::string(dtype) == "float64" ? type::f64 : type::f32));
            CHECK(bound[i].number == config::find_scalar(p, planned[i].name)->value);
        }
    }
}
