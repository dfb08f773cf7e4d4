// The timeline of a process: each phase as a span on the thread that ran it. `--trace FILE` writes
// the spans as Chrome trace-event JSON (Perfetto and chrome://tracing open it); every span is also
// an NVTX range in the "kjit" domain, so Nsight Systems shows the same names. A span costs two clock
// reads and two NVTX calls (no-ops without a profiler) until collecting is switched on.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kjit::trace {

using clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: one time line for every process

/// Keeps every span from now on, for to_json().
void start_collecting();
/// Stops keeping spans and forgets those kept (a Python block traced with kjit.trace, then the next).
void stop_collecting();
[[nodiscard]] bool collecting();

/// The calling thread's name in the trace ("main", "compile 3", "GPU 0").
void name_thread(const std::string& name);

/// A span from construction to end() (or destruction) on the calling thread.
class span {
public:
    explicit span(std::string name, nlohmann::json args = nullptr);
    ~span();
    span(const span&) = delete;
    span& operator=(const span&) = delete;

    /// Ends the span now (later calls change nothing) and returns its length in ms.
    double end();
    /// Adds a key to the span's args, shown when it is selected.
    void note(const std::string& key, nlohmann::json value);
    [[nodiscard]] clock::time_point begin() const { return m_begin; }

private:
    std::string m_name;
    nlohmann::json m_args;
    clock::time_point m_begin;
    double m_ms = -1;
};

/// A span timed by someone else (NVRTC's own -time report, a child process seen from outside).
void add(const std::string& name, clock::time_point begin, clock::time_point end, nlohmann::json args = nullptr);

/// Adds the events of another kjit process's trace file (a first-call child), under its own pid.
/// A file that is missing or not a trace is skipped: the child's own record says what failed.
void merge_file(const std::string& path);

/// Everything collected so far as {"traceEvents": [...]}: complete ("X") events in µs of the
/// monotonic clock, and thread and process names.
[[nodiscard]] nlohmann::json to_json();

/// Marks main's entry (the first thing kjit's main does), and reads it back: nullopt when main is
/// not kjit's (a test driving the library).
void mark_main_entered();
[[nodiscard]] std::optional<clock::time_point> main_entered();

/// This process's start, for spans that begin before main: a parent that times its children
/// passes the time it spawned them in $KJIT_SPAWNED_NS (ns of the monotonic clock).
[[nodiscard]] std::optional<clock::time_point> spawned_at();
/// What to put in $KJIT_SPAWNED_NS for a child spawned now.
[[nodiscard]] std::string spawn_stamp();

}  // namespace kjit::trace
