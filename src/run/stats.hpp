// Statistics of timed samples, what the device's state says of them, and the launch-shape
// arithmetic. Pure functions.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "report/record.hpp"

namespace kjit::run {

/// Median, min, max, mean and sample standard deviation; an empty input gives count 0.
[[nodiscard]] report::sample_stats summarize(std::vector<double> samples);

/// The median's relative standard error, robustly: 1.2533 · 1.4826 · MAD / √n / median (the
/// normal-theory error of a median, with the spread taken from the median absolute deviation, so
/// a few outliers do not inflate it). 0 for fewer than two samples or a zero median.
[[nodiscard]] double median_relative_error(std::vector<double> samples);

/// Warnings about the timed loops from the device's state before and after them: an SM or memory
/// clock that moved by more than 2 %, and clock limits that slow kernels down (power cap,
/// thermal, hardware slowdown). Nothing where NVML said nothing.
[[nodiscard]] std::vector<std::string> state_warnings(const report::device_state& before,
                                                      const report::device_state& after);

/// Blocks to launch for n elements, `vector_width` per load, `block` threads per block: the
/// explicit grid when given; else enough blocks for one pass, capped at what is resident on the
/// device at once (`resident_blocks`), beyond which the kernel's grid-stride loop takes over.
[[nodiscard]] long long grid_size(long long n, int block, int vector_width, std::optional<long long> explicit_grid,
                                  long long resident_blocks);

}  // namespace kjit::run
