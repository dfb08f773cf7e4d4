#include "cli/arguments.hpp"

#include <functional>
#include <map>
#include <string_view>

// A repeated --set collects values; a value itself may hold commas (compile.options=["-a","-b"]),
// so cxxopts must not split on them.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#include "util/strings.hpp"
#include "util/units.hpp"
#include "why/counters.hpp"

namespace kjit::cli {
namespace {

constexpr subcommand k_subcommands[] = {
    {"run", "[CONFIG]", "run a config on the GPU and report every phase", true, true, true, true},
    {"compile", "[CONFIG]", "generate and compile (no GPU needed); report compile phases", true, true, true, false},
    {"emit", "[CONFIG]", "print the generated CUDA source (--ptx: the PTX it compiles to; --sass: kjit sass)", true, false, false, false},
    {"sass", "[CONFIG]", "the machine code of each kernel under its CUDA lines, its instruction mix; --diff (no GPU needed)",
     true, true, false, false},
    {"sweep", "[CONFIG]", "run every point of the config's sweep block; one row each", true, true, true, false},
    {"tune", "[CONFIG]", "search the config's tune space (or its family's) for the fastest launch", true, true, true, true},
    {"first-call", "[CONFIG]", "fresh processes in several start states: what a first call costs", true, false, true,
     false},
    {"merge", "FILE.json...", "join sweep results (e.g. shards) into one table", false, false, true, false},
    {"devices", "", "list the GPUs the driver sees", false, false, false, false},
    {"cache", "list|stats|verify|prune|clear|path|export FILE|import FILE",
     "inspect, check, bound, clear or ship the compile cache", false, false, false, false},
};

int parse_arch_option(const std::string& text) {
    const auto arch = config::parse_arch(text);
    if (!arch) throw error(error_kind::usage, "--arch " + text + ": expected one of " + config::known_arch_list());
    return *arch;
}

/// cxxopts's message with the option it is about: "Argument '-1' failed to parse" names only the
/// value, so the option that took it ("--budget -1" or "--budget=-1") is found on the command line.
std::string option_named(const std::string& what, int argc, const char* const* argv) {
    const bool curly = what.find("‘") != std::string::npos;  // cxxopts quotes as ‘-1’ where the locale allows
    const std::string left = curly ? "‘" : "'", right = curly ? "’" : "'";
    const auto open = what.find(left), close = open == std::string::npos ? open : what.find(right, open + left.size());
    if (close == std::string::npos || what.find("failed to parse") == std::string::npos) return what;
    const std::string value = what.substr(open + left.size(), close - open - left.size());
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == value && i > 1 && std::string(argv[i - 1]).starts_with("-")) return std::string(argv[i - 1]) + ": " + what;
        if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos && arg.substr(eq + 1) == value)
            return arg.substr(0, eq) + ": " + what;
    }
    return what;
}

std::string parse_target_option(const std::string& text) {
    if (!config::named_target(text))
        throw error(error_kind::usage, "--target " + text + ": expected one of " + config::known_target_list());
    return text;
}

/// --target's help, for compile, emit, and sweeps and tunes that compile only.
const std::string target_help = "resolve every \"auto\" and compile for GPU (" + config::known_target_list() +
                                "; default the config's compile.target or compile.arch, else h200; run: the GPU's)";


/// --config, --set and --templates: the commands that read a config.
void add_config_options(cxxopts::Options& parser) {
    parser.add_options()("config", "config file (JSON)", cxxopts::value<std::string>())(
        "set", "override a config value: KEY=VALUE, e.g. launch.block=128 or stages[2].formula=exp",
        cxxopts::value<std::vector<std::string>>())("templates", "read kernel templates from DIR", cxxopts::value<std::string>(),
                                                    "DIR");
    parser.parse_positional({"config"});
}

