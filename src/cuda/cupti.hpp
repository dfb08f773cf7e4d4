// Hardware counters through CUPTI's range profiler (libcupti, loaded at run time like libcuda and
// NVML; $KJIT_LIBCUPTI names another): each kernel launch a range, replayed by CUPTI as often as
// its counters need, its memory saved and restored between replays. What cannot be read (no
// library, no permission to read counters, a metric this GPU lacks) is reported, not thrown.
#pragma once
#include <cuda.h>

#include <functional>
#include <string>
#include <vector>

#include "run/gpu.hpp"

namespace kjit::cuda {

/// Reads `metrics` (CUPTI's names) of each kernel that `enqueue` launches in `context` on device
/// `device_index`. The whole chain is replayed once per pass the metrics need (CUPTI's user
/// replay), `before_pass` enqueued ahead of each, outside the counted ranges; `finish` waits for
/// the work enqueued.
[[nodiscard]] run::gpu::counter_reading read_counters(CUcontext context, int device_index,
                                                      const std::vector<std::string>& metrics,
                                                      const std::function<void()>& before_pass,
                                                      const std::function<void()>& enqueue,
                                                      const std::function<void()>& finish);

}  // namespace kjit::cuda
