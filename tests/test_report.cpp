// Records, their flat columns, the JSON and CSV writers and where they write, the terminal table,
// units, statistics.
#include <sys/stat.h>
#include <zlib.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "helpers.hpp"
#include "report/files.hpp"
#include "report/table.hpp"
#include "report/trace.hpp"
#include "run/stats.hpp"
#include "util/units.hpp"

using namespace kjit;

namespace {
report::record sample_run() {
    report::record r;
    r.command = "run";
    r.name = "hidden_layer";
    r.variant = "fused float32 tanh=builtin block=256 vec=4";
    r.config = {{"n", 1000000}, {"dtype", "float32"}, {"fusion", "fused"}};
    r.cache_status = "hit";
    r.set(report::phase::driver_init, 150);
    r.set(report::phase::module_load, 0.04);
    r.kernel_cold = run::summarize({0.010, 0.008, 0.009});
    r.kernel_batch = run::summarize({0.006});
    r.bytes_moved = 12e6;
    r.check = report::check_row{true, 0, 0, 0, 0, 1e-7, 2e-7, 2, 4e-6, 0, 1.2e-7, 1000, 1000, ""};
    r.status = report::outcome::pass;
    r.error = "a, \"quoted\"\nline";
    return r;
}
}  // namespace

TEST_CASE("compile and run records have the same columns, in the same order") {
    report::record compile;
    compile.command = "compile";
    const auto a = report::flatten(compile), b = report::flatten(sample_run());
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].first == b[i].first);
    std::vector<std::string> names;
    for (const auto& [name, value] : a) names.push_back(name);
    for (const char* expected : {"schema_version", "cache", "nvrtc_ms", "ptx_to_cubin_ms", "module_load_ms",
                                 "first_launch_ms", "kernel_cold_median_ms", "kernel_batch_median_ms",
                                 "effective_gbps", "max_ulp_error", "nan_count", "status"})
        CHECK(std::find(names.begin(), names.end(), expected) != names.end());
}

TEST_CASE("the status column spells each outcome and reads back; an unknown one is not a success") {
    for (const auto o : {report::outcome::compiled, report::outcome::pass, report::outcome::fail, report::outcome::error})
        CHECK(report::parse_outcome(report::to_string(o)) == o);
    CHECK(std::string(report::to_string(report::outcome::pass)) == "PASS");
    CHECK_FALSE(report::parse_outcome("pass"));
    CHECK(report::succeeded(report::row{{"status", "ok"}}));
    CHECK(report::succeeded(report::row{{"status", "PASS"}}));
    CHECK_FALSE(report::succeeded(report::row{{"status", "FAIL"}}));
    CHECK_FALSE(report::succeeded(report::row{{"status", "error"}}));
    CHECK_FALSE(report::succeeded(report::row{{"status", "passed"}}));
    CHECK_FALSE(report::succeeded(report::row{{"status", 1}}));
    CHECK_FALSE(report::succeeded(report::row::object()));
}

TEST_CASE("derived figures: effective bandwidth from the cold median") {
    const auto r = sample_run();
    REQUIRE(r.effective_bytes_per_s().has_value());
    CHECK(*r.effective_bytes_per_s() == doctest::Approx(12e6 / 9e-6));
}

TEST_CASE("the roofline: under the memory roof at low intensity, under the compute ceiling at high") {
    auto r = sample_run();  // 12 MB in a 9 µs cold median
    CHECK_FALSE(r.roofline().has_value());  // no copy ceiling measured
    r.copy_ceiling_bytes_per_s = 4e12;
    const auto no_flops = r.roofline();  // a copy: how near the copy ceiling it ran
    REQUIRE(no_flops.has_value());
    CHECK(no_flops->memory_bound);
    CHECK(no_flops->fraction == doctest::Approx(12e6 / 9e-6 / 4e12));
    r.flops = 24e6;  // 2 flops per byte
    r.flops_unit = "fma";
    CHECK_FALSE(r.roofline().has_value());  // flops, and no compute ceiling for them
    r.flops_ceiling_per_s = 60e12;
    const auto low = r.roofline();
    REQUIRE(low.has_value());
    CHECK(low->intensity == doctest::Approx(2));
    CHECK(low->memory_bound);                                 // 2 × 4 TB/s = 8 TFLOP/s < 60
    CHECK(low->roof_flops_per_s == doctest::Approx(8e12));
    CHECK(low->fraction == doctest::Approx(24e6 / 9e-6 / 8e12));
    r.flops = 24e9;  // 2000 flops per byte: above the ridge (15 flops per byte)
    const auto high = r.roofline();
    CHECK_FALSE(high->memory_bound);
    CHECK(high->roof_flops_per_s == 60e12);
    const auto row = report::rows_of({r}).front();
    CHECK(row.at("roof_bound") == "compute");
    CHECK(row.at("percent_of_roof").get<double>() == doctest::Approx(100 * 24e9 / 9e-6 / 60e12));
    CHECK(row.at("arithmetic_intensity").get<double>() == doctest::Approx(2000));
}

