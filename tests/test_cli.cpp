// The command line, in process: exit codes 0 / 1 / 2, help, emit and cache commands.
#include <fstream>
#include <sstream>

#include "cli/cli.hpp"
#include "util/interrupt.hpp"
#include "helpers.hpp"

using namespace kjit;

using kjit::testing::kjit_cli;

TEST_CASE("no command, unknown command and unknown option are usage errors (2)") {
    CHECK(kjit_cli({}).status == exit_status::usage);
    const auto unknown = kjit_cli({"frobnicate"});
    CHECK(unknown.status == exit_status::usage);
    CHECK(unknown.err == "kjit: unknown command 'frobnicate' (see kjit --help)\n");
    const auto option = kjit_cli({"emit", "--bogus"});
    CHECK(option.status == exit_status::usage);
    CHECK(option.err.find("--help") != std::string::npos);
}

TEST_CASE("--help on every subcommand") {
    for (const char* sub : {"run", "compile", "emit", "devices", "cache"}) {
        CAPTURE(sub);
        const auto r = kjit_cli({sub, "--help"});
        CHECK(r.status == exit_status::ok);
        CHECK(r.out.find(std::string("kjit ") + sub) != std::string::npos);
    }
    CHECK(kjit_cli({"--help"}).out.find("exit codes") != std::string::npos);
}

TEST_CASE("emit prints the source of the default config, and of a shipped one") {
    const auto r = kjit_cli({"emit"});
    CHECK(r.status == exit_status::ok);
    CHECK(r.out.find("extern \"C\" __global__ void hidden_layer_fused(") != std::string::npos);
    const auto seed = kjit_cli({"emit", kjit::testing::config_path("seed_vectorize.json")});
    CHECK(seed.out.find("seed_vectorize_s2_tanh") != std::string::npos);
}

TEST_CASE("bad config and bad --set exit 2 with one line naming the key") {
    kjit::testing::temp_dir dir;
    const auto file = (dir.path() / "bad.json").string();
    std::ofstream(file) << R"({"name": "x", "n": 10, "inputs": {"a": {"fill": "uniform"}},
                              "stages": [{"op": "normalize", "input": "a"}], "launch": {"block": 100}})";
    const auto bad = kjit_cli({"emit", file});
    CHECK(bad.status == exit_status::usage);
    CHECK(bad.err == "kjit: " + file + ": launch.block: expected a multiple of 32 in 32..1024 or \"auto\", got 100\n");

    const auto set = kjit_cli({"emit", "--set", "stages[2].formula=fast"});
    CHECK(set.status == exit_status::usage);
    CHECK(set.err.find("stages[2].formula: expected one of \"builtin\", \"exp\", got \"fast\"") != std::string::npos);

    CHECK(kjit_cli({"emit", "/nonexistent.json"}).status == exit_status::usage);
    CHECK(kjit_cli({"compile", "--arch", "sm_20"}).status == exit_status::usage);
    CHECK(kjit_cli({"compile", "--no-cache", "--refresh"}).status == exit_status::usage);
    const auto threads = kjit_cli({"sweep", "--compile-only", "--host-threads", "-1"});
    CHECK(threads.status == exit_status::usage);
    CHECK(threads.err == "kjit: --host-threads takes a number of threads in 0..1024\n");
}

