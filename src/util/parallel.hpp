// Splits a loop over [0, count) into contiguous chunks run on all cores. For host work on large
// arrays (input generation, the reference, comparison); results must not depend on the split.
#pragma once
#include <algorithm>
#include <cstddef>
#include <thread>
#include <utility>
#include <vector>

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

/// Calls body(begin, end) for disjoint ranges covering [0, count), concurrently; waits for all.
template <class Body>
void parallel_ranges(std::size_t count, Body body, std::size_t min_chunk = 1 << 16) {
    const std::size_t cores = t_parallel_limit > 0 ? t_parallel_limit : std::thread::hardware_concurrency();
    const std::size_t workers = std::clamp<std::size_t>(std::min<std::size_t>(cores, count / min_chunk), 1, 64);
    if (workers == 1) {
        body(std::size_t{0}, count);
        return;
    }
    std::vector<std::jthread> threads;
    const std::size_t step = (count + workers - 1) / workers;
    for (std::size_t begin = 0; begin < count; begin += step)
        threads.emplace_back([=, &body] { body(begin, std::min(count, begin + step)); });
}

}  // namespace kjit