TEST_CASE("JSON is a list of flat objects that parses back") {
    const auto parsed = nlohmann::json::parse(report::to_json(report::rows_of({sample_run(), sample_run()})));
    REQUIRE(parsed.is_array());
    REQUIRE(parsed.size() == 2);
    CHECK(parsed[0]["cache"] == "hit");
    CHECK(parsed[0]["kernel_cold_median_ms"] == doctest::Approx(0.009));
    CHECK(parsed[0]["nvrtc_ms"].is_null());  // a hit ran no NVRTC
    CHECK(parsed[0]["status"] == "PASS");
}

TEST_CASE("CSV: one header, one row per record, quoting where needed") {
    const std::string csv = report::to_csv(report::rows_of({sample_run()}));
    std::istringstream lines(csv);
    std::string header, row;
    std::getline(lines, header);
    CHECK(header.rfind("schema_version,command,", 0) == 0);
    CHECK(csv.find("\"a, \"\"quoted\"\"\nline\"") != std::string::npos);
    CHECK(std::count(header.begin(), header.end(), ',') + 1 == static_cast<long>(report::flatten(sample_run()).size()));
}

TEST_CASE("the table shows each phase, the kernel statistics and the check") {
    std::ostringstream out;
    report::print_record(out, sample_run());
    const std::string text = out.str();
    CHECK(text.find("CUDA driver init (cuInit)") != std::string::npos);
    CHECK(text.find("150 ms") != std::string::npos);
    CHECK(text.find("40.0 µs") != std::string::npos);
    CHECK(text.find("cold: L2 flushed") != std::string::npos);
    CHECK(text.find("9.00 µs") != std::string::npos);
    CHECK(text.find("PASS") != std::string::npos);
    CHECK(text.find("NVRTC: C++") == std::string::npos);  // phases that did not happen are not shown
}

TEST_CASE("summary marks the fastest passing variant") {
    auto slow = sample_run();
    slow.kernel_cold = run::summarize({1.0});
    slow.variant = "slow one";
    auto failed = sample_run();
    failed.kernel_cold = run::summarize({0.001});  // the fastest, but it failed: it must not be marked
    failed.status = report::outcome::fail;
    failed.variant = "failed one";
    std::ostringstream out;
    report::print_summary(out, report::rows_of({slow, sample_run(), failed}));
    const std::string text = out.str();
    const auto star = text.find("* ");
    REQUIRE(star != std::string::npos);
    const std::string marked = text.substr(star, text.find('\n', star) - star);
    CHECK(marked.find("fused float32") != std::string::npos);
    CHECK(marked.find("failed one") == std::string::npos);
    CHECK(text.find("per call") == std::string::npos);  // no point measured calls with copies
}

TEST_CASE("summary: a per-call column (copies included) where a point measured calls") {
    auto with_copies = sample_run();
    with_copies.per_call = report::per_call_times{run::summarize({1.5}), run::summarize({0.02}), run::summarize({0.9}),
                                                  run::summarize({2.84}), 7, 2.8e7};
    std::ostringstream out;
    report::print_summary(out, report::rows_of({with_copies, sample_run()}));
    const std::string text = out.str();
    CHECK(text.find("per call") != std::string::npos);
    CHECK(text.find("2.84 ms") != std::string::npos);
}

TEST_CASE("units are chosen per value") {
    CHECK(units::duration_ms(0.0081) == "8.10 µs");
    CHECK(units::duration_ms(1234) == "1.23 s");
    CHECK(units::duration_ms(45.6) == "45.6 ms");
    CHECK(units::bytes(1536) == "1.50 KiB");
    CHECK(units::byte_rate(4.1e12) == "4.10 TB/s");
}

