// Kernel timing of one chain of launches, on the GPU's events: cold (L2 flushed before each
// sample, sampled until the median's noise is within measure.noise), batch (chains back to back)
// and graph (the same chains replayed as one CUDA graph).
#pragma once
#include <functional>

#include "config/config.hpp"
#include "report/record.hpp"
#include "run/gpu.hpp"

namespace kjit::run {

/// Batches of back-to-back chains (and graph replays) per run.
inline constexpr int k_batches = 10;
/// The device time a batch aims at: long enough that the events around it (a few µs) are under
/// 1 % of it, short enough that slow chains do not spend a sweep's seconds in 10 × repeat launches.
inline constexpr double k_batch_ms = 1.0;
/// Chains per batch: enough to fill k_batch_ms at the cold median, at least 1, at most `repeat`.
[[nodiscard]] int chains_per_batch(double cold_median_ms, int repeat);

/// After `warmup` untimed chains: cold samples, k_batches batches of chains_per_batch chains
/// (total / chains), and the graph of one batch replayed k_batches times; batch − graph is the
/// launch overhead. Fills rec's kernel times, device states and their warnings.
void measure_kernel(gpu& device, const std::function<void()>& chain, const config::measure_spec& m,
                    report::record& rec);

}  // namespace kjit::run