/// The target, the architecture and the cache: the commands that compile.
void add_compile_options(cxxopts::Options& parser) {
    parser.add_options()("arch", "compile for sm_XX (compile: default the target's; run: the GPU's)", cxxopts::value<std::string>(),
                         "sm_XX")("target", target_help, cxxopts::value<std::string>(), "GPU")(
        "cache-dir", "cache directory (default $KJIT_CACHE_DIR, $XDG_CACHE_HOME/kjit or ~/.cache/kjit)", cxxopts::value<std::string>(),
        "DIR")("no-cache", "compile, and neither read nor write the cache")("refresh", "compile, and replace the cache entry")(
        "cache-limit", "keep the cache under SIZE, least recently used out first (default $KJIT_CACHE_LIMIT or 1GiB; 0: no limit)",
        cxxopts::value<std::string>(), "SIZE");
}

/// The options every subcommand of a group takes: --json and --csv, --trace, --device, --metrics,
/// --save.
void add_shared_options(cxxopts::Options& parser, const subcommand& sub) {
    const std::string name = sub.name;
    if (sub.outputs)
        parser.add_options()("json", "write the record(s) as JSON to FILE", cxxopts::value<std::string>(), "FILE")(
            "csv", "write the record(s) as CSV to FILE", cxxopts::value<std::string>(), "FILE");
    if (sub.config && name != "emit")
        parser.add_options()("trace", "write the command's timeline (every phase, per thread and GPU) as Chrome "
                                      "trace-event JSON to FILE, for Perfetto or chrome://tracing",
                             cxxopts::value<std::string>(), "FILE");
    if (sub.device) parser.add_options()("device", "GPU index", cxxopts::value<int>()->default_value("0"), "N");
    if (name == "run" || name == "sweep" || name == "tune")
        parser.add_options()("metrics",
                             "after the timed loops, read each kernel's hardware counters through CUPTI: "
                             "--metrics=SET, SET one of memory, compute, stalls, all (the default)" +
                                 std::string(name == "tune" ? "; every point is measured again (the tuning database keeps "
                                                              "no counters)"
                                                            : ""),
                             cxxopts::value<std::string>()->implicit_value("all"), "SET");
    if (name == "run" || name == "sweep")
        parser.add_options()("save", "write each checked output as DIR/<name>.<variant>.npy (NumPy loads it)",
                             cxxopts::value<std::string>(), "DIR")(
            "save-reference", "with --save: the float64 reference too, as <…>.reference.npy");
}

void add_sweep_options(cxxopts::Options& parser) {
    parser.add_options()("devices", "GPUs to spread the points over: all, or a list such as 0,1",
                         cxxopts::value<std::string>()->default_value("0"), "LIST")(
        "shard", "run only the K-th of N slices (K in 0..N-1), e.g. for a Slurm array", cxxopts::value<std::string>(), "K/N")(
        "resume", "an interrupted sweep's --json FILE: run only the points it lacks, and write its rows with theirs",
        cxxopts::value<std::string>(), "FILE")("jobs", "compile threads (default: one per core)", cxxopts::value<int>(), "N")(
        "host-threads",
        "threads that make the next group's inputs and float64 reference while the GPUs run this "
        "one (default: the cores less one per GPU and one; 0: made in line between points)",
        cxxopts::value<int>(), "N")("compile-only", "build every point, run nothing (no GPU needed)")("quiet", "no progress bar");
}

void add_emit_options(cxxopts::Options& parser) {
    parser.add_options()("ptx", "compile with NVRTC (through the cache, as compile does) and print the PTX instead of the source")(
        "arch", "with --ptx: compile for sm_XX (default the target's)", cxxopts::value<std::string>(), "sm_XX")(
        "target", target_help, cxxopts::value<std::string>(), "GPU")(
        "cache-dir", "with --ptx: cache directory (default $KJIT_CACHE_DIR, $XDG_CACHE_HOME/kjit or ~/.cache/kjit)",
        cxxopts::value<std::string>(), "DIR")("no-cache", "with --ptx: compile, and neither read nor write the cache")(
        "sass", "print each kernel's machine code under its CUDA lines, as kjit sass does");
}

void add_sass_options(cxxopts::Options& parser) {
    parser.add_options()("kernel", "only the kernels with TEXT in their name", cxxopts::value<std::string>(), "TEXT")(
        "mix", "each kernel's instruction mix alone, not its code")(
        "diff", "compare with the variant of CONFIG2: the instruction mixes side by side and the opcodes that changed",
        cxxopts::value<std::string>(), "CONFIG2")(
        "diff-set", "compare with this config under one more override (repeatable), e.g. launch.block=512",
        cxxopts::value<std::vector<std::string>>(), "KEY=VALUE");
}

