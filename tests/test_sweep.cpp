// Sweeps: sharding, device lists, parallel compile vs serial, running points over several (fake)
// devices, failures recorded per point, merge, and the progress bar's silence off a terminal.
#include <algorithm>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <cmath>
#include <fstream>
#include <sstream>

#include "cli/cli.hpp"
#include "fake_gpu.hpp"
#include "helpers.hpp"
#include "report/files.hpp"
#include "report/progress.hpp"
#include "util/interrupt.hpp"
#include "run/sweep.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {
std::vector<config::sweep_point> points_of(json sweep, long long n = 4099) {
    auto doc = kjit::testing::default_document();
    doc.json["n"] = n;
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 2}};
    doc.json["sweep"] = std::move(sweep);
    return family::expand_sweep(doc);
}

thread_local bool device_open_on_this_thread = false;

const json k_small_sweep = {{"fusion", {"fused", "separate"}}, {"launch.block", {128, 256, 512}}};

}  // namespace

TEST_CASE("shards cover every point exactly once") {
    auto doc = kjit::testing::default_document();
    doc.json["sweep"] = k_small_sweep;
    const auto points = family::expand_sweep(doc);
    REQUIRE(points.size() == 6);
    for (std::size_t count : {1u, 2u, 4u, 7u}) {
        std::vector<int> seen(points.size(), 0);
        for (std::size_t k = 0; k < count; ++k)
            for (const auto& p : family::expand_sweep(doc, std::nullopt, run::shard{k, count}.indices(points.size()))) {
                CHECK(p.label == points[p.index].label);
                ++seen[p.index];
            }
        CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
    }
    // A cluster worker's batch: the points asked for, in the order asked.
    const auto batch = family::expand_sweep(doc, std::nullopt, std::vector<std::size_t>{5, 0, 3});
    REQUIRE(batch.size() == 3);
    CHECK(batch[0].index == 5);
    CHECK(batch[0].label == points[5].label);
    CHECK(batch[2].label == points[3].label);
    CHECK(run::parse_shard("1/4").index == 1);
    CHECK(run::parse_shard("1/4").count == 4);
    for (const char* bad : {"4/4", "1", "a/b", "0/0", "99999999999999999999/1"})
        kjit::testing::error_message([&] { (void)run::parse_shard(bad); }, error_kind::usage);
}

TEST_CASE("device lists") {
    std::string many = "0";
    for (int i = 0; i < 50000; ++i) many += ",0";  // once a stack overflow inside std::regex
    kjit::testing::error_message([&] { (void)run::parse_devices(many, 2); }, error_kind::usage);
    kjit::testing::error_message([&] { (void)run::parse_devices("99999999999", 2); }, error_kind::usage);
    CHECK(run::parse_devices("all", 2) == std::vector<int>{0, 1});
    CHECK(run::parse_devices("1,0,1", 2) == std::vector<int>{1, 0});
    kjit::testing::error_message([] { (void)run::parse_devices("2", 2); }, error_kind::usage);
    kjit::testing::error_message([] { (void)run::parse_devices("0;1", 2); }, error_kind::usage);
}

TEST_CASE("parallel compile makes the same cache entries as serial, compiling each source once") {
    const auto points = points_of({{"dtype", {"float32", "float64"}}, {"stages[2].formula", {"builtin", "exp"}},
                                   {"launch.block", {128, 256}}});
    const auto templates = codegen::template_set::embedded();
    kjit::testing::temp_dir serial_dir, parallel_dir;
    jit::disk_cache serial(serial_dir.path()), parallel(parallel_dir.path());
    const auto one = run::compile_points(points, 90, {templates, &serial, jit::cache_mode::use}, 1);
    const auto four = run::compile_points(points, 90, {templates, &parallel, jit::cache_mode::use}, 4);
    CHECK(one.distinct == 4);  // block size does not change the source
    CHECK(one.compiled == 4);
    CHECK(four.compiled == 4);
    CHECK(four.threads == 4);
    auto keys = [](const jit::disk_cache& c) {
        std::vector<std::string> k;
        for (const auto& e : c.list()) k.push_back(e.key);
        std::sort(k.begin(), k.end());
        return k;
    };
    REQUIRE(keys(serial) == keys(parallel));
    for (const auto& key : keys(serial)) {
        CHECK(serial.lookup(key).entry.ptx == parallel.lookup(key).entry.ptx);
        CHECK(serial.lookup(key).entry.cubin == parallel.lookup(key).entry.cubin);
    }
    // A second pass finds everything in the cache; its progress is said all the same: the
    // distinct sources first, then each as it is built.
    std::vector<std::pair<std::size_t, std::size_t>> seen;
    const auto again = run::compile_points(points, 90, {templates, &parallel, jit::cache_mode::use}, 4,
                                           [&](std::size_t done, std::size_t total, const std::string&) { seen.emplace_back(done, total); });
    CHECK(again.compiled == 0);
    REQUIRE(seen.size() == 5);
    for (std::size_t k = 0; k < seen.size(); ++k) CHECK(seen[k] == std::pair<std::size_t, std::size_t>{k, 4});
}

