// What a device is: its handle by index, its properties, its PCI bus id (which NVML knows it by).
#pragma once
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "run/gpu.hpp"

namespace kjit::cuda {

/// CUDA's handle of device `index`, which must be one of `device_count` (else a usage error).
[[nodiscard]] CUdevice device_at(const driver_api& api, int index, int device_count);

/// The properties resolve and the report use, of `device` (CUDA's index `index`).
[[nodiscard]] run::device_info query_device(const driver_api& api, CUdevice device, int index, int driver_version);

/// The device's PCI bus id, which NVML knows it by (its indices may differ from CUDA's).
[[nodiscard]] std::string pci_bus_id(const driver_api& api, CUdevice device);

/// Properties of every device the driver sees.
[[nodiscard]] std::vector<run::device_info> list_devices(const probe_result& driver);

}  // namespace kjit::cuda
