// The session: what every command sets up (templates, the bounded cache, GPUs from a provider)
// and its three paths — compile, run, sweep — driven with fake GPUs, as the CLI drives them with
// the Driver API. Needs NVRTC, not a GPU.
#include "fake_gpu.hpp"
#include "helpers.hpp"
#include "report/trace.hpp"
#include "run/session.hpp"
#include "util/npy.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {
config::pipeline small() {
    return kjit::testing::pipeline_with([](json& j) {
        j["n"] = 1000;
        j["measure"] = {{"warmup", 1}, {"repeat", 3}};
    });
}

/// Fake GPUs that run the kernels of `runs` (pipelines or sweep points) as their plans say.
template <class Runs>
std::unique_ptr<kjit::testing::fake_provider> fake_gpus(const Runs& runs, int count = 1) {
    auto gpus = std::make_unique<kjit::testing::fake_provider>();
    gpus->count = count;
    gpus->setup = [executor = kjit::testing::plan_executor(runs)](kjit::testing::fake_gpu& g) { g.on_launch = executor; };
    return gpus;
}
}  // namespace

TEST_CASE("session compile: a miss, then a hit; with the cache off nothing is stored") {
    kjit::testing::temp_dir dir;
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, nullptr);
    CHECK(s.compile(small(), "test").cache_status == "miss");
    const auto again = s.compile(small(), "test");
    CHECK(again.cache_status == "hit");
    CHECK(again.status == report::outcome::compiled);
    CHECK(again.arch == "sm_90");

    kjit::testing::temp_dir other;
    run::session off({"", other.path().string(), std::nullopt, jit::cache_mode::off}, nullptr);
    CHECK(off.compile(small(), "test").cache_status == "off");
    CHECK(off.cache().list().empty());
    CHECK_FALSE(off.finish());
}

TEST_CASE("session run: the copy and FMA ceilings measured once per device and driver, kept in the cache") {
    kjit::testing::temp_dir dir;
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use},
                   fake_gpus(std::vector<config::pipeline>{small()}));
    const auto first = s.run(small(), "test", {.device = 0, .calls = 1}).front();
    CHECK(first.status == report::outcome::pass);
    CHECK(first.flops_unit == "fma");
    CHECK(first.flops > 0);
    REQUIRE(first.flops_ceiling_per_s.has_value());
    REQUIRE(first.copy_ceiling_bytes_per_s.has_value());
    const auto file = dir.path() / "ceilings" / "Fake_GPU-driver13000.json";
    const auto kept = nlohmann::json::parse(fs::read_file(file));
    CHECK(kept.at("fma_flops_per_s").get<double>() == *first.flops_ceiling_per_s);
    CHECK(kept.at("copy_bytes_per_s").get<double>() == *first.copy_ceiling_bytes_per_s);
    CHECK_FALSE(kept.contains("tensor_core_flops_per_s"));  // no tensor-core variant ran
    fs::write_file_atomic(file, nlohmann::json{{"copy_bytes_per_s", 1e12}, {"fma_flops_per_s", 5e13}}.dump());
    const auto second = s.run(small(), "test", {.device = 0, .calls = 1}).front();
    CHECK(second.flops_ceiling_per_s == 5e13);  // read, not measured again
    CHECK(second.copy_ceiling_bytes_per_s == 1e12);
}

TEST_CASE("session run: one record per call, start-up on the first only, each seen as it is made") {
    kjit::testing::temp_dir dir;
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use},
                   fake_gpus(std::vector<config::pipeline>{small()}));
    std::vector<int> seen;
    const auto records = s.run(small(), "test", {.device = 0, .calls = 3, .copy_ceiling = false},
                               [&](const report::record& r) { seen.push_back(r.call_index.value_or(0)); });
    REQUIRE(records.size() == 3);
    CHECK(seen == std::vector<int>{1, 2, 3});
    for (const auto& r : records) CHECK(r.status == report::outcome::pass);
    CHECK(records[0].get(report::phase::driver_init) == 100);
    CHECK(records[0].get(report::phase::context) == 50);
    CHECK_FALSE(records[1].get(report::phase::context));
    CHECK(records[0].cache_status == "miss");
    CHECK(records[1].cache_status == "hit");
    // The first call's compile and host data were made while the device opened, and say so.
    for (auto p : {report::phase::nvrtc, report::phase::host_inputs, report::phase::host_reference})
        CHECK(records[0].get(p).has_value());
    CHECK(records[0].overlapped_ms.has_value());
    CHECK(*records[0].overlapped_ms >= 0);
    CHECK_FALSE(records[1].overlapped_ms.has_value());
    CHECK(records[1].get(report::phase::host_reference).has_value());  // later calls check again

    const auto no_such = [&] { (void)s.run(small(), "test", {.device = 3, .calls = 1, .copy_ceiling = false}); };
    CHECK_THROWS_WITH_AS(no_such(), "--device 3: there are 1 GPU(s)", error);
}

