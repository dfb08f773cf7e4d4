// A one-line progress bar with an ETA for sweeps, on a terminal only. Separate from results: it
// writes to stderr-like streams and leaves nothing behind when disabled.
#pragma once
#include <chrono>
#include <mutex>
#include <ostream>
#include <string>

namespace kjit::report {

/// True when `fd` is a terminal and the user did not ask for --quiet.
[[nodiscard]] bool progress_wanted(int fd, bool quiet);

class progress_bar {
public:
    progress_bar(std::ostream& out, std::size_t total, bool enabled);
    /// A new stage of `total` steps ("compile", then "run"): its count, clock and ETA start
    /// afresh, so that one stage's pace does not predict another's; thread-safe.
    void stage(std::string name, std::size_t total);
    /// One more step done; thread-safe.
    void step(const std::string& label);
    /// One report of a compile pool's progress (run::compile_progress): the first, with none
    /// done, opens a "compile" stage of `total` steps; each later one is a step.
    void compiled(std::size_t done, std::size_t total, const std::string& label);
    /// Clears the line.
    void finish();

private:
    std::ostream& m_out;
    std::string m_stage;  ///< shown before the count, where there is one
    std::size_t m_total;
    std::size_t m_done = 0;
    bool m_enabled;
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    std::mutex m_mutex;
};

}  // namespace kjit::report