void add_run_options(cxxopts::Options& parser) {
    parser.add_options()("load", "what to load: cubin, or ptx (the driver JIT-compiles it)",
                         cxxopts::value<std::string>()->default_value("cubin"), "cubin|ptx")(
        "calls", "call the variant N times in this process (a record each)", cxxopts::value<int>()->default_value("1"), "N")(
        "skip-ceiling", "do not measure the copy ceiling")(
        "watch", "keep the GPU open and run again each time CONFIG (or a --templates file) is saved; Ctrl-C ends");
}

void add_tune_options(cxxopts::Options& parser) {
    parser.add_options()("strategy", "exhaustive, random, anneal, genetic, local, or auto (exhaustive up to 64 points, else anneal)",
                         cxxopts::value<std::string>()->default_value("auto"), "NAME")(
        "budget", "measure at most N points (default: all for exhaustive, else 15 % of the space, at least 16)",
        cxxopts::value<std::size_t>(), "N")("seconds", "start no batch of points after S seconds", cxxopts::value<double>(), "S")(
        "stop-at",
        "stop once a point runs at PCT % of its roofline (the lower of its compute ceiling and the copy "
        "ceiling at its flops per byte)",
        cxxopts::value<double>(), "PCT")("seed", "the strategy's random seed", cxxopts::value<std::uint64_t>()->default_value("1"), "K")(
        "replay", "search recorded results (kjit tune --json of an exhaustive tune) instead of the GPU", cxxopts::value<std::string>(),
        "FILE")("seeds", "with --replay: run the strategy with seeds K, K+1, … and report the median",
                cxxopts::value<int>()->default_value("1"), "N")("write-best", "write the config with the best point's values to FILE",
                                                              cxxopts::value<std::string>(), "FILE")(
        "dry-run", "no GPU: size the space, apply its constraints, compile every allowed point (for --target)")(
        "jobs", "compile threads (default: one per core)", cxxopts::value<int>(), "N")("quiet", "no progress lines");
}

void add_first_call_options(cxxopts::Options& parser) {
    parser.add_options()("repeat", "child processes per start state", cxxopts::value<int>()->default_value("5"), "K");
}

void add_merge_options(cxxopts::Options& parser) {
    parser.add_options()("files", "JSON results of kjit sweep --json", cxxopts::value<std::vector<std::string>>());
    parser.parse_positional({"files"});
}

void add_cache_options(cxxopts::Options& parser) {
    parser.add_options()("action", "list | stats | verify | prune | clear | path | export FILE | import FILE",
                         cxxopts::value<std::string>())(
        "bundle", "export | import: the bundle's file (compiled entries and tuning records)", cxxopts::value<std::string>())(
        "cache-dir", "cache directory", cxxopts::value<std::string>(), "DIR")(
        "cache-limit", "prune: the size to fit (default $KJIT_CACHE_LIMIT or 1GiB; 0: no limit)", cxxopts::value<std::string>(), "SIZE");
    parser.parse_positional({"action", "bundle"});
}

/// Each subcommand's options of its own, beside its groups'.
const std::map<std::string_view, std::function<void(cxxopts::Options&)>> k_own_options = {
    {"sweep", add_sweep_options},   {"emit", add_emit_options}, {"sass", add_sass_options},
    {"run", add_run_options},       {"tune", add_tune_options}, {"first-call", add_first_call_options},
    {"merge", add_merge_options},   {"cache", add_cache_options},
};

cxxopts::Options parser_of(const subcommand& sub) {
    cxxopts::Options parser(std::string("kjit ") + sub.name, sub.summary);
    parser.positional_help(sub.usage).show_positional_help();
    parser.add_options()("h,help", "show this help");
    if (sub.config) add_config_options(parser);
    if (sub.compile) add_compile_options(parser);
    add_shared_options(parser, sub);
    if (const auto own = k_own_options.find(sub.name); own != k_own_options.end()) own->second(parser);
    return parser;
}