TEST_CASE("session run: the process's setup ends where the driver was first asked (cuInit is CUDA start-up's)") {
    trace::mark_main_entered();
    kjit::testing::temp_dir dir;
    auto gpus = fake_gpus(std::vector<config::pipeline>{small()});
    gpus->probe_time = std::chrono::milliseconds(200);
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, std::move(gpus));
    REQUIRE(s.target_if_any(0).has_value());  // as the command resolves a config for its device
    const auto record = s.run(small(), "test", {.device = 0, .calls = 1, .copy_ceiling = false}).front();
    REQUIRE(record.get(report::phase::setup).has_value());
    CHECK(*record.get(report::phase::setup) < 150);
}

TEST_CASE("session run without a GPU: one driver error that says why and what works instead") {
    kjit::testing::temp_dir dir;
    auto none = std::make_unique<kjit::testing::fake_provider>();
    none->why_not = "no_device: the CUDA driver sees no GPU";
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, std::move(none));
    const std::string message = kjit::testing::error_message([&] { (void)s.run(small(), "test", {}); }, error_kind::driver);
    CHECK(message == "no GPU to run on (no_device: the CUDA driver sees no GPU); `kjit compile` works without one");
    const auto points = family::expand_sweep(kjit::testing::default_document());
    CHECK(kjit::testing::error_message([&] { (void)s.sweep(points, "test", {}); }, error_kind::driver)
              .find("`kjit sweep --compile-only` works without one") != std::string::npos);
    CHECK(s.sweep(points, "test", {.compile_only = true}).records.at(0).status == report::outcome::compiled);
}

TEST_CASE("session sweep over two fake GPUs: every point once, in order, start-up once per device") {
    kjit::testing::temp_dir dir;
    auto doc = kjit::testing::default_document();
    doc.json["n"] = 1000;
    doc.json["measure"] = {{"warmup", 0}, {"repeat", 2}};
    doc.json["sweep"] = {{"launch.block", {64, 128, 256}}, {"fusion", {"fused", "separate"}}};
    const auto points = family::expand_sweep(doc);
    auto gpus = fake_gpus(points, 2);
    auto* provider = gpus.get();
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, std::move(gpus));
    int steps = 0;
    const auto result = s.sweep(points, "test", {.devices = "all", .jobs = 2}, [&](const report::record&) { ++steps; });
    CHECK(steps == 6);
    REQUIRE(result.records.size() == 6);
    for (std::size_t i = 0; i < result.records.size(); ++i) {
        CAPTURE(result.records[i].error);
        CHECK(result.records[i].sweep_index == i);
        CHECK(result.records[i].status == report::outcome::pass);
    }
    CHECK(result.compiled.distinct == 2);  // the block size is a launch setting, not in the source
    CHECK(provider->opened == 2);
    int with_driver_init = 0, with_context = 0;
    for (const auto& r : result.records) {
        with_driver_init += r.get(report::phase::driver_init).has_value();
        with_context += r.get(report::phase::context).has_value();
    }
    CHECK(with_driver_init == 1);
    CHECK(with_context == 2);
}