TEST_CASE("a rung on an architecture it cannot run on: one line, exit 2, from compile, emit --ptx and sweeps alike") {
    kjit::testing::temp_dir dir;
    const std::string mlp = kjit::testing::config_path("mlp_layer.json");
    const auto wgmma = kjit_cli({"emit", "--ptx", mlp, "--set", "launch.rung=wgmma", "--arch", "sm_100"});
    CHECK(wgmma.status == exit_status::usage);
    CHECK(wgmma.err == "kjit: mlp_layer: this variant runs on sm_90 alone (the wgmma rung: Hopper's warp-group tensor cores, "
                       "the TMA unit and setmaxnreg), not on sm_100\n");
    const auto mma = kjit_cli({"compile", mlp, "--set", "launch.rung=mma", "--set", "launch.tile_m=64", "--arch", "sm_75",
                               "--cache-dir", dir.path().string()});
    CHECK(mma.status == exit_status::usage);
    CHECK(mma.err == "kjit: mlp_layer: this variant needs sm_80 or newer (the mma rung: its copies (cp.async) and their "
                     "barriers (mbarrier)), not sm_75\n");
    // A sweep over the rungs refuses the point, not the sweep, and compiles the others.
    const auto sweep = kjit_cli({"sweep", mlp, "--compile-only", "--arch", "sm_100", "--quiet", "--set", "shape=[64,64]",
                                 "--set", "inputs.W.shape=[64,64]", "--set", "sweep={\"launch.rung\":[\"wgmma\",\"simt\"]}",
                                 "--cache-dir", dir.path().string()});
    CHECK(sweep.status == exit_status::failure);
    CHECK(sweep.out.find("2 points, 1 distinct sources, 1 compiled") != std::string::npos);
    CHECK(sweep.out.find("1 failed") != std::string::npos);
}

TEST_CASE("a value cxxopts cannot parse names its option") {
    const auto spaced = kjit_cli({"tune", "--budget", "-1"});
    CHECK(spaced.status == exit_status::usage);
    CHECK(spaced.err.find("kjit: tune: --budget: Argument ") == 0);
    CHECK(spaced.err.find("-1") != std::string::npos);
    const auto joined = kjit_cli({"run", "--calls=many"});
    CHECK(joined.err.find("kjit: run: --calls: Argument ") == 0);
}

TEST_CASE("a path with control characters or of 16 KB is shown escaped and bounded, on one line") {
    const std::string escaped = std::string("/tmp/a\nb\x1b[2Jc") + std::string(16384, 'd') + ".json";
    for (const auto& args : {std::vector<std::string>{"emit", escaped}, std::vector<std::string>{"compile", escaped, "--set", "n=5"}}) {
        const auto result = kjit_cli(args);
        CHECK(result.status == exit_status::usage);
        CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
        CHECK(result.err.find('\x1b') == std::string::npos);
        CHECK(result.err.find("/tmp/a\\x0ab\\x1b[2Jc") != std::string::npos);  // shown as \x0a and \x1b
        CHECK(result.err.find("dddd.json") != std::string::npos);                 // the name's tail kept
        CHECK(result.err.size() < 400);
    }
    // A message of many lines (an expression's caret) keeps its lines, each bounded.
    const auto expression = kjit_cli({"emit", "--set", "stages[2].expr=\"x + " + std::string(5000, '(') + "\""});
    CHECK(expression.status == exit_status::usage);
    std::istringstream lines(expression.err);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 400);
}

TEST_CASE("cache path, stats and clear on an empty cache") {
    kjit::testing::temp_dir dir;
    const auto path = kjit_cli({"cache", "path", "--cache-dir", dir.path().string()});
    CHECK(path.status == exit_status::ok);
    CHECK(path.out == (dir.path() / "v1").string() + "\n");
    CHECK(kjit_cli({"cache", "stats", "--cache-dir", dir.path().string()}).out.rfind("0 entries", 0) == 0);
    CHECK(kjit_cli({"cache", "clear", "--cache-dir", dir.path().string()}).out.rfind("removed 0 entries", 0) == 0);
    CHECK(kjit_cli({"cache", "purge"}).status == exit_status::usage);
}