TEST_CASE("points spread over two devices: one record each, each on one device, first compile reported once") {
    // Host data made in line by each worker, or ahead on two threads and shared by both devices.
    for (const std::size_t host_threads : {std::size_t{0}, std::size_t{2}}) {
        CAPTURE(host_threads);
        const auto points = points_of(k_small_sweep);
        const auto templates = codegen::template_set::embedded();
        kjit::testing::temp_dir dir;
        jit::disk_cache cache(dir.path());
        run::prebuilt_binaries prebuilt;
        const run::build_context ctx{templates, &cache, jit::cache_mode::use, &prebuilt};
        (void)run::compile_points(points, 90, ctx, 2);
        std::atomic<int> opened{0}, allocated{0}, released{0};
        const run::gpu_factory open = [&](int index, report::record& startup) -> std::unique_ptr<run::gpu> {
            ++opened;
            device_open_on_this_thread = true;
            startup.set(report::phase::context, 1.0);
            auto gpu = std::make_unique<kjit::testing::fake_gpu>(index);
            gpu->on_launch = kjit::testing::plan_executor(points);
            gpu->on_close = [&](const kjit::testing::fake_gpu& g) {
                allocated += static_cast<int>(std::count(g.calls.begin(), g.calls.end(), "allocate"));
                released += g.released;
            };
            return gpu;
        };
        std::atomic<std::size_t> steps{0};
        std::atomic<int> waited{0}, waited_before_open{0};
        const auto builds_ready = [&] {  // each worker, with its own device open
            ++waited;
            if (!device_open_on_this_thread) ++waited_before_open;
        };
        const auto records = run::run_points(points, "test", {0, 1}, open, ctx, host_threads,
                                             [&](const report::record&) { ++steps; }, builds_ready);
        CHECK(opened == 2);
        CHECK(waited == 2);
        CHECK(waited_before_open == 0);
        CHECK(steps == points.size());
        REQUIRE(records.size() == points.size());
        std::size_t compiled = 0, with_context = 0, with_inputs = 0, with_reference = 0, copied = 0;
        for (std::size_t i = 0; i < records.size(); ++i) {
            CHECK(records[i].sweep_index == i);
            CHECK(records[i].status == report::outcome::pass);
            CHECK((records[i].device_index == 0 || records[i].device_index == 1));
            compiled += records[i].get(report::phase::nvrtc).has_value();
            with_context += records[i].get(report::phase::context).has_value();
            with_inputs += records[i].get(report::phase::host_inputs).has_value();
            with_reference += records[i].get(report::phase::host_reference).has_value();
            copied += records[i].get(report::phase::h2d).has_value();
        }
        if (host_threads == 0) {
            CHECK(with_inputs <= 2);       // every point shares n, dtype and inputs: made once per device
            CHECK(copied == with_inputs);  // and copied to each device once, kept there for the next points
        } else {
            CHECK(with_inputs == 1);     // made once, ahead, for both devices
            CHECK(with_reference == 2);  // fused and separate round differently: two references
            CHECK(copied <= 2);          // still one copy per device
        }
        CHECK(allocated == released);  // the kept copies too are freed when a worker ends
        CHECK(compiled == 2);      // fused and separate: each source's compile shows once
        CHECK(with_context == 2);  // each device's start-up shows once
    }
}