TEST_CASE("session finish prunes the cache to its limit once something was stored") {
    kjit::testing::temp_dir dir;
    {
        run::session unbounded({"", dir.path().string(), 0, jit::cache_mode::use}, nullptr);
        (void)unbounded.compile(small(), "test");
        (void)unbounded.compile(kjit::testing::pipeline_with([](json& j) { j["dtype"] = "float64"; }), "test");
        CHECK_FALSE(unbounded.finish());
        CHECK(unbounded.cache().list().size() == 2);
    }
    run::session bounded({"", dir.path().string(), 1, jit::cache_mode::use}, nullptr);
    (void)bounded.compile(small(), "test");  // a hit stores nothing: nothing to prune
    CHECK_FALSE(bounded.finish());
    CHECK(bounded.cache().list().size() == 2);
    (void)bounded.compile(kjit::testing::pipeline_with([](json& j) { j["dtype"] = "float16"; }), "test");
    CHECK_FALSE(bounded.finish());
    CHECK(bounded.cache().list().empty());  // one byte holds no entry
}

TEST_CASE("a sweep makes each distinct set of inputs and reference once, whatever axis varies fastest") {
    kjit::testing::temp_dir dir;
    auto doc = kjit::testing::default_document();
    doc.json["measure"] = {{"warmup", 0}, {"repeat", 2}};
    // n varies fastest: points in order would change inputs and reference at every step.
    doc.json["sweep"] = {{"launch.block", {64, 128, 256}}, {"n", {1000, 2000}}};
    const auto points = family::expand_sweep(doc);
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, fake_gpus(points));
    for (const std::optional<int> host_threads : {std::optional<int>{}, std::optional<int>{0}, std::optional<int>{1}}) {
        CAPTURE(host_threads.value_or(-1));
        const auto result = s.sweep(points, "test", {.host_threads = host_threads});
        REQUIRE(result.records.size() == 6);
        int inputs_made = 0, references_made = 0;
        for (std::size_t i = 0; i < result.records.size(); ++i) {
            const auto& r = result.records[i];
            CHECK(r.sweep_index == i);  // records stay in point order
            CHECK(r.status == report::outcome::pass);
            inputs_made += r.get(report::phase::host_inputs).has_value();
            references_made += r.get(report::phase::host_reference).has_value();
        }
        CHECK(inputs_made == 2);
        CHECK(references_made == 2);
    }
}

TEST_CASE("a sweep group whose host data cannot be made fails its points with the reason; the others run") {
    kjit::testing::temp_dir dir;
    auto doc = kjit::testing::default_document();
    doc.json["measure"] = {{"warmup", 0}, {"repeat", 2}};
    doc.json["sweep"] = {{"n", {2000, 1099511627776}}, {"launch.block", {128, 256}}};  // 2^40 is made first
    const auto points = family::expand_sweep(doc);
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, fake_gpus(points));
    for (const int host_threads : {0, 1}) {
        CAPTURE(host_threads);
        const auto result = s.sweep(points, "test", {.host_threads = host_threads});
        REQUIRE(result.records.size() == 4);
        for (const auto& r : result.records) {
            CAPTURE(r.sweep_point);
            if (r.config["n"] == 2000) {
                CHECK(r.status == report::outcome::pass);
            } else {
                CHECK(r.status == report::outcome::error);
                CHECK(r.error.find("needs 28.0 TiB of host memory") != std::string::npos);
            }
        }
    }
}

TEST_CASE("session watch: one GPU for every save, host data kept while it fits, a bad edit reported and skipped") {
    kjit::testing::temp_dir dir;
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use},
                   fake_gpus(std::vector<config::pipeline>{small()}));
    auto fast = small();
    fast.compile.fast_math = true;  // another binary, the same inputs and reference
    auto broken = small();
    broken.compile.options = {"--no-such-option"};
    std::vector<config::pipeline> saves{small(), fast, broken, small()};
    std::size_t served = 0;
    std::vector<report::record> records;
    std::vector<std::string> failures;
    s.watch({.device = 0, .copy_ceiling = false},
            [&]() -> std::optional<run::watch_step> {
                if (served == saves.size()) return std::nullopt;
                return run::watch_step{saves[served++], "test", false};
            },
            [&](const report::record& r) { records.push_back(r); },
            [&](const error& e) { failures.emplace_back(e.what()); });
    REQUIRE(records.size() == 3);
    REQUIRE(failures.size() == 1);
    CHECK(failures[0].find("--no-such-option") != std::string::npos);
    for (const auto& r : records) CHECK(r.status == report::outcome::pass);
    CHECK(records[0].get(report::phase::context).has_value());  // opened once
    CHECK_FALSE(records[1].get(report::phase::context).has_value());
    CHECK(records[0].get(report::phase::host_reference).has_value());
    CHECK_FALSE(records[1].get(report::phase::host_inputs).has_value());  // kept across the edit
    CHECK_FALSE(records[1].get(report::phase::host_reference).has_value());
    CHECK(records[1].cache_status == "miss");
    CHECK(records[2].cache_status == "hit");  // back to the first variant: no compile
    CHECK_FALSE(records[2].get(report::phase::nvrtc).has_value());
}