TEST_CASE("the median's relative error: from the spread around the median, not moved by a few outliers") {
    CHECK(run::median_relative_error({}) == 0);
    CHECK(run::median_relative_error({5.0}) == 0);
    CHECK(run::median_relative_error({2, 2, 2, 2}) == 0);
    // median 10, absolute deviations 0,1,1,2,2 → MAD 1; 1.2533 · 1.4826 · 1 / √5 / 10
    CHECK(run::median_relative_error({10, 9, 11, 8, 12}) == doctest::Approx(1.2533 * 1.4826 / std::sqrt(5.0) / 10));
    std::vector<double> with_outliers(100, 10.0);
    for (std::size_t i = 0; i < with_outliers.size(); i += 2) with_outliers[i] = 10.1;
    const double clean = run::median_relative_error(with_outliers);
    with_outliers[1] = 1e6;
    with_outliers[3] = 1e6;
    CHECK(run::median_relative_error(with_outliers) == doctest::Approx(clean).epsilon(0.2));
    std::vector<double> more = with_outliers;
    more.insert(more.end(), with_outliers.begin(), with_outliers.end());
    CHECK(run::median_relative_error(more) < run::median_relative_error(with_outliers));  // shrinks as 1/√n
}

TEST_CASE("state warnings: clocks that moved more than 2 %, slowdown reasons named, nothing without NVML") {
    CHECK(run::state_warnings({}, {}).empty());
    report::device_state a, b;
    a.sm_clock_mhz = 1980;
    b.sm_clock_mhz = 1960;  // 1 %: boost noise, not a warning
    a.memory_clock_mhz = 2619;
    b.memory_clock_mhz = 1593;
    a.clock_limits = 0x1 | 0x2 | 0x10 | 0x100;  // idle, application clocks, sync boost, display: no slowdowns
    b.clock_limits = 0x20 | 0x40 | 0x8 | 0x80;
    const auto warnings = run::state_warnings(a, b);
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0] == "memory clock moved from 2619 to 1593 MHz during the timed loops");
    CHECK(warnings[1] == "clocks held down (hardware slowdown, thermal (software), thermal (hardware), power brake "
                         "(hardware)) after the timed loops");
    CHECK(report::slowdown_names(0x4) == "power cap");
    CHECK(report::slowdown_names(0x1).empty());
}

TEST_CASE("statistics: median, spread, and the empty case") {
    const auto s = run::summarize({5, 1, 3, 2, 4});
    CHECK(s.median == 3);
    CHECK(s.min == 1);
    CHECK(s.max == 5);
    CHECK(s.mean == 3);
    CHECK(s.stdev == doctest::Approx(1.5811388));
    CHECK(run::summarize({1, 2}).median == 1.5);
    CHECK(run::summarize({}).count == 0);
}

TEST_CASE("grid size: one pass when it fits, else what is resident; explicit wins") {
    CHECK(run::grid_size(1000000, 256, 4, std::nullopt, 132 * 8) == 977);
    CHECK(run::grid_size(1LL << 28, 256, 4, std::nullopt, 132 * 8) == 1056);
    CHECK(run::grid_size(1, 256, 4, std::nullopt, 1056) == 1);
    CHECK(run::grid_size(1000, 128, 1, 7, 1056) == 7);
    CHECK(run::grid_size(1025, 256, 4, std::nullopt, 0) == 2);  // 257 vector-or-tail items
}

TEST_CASE("output files: regular files atomically, links kept, devices and pipes written in place") {
    kjit::testing::temp_dir dir;
    const auto target = dir.path() / "target.json", link = dir.path() / "link.json";
    std::filesystem::create_symlink(target, link);  // dangling until written
    fs::write_output(link, "one");
    CHECK(std::filesystem::is_symlink(link));
    CHECK(fs::read_file(target) == "one");
    fs::write_output(link, "two");
    CHECK(fs::read_file(target) == "two");
    const auto fifo = dir.path() / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::string received;
    std::thread reader([&] { received = fs::read_file(fifo); });
    fs::write_output(fifo, "through a pipe");
    reader.join();
    CHECK(received == "through a pipe");
    CHECK(std::filesystem::is_fifo(fifo));  // not replaced by a regular file
    fs::write_output("/dev/null", "discarded");
    CHECK(std::filesystem::is_character_file("/dev/null"));
}

