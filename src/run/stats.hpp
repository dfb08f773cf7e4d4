// Statistics of timed samples, and the launch-shape arithmetic. Pure functions.
#pragma once
#include <optional>
#include <vector>

#include "report/record.hpp"

namespace kjit::run {

/// Median, min, max, mean and sample standard deviation; an empty input gives count 0.
[[nodiscard]] report::sample_stats summarize(std::vector<double> samples);

/// Blocks to launch for n elements, `vector_width` per load, `block` threads per block: the
/// explicit grid when given; else enough blocks for one pass, capped at what is resident on the
/// device at once (`resident_blocks`), beyond which the kernel's grid-stride loop takes over.
[[nodiscard]] long long grid_size(long long n, int block, int vector_width, std::optional<long long> explicit_grid,
                                  long long resident_blocks);

}  // namespace kjit::run