TEST_CASE("session run --save: the checked output and its reference as .npy, shaped as the result") {
    kjit::testing::temp_dir dir;
    const auto p = kjit::testing::pipeline_with([](json& j) {
        j.erase("n");
        j["shape"] = {20, 50};
        j["measure"] = {{"warmup", 1}, {"repeat", 3}};
    });
    run::session s({"", (dir.path() / "cache").string(), std::nullopt, jit::cache_mode::use},
                   fake_gpus(std::vector<config::pipeline>{p}));
    const run::save_request save{(dir.path() / "saved").string(), true};
    const auto records = s.run(p, "test", {.device = 0, .calls = 2, .copy_ceiling = false, .save = save});
    REQUIRE(records[0].saved.size() == 2);  // the first call's: output and reference
    CHECK(records[1].saved.empty());
    const std::string stem = (dir.path() / "saved" / "hidden_layer.fused_float32_tanh=builtin_block=256_vec=4").string();
    CHECK(records[0].saved == std::vector<std::string>{stem + ".npy", stem + ".reference.npy"});
    const auto out = npy::read_header(stem + ".npy"), ref = npy::read_header(stem + ".reference.npy");
    CHECK(out.type->name == "float32");
    CHECK(ref.type->name == "float64");
    CHECK(out.shape == std::vector<long long>{20, 50});
    const std::string values = npy::read_data(stem + ".npy", out), expected = npy::read_data(stem + ".reference.npy", ref);
    const auto* v = reinterpret_cast<const unsigned char*>(values.data());
    const auto* e = reinterpret_cast<const unsigned char*>(expected.data());
    for (std::size_t i = 0; i < 1000; ++i) CHECK(out.type->get(v, i) == doctest::Approx(ref.type->get(e, i)).epsilon(1e-5));
}

TEST_CASE("measure.transfers per_call: each kernel's arrays copied in before it and its result out after, timed apart") {
    for (const char* fusion : {"separate", "fused"}) {
        CAPTURE(fusion);
        const auto p = kjit::testing::pipeline_with([&](json& j) {
            j["n"] = 1000;
            j["fusion"] = fusion;
            j["measure"] = {{"warmup", 1}, {"repeat", 4}, {"transfers", "per_call"}};
        });
        kjit::testing::temp_dir dir;
        run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use},
                       fake_gpus(std::vector<config::pipeline>{p}));
        const auto rec = s.run(p, "test", {.device = 0, .calls = 1, .copy_ceiling = false}).front();
        CHECK(rec.status == report::outcome::pass);
        REQUIRE(rec.per_call.has_value());
        // The seed's three @vectorize calls: greyscales in, normalized out; normalized and weights
        // in, weighted out; weighted in, result out. Fused: the two inputs in, the result out.
        CHECK(rec.per_call->copies == (std::string(fusion) == "separate" ? 7 : 3));
        CHECK(rec.per_call->bytes == rec.per_call->copies * 4000.0);
        CHECK(rec.per_call->total.count == 4);
        CHECK(rec.per_call->total.median >= rec.per_call->kernels.median);
    }
    // Without it, nothing of the kind is measured.
    kjit::testing::temp_dir dir;
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, fake_gpus(std::vector<config::pipeline>{small()}));
    CHECK_FALSE(s.run(small(), "test", {.device = 0, .calls = 1, .copy_ceiling = false}).front().per_call);
}