TEST_CASE("output paths are checked before any work") {
    const auto readme = std::string(KJIT_SOURCE_DIR) + "/README.md";
    CHECK(kjit::testing::error_message([&] { fs::check_output_path(readme + "/x.json", "--json"); }, error_kind::usage)
              .find("--json " + readme + "/x.json: its directory") == 0);
    CHECK(kjit::testing::error_message([&] { fs::check_output_path(KJIT_SOURCE_DIR, "--csv"); }, error_kind::usage)
              .find("is a directory") != std::string::npos);
    CHECK_NOTHROW(fs::check_output_path("-", "--json"));
    CHECK_NOTHROW(fs::check_output_path("/dev/null", "--json"));
    const auto same = kjit::testing::kjit_cli({"emit", "--json", "/tmp/x.json"});
    CHECK(same.status == exit_status::usage);  // emit takes no --json
    kjit::testing::temp_dir dir;
    const auto both = kjit::testing::kjit_cli({"merge", (dir.path() / "in.json").string(), "--json",
                                               (dir.path() / "o").string(), "--csv", (dir.path() / "o").string()});
    CHECK(both.status == exit_status::usage);
    CHECK(both.err.find("name the same file") != std::string::npos);
}

TEST_CASE("merge input: a record with a wrong-typed column is a usage error naming the file, record and column") {
    kjit::testing::temp_dir dir;
    const auto file = dir.path() / "in.json";
    const auto with = [&](const std::string& column, const nlohmann::json& value) {
        auto rows = report::rows_of({sample_run()});
        rows[0][column] = value;
        std::ofstream(file) << report::to_json(rows);
        return kjit::testing::error_message([&] { (void)report::read_rows(file); }, error_kind::usage);
    };
    CHECK(with("status", 5) == file.string() + ": record 0: status: expected a string, got 5");
    CHECK(with("kernel_cold_median_ms", "fast").find("kernel_cold_median_ms: expected a number") != std::string::npos);
    CHECK(with("sweep_index", 1e300).find("sweep_index: expected an integer in 0..999999, got 1e+300") !=
          std::string::npos);
    CHECK(with("sweep_index", -1).find("sweep_index: expected an integer") != std::string::npos);
    auto rows = report::rows_of({sample_run()});
    std::ofstream(file) << report::to_json(rows);
    CHECK(report::read_rows(file).size() == 1);
}

TEST_CASE("print_change: the variant, the kernel time with its Δ, the error, and phases that ran in only one") {
    report::record before, after;
    before.variant = "fused float32 tanh=builtin block=256 vec=4";
    after.variant = "fused float32 tanh=builtin block=128 vec=4";
    before.kernel_cold = report::sample_stats{50, 0.010, 0.009, 0.011, 0.010, 0};
    after.kernel_cold = report::sample_stats{50, 0.011, 0.010, 0.012, 0.011, 0};
    before.check = report::check_row{};
    before.check->max_ulp_error = 1.5;
    after.check = before.check;
    before.status = after.status = report::outcome::pass;
    before.set(report::phase::host_reference, 30);
    after.set(report::phase::nvrtc, 33.5);
    std::ostringstream out;
    report::print_change(out, before, after);
    const std::string text = out.str();
    CHECK(text.find("block=256 vec=4\n          → fused float32 tanh=builtin block=128") != std::string::npos);
    CHECK(text.find("10.0 µs → 11.0 µs (+10.0 %, cold median)") != std::string::npos);
    CHECK(text.find("max 1.5 → 1.5 ulp, PASS → PASS") != std::string::npos);
    CHECK(text.find("ran now  nvrtc 33.5 ms") != std::string::npos);
    CHECK(text.find("skipped  host_reference (cached or reused)") != std::string::npos);
}

