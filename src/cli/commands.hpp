// One handler per subcommand, over options already parsed, and what they share. Internal to the
// CLI: commands.cpp (emit, compile, run, devices, cache), sweep_commands.cpp, first_call_command.cpp,
// tune_command.cpp.
#pragma once
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "jit/disk_cache.hpp"
#include "jit/jit.hpp"
#include "report/record.hpp"
#include "run/session.hpp"
#include "tune/tuner.hpp"
#include "util/error.hpp"

namespace kjit::cli {

struct options {
    std::string config_path;  ///< empty: the embedded configs/hidden_layer.json
    std::vector<std::string> sets;
    std::string templates_dir;
    std::string cache_dir;
    bool no_cache = false;
    bool refresh = false;
    std::optional<int> arch;
    std::optional<std::string> target;  ///< --target: compile.target
    std::string json_path, csv_path;
    std::string trace_path;  ///< --trace: Chrome trace-event JSON of the command
    int device = 0;
    std::optional<std::uintmax_t> cache_limit;  ///< --cache-limit; else $KJIT_CACHE_LIMIT or the default
    std::string cache_action;  ///< list | stats | verify | prune | clear | path | export | import
    std::string cache_bundle;  ///< export | import: the bundle's file
    std::string devices = "0";  ///< sweep: all | 0,1
    std::string shard;          ///< sweep: K/N
    std::string resume_path;    ///< sweep --resume: an interrupted sweep's rows; their points are not run again
    bool quiet = false;
    bool compile_only = false;
    int jobs = 0;  ///< sweep: compile threads; 0 = one per core
    std::optional<int> host_threads = std::nullopt;  ///< sweep: threads making host data ahead; 0 = in line
    std::vector<std::string> files;  ///< merge
    bool load_ptx = false;      ///< run: load PTX (driver JIT) instead of the cubin
    int calls = 1;              ///< run: call the variant this many times in one process
    bool skip_ceiling = false;  ///< run: do not measure the copy ceiling
    bool watch = false;         ///< run: run again at every save of the config (or templates)
    run::save_request save;     ///< run, sweep: --save DIR, --save-reference
    std::string counter_set;    ///< run, sweep: --metrics SET (why::counters_of); empty: none
    int repeat = 5;             ///< first-call: child processes per state
    bool ptx = false;           ///< emit: print the PTX instead of the CUDA source
    bool sass = false;          ///< emit: print the machine code (kjit sass) instead of the CUDA source
    std::string kernel;         ///< sass: only the kernels with this in their name
    bool mix_only = false;      ///< sass: each kernel's instruction mix, not its code
    std::string diff_config;              ///< sass --diff: the variant to compare with
    std::vector<std::string> diff_sets;   ///< sass --diff-set: overrides that make the other variant
    tune::tune_options tune;    ///< tune: strategy, budget, seed, …
    std::string replay_path;      ///< tune --replay: recorded results instead of the GPU
    std::string write_best_path;  ///< tune --write-best: the config with the best point
    int seeds = 1;                ///< tune --replay: seeds to run
    bool dry_run = false;         ///< tune --dry-run: size the space and compile it, no GPU
};

struct loaded_config {
    config::pipeline pipeline;
    std::string source;
};

/// The config (or the embedded default) with --set and --arch applied, not yet validated.
[[nodiscard]] config::document load_document(const options& o);
/// The same, validated.
[[nodiscard]] loaded_config load(const options& o, const std::optional<config::target>& gpu = std::nullopt);
/// The session the options describe: templates, cache (--cache-dir, --cache-limit, --no-cache,
/// --refresh) and the Driver API's GPUs.
[[nodiscard]] run::session session_for(const options& o);
/// s.finish(), its warning printed.
void finish(run::session& s, std::ostream& err);
/// A run's record: its warnings, its table, and on FAIL one line naming the first bad element.
/// Returns false for a FAIL.
bool print_result(const report::record& rec, std::ostream& out, std::ostream& err);
/// For a process first-call started: the time from its spawn to now, on every record (first-call
/// takes the wall time left after it as the process's exit).
void mark_elapsed(std::vector<report::record>& records);
/// Writes --json and --csv when given.
void write_rows(const options& o, const std::vector<report::row>& rows);

exit_status cmd_emit(const options& o, std::ostream& out);
exit_status cmd_sass(const options& o, std::ostream& out);
exit_status cmd_compile(const options& o, std::ostream& out, std::ostream& err);
exit_status cmd_run(const options& o, std::ostream& out, std::ostream& err);
exit_status cmd_watch(const options& o, std::ostream& out, std::ostream& err);
exit_status cmd_devices(std::ostream& out);
exit_status cmd_cache(const options& o, std::ostream& out, std::ostream& err);
exit_status cmd_sweep(const options& o, std::ostream& out, std::ostream& err);
exit_status cmd_merge(const options& o, std::ostream& out, std::ostream& err);
exit_status cmd_first_call(const options& o, std::ostream& out, std::ostream& err);
exit_status cmd_tune(const options& o, std::ostream& out, std::ostream& err);

}  // namespace kjit::cli
