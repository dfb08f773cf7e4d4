// kjit first-call: the study of what a first call costs. Runs fresh child processes of kjit in
// several start states (empty cache, PTX only so the driver JITs, cubin, a second call in the
// same process), K times each, and aggregates their records. Process spawning is plain POSIX;
// the child does the GPU work, so this module needs no CUDA.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "report/record.hpp"

namespace kjit::run {

/// One start state: how its child is started and how its cache is prepared.
struct start_state {
    std::string name;                 ///< column value: "cold", "warm-ptx-nocache", …
    std::string description;          ///< for the report
    std::vector<std::string> args;    ///< added to the child's command line
    std::vector<std::pair<std::string, std::string>> env;  ///< set in the child's environment
    bool empty_cache = false;         ///< a fresh, empty kjit cache for every repeat
    bool warm_driver_cache = false;   ///< one untimed child first, to fill the driver's JIT cache
    int take_call = 1;                ///< which record of the child is this state's (--calls)
};

/// The states in order: with a GPU, run children; without, compile children (compile-side only).
[[nodiscard]] std::vector<start_state> first_call_states(bool have_gpu);
/// The untimed child that fills the shared warm cache before the states run.
[[nodiscard]] start_state warm_up_state(bool have_gpu);

struct child_result {
    int exit_code = -1;
    double wall_ms = 0;
};

/// Starts `executable args…` with `env` added to this process's environment and its spawn time
/// stamped in KJIT_SPAWNED_NS, its output into `output_file`; waits, and times it.
[[nodiscard]] child_result run_child(const std::string& executable, const std::vector<std::string>& args,
                                     std::vector<std::pair<std::string, std::string>> env,
                                     const std::string& output_file);

/// Per state, the median of each phase and of the process wall time over its repeats, with min
/// and max: one summary row per state (first_call_state set, sweep columns empty).
[[nodiscard]] std::vector<report::row> summarize_first_call(const std::vector<report::row>& rows);

/// "cold: 612 ms per process: CUDA start-up 41 %, compile 20 %, …", one line per state.
[[nodiscard]] std::string explain_first_call(const std::vector<report::row>& summary);

}  // namespace kjit::run