TEST_CASE("a failing point is recorded and the sweep goes on") {
    const auto points = points_of({{"compile.options", {json::array(), json::array({"-Dvec=1"})}}});
    const auto templates = codegen::template_set::embedded();
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    const run::build_context ctx{templates, &cache, jit::cache_mode::use, nullptr};
    const run::gpu_factory open = [&](int index, report::record&) -> std::unique_ptr<run::gpu> {
        auto gpu = std::make_unique<kjit::testing::fake_gpu>(index);
        gpu->on_launch = kjit::testing::plan_executor(points);
        return gpu;
    };
    const auto records = run::run_points(points, "test", {0}, open, ctx, 1, nullptr);
    REQUIRE(records.size() == 2);
    INFO(records[0].error);
    CHECK(records[0].status == report::outcome::pass);
    CHECK(records[1].status == report::outcome::error);
    CHECK(records[1].error.find("NVRTC failed") != std::string::npos);

    const run::gpu_factory broken = [](int, report::record&) -> std::unique_ptr<run::gpu> {
        throw error(error_kind::driver, "cuDevicePrimaryCtxRetain failed: CUDA_ERROR_OUT_OF_MEMORY");
    };
    const auto none = run::run_points(points, "test", {0}, broken, ctx, 1, nullptr);
    CHECK(none[0].status == report::outcome::error);
    CHECK(none[0].error.find("no device could run it: device 0: cuDevicePrimaryCtxRetain") != std::string::npos);
}

TEST_CASE("Ctrl-C during a sweep: no further point starts, and what ran is marked partial") {
    const auto points = points_of({{"launch.block", {32, 64, 128, 256, 512, 1024}}});
    const auto templates = codegen::template_set::embedded();
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    const run::build_context ctx{templates, &cache, jit::cache_mode::use, nullptr};
    const run::gpu_factory open = [&](int index, report::record&) -> std::unique_ptr<run::gpu> {
        auto gpu = std::make_unique<kjit::testing::fake_gpu>(index);
        gpu->on_launch = kjit::testing::plan_executor(points);
        return gpu;
    };
    int finished = 0;
    const auto records = run::run_points(points, "test", {0}, open, ctx, 1, [&](const report::record&) {
        if (++finished == 2) set_interrupted(true);  // the signal arrives as the second point ends
    });
    set_interrupted(false);
    REQUIRE(records.size() == 2);  // no further point started
    CHECK(records[0].partial);
    CHECK(records[1].status == report::outcome::pass);
    CHECK(records[1].sweep_index == 1);
    CHECK(report::rows_of(records)[0]["partial"] == true);
}