TEST_CASE("trace: spans nest on their thread, carry their args, and come out as Chrome trace events") {
    trace::start_collecting();
    trace::name_thread("main");
    double outer_ms = 0;
    {
        trace::span outer("test outer");
        {
            trace::span inner("test inner", {{"point", 3}});
            inner.note("samples", 50);
        }
        std::jthread worker([] {
            trace::name_thread("worker 1");
            trace::span on_worker("test on worker");
        });
        worker.join();
        outer_ms = outer.end();
        CHECK(outer.end() == outer_ms);  // ends once
    }
    const auto json = trace::to_json();
    std::map<std::string, nlohmann::json> by_name;
    std::set<std::string> thread_names;
    for (const auto& e : json.at("traceEvents")) {
        if (e.at("ph") == "M" && e.at("name") == "thread_name") thread_names.insert(e.at("args").at("name"));
        if (e.at("ph") == "X") by_name[e.at("name")] = e;
    }
    REQUIRE(by_name.count("test outer") == 1);
    const auto& outer = by_name["test outer"];
    const auto& inner = by_name["test inner"];
    const auto& worker = by_name["test on worker"];
    CHECK(outer.at("dur").get<double>() == doctest::Approx(outer_ms * 1000).epsilon(0.01));
    CHECK(inner.at("ts").get<double>() >= outer.at("ts").get<double>());
    CHECK(inner.at("ts").get<double>() + inner.at("dur").get<double>() <=
          outer.at("ts").get<double>() + outer.at("dur").get<double>());
    CHECK(inner.at("args") == nlohmann::json{{"point", 3}, {"samples", 50}});
    CHECK(inner.at("tid") == outer.at("tid"));
    CHECK(worker.at("tid") != outer.at("tid"));
    CHECK(thread_names.count("main") == 1);
    CHECK(thread_names.count("worker 1") == 1);
}

TEST_CASE("a record's policy, params and sweep axes are columns of their own; registers_max is null when unknown") {
    report::record r = sample_run();
    r.policy = {{"tile", 64}, {"vector_width", 4}};
    r.params = {{"k", 2.5}};
    r.sweep_values = {{"launch.tile", 64}};
    r.kernels = {{"a"}, {"b"}};
    r.kernels[0].registers = 30;
    r.kernels[1].registers = 41;
    const report::row row = report::rows_of({r}).front();
    CHECK(row.at("policy_tile") == 64);
    CHECK(row.at("policy_vector_width") == 4);
    CHECK(row.at("param_k") == 2.5);
    CHECK(row.at("sweep_launch.tile") == 64);
    CHECK(row.at("registers") == "30;41");
    CHECK(row.at("registers_max") == 41);
    CHECK(report::rows_of({sample_run()}).front().at("registers_max").is_null());
}

TEST_CASE("CSV of rows whose columns differ: the header has every column, a missing cell is empty") {
    report::record a = sample_run(), b = sample_run();
    a.error = b.error = "";  // no quoted cells: the lines split at every comma
    b.params = {{"s2_alpha", 0.01}};  // a sweep point whose op has a number the others lack
    std::vector<std::vector<std::string>> lines;
    std::istringstream in(report::to_csv(report::rows_of({a, b})));
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> cells{""};
        for (char c : line) {
            if (c == ',') cells.emplace_back();
            else cells.back().push_back(c);
        }
        lines.push_back(cells);
    }
    REQUIRE(lines.size() == 3);
    const auto at = std::find(lines[0].begin(), lines[0].end(), "param_s2_alpha") - lines[0].begin();
    REQUIRE(at < static_cast<long>(lines[0].size()));
    CHECK(lines[1].size() == lines[0].size());
    CHECK(lines[2].size() == lines[0].size());
    CHECK(lines[1][static_cast<std::size_t>(at)].empty());
    CHECK(lines[2][static_cast<std::size_t>(at)] == "0.01");
}

TEST_CASE("an atomic write keeps the replaced file's permissions and leaves no temp file") {
    kjit::testing::temp_dir dir;
    const auto path = dir.path() / "private.json";
    fs::write_output(path, "old");
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    fs::write_output(path, "new");
    CHECK(fs::read_file(path) == "new");
    CHECK(std::filesystem::status(path).permissions() ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));  // still 0600
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
    CHECK(entries == 1);  // no temp file left beside it
}

