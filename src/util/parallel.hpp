// Splits a loop over [0, count) into contiguous chunks run on all cores. For host work on large
// arrays (input generation, the reference, comparison); results must not depend on the split.
//
// The helpers are a pool of threads started once per process: a warm session's run calls this
// a few times on arrays of a million elements, and starting a thread per core each time cost
// more than the work (a thread start is a system call, and a slow one in a sandboxed kernel).
#pragma once
#include <algorithm>
#include <cstddef>
#include <thread>
#include <utility>

namespace kjit {

/// The most workers parallel_ranges may use on this thread; 0 = one per core.
inline thread_local std::size_t t_parallel_limit = 0;

/// Caps parallel_ranges on the calling thread while it lives: a sweep makes the next group's host
/// data on fewer threads than cores, leaving a core to each GPU's launching thread.
class parallel_limit {
public:
    explicit parallel_limit(std::size_t workers) : m_before(std::exchange(t_parallel_limit, workers)) {}
    ~parallel_limit() { t_parallel_limit = m_before; }
    parallel_limit(const parallel_limit&) = delete;
    parallel_limit& operator=(const parallel_limit&) = delete;

private:
    std::size_t m_before;
};

namespace detail {
/// Runs range(context, r) for r in [0, ranges) on the calling thread and the pool's helpers, and
/// returns when all have returned; rethrows the first exception a range threw. The caller takes
/// ranges too, so the work finishes even when every helper is busy (nested or concurrent calls).
void run_ranges(std::size_t ranges, void (*range)(void* context, std::size_t r), void* context);
}  // namespace detail

/// Calls body(begin, end) for disjoint ranges covering [0, count), concurrently; waits for all.
template <class Body>
void parallel_ranges(std::size_t count, Body body, std::size_t min_chunk = 1 << 16) {
    const std::size_t cores = t_parallel_limit > 0 ? t_parallel_limit : std::thread::hardware_concurrency();
    const std::size_t workers = std::clamp<std::size_t>(std::min<std::size_t>(cores, count / min_chunk), 1, 64);
    if (workers == 1) {
        body(std::size_t{0}, count);
        return;
    }
    struct split {
        Body& body;
        std::size_t count, step;
    } work{body, count, (count + workers - 1) / workers};
    const std::size_t ranges = (count + work.step - 1) / work.step;
    detail::run_ranges(ranges, [](void* context, std::size_t r) {
        const auto& w = *static_cast<split*>(context);
        w.body(r * w.step, std::min(w.count, (r + 1) * w.step));
    }, &work);
}

}  // namespace kjit