TEST_CASE("kjit sweep stopped by SIGINT exits 130 and writes what it has, if anything") {
    kjit::testing::temp_dir dir;
    const std::string json_path = (dir.path() / "out.json").string(), log = (dir.path() / "log").string();
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ::dup2(err, STDERR_FILENO);
        ::execl(KJIT_BINARY, KJIT_BINARY, "sweep", (std::string(KJIT_SOURCE_DIR) + "/configs/activations.json").c_str(),
                "--compile-only", "--quiet", "--jobs", "1", "--cache-dir", (dir.path() / "cache").c_str(), "--json",
                json_path.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    // Mid-compile: the signal comes once the first of the 48 sources is stored. A fixed 1.5 s was
    // the whole sweep's length on CI's machine.
    const jit::disk_cache watched(dir.path() / "cache");
    REQUIRE_MESSAGE(kjit::testing::runs_when_ready(child, [&] { return !watched.list().empty(); }),
                    "the sweep ended before the signal");
    REQUIRE(::kill(child, SIGINT) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    // What finished is written, marked partial; if nothing had, no file is written at all.
    if (std::filesystem::exists(json_path)) {
        const auto rows = report::read_rows(json_path);
        CHECK(rows.size() < 48);
        for (const auto& r : rows) CHECK(r["partial"] == true);
    } else {
        CHECK(fs::read_file(log).find("interrupted before any point finished; no file was written") != std::string::npos);
    }
    CHECK(jit::disk_cache(dir.path() / "cache").leftovers().empty());
}

TEST_CASE("progress: silent off a terminal and when disabled") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    CHECK_FALSE(report::progress_wanted(fds[1], false));
    ::close(fds[0]);
    ::close(fds[1]);
    std::ostringstream out;
    report::progress_bar off(out, 10, false);
    off.step("x");
    off.finish();
    CHECK(out.str().empty());
    report::progress_bar on(out, 2, true);
    on.step("point a");
    CHECK(out.str().find("1/2") != std::string::npos);
    CHECK(out.str().find("ETA") != std::string::npos);
    // A stage starts its count afresh, named: a sweep's compiles, then its runs.
    on.stage("compile", 5);
    on.step("source a");
    CHECK(out.str().ends_with("] 1/5    0 s, ETA   0 s  source a"));
    CHECK(out.str().find("\r\033[Kcompile [") != std::string::npos);
    on.stage("run", 3);
    on.step("point b");
    CHECK(out.str().find("\r\033[Krun [") != std::string::npos);
    CHECK(out.str().find("] 1/3 ") != std::string::npos);
    // A bar whose count is known only when its first stage starts (tune --dry-run) still shows.
    std::ostringstream later;
    report::progress_bar unsized(later, 0, true);
    unsized.compiled(0, 2, "");  // a compile pool's first report opens its stage
    unsized.compiled(1, 2, "source a");
    CHECK(later.str().find("compile [") != std::string::npos);
    CHECK(later.str().ends_with("] 1/2    0 s, ETA   0 s  source a"));
}

TEST_CASE("kjit sweep --compile-only and kjit merge of shards give the same rows as one sweep") {
    kjit::testing::temp_dir dir;
    const std::string config = (dir.path() / "sweep.json").string();
    {
        auto doc = kjit::testing::default_document();
        doc.json["sweep"] = k_small_sweep;
        std::ofstream(config) << doc.json.dump();
    }
    const std::string cache = (dir.path() / "cache").string();
    const auto path = [&](const char* name) { return (dir.path() / name).string(); };
    REQUIRE(kjit::testing::kjit_cli({"sweep", config, "--compile-only", "--cache-dir", cache, "--json", path("all.json")}).status == exit_status::ok);
    for (const char* shard : {"0/2", "1/2"})
        REQUIRE(kjit::testing::kjit_cli({"sweep", config, "--compile-only", "--cache-dir", cache, "--shard", shard, "--json",
                          path(shard[0] == '0' ? "s0.json" : "s1.json")}).status == exit_status::ok);
    REQUIRE(kjit::testing::kjit_cli({"merge", path("s1.json"), path("s0.json"), "--json", path("merged.json"), "--csv", path("merged.csv")}).status ==
            exit_status::ok);
    const auto all = report::read_rows(path("all.json")), merged = report::read_rows(path("merged.json"));
    REQUIRE(all.size() == 6);
    REQUIRE(merged.size() == 6);
    for (std::size_t i = 0; i < all.size(); ++i) {
        CHECK(merged[i]["sweep_index"] == i);
        CHECK(merged[i]["sweep_point"] == all[i]["sweep_point"]);
        CHECK(merged[i]["cache_key"] == all[i]["cache_key"]);
    }
    // Merged twice, or with a shard left out: one warning each, naming the points.
    const auto twice = kjit::testing::kjit_cli({"merge", path("s1.json"), path("s0.json"), path("s0.json")});
    CHECK(twice.err == "kjit: warning: 3 sweep points (0, 2, 4) appear more than once: a file merged twice?\n");
    const auto half = kjit::testing::kjit_cli({"merge", path("s1.json")});
    CHECK(half.err == "kjit: warning: 3 sweep points (0, 2, 4) are missing before the last one: a shard left out (or points "
                      "the sweep's constraints skip)?\n");
    // --resume: an interrupted sweep's file (its first 4 rows) gets the points it lacks, and no more.
    {
        auto partial = report::read_rows(path("all.json"));
        partial.resize(4);
        for (auto& row : partial) row["partial"] = true;
        report::write_json(path("partial.json"), partial);
    }
    const auto resumed = kjit::testing::kjit_cli({"sweep", config, "--compile-only", "--cache-dir", cache, "--resume",
                                                  path("partial.json"), "--json", path("partial.json")});
    REQUIRE(resumed.status == exit_status::ok);
    CHECK(resumed.out.find("2 points (and 4 finished before, from") != std::string::npos);
    const auto whole = report::read_rows(path("partial.json"));
    REQUIRE(whole.size() == 6);
    for (std::size_t i = 0; i < whole.size(); ++i) {
        CHECK(whole[i]["sweep_point"] == all[i]["sweep_point"]);
        CHECK(whole[i]["partial"] == false);
    }
    // A file of another sweep is refused, naming the point that differs.
    const auto other = kjit::testing::kjit_cli({"sweep", config, "--compile-only", "--set", "sweep.dtype=[\"float64\"]",
                                                "--resume", path("s1.json")});
    CHECK(other.status == exit_status::usage);
    CHECK(other.err.find("(a file of another config?)") != std::string::npos);
    // Constraints: the points they refuse are skipped, said once in the summary.
    const auto constrained = kjit::testing::kjit_cli({"sweep", config, "--compile-only", "--cache-dir", cache, "--set",
                                                      "sweep.constraints=[\"block != 256\"]", "--json", path("constrained.json")});
    REQUIRE(constrained.status == exit_status::ok);
    CHECK(constrained.out.find("4 points (the constraints skip 2 of the sweep's 6)") != std::string::npos);
    CHECK(report::read_rows(path("constrained.json")).size() == 4);
    const std::string csv = fs::read_file(path("merged.csv"));
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 7);
    CHECK(kjit::testing::kjit_cli({"merge", config}).status == exit_status::usage);  // not a results file
}

