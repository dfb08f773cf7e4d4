// run::gpu on a real device through the Driver API, and the sessions' GPUs (devices.hpp says what each is).
#pragma once
#include <memory>

#include "cuda/driver_api.hpp"
#include "run/gpu.hpp"
#include "run/session.hpp"

namespace kjit::cuda {

/// Phase times of opening a device, for the report.
struct open_times {
    double context_ms = 0;  ///< primary context retain + make current + stream + first sync
    double nvml_ms = 0;     ///< opening the device in NVML (loads and initialises it the first time)
};

/// Opens device `index` of a probed driver (state ok). Throws kjit::error(driver).
[[nodiscard]] std::unique_ptr<run::gpu> open_gpu(const probe_result& driver, int index, open_times& times);

/// The sessions' GPUs through the Driver API: libcuda is probed on first use, its start-up time
/// reported with the first device opened.
[[nodiscard]] std::unique_ptr<run::gpu_provider> driver_gpus();

}  // namespace kjit::cuda
