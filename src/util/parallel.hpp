// Splits a loop over [0, count) into contiguous chunks run on all cores. For host work on large
// arrays (input generation, the reference, comparison); results must not depend on the split.
#pragma once
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace kjit {

/// Calls body(begin, end) for disjoint ranges covering [0, count), concurrently; waits for all.
template <class Body>
void parallel_ranges(std::size_t count, Body body, std::size_t min_chunk = 1 << 16) {
    const std::size_t workers = std::clamp<std::size_t>(
        std::min<std::size_t>(std::thread::hardware_concurrency(), count / min_chunk), 1, 64);
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