TEST_CASE("outputs are distinct files, and none is a file kjit reads") {
    kjit::testing::temp_dir dir;
    const auto config = dir.path() / "c.json", other = dir.path() / "r.json";
    std::ofstream(config) << "{}";
    const auto refused = [&](std::vector<std::pair<std::string, std::string>> outputs) {
        return kjit::testing::error_message([&] { fs::check_distinct_outputs(outputs, {config}); }, error_kind::usage);
    };
    CHECK(refused({{"--json", config.string()}}) ==
          "--json " + config.string() + ": is " + config.string() + ", which kjit reads; results go to a file of their own");
    const std::string dotted = (dir.path() / "." / "r.json").string();
    CHECK(refused({{"--json", other.string()}, {"--trace", dotted}}) ==
          "--json and --trace name the same file " + dotted + ": one would overwrite the other");
    std::filesystem::create_symlink(config, dir.path() / "link.json");
    CHECK(refused({{"--csv", (dir.path() / "link.json").string()}}).find("which kjit reads") != std::string::npos);
    CHECK_NOTHROW(fs::check_distinct_outputs({{"--json", "-"}, {"--csv", "-"}, {"--trace", ""}, {"--json", other.string()}}, {config}));
}

TEST_CASE("merge reads only what a result can be: a record nested 100,000 deep is refused, not followed") {
    kjit::testing::temp_dir dir;
    const auto path = dir.path() / "deep.json";
    std::ofstream(path) << "[{\"schema_version\": \"1.5.0\", \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}]";
    const std::string deep = kjit::testing::error_message([&] { (void)report::read_rows(path); }, error_kind::config);
    CHECK(deep.find(path.string() + ": [0].x") == 0);
    CHECK(deep.find(": nested deeper than 64 levels") != std::string::npos);
}

TEST_CASE("kjit's JSON texts: a regular file of at most 64 MiB, at most 4096 keys an object, read in one reader") {
    kjit::testing::temp_dir dir;
    // Not regular: refused before it is opened (/dev/zero would be read until memory runs out, a
    // FIFO would wait for ever).
    REQUIRE(::mkfifo((dir.path() / "fifo").c_str(), 0600) == 0);
    for (const std::filesystem::path& endless : {std::filesystem::path("/dev/zero"), dir.path() / "fifo"}) {
        CAPTURE(endless);
        CHECK(kjit::testing::error_message([&] { (void)fs::read_text_file(endless); }, error_kind::io) ==
              endless.string() + ": not a regular file (a JSON text is read from a file)");
        CHECK(kjit::testing::kjit_cli({"merge", endless.string()}).status == exit_status::usage);
        CHECK(kjit::testing::kjit_cli({"emit", endless.string()}).status == exit_status::usage);
    }
    const auto big = dir.path() / "big.json";
    std::ofstream(big) << "[";
    std::filesystem::resize_file(big, fs::k_max_text_bytes + 1);
    CHECK(kjit::testing::error_message([&] { (void)fs::read_text_file(big); }, error_kind::io).find("bytes; a JSON text kjit reads is at most 64 MiB") !=
          std::string::npos);
    // An object of 40,000 keys (params) is refused as it is read, not searched for seconds.
    std::string wide = "{\"params\": {";
    for (int i = 0; i < 40000; ++i) wide += (i ? ", \"p" : "\"p") + std::to_string(i) + "\": 1";
    wide += "}}";
    CHECK(kjit::testing::error_message([&] { (void)config::parse_document(wide, "wide.json"); }, error_kind::config) ==
          "wide.json: params.p4096: more than 4096 keys in one object");
}

