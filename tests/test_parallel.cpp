// parallel_ranges on the process's helper pool: every index exactly once, whatever the split;
// a range's exception reaches the caller; calls from several threads at once, and calls inside a
// range, finish (the caller takes ranges itself, so a busy pool never stalls it).
#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <vector>

#include <doctest/doctest.h>

#include "util/parallel.hpp"

using namespace kjit;

namespace {
/// How many times parallel_ranges visited each index of [0, count).
std::vector<int> visits(std::size_t count, std::size_t min_chunk) {
    std::vector<std::atomic<int>> seen(count);
    parallel_ranges(count, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) ++seen[i];
    }, min_chunk);
    return {seen.begin(), seen.end()};
}
}  // namespace

TEST_CASE("parallel_ranges covers every index once, in ranges of at least min_chunk") {
    for (const std::size_t count : {0UL, 1UL, 7UL, 1000UL, 100003UL})
        for (const std::size_t min_chunk : {1UL, 16UL, 4096UL}) {
            CAPTURE(count);
            CAPTURE(min_chunk);
            const auto seen = visits(count, min_chunk);
            CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(count));
        }
    const parallel_limit three(3);
    std::atomic<int> ranges{0};
    parallel_ranges(1000, [&](std::size_t, std::size_t) { ++ranges; }, 1);
    CHECK(ranges == 3);  // the limit is the number of ranges, whatever the cores
}

TEST_CASE("an exception in a range reaches the caller, after every range has returned") {
    const parallel_limit four(4);
    std::atomic<int> returned{0};
    CHECK_THROWS_WITH_AS(parallel_ranges(400, [&](std::size_t begin, std::size_t) {
        ++returned;
        if (begin == 100) throw std::runtime_error("range at 100");
    }, 1), "range at 100", std::runtime_error);
    CHECK(returned == 4);
}

TEST_CASE("calls from several threads at once, and nested calls, finish with every index once") {
    std::vector<std::vector<int>> results(6);
    {
        std::vector<std::jthread> callers;
        for (std::size_t t = 0; t < results.size(); ++t)
            callers.emplace_back([&, t] { results[t] = visits(50000 + t, 64); });
    }
    for (std::size_t t = 0; t < results.size(); ++t)
        CHECK(std::count(results[t].begin(), results[t].end(), 1) == static_cast<std::ptrdiff_t>(50000 + t));

    std::atomic<long> inner{0};
    parallel_ranges(64, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i)
            parallel_ranges(1000, [&](std::size_t b, std::size_t e) { inner += static_cast<long>(e - b); }, 10);
    }, 1);
    CHECK(inner == 64 * 1000);
}