/// The options that name files and folders, and what is given as text.
void read_texts(const cxxopts::ParseResult& args, options& o) {
    const std::pair<const char*, std::string*> texts[] = {
        {"config", &o.config_path}, {"templates", &o.templates_dir}, {"cache-dir", &o.cache_dir}, {"json", &o.json_path},
        {"csv", &o.csv_path},       {"action", &o.cache_action},     {"bundle", &o.cache_bundle}, {"trace", &o.trace_path},
        {"devices", &o.devices},    {"shard", &o.shard},             {"resume", &o.resume_path},  {"metrics", &o.counter_set},
        {"kernel", &o.kernel},      {"diff", &o.diff_config},        {"save", &o.save.dir},       {"replay", &o.replay_path},
        {"write-best", &o.write_best_path},
    };
    for (const auto& [key, into] : texts)
        if (args.count(key)) *into = args[key].as<std::string>();
    const auto list = [&](const char* key, std::vector<std::string>& into) {
        if (args.count(key)) into = args[key].as<std::vector<std::string>>();
    };
    list("set", o.sets);
    list("files", o.files);
    list("diff-set", o.diff_sets);
    if (args.count("shard") && o.shard.empty()) throw error(error_kind::usage, "--shard: expected K/N, such as 0/4, got ''");
    if (!o.save.dir.empty() && std::filesystem::exists(o.save.dir) && !std::filesystem::is_directory(o.save.dir))
        throw error(error_kind::usage, "--save " + o.save.dir + ": is a file; expected a folder (created if missing)");
}

/// The options that take a number, an architecture, a target or a size, each checked.
void read_values(const cxxopts::ParseResult& args, options& o) {
    if (args.count("cache-limit")) {
        const std::string limit = args["cache-limit"].as<std::string>();
        o.cache_limit = units::parse_bytes(limit);
        if (!o.cache_limit)
            throw error(error_kind::usage, "--cache-limit " + limit + ": expected a size such as 2GiB or 500MB (0: no limit)");
    }
    if (args.count("arch")) o.arch = parse_arch_option(args["arch"].as<std::string>());
    if (args.count("target")) o.target = parse_target_option(args["target"].as<std::string>());
    if (args.count("device")) o.device = args["device"].as<int>();
    if (args.count("jobs")) o.jobs = args["jobs"].as<int>();
    if (o.jobs < 0 || o.jobs > 1024) throw error(error_kind::usage, "--jobs takes a number of threads in 1..1024");
    if (args.count("host-threads")) o.host_threads = args["host-threads"].as<int>();
    if (o.host_threads && (*o.host_threads < 0 || *o.host_threads > 1024))
        throw error(error_kind::usage, "--host-threads takes a number of threads in 0..1024");
    if (!o.counter_set.empty()) (void)why::counters_of(o.counter_set);  // an unknown set is a usage error now
    if (args.count("calls")) o.calls = args["calls"].as<int>();
    if (args.count("repeat")) o.repeat = args["repeat"].as<int>();
    if (o.calls < 1 || o.repeat < 1) throw error(error_kind::usage, "--calls and --repeat take a number ≥ 1");
    if (args.count("load")) {
        const std::string load = args["load"].as<std::string>();
        if (load != "cubin" && load != "ptx") throw error(error_kind::usage, "--load " + load + ": expected cubin or ptx");
        o.load_ptx = load == "ptx";
    }
}

/// The switches, and the combinations that exclude each other.
void read_switches(const cxxopts::ParseResult& args, const subcommand& sub, options& o) {
    o.quiet = args.count("quiet") > 0;
    o.ptx = args.count("ptx") > 0;
    o.sass = args.count("sass") > 0;
    o.mix_only = args.count("mix") > 0;
    o.compile_only = args.count("compile-only") > 0;
    o.skip_ceiling = args.count("skip-ceiling") > 0;
    o.save.reference = args.count("save-reference") > 0;
    o.watch = args.count("watch") > 0;
    o.no_cache = args.count("no-cache") > 0;  // (an option of the compiling commands and emit)
    o.refresh = sub.compile && args.count("refresh") > 0;
    if (o.ptx && o.sass) throw error(error_kind::usage, "emit: --ptx and --sass exclude each other");
    if (o.mix_only && (!o.diff_config.empty() || !o.diff_sets.empty()))
        throw error(error_kind::usage, "sass: --diff compares instruction mixes already; --mix does not go with it");
    if (o.save.reference && o.save.dir.empty()) throw error(error_kind::usage, "--save-reference goes with --save DIR");
    if (o.watch && (args.count("calls") || !o.json_path.empty() || !o.csv_path.empty() || !o.save.dir.empty()))
        throw error(error_kind::usage, "run --watch prints each result as it comes: --calls, --json, --csv and --save do not apply");
    if (o.no_cache && o.refresh) throw error(error_kind::usage, "--no-cache and --refresh exclude each other");
}

