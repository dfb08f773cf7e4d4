#include "cuda/cupti.hpp"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace kjit::cuda {
namespace {

/// The entry points kjit calls, bound from the library loaded at run time.
struct cupti_api {
#define KJIT_CUPTI(name) decltype(&::name) name = nullptr;
    KJIT_CUPTI(cuptiGetResultString)
    KJIT_CUPTI(cuptiProfilerInitialize)
    KJIT_CUPTI(cuptiDeviceGetChipName)
    KJIT_CUPTI(cuptiProfilerGetCounterAvailability)
    KJIT_CUPTI(cuptiProfilerHostInitialize)
    KJIT_CUPTI(cuptiProfilerHostDeinitialize)
    KJIT_CUPTI(cuptiProfilerHostGetMetricProperties)
    KJIT_CUPTI(cuptiProfilerHostConfigAddMetrics)
    KJIT_CUPTI(cuptiProfilerHostGetConfigImageSize)
    KJIT_CUPTI(cuptiProfilerHostGetConfigImage)
    KJIT_CUPTI(cuptiProfilerHostGetRangeName)
    KJIT_CUPTI(cuptiProfilerHostEvaluateToGpuValues)
    KJIT_CUPTI(cuptiRangeProfilerEnable)
    KJIT_CUPTI(cuptiRangeProfilerDisable)
    KJIT_CUPTI(cuptiRangeProfilerGetCounterDataSize)
    KJIT_CUPTI(cuptiRangeProfilerCounterDataImageInitialize)
    KJIT_CUPTI(cuptiRangeProfilerSetConfig)
    KJIT_CUPTI(cuptiRangeProfilerStart)
    KJIT_CUPTI(cuptiRangeProfilerStop)
    KJIT_CUPTI(cuptiRangeProfilerDecodeData)
    KJIT_CUPTI(cuptiRangeProfilerGetCounterDataInfo)
#undef KJIT_CUPTI
    std::string why_not;  ///< empty when loaded and initialised
};

/// A CUPTI parameter struct, zeroed, its size set: what every CUPTI call takes.
template <class Params>
Params params(std::size_t size) {
    Params p{};
    p.structSize = size;
    return p;
}

template <class Fn>
bool bind(void* library, const char* name, Fn& slot) {
    slot = reinterpret_cast<Fn>(::dlsym(library, name));
    return slot != nullptr;
}

/// $KJIT_LIBCUPTI, else the soname on the loader's path, else the toolkit's own copies.
void* open_library(std::string& tried) {
    std::vector<std::string> names;
    if (const char* chosen = std::getenv("KJIT_LIBCUPTI"); chosen && *chosen) names.emplace_back(chosen);
    else names = {"libcupti.so." + std::to_string(KJIT_CUDA_MAJOR), KJIT_CUDA_LIBRARY_DIR "/libcupti.so",
                  KJIT_CUDA_LIBRARY_DIR "/../extras/CUPTI/lib64/libcupti.so"};
    for (const auto& name : names) {
        if (void* library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
        tried += (tried.empty() ? "" : "; ") + std::string(::dlerror());
    }
    return nullptr;
}

/// Loaded and initialised once per process, and kept.
const cupti_api& api() {
    static cupti_api loaded;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string tried;
        void* library = open_library(tried);
        if (!library) {
            loaded.why_not = "cannot load CUPTI (" + tried + ")";
            return;
        }
        cupti_api a;
#define KJIT_BIND(name) bind(library, #name, a.name) &&
        const bool complete = KJIT_BIND(cuptiGetResultString) KJIT_BIND(cuptiProfilerInitialize)
            KJIT_BIND(cuptiDeviceGetChipName) KJIT_BIND(cuptiProfilerGetCounterAvailability)
            KJIT_BIND(cuptiProfilerHostInitialize) KJIT_BIND(cuptiProfilerHostDeinitialize)
            KJIT_BIND(cuptiProfilerHostGetMetricProperties) KJIT_BIND(cuptiProfilerHostConfigAddMetrics)
            KJIT_BIND(cuptiProfilerHostGetConfigImageSize) KJIT_BIND(cuptiProfilerHostGetConfigImage)
            KJIT_BIND(cuptiProfilerHostGetRangeName) KJIT_BIND(cuptiProfilerHostEvaluateToGpuValues)
            KJIT_BIND(cuptiRangeProfilerEnable) KJIT_BIND(cuptiRangeProfilerDisable)
            KJIT_BIND(cuptiRangeProfilerGetCounterDataSize) KJIT_BIND(cuptiRangeProfilerCounterDataImageInitialize)
            KJIT_BIND(cuptiRangeProfilerSetConfig) KJIT_BIND(cuptiRangeProfilerStart)
            KJIT_BIND(cuptiRangeProfilerStop) KJIT_BIND(cuptiRangeProfilerDecodeData)
            KJIT_BIND(cuptiRangeProfilerGetCounterDataInfo) true;
#undef KJIT_BIND
        if (!complete) {
            loaded.why_not = "this CUPTI has no range profiler (CUPTI 12.6 or newer has it)";
            return;
        }
        auto init = params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
        if (const CUptiResult result = a.cuptiProfilerInitialize(&init); result != CUPTI_SUCCESS) {
            const char* text = nullptr;
            a.cuptiGetResultString(result, &text);
            loaded.why_not = std::string("cuptiProfilerInitialize: ") + (text ? text : "failed");
            return;
        }
        loaded = a;
    });
    return loaded;
}