namespace {
/// `text` gzip-compressed, as `gzip` writes it.
std::string gzipped(const std::string& text) {
    z_stream stream{};
    REQUIRE(deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    std::string out(deflateBound(&stream, text.size()), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    stream.avail_in = static_cast<uInt>(text.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    REQUIRE(deflate(&stream, Z_FINISH) == Z_STREAM_END);
    out.resize(stream.total_out);
    deflateEnd(&stream);
    return out;
}
}  // namespace

TEST_CASE("results kept as .json.gz are read as they are: merge, --resume, --replay; damaged or expanding past 64 MiB, one line") {
    kjit::testing::temp_dir dir;
    const auto plain = std::filesystem::path(KJIT_SOURCE_DIR) / "bench/results/2026-12-02-h200-tune/tune_softmax.exhaustive.json";
    const std::string text = fs::read_file(plain);
    const auto packed = dir.path() / "tune.json.gz";
    std::ofstream(packed, std::ios::binary) << gzipped(text);
    CHECK(fs::read_text_file(packed) == text);
    const auto replayed = kjit::testing::kjit_cli({"tune", kjit::testing::config_path("tune_softmax.json"), "--replay", packed.string()});
    CHECK(replayed.status == exit_status::ok);
    CHECK(replayed.out.find("replayed 1 seed(s)") != std::string::npos);
    // A sweep's records: merge reads them compressed, and they are the same rows.
    const auto records = dir.path() / "rows.json";
    report::write_json(records.string(), {{{"schema_version", "1.10.0"}, {"sweep_index", 0}, {"status", "PASS"}}});
    std::ofstream(dir.path() / "rows.json.gz", std::ios::binary) << gzipped(fs::read_file(records));
    CHECK(report::read_rows(dir.path() / "rows.json.gz") == report::read_rows(records));
    const auto merged = kjit::testing::kjit_cli({"merge", (dir.path() / "rows.json.gz").string()});
    CHECK(merged.status == exit_status::ok);
    // Cut short, damaged, or a small file that would expand past the limit: refused, one line.
    const std::string whole = gzipped(text);
    std::ofstream(dir.path() / "cut.json.gz", std::ios::binary) << whole.substr(0, whole.size() / 2);
    CHECK(kjit::testing::error_message([&] { (void)fs::read_text_file(dir.path() / "cut.json.gz"); }, error_kind::io)
              .ends_with("cut.json.gz: a gzip stream cut short"));
    std::string damaged = whole;
    damaged[12] = static_cast<char>(~damaged[12]);
    std::ofstream(dir.path() / "damaged.json.gz", std::ios::binary) << damaged;
    CHECK(kjit::testing::error_message([&] { (void)fs::read_text_file(dir.path() / "damaged.json.gz"); }, error_kind::io)
              .find("damaged.json.gz: a damaged gzip stream (") != std::string::npos);
    std::ofstream(dir.path() / "bomb.json.gz", std::ios::binary) << gzipped(std::string(fs::k_max_text_bytes + 1, ' '));
    CHECK(std::filesystem::file_size(dir.path() / "bomb.json.gz") < (1u << 20));
    CHECK(kjit::testing::error_message([&] { (void)fs::read_text_file(dir.path() / "bomb.json.gz"); }, error_kind::io)
              .ends_with("bomb.json.gz: expands past 64 MiB; a JSON text kjit reads is at most that"));
}

TEST_CASE("CSV cells a spreadsheet would run are quoted as text; a merged row's control characters are escaped on the terminal") {
    std::vector<report::row> rows{report::row{{"sweep_point", "=HYPERLINK(\"x\")"}, {"error", "@SUM(1)"}, {"n", -5},
                                              {"status", "ok"}, {"variant", "+1"}}};
    const std::string csv = report::to_csv(rows);
    CHECK(csv.find("\"'=HYPERLINK(\"\"x\"\")\"") != std::string::npos);
    CHECK(csv.find("\"'@SUM(1)\"") != std::string::npos);
    CHECK(csv.find(",-5,") != std::string::npos);  // a number stays a number
    CHECK(csv.find("\"'+1\"") != std::string::npos);
    std::ostringstream out;
    report::print_summary(out, {report::row{{"sweep_point", "a\x1b[2Jb"}, {"status", "FAIL\a"}, {"error", "x\x07y\nsecond"}}});
    CHECK(out.str().find('\x1b') == std::string::npos);
    CHECK(out.str().find('\a') == std::string::npos);
    CHECK(out.str().find("a\\x1b[2Jb") != std::string::npos);
    CHECK(out.str().find("x\\x07y") != std::string::npos);
    CHECK(out.str().find("second") == std::string::npos);  // one line per row
}

TEST_CASE("a scratch directory is private, unguessable and gone with its object") {
    std::filesystem::path seen;
    {
        const fs::temp_directory one("kjit-test"), two("kjit-test");
        seen = one.path();
        CHECK(one.path() != two.path());
        CHECK(std::filesystem::status(one.path()).permissions() == std::filesystem::perms::owner_all);  // 0700
        CHECK(one.path().filename().string().size() == std::string("kjit-test-").size() + 16);
    }
    CHECK_FALSE(std::filesystem::exists(seen));
}
