// kjit first-call without a GPU: child processes, their environment and exit codes, the start
// states, aggregation and the plain-words explanation, and the real command in compile mode.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <set>

#include "helpers.hpp"
#include "report/files.hpp"
#include "run/first_call.hpp"

using namespace kjit;

TEST_CASE("run_child passes the environment, captures output and the exit code") {
    kjit::testing::temp_dir dir;
    const std::string log = (dir.path() / "out").string();
    const auto result = run::run_child("/bin/sh", {"-c", "echo \"$KJIT_PROBE\"; exit 3"}, {{"KJIT_PROBE", "hello"}}, log);
    CHECK(result.exit_code == 3);
    CHECK(result.wall_ms > 0);
    CHECK(fs::read_file(log) == "hello\n");
    kjit::testing::error_message([&] { (void)run::run_child("/nonexistent/kjit", {}, {}, log); }, error_kind::io);
}

TEST_CASE("start states: run children on a GPU, compile children without one") {
    const auto gpu = run::first_call_states(true);
    REQUIRE(gpu.size() == 5);
    CHECK(gpu[0].empty_cache);
    CHECK(gpu[1].args == std::vector<std::string>{"run", "--load", "ptx"});
    CHECK(gpu[1].env == std::vector<std::pair<std::string, std::string>>{{"CUDA_CACHE_DISABLE", "1"}});
    CHECK(gpu[2].warm_driver_cache);
    CHECK(gpu[4].take_call == 2);
    const auto cpu = run::first_call_states(false);
    REQUIRE(cpu.size() == 2);
    CHECK(cpu[0].args.front() == "compile");
    CHECK(run::warm_up_state(false).args.front() == "compile");
}

TEST_CASE("aggregation: median, min and max per state and column; the explanation adds up") {
    std::vector<report::row> rows;
    for (double wall : {100.0, 300.0, 200.0})
        rows.push_back({{"first_call_state", "cold"}, {"process_wall_ms", wall}, {"process_start_ms", 8.0},
                        {"setup_ms", 2.0}, {"driver_init_ms", 40.0}, {"context_ms", 10.0}, {"nvrtc_ms", wall / 10},
                        {"process_exit_ms", 4.0}, {"kernel_cold_median_ms", 0.01}, {"status", "PASS"}});
    rows.push_back({{"first_call_state", "second-call"}, {"nvrtc_ms", nullptr}, {"module_load_ms", 0.5},
                    {"first_launch_ms", 0.5}, {"status", "PASS"}});
    const auto summary = run::summarize_first_call(rows);
    REQUIRE(summary.size() == 2);
    CHECK(summary[0]["first_call_state"] == "cold");
    CHECK(summary[0]["repeats"] == 3);
    CHECK(summary[0]["process_wall_ms"] == 200.0);
    CHECK(summary[0]["process_wall_min_ms"] == 100.0);
    CHECK(summary[0]["process_wall_max_ms"] == 300.0);
    CHECK(summary[0]["nvrtc_ms"] == 20.0);
    CHECK_FALSE(summary[0].contains("kernel_cold_median_ms"));  // kernel statistics are not phases
    CHECK_FALSE(summary[1].contains("process_wall_ms"));
    const std::string text = run::explain_first_call(summary);
    CHECK(text.find("cold: 200 ms per process (median of 3): process start and setup 5 %, CUDA start-up and teardown "
                    "25 %, compile 10 %") != std::string::npos);
    CHECK(text.find("writing results and exit 2 %, the rest (between phases) 58 %") != std::string::npos);
    CHECK(text.find("second-call: 1 ms of phases, in a process already started") != std::string::npos);
}

TEST_CASE("the explanation counts work done during CUDA start-up once: its shares add up to the wall") {
    // 100 ms of a process: CUDA start-up 50, the compile 40 and then the host data 20 on another
    // thread, 45 of which ran while the driver started (the whole compile, then 5 of the host data).
    const std::vector<report::row> summary{{{"first_call_state", "cold"}, {"repeats", 1}, {"process_wall_ms", 100.0},
                                            {"driver_init_ms", 50.0}, {"nvrtc_ms", 40.0},
                                            {"host_inputs_ms", 20.0}, {"overlapped_ms", 45.0}}};
    const std::string text = run::explain_first_call(summary);
    CHECK(text.find("CUDA start-up and teardown 50 %, compile 0 % after CUDA start-up (40 % during it), kjit's own "
                    "checking and timing 15 % after CUDA start-up (5 % during it), the rest (between phases) 35 %") !=
          std::string::npos);
}

