#include "cuda/nvml.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace kjit::cuda {
namespace {

// The few entry points kjit uses, declared from NVML's documented C API (the toolkit ships no
// nvml.h): nvmlReturn_t is an int (0 = success), nvmlDevice_t an opaque pointer.
using nvml_return = int;
using nvml_handle = void*;
constexpr unsigned k_clock_sm = 1, k_clock_memory = 2;  // nvmlClockType_t
constexpr unsigned k_temperature_gpu = 0;               // nvmlTemperatureSensors_t

struct nvml_api {
    nvml_return (*init)() = nullptr;                                              // nvmlInit_v2
    nvml_return (*by_pci_bus_id)(const char*, nvml_handle*) = nullptr;            // …GetHandleByPciBusId_v2
    nvml_return (*clock)(nvml_handle, unsigned, unsigned*) = nullptr;             // nvmlDeviceGetClockInfo
    nvml_return (*temperature)(nvml_handle, unsigned, unsigned*) = nullptr;       // nvmlDeviceGetTemperature
    nvml_return (*power_mw)(nvml_handle, unsigned*) = nullptr;                    // nvmlDeviceGetPowerUsage
    nvml_return (*clock_limits)(nvml_handle, unsigned long long*) = nullptr;      // …CurrentClocksEventReasons
    std::string why_not;  ///< empty when loaded and initialised
};

template <class Fn>
bool bind(void* library, const char* name, Fn& slot) {
    slot = reinterpret_cast<Fn>(::dlsym(library, name));
    return slot != nullptr;
}

/// Loaded and initialised once per process, and kept: nvmlShutdown at exit would only cost time.
const nvml_api& api() {
    static nvml_api loaded;
    static std::once_flag once;
    std::call_once(once, [] {
        const char* chosen = std::getenv("KJIT_LIBNVML");
        const std::string name = chosen && *chosen ? chosen : "libnvidia-ml.so.1";
        void* library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            loaded.why_not = "cannot load " + name + ": " + ::dlerror();
            return;
        }
        nvml_api a;
        // The clocks-event call was called …ClocksThrottleReasons before driver 535; same signature.
        const bool complete = bind(library, "nvmlInit_v2", a.init) &&
                              bind(library, "nvmlDeviceGetHandleByPciBusId_v2", a.by_pci_bus_id) &&
                              bind(library, "nvmlDeviceGetClockInfo", a.clock) &&
                              bind(library, "nvmlDeviceGetTemperature", a.temperature) &&
                              bind(library, "nvmlDeviceGetPowerUsage", a.power_mw) &&
                              (bind(library, "nvmlDeviceGetCurrentClocksEventReasons", a.clock_limits) ||
                               bind(library, "nvmlDeviceGetCurrentClocksThrottleReasons", a.clock_limits));
        if (!complete) {
            loaded.why_not = "libnvidia-ml lacks an entry point kjit uses";
        } else if (const nvml_return result = a.init(); result != 0) {
            loaded.why_not = "nvmlInit failed (" + std::to_string(result) + ")";
        } else {
            loaded = a;
        }
    });
    return loaded;
}

}  // namespace

nvml_device::nvml_device(const std::string& pci_bus_id) {
    const nvml_api& a = api();
    if (!a.why_not.empty()) {
        m_why_not = a.why_not;
        return;
    }
    if (const nvml_return result = a.by_pci_bus_id(pci_bus_id.c_str(), &m_handle); result != 0) {
        m_handle = nullptr;
        m_why_not = "NVML does not know the device at " + pci_bus_id + " (" + std::to_string(result) + ")";
    }
}

report::device_state nvml_device::read() const {
    report::device_state state;
    if (!m_handle) return state;
    const nvml_api& a = api();
    unsigned value = 0;
    if (a.clock(m_handle, k_clock_sm, &value) == 0) state.sm_clock_mhz = static_cast<int>(value);
    if (a.clock(m_handle, k_clock_memory, &value) == 0) state.memory_clock_mhz = static_cast<int>(value);
    if (a.temperature(m_handle, k_temperature_gpu, &value) == 0) state.temperature_c = static_cast<int>(value);
    if (a.power_mw(m_handle, &value) == 0) state.power_w = value / 1000.0;
    unsigned long long reasons = 0;
    if (a.clock_limits(m_handle, &reasons) == 0) state.clock_limits = reasons;
    return state;
}

}  // namespace kjit::cuda