/// A failed CUPTI call, as the reason no counter was read.
struct cupti_failure {
    std::string message;
};

void check(const cupti_api& a, CUptiResult result, const char* call) {
    if (result == CUPTI_SUCCESS) return;
    const char* text = nullptr;
    a.cuptiGetResultString(result, &text);
    std::string message = std::string(call) + ": " + (text ? text : "error " + std::to_string(result));
    if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        message += " (reading counters needs root, or the driver loaded with NVreg_RestrictProfilingToAdminUsers=0)";
    throw cupti_failure{message};
}

/// The host side of the profiler for this GPU's chip: which metrics it knows and their config.
class host_object {
public:
    /// CUPTI keeps pointers to the chip's name and the availability image: the object owns them.
    host_object(const cupti_api& a, std::string chip, std::vector<std::uint8_t> availability)
        : m_api(a), m_chip(std::move(chip)), m_availability(std::move(availability)) {
        auto p = params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
        p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        p.pChipName = m_chip.c_str();
        p.pCounterAvailabilityImage = m_availability.data();
        check(a, a.cuptiProfilerHostInitialize(&p), "cuptiProfilerHostInitialize");
        m_object = p.pHostObject;
    }
    ~host_object() {
        auto p = params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
        p.pHostObject = m_object;
        (void)m_api.cuptiProfilerHostDeinitialize(&p);
    }
    host_object(const host_object&) = delete;
    host_object& operator=(const host_object&) = delete;