TEST_CASE("kjit first-call with no GPU: compile children, cold then warm, rows in JSON") {
    kjit::testing::temp_dir dir;
    const std::string json_file = (dir.path() / "fc.json").string();
    const std::string command = std::string("KJIT_LIBCUDA=/nonexistent ") + KJIT_BINARY +
                                " first-call --repeat 2 --json " + json_file + " --trace " +
                                (dir.path() / "trace.json").string() + " > " + (dir.path() / "out").string() + " 2>&1";
    REQUIRE(std::system(command.c_str()) == 0);
    const std::string out = fs::read_file(dir.path() / "out");
    CHECK(out.find("no GPU here") != std::string::npos);
    CHECK(out.find("compile-cold:") != std::string::npos);
    // The table's columns line up on the terminal: "PTX→cubin" and "µs" count as the columns they take.
    const auto header = out.find("  state");
    REQUIRE(header != std::string::npos);
    const std::string line = out.substr(header, out.find('\n', header) - header);
    std::size_t columns = 0;
    for (const unsigned char c : line.substr(0, line.find("first launch"))) columns += (c & 0xC0) != 0x80;
    CHECK(columns == 2 + 20 + 30 + 5 * 12);
    const auto rows = report::read_rows(json_file);
    REQUIRE(rows.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(rows[i]["first_call_state"] == (i < 2 ? "compile-cold" : "compile-warm"));
        CHECK(rows[i]["cache"] == (i < 2 ? "miss" : "hit"));
        CHECK(rows[i]["nvrtc_ms"].is_null() == (i >= 2));
        CHECK(rows[i]["process_wall_ms"].get<double>() > 0);
        // The parent passed its spawn time: the child's start before main is a phase of its own.
        CHECK(rows[i]["process_start_ms"].get<double>() > 0);
        CHECK(rows[i]["process_start_ms"].get<double>() < rows[i]["process_wall_ms"].get<double>());
        CHECK(rows[i]["setup_ms"].get<double>() > 0);
        // What the child did after its record was complete, seen from outside: writing and exit.
        CHECK(rows[i]["process_exit_ms"].get<double>() > 0);
        CHECK(rows[i]["process_exit_ms"].get<double>() < rows[i]["process_wall_ms"].get<double>());
    }
    // One timeline: the parent's spans and every child's under its own pid. Only the children
    // that compiled (the warm-up and the two cold ones) loaded NVRTC: a cache hit never maps it.
    const auto trace = nlohmann::json::parse(fs::read_file(dir.path() / "trace.json"));
    std::set<long> pids;
    int nvrtc_loads = 0, process_starts = 0, children = 0, driver_inits = 0;
    for (const auto& e : trace.at("traceEvents")) {
        pids.insert(e.at("pid").get<long>());
        if (e.at("ph") != "X") continue;
        CHECK(e.at("dur").get<double>() >= 0);
        const std::string name = e.at("name");
        nvrtc_loads += name.starts_with("load libnvrtc");
        process_starts += name == "process start (exec, libraries)";
        children += name.starts_with("child: ");
        driver_inits += name == "driver_init";
    }
    CHECK(pids.size() == 6);  // first-call, the warm-up child, 2 cold, 2 warm
    CHECK(children == 5);
    CHECK(process_starts == 5);
    CHECK(nvrtc_loads == 3);
    // Whether there is a GPU was asked of an untraced child: first-call itself never initialized
    // CUDA, which would have made its children's cuInit fast as no fresh process's is.
    CHECK(driver_inits == 0);
}

TEST_CASE("kjit first-call stopped by SIGINT exits 130 and leaves no scratch folders behind") {
    kjit::testing::temp_dir tmp;
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::setenv("TMPDIR", tmp.path().c_str(), 1);
        ::execl(KJIT_BINARY, KJIT_BINARY, "first-call", "--repeat", "500", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    // Some children in: 500 repeats take far longer (a cold compile alone is about 65 ms here, so
    // 20 repeats once finished within this wait).
    ::usleep(1500 * 1000);
    ::kill(child, SIGINT);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(std::filesystem::is_empty(tmp.path()));
}
