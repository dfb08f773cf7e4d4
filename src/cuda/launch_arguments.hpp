// A launch's arguments as cuLaunchKernel takes them: a pointer to each value, in parameter order,
// each value converted to its parameter's type (a device pointer, a float, a double, a 64-bit
// integer, or a TMA tensor map encoded from a buffer's address).
#pragma once
#include <functional>

#include "cuda/driver_api.hpp"
#include "run/gpu.hpp"

namespace kjit::cuda {

/// The `void**` cuLaunchKernel takes for `launch`'s arguments, buffers found by `address_of`. The
/// values live in this thread's slots until its next call: a launch allocates nothing (a Python
/// kernel call is timed per call).
[[nodiscard]] void** launch_arguments(const driver_api& api, const run::kernel_launch& launch,
                                      const std::function<CUdeviceptr(run::buffer_id)>& address_of);

}  // namespace kjit::cuda