    [[nodiscard]] bool knows(const std::string& metric) const {
        auto p = params<CUpti_Profiler_Host_GetMetricProperties_Params>(CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
        p.pHostObject = m_object;
        p.pMetricName = metric.c_str();
        return m_api.cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
    }

    [[nodiscard]] std::vector<std::uint8_t> config(std::vector<const char*>& metrics) const {
        auto add = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
        add.pHostObject = m_object;
        add.ppMetricNames = metrics.data();
        add.numMetrics = metrics.size();
        check(m_api, m_api.cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
        auto size = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
        size.pHostObject = m_object;
        check(m_api, m_api.cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
        std::vector<std::uint8_t> image(size.configImageSize);
        auto get = params<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
        get.pHostObject = m_object;
        get.configImageSize = image.size();
        get.pConfigImage = image.data();
        check(m_api, m_api.cuptiProfilerHostGetConfigImage(&get), "cuptiProfilerHostGetConfigImage");
        return image;
    }

    /// The values of `metrics` in range `index` of the decoded counter data.
    [[nodiscard]] std::vector<double> values(const std::vector<std::uint8_t>& data, std::size_t index,
                                             std::vector<const char*>& metrics) const {
        std::vector<double> values(metrics.size());
        auto p = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
        p.pHostObject = m_object;
        p.pCounterDataImage = data.data();
        p.counterDataImageSize = data.size();
        p.rangeIndex = index;
        p.ppMetricNames = metrics.data();
        p.numMetrics = metrics.size();
        p.pMetricValues = values.data();
        check(m_api, m_api.cuptiProfilerHostEvaluateToGpuValues(&p), "cuptiProfilerHostEvaluateToGpuValues");
        return values;
    }

    /// The name of range `index`: the kernel's, in auto-range mode.
    [[nodiscard]] std::string range_name(const std::vector<std::uint8_t>& data, std::size_t index) const {
        auto p = params<CUpti_Profiler_Host_GetRangeName_Params>(CUpti_Profiler_Host_GetRangeName_Params_STRUCT_SIZE);
        p.pCounterDataImage = data.data();
        p.counterDataImageSize = data.size();
        p.rangeIndex = index;
        p.delimiter = "/";
        check(m_api, m_api.cuptiProfilerHostGetRangeName(&p), "cuptiProfilerHostGetRangeName");
        std::string name = p.pRangeName ? p.pRangeName : "";
        std::free(const_cast<char*>(p.pRangeName));  // CUPTI allocates it for the caller
        return name;
    }

private:
    const cupti_api& m_api;
    std::string m_chip;
    std::vector<std::uint8_t> m_availability;
    CUpti_Profiler_Host_Object* m_object = nullptr;
};

/// The range profiler enabled on a context, disabled when it goes.
class range_profiler {
public:
    range_profiler(const cupti_api& a, CUcontext context) : m_api(a) {
        auto p = params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
        p.ctx = context;
        check(a, a.cuptiRangeProfilerEnable(&p), "cuptiRangeProfilerEnable");
        m_object = p.pRangeProfilerObject;
    }
    ~range_profiler() {
        auto p = params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
        p.pRangeProfilerObject = m_object;
        (void)m_api.cuptiRangeProfilerDisable(&p);
    }
    range_profiler(const range_profiler&) = delete;
    range_profiler& operator=(const range_profiler&) = delete;

    /// A counter-data image for up to `ranges` ranges of `metrics`, initialised.
    [[nodiscard]] std::vector<std::uint8_t> counter_data(std::vector<const char*>& metrics, std::size_t ranges) const {
        auto size = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
        size.pRangeProfilerObject = m_object;
        size.pMetricNames = metrics.data();
        size.numMetrics = metrics.size();
        size.maxNumOfRanges = ranges;
        size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(ranges);
        check(m_api, m_api.cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
        std::vector<std::uint8_t> data(size.counterDataSize);
        auto init = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
        init.pRangeProfilerObject = m_object;
        init.counterDataSize = data.size();
        init.pCounterData = data.data();
        check(m_api, m_api.cuptiRangeProfilerCounterDataImageInitialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");
        return data;
    }

    /// Each kernel `enqueue` launches a range. The chain runs once per pass the config needs,
    /// after `before_pass` (user replay): CUPTI's kernel replay would restore memory between its
    /// passes and leave a small kernel's data in the L2.
    void profile(const std::vector<std::uint8_t>& config, std::vector<std::uint8_t>& data, std::size_t ranges,
                 const std::function<void()>& before_pass, const std::function<void()>& enqueue,
                 const std::function<void()>& finish) const {
        auto set = params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
        set.pRangeProfilerObject = m_object;
        set.configSize = config.size();
        set.pConfig = config.data();
        set.counterDataImageSize = data.size();
        set.pCounterDataImage = data.data();
        set.range = CUPTI_AutoRange;
        set.replayMode = CUPTI_UserReplay;
        set.maxRangesPerPass = ranges;
        set.numNestingLevels = 1;
        set.minNestingLevel = 1;
        set.passIndex = 0;
        set.targetNestingLevel = 1;
        check(m_api, m_api.cuptiRangeProfilerSetConfig(&set), "cuptiRangeProfilerSetConfig");
        for (bool all_passes = false; !all_passes;) {
            before_pass();
            finish();
            auto start = params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
            start.pRangeProfilerObject = m_object;
            check(m_api, m_api.cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
            enqueue();
            finish();
            auto stop = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
            stop.pRangeProfilerObject = m_object;
            check(m_api, m_api.cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
            all_passes = stop.isAllPassSubmitted != 0;
        }
        auto decode = params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
        decode.pRangeProfilerObject = m_object;
        check(m_api, m_api.cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");
    }

private:
    const cupti_api& m_api;
    CUpti_RangeProfiler_Object* m_object = nullptr;
};

std::string chip_name(const cupti_api& a, int device_index) {
    auto p = params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    p.deviceIndex = static_cast<std::size_t>(device_index);
    check(a, a.cuptiDeviceGetChipName(&p), "cuptiDeviceGetChipName");
    return p.pChipName;
}

std::vector<std::uint8_t> counter_availability(const cupti_api& a, CUcontext context) {
    auto p = params<CUpti_Profiler_GetCounterAvailability_Params>(CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
    p.ctx = context;
    check(a, a.cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
    std::vector<std::uint8_t> image(p.counterAvailabilityImageSize);
    p.pCounterAvailabilityImage = image.data();
    check(a, a.cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
    return image;
}

std::size_t ranges_in(const cupti_api& a, const std::vector<std::uint8_t>& data) {
    auto p = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    p.pCounterDataImage = data.data();
    p.counterDataImageSize = data.size();
    check(a, a.cuptiRangeProfilerGetCounterDataInfo(&p), "cuptiRangeProfilerGetCounterDataInfo");
    return p.numTotalRanges;
}

/// At most this many kernel launches are counted in one reading: more than any variant makes.
constexpr std::size_t k_max_ranges = 64;

}  // namespace

run::gpu::counter_reading read_counters(CUcontext context, int device_index, const std::vector<std::string>& metrics,
                                        const std::function<void()>& before_pass, const std::function<void()>& enqueue,
                                        const std::function<void()>& finish) {
    run::gpu::counter_reading reading;
    const cupti_api& a = api();
    if (!a.why_not.empty()) {
        reading.problem = a.why_not;
        return reading;
    }
    try {
        const host_object host(a, chip_name(a, device_index), counter_availability(a, context));
        std::vector<const char*> known;
        for (const auto& m : metrics) {
            if (host.knows(m)) known.push_back(m.c_str());
            else reading.unavailable.push_back(m);
        }
        if (known.empty()) throw cupti_failure{"this GPU counts none of the metrics asked for"};
        const auto config = host.config(known);
        const range_profiler profiler(a, context);
        auto data = profiler.counter_data(known, k_max_ranges);
        profiler.profile(config, data, k_max_ranges, before_pass, enqueue, finish);
        for (std::size_t r = 0, n = ranges_in(a, data); r < n; ++r) {
            const auto values = host.values(data, r, known);
            std::map<std::string, double> named;
            for (std::size_t m = 0; m < known.size(); ++m) named[known[m]] = values[m];
            reading.launches.emplace_back(host.range_name(data, r), std::move(named));
        }
    } catch (const cupti_failure& failure) {
        reading.launches.clear();
        reading.problem = failure.message;
    }
    return reading;
}

}  // namespace kjit::cuda