TEST_CASE("bad expressions through the CLI: exit 2, the key named, never an internal error") {
    const std::vector<std::string> bad{"x * wieghts", "exp(x, 2)", "x +", "(x", "x ? 1 : 2", "1e999", "x $ 2",
                                       std::string(600, '(') + "x" + std::string(600, ')'), "tanh", "x > 0", ""};
    for (const auto& text : bad) {
        CAPTURE(text);
        const auto r = kjit_cli({"emit", "--set", "stages[2]=" + nlohmann::json({{"op", "map"}, {"expr", text}}).dump()});
        CHECK(r.status == exit_status::usage);
        CHECK(r.err.find("stages[2].expr: ") != std::string::npos);
        CHECK(r.err.find("internal error") == std::string::npos);
    }
    // Mutations of a valid expression: each is either fine (exit 0) or a config error (exit 2).
    std::string text = "x > 0 ? tanh(x * weights) : 0.01 * x";
    for (std::size_t cut = 0; cut < text.size(); ++cut) {
        std::string mutated = text;
        mutated.erase(cut, 1);
        const auto r = kjit_cli({"emit", "--set", "stages[2]=" + nlohmann::json({{"op", "map"}, {"expr", mutated}}).dump()});
        CAPTURE(mutated);
        CHECK((r.status == exit_status::ok || r.status == exit_status::usage));
        CHECK(r.err.find("internal error") == std::string::npos);
    }
}

TEST_CASE("run --watch needs a config file, and takes no --json, --csv or --calls") {
    const auto bare = kjit_cli({"run", "--watch"});
    CHECK(bare.status == exit_status::usage);
    CHECK(bare.err.find("name the CONFIG file to watch") != std::string::npos);
    const std::string config = std::string(KJIT_SOURCE_DIR) + "/configs/hidden_layer.json";
    for (const auto& extra : std::vector<std::vector<std::string>>{{"--json", "x.json"}, {"--calls", "2"}, {"--save", "d"}}) {
        std::vector<std::string> args{"run", "--watch", config};
        args.insert(args.end(), extra.begin(), extra.end());
        const auto r = kjit_cli(args);
        CHECK(r.status == exit_status::usage);
        CHECK(r.err.find("--calls, --json, --csv and --save do not apply") != std::string::npos);
    }
    // --save names a folder; --save-reference goes with it.
    const auto alone = kjit_cli({"run", config, "--save-reference"});
    CHECK(alone.status == exit_status::usage);
    CHECK(alone.err.find("--save-reference goes with --save DIR") != std::string::npos);
    const auto file = kjit_cli({"run", config, "--save", config});
    CHECK(file.status == exit_status::usage);
    CHECK(file.err.find("is a file; expected a folder") != std::string::npos);
}

TEST_CASE("results never overwrite the config or each other; --shard '' is refused; --help lists 130") {
    kjit::testing::temp_dir dir;
    const auto config = (dir.path() / "c.json").string(), result = (dir.path() / "r.json").string();
    std::ofstream(config) << fs::read_file(kjit::testing::config_path("hidden_layer.json"));
    const std::string before = fs::read_file(config);
    const auto onto_config = kjit_cli({"compile", config, "--json", config});
    CHECK(onto_config.status == exit_status::usage);
    CHECK(onto_config.err.find("which kjit reads") != std::string::npos);
    CHECK(fs::read_file(config) == before);
    const auto twice = kjit_cli({"compile", config, "--json", result, "--trace", (dir.path() / "." / "r.json").string()});
    CHECK(twice.status == exit_status::usage);
    CHECK_FALSE(std::filesystem::exists(result));
    const auto shard = kjit_cli({"sweep", "--compile-only", "--shard", ""});
    CHECK(shard.status == exit_status::usage);
    CHECK(shard.err == "kjit: --shard: expected K/N, such as 0/4, got ''\n");
    CHECK(kjit_cli({"--help"}).out.find("130 interrupted") != std::string::npos);
}

TEST_CASE("a sweep interrupted before any point finished leaves earlier results as they were") {
    kjit::testing::temp_dir dir;
    const auto result = (dir.path() / "r.json").string(), table = (dir.path() / "r.csv").string();
    std::ofstream(result) << "earlier results";
    std::ofstream(table) << "earlier table";
    set_interrupted(true);  // as if Ctrl-C came before the first point
    const auto r = kjit_cli({"sweep", "--compile-only", "--json", result, "--csv", table});
    set_interrupted(false);
    CHECK(r.status == exit_status::interrupted);
    CHECK(r.err.find("no file was written") != std::string::npos);
    CHECK(fs::read_file(result) == "earlier results");
    CHECK(fs::read_file(table) == "earlier table");
}