/// tune's own options, into o.tune.
void read_tune_options(const cxxopts::ParseResult& args, options& o) {
    o.tune.strategy = args["strategy"].as<std::string>();
    if (args.count("budget")) o.tune.budget = args["budget"].as<std::size_t>();
    if (args.count("seconds")) o.tune.seconds = args["seconds"].as<double>();
    if (args.count("stop-at")) {
        const double percent = args["stop-at"].as<double>();
        if (!(percent > 0 && percent <= 100)) throw error(error_kind::usage, "--stop-at takes a percentage in (0, 100]");
        o.tune.roofline_target = percent / 100;
    }
    o.tune.seed = args["seed"].as<std::uint64_t>();
    o.tune.jobs = o.jobs;
    o.tune.device = o.device;
    o.tune.counter_set = o.counter_set;
    o.seeds = args["seeds"].as<int>();
    if (o.seeds < 1 || o.seeds > 1000) throw error(error_kind::usage, "--seeds takes a number in 1..1000");
    if (o.seeds > 1 && o.replay_path.empty()) throw error(error_kind::usage, "--seeds goes with --replay");
    o.dry_run = args.count("dry-run") > 0;
    if (o.dry_run && !(o.replay_path.empty() && o.write_best_path.empty()))
        throw error(error_kind::usage, "--dry-run measures nothing: not with --replay or --write-best");
    if (!o.counter_set.empty() && (o.dry_run || !o.replay_path.empty()))
        throw error(error_kind::usage, "--metrics reads counters on the GPU: not with --replay or --dry-run");
}

}  // namespace

std::span<const subcommand> subcommands() { return k_subcommands; }

void print_overview(std::ostream& out) {
    out << "kjit " KJIT_VERSION " — a runtime-compiled CUDA kernel playground\n\n"
           "usage: kjit <command> [options]   (kjit <command> --help for its options)\n\n";
    for (const auto& s : k_subcommands) {
        std::string head = std::string(s.name) + " " + s.usage;
        out << "  " << head << std::string(head.size() < 30 ? 30 - head.size() : 1, ' ') << s.summary << "\n";
    }
    out << "\nCONFIG defaults to the built-in configs/hidden_layer.json (n = 1,000,000, float32, fused, tanh).\n"
           "exit codes: 0 ok, 1 failure while working (compile error, CUDA error, no GPU, check FAIL),\n"
           "            2 bad usage or config, 130 interrupted (Ctrl-C, SIGTERM)\n";
}

std::optional<options> parse_arguments(const subcommand& sub, int argc, const char* const* argv, std::ostream& out) {
    cxxopts::Options parser = parser_of(sub);
    cxxopts::ParseResult args;
    try {
        args = parser.parse(argc, argv);
    } catch (const cxxopts::exceptions::exception& e) {
        throw error(error_kind::usage, std::string(sub.name) + ": " + option_named(e.what(), argc, argv) + " (see kjit " + sub.name +
                                           " --help)");
    }
    if (args.count("help")) {
        out << parser.help();
        return std::nullopt;
    }
    if (!args.unmatched().empty())
        throw error(error_kind::usage, std::string(sub.name) + ": unexpected argument '" + args.unmatched().front() + "'");
    options o;
    read_texts(args, o);
    read_values(args, o);
    read_switches(args, sub, o);
    if (std::string(sub.name) == "tune") read_tune_options(args, o);
    return o;
}

}  // namespace kjit::cli
