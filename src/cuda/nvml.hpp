// NVML (libnvidia-ml, which comes with the driver), loaded at run time like libcuda, for what the
// Driver API cannot say: current clocks, temperature, power and why clocks are held down. Every
// failure (no library, no permission, a call a GPU does not support) leaves a field empty: kjit
// measures without NVML, it only warns less.
#pragma once
#include <memory>
#include <string>

#include "report/device_state.hpp"

namespace kjit::cuda {

class nvml_device {
public:
    /// The device with this PCI bus id ("0000:19:00.0", from cuDeviceGetPCIBusId), through the
    /// process's one NVML session (KJIT_LIBNVML overrides the library name). Never throws.
    explicit nvml_device(const std::string& pci_bus_id);
    /// Whether NVML answered for this device; `why_not` says why it did not.
    [[nodiscard]] bool available() const { return m_handle != nullptr; }
    [[nodiscard]] const std::string& why_not() const { return m_why_not; }
    [[nodiscard]] report::device_state read() const;

private:
    void* m_handle = nullptr;  ///< nvmlDevice_t
    std::string m_why_not;
};

}  // namespace kjit::cuda