TEST_CASE("session watch: an input file saved again is read again, and one left alone is not") {
    kjit::testing::temp_dir dir;
    const auto file = dir.path() / "a.npy";
    const auto save = [&](float value) {
        const std::vector<float> values(1000, value);
        fs::write_file_atomic(file, npy::encode(*npy::find_type("float32"), {1000},
                                                {reinterpret_cast<const char*>(values.data()), 4000}));
    };
    save(2);
    auto doc = kjit::testing::default_document();
    doc.json["n"] = 1000;
    doc.json["inputs"]["greyscales"] = {{"fill", "file"}, {"path", file.string()}};
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    const auto p = family::load(doc);
    run::session s({"", (dir.path() / "cache").string(), std::nullopt, jit::cache_mode::use},
                   fake_gpus(std::vector<config::pipeline>{p}));
    int served = 0;
    std::vector<report::record> records;
    s.watch({.device = 0, .copy_ceiling = false},
            [&]() -> std::optional<run::watch_step> {
                if (served == 3) return std::nullopt;
                if (served++ == 1) {  // the file saved with new values (and a later time, as an editor's save)
                    const auto before = std::filesystem::last_write_time(file);
                    save(7);
                    std::filesystem::last_write_time(file, before + std::chrono::seconds(1));
                }
                return run::watch_step{p, "test", false};
            },
            [&](const report::record& r) { records.push_back(r); }, [](const error& e) { FAIL(e.what()); });
    REQUIRE(records.size() == 3);
    for (const auto& r : records) CHECK(r.status == report::outcome::pass);  // checked against the values read
    CHECK(records[1].get(report::phase::host_inputs).has_value());  // the saved file, read again
    CHECK(records[1].get(report::phase::host_reference).has_value());
    CHECK_FALSE(records[2].get(report::phase::host_inputs).has_value());  // unchanged: kept
}

TEST_CASE("session run with keep_device: the next run on that device pays no start-up, and none a teardown") {
    kjit::testing::temp_dir dir;
    auto gpus = fake_gpus(std::vector<config::pipeline>{small()});
    auto* provider = gpus.get();
    std::shared_ptr<std::set<const void*>> pinned;  // the opened fake's, which outlives it
    provider->setup = [executor = std::move(provider->setup), &pinned](kjit::testing::fake_gpu& g) {
        executor(g);
        pinned = g.pinned;
    };
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, std::move(gpus));
    const run::run_request keep{.device = 0, .calls = 1, .copy_ceiling = false, .keep_device = true};
    const auto first = s.run(small(), "test", keep);
    const auto second = s.run(small(), "test", keep);
    CHECK(provider->opened == 1);
    CHECK(pinned->size() == 1);  // the kept result array
    REQUIRE(first.size() == 1);
    REQUIRE(second.size() == 1);
    CHECK(first[0].get(report::phase::context) == 50);
    CHECK_FALSE(second[0].get(report::phase::context));
    CHECK_FALSE(second[0].get(report::phase::driver_init));
    // Nor inputs, reference or their copy to the device: kept with the device, as they are unchanged.
    CHECK(first[0].get(report::phase::host_inputs).has_value());
    CHECK(first[0].get(report::phase::h2d).has_value());
    for (const auto kept : {report::phase::host_inputs, report::phase::host_reference, report::phase::h2d})
        CHECK_FALSE(second[0].get(kept).has_value());
    for (const auto* r : {&first[0], &second[0]}) {
        CHECK(r->status == report::outcome::pass);
        CHECK_FALSE(r->get(report::phase::teardown));
    }
    // Without it, as `kjit run` does: this run takes the kept device, then closes it and says what that cost.
    const auto last = s.run(small(), "test", {.device = 0, .calls = 1, .copy_ceiling = false});
    CHECK(provider->opened == 1);
    CHECK(pinned->empty());  // the kept result went, unpinned, with the run that keeps nothing
    CHECK(last[0].get(report::phase::teardown).has_value());
    CHECK(last[0].get(report::phase::host_inputs).has_value());
    (void)s.run(small(), "test", {.device = 0, .calls = 1, .copy_ceiling = false});
    CHECK(provider->opened == 2);
}