TEST_CASE("kjit cache export / import: a fresh cache folder serves a whole sweep with no compile") {
    kjit::testing::temp_dir dir;
    const auto path = [&](const char* name) { return (dir.path() / name).string(); };
    {
        auto doc = kjit::testing::default_document();
        doc.json["sweep"] = k_small_sweep;  // 6 points, 2 distinct sources
        doc.json["dtype"] = "bfloat16";     // toolkit headers: the key must not hold their folder
        std::ofstream(path("sweep.json")) << doc.json.dump();
    }
    const auto sweep = [&](const char* cache, const char* rows) {
        const auto done = kjit::testing::kjit_cli({"sweep", path("sweep.json"), "--compile-only", "--cache-dir", path(cache), "--json", path(rows)});
        REQUIRE(done.status == exit_status::ok);
        return done.out;
    };
    CHECK(sweep("first", "first.json").find("2 distinct sources, 2 compiled") != std::string::npos);
    REQUIRE(kjit::testing::kjit_cli({"cache", "export", path("cache.kjit"), "--cache-dir", path("first")}).status == exit_status::ok);
    const auto imported = kjit::testing::kjit_cli({"cache", "import", path("cache.kjit"), "--cache-dir", path("fresh")});
    CHECK(imported.out.find("added 2 entries") != std::string::npos);
    CHECK(sweep("fresh", "fresh.json").find("2 distinct sources, 0 compiled") != std::string::npos);
    for (const auto& row : report::read_rows(path("fresh.json"))) CHECK(row["cache"] == "hit");
}

TEST_CASE("--no-cache and --refresh: a sweep compiles each distinct source once, and its other points share it") {
    for (const auto mode : {jit::cache_mode::off, jit::cache_mode::refresh}) {
        CAPTURE(static_cast<int>(mode));
        const auto points = points_of(k_small_sweep);  // 6 points, 2 sources
        const auto templates = codegen::template_set::embedded();
        kjit::testing::temp_dir dir;
        jit::disk_cache cache(dir.path());
        run::prebuilt_binaries prebuilt;
        const run::build_context ctx{templates, &cache, mode, &prebuilt};
        CHECK(run::compile_points(points, 90, ctx, 2).compiled == 2);
        const run::gpu_factory open = [&](int index, report::record&) -> std::unique_ptr<run::gpu> {
            auto gpu = std::make_unique<kjit::testing::fake_gpu>(index);
            gpu->on_launch = kjit::testing::plan_executor(points);
            return gpu;
        };
        const auto records = run::run_points(points, "test", {0}, open, ctx, 0, nullptr);
        std::size_t compiled = 0;
        for (const auto& r : records) {
            CHECK(r.status == report::outcome::pass);
            compiled += r.get(report::phase::nvrtc).has_value();
        }
        CHECK(compiled == 2);  // the first point of each source reports its compile; no point compiles again
    }
}
