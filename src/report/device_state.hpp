// What the GPU's management library (NVML) says of a device at one moment: clocks, temperature,
// power and why its clocks are held down. Plain data, so records and the run::gpu interface share
// it without either knowing NVML. A field is empty where NVML is missing or cannot tell.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace kjit::report {

struct device_state {
    std::optional<int> sm_clock_mhz;
    std::optional<int> memory_clock_mhz;
    std::optional<int> temperature_c;
    std::optional<double> power_w;
    /// NVML's clocks-event reason bits (nvmlClocksEventReason*): why clocks are below the maximum.
    std::optional<std::uint64_t> clock_limits;

    [[nodiscard]] bool empty() const { return !sm_clock_mhz && !memory_clock_mhz && !temperature_c && !power_w && !clock_limits; }
};

/// The clock limits that slow a kernel down (power cap, thermal, hardware slowdown, power brake),
/// named: "power cap, thermal (software)"; empty when none of those is set. Idle, application
/// clock settings, sync boost and display settings are not slowdowns of a running kernel.
[[nodiscard]] std::string slowdown_names(std::uint64_t clock_limits);

}  // namespace kjit::report
