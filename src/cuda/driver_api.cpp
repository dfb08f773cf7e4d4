#include "cuda/driver_api.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <vector>

#include "cuda/wait.hpp"
#include "report/trace.hpp"
#include "util/error.hpp"
#include "util/units.hpp"

namespace kjit::cuda {
namespace {

using get_proc_fn = PFN_cuGetProcAddress_v12000;

/// Resolves `name` at ABI `version` (the number in its PFN_..._vNNNNN typedef). Returns the status
/// so that a stub library (every call returns CUDA_ERROR_STUB_LIBRARY) can be recognised.
template <class Fn>
CUresult resolve(get_proc_fn get_proc, const char* name, int version, Fn& slot) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult result = get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (result == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && fn != nullptr) {
        slot = reinterpret_cast<Fn>(fn);
        return CUDA_SUCCESS;
    }
    return result != CUDA_SUCCESS ? result : CUDA_ERROR_NOT_FOUND;
}

const char* fallback_error_name(CUresult result) {
    switch (result) {
        case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
        case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
        case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
        case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
        case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
        case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
        case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
        case CUDA_ERROR_NO_BINARY_FOR_GPU: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
        case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
        case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
        case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
        default: return nullptr;
    }
}

}  // namespace

const char* to_string(availability a) {
    switch (a) {
        case availability::ok: return "ok";
        case availability::no_driver_library: return "no_driver_library";
        case availability::stub_driver: return "stub_driver";
        case availability::insufficient_driver: return "insufficient_driver";
        case availability::no_device: return "no_device";
        case availability::init_failed: return "init_failed";
    }
    return "?";
}

std::string driver_api::describe(CUresult result) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
    if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
    if (name == nullptr) name = fallback_error_name(result);
    std::string out = name ? name : "CUresult " + std::to_string(static_cast<int>(result));
    if (text) out += std::string(": ") + text;
    return out;
}

void driver_api::fail(CUresult result, const char* call, const std::string& object) const {
    throw error(error_kind::driver,
                std::string(call) + (object.empty() ? "" : "(" + object + ")") + " failed: " + describe(result));
}

bool copy_to_device_in(const driver_api& api, CUstream stream, CUdeviceptr to, const void* from, std::size_t bytes,
                       std::chrono::milliseconds limit) {
    const std::string size = units::bytes(static_cast<double>(bytes));
    api.check(api.cuMemcpyHtoDAsync(to, from, bytes, stream), "cuMemcpyHtoDAsync", size);
    return wait_until_done(api, [&] { return api.cuStreamQuery(stream); }, "cuStreamQuery", "after copying " + size + " in", limit);
}

std::vector<std::string> driver_library_names() {
    if (const char* chosen = std::getenv("KJIT_LIBCUDA"); chosen && *chosen) return {chosen};
    // libcuda.so.1 is what the driver installs; plain libcuda.so is usually the toolkit's stub.
    return {"libcuda.so.1", "libcuda.so"};
}

namespace {

/// A driver entry point kjit resolves: its base name, the ABI version of its PFN typedef in
/// cudaTypedefs.h, and where its address goes.
struct entry_point {
    const char* name;
    int version;
    void** slot;
};

/// Every entry point kjit calls, each into its slot of `a`.
std::vector<entry_point> entry_points(driver_api& a) {
    return {
        {"cuInit", 2000, reinterpret_cast<void**>(&a.cuInit)},
        {"cuDriverGetVersion", 2020, reinterpret_cast<void**>(&a.cuDriverGetVersion)},
        {"cuGetErrorName", 6000, reinterpret_cast<void**>(&a.cuGetErrorName)},
        {"cuGetErrorString", 6000, reinterpret_cast<void**>(&a.cuGetErrorString)},
        {"cuDeviceGetCount", 2000, reinterpret_cast<void**>(&a.cuDeviceGetCount)},
        {"cuDeviceGet", 2000, reinterpret_cast<void**>(&a.cuDeviceGet)},
        {"cuDeviceGetName", 2000, reinterpret_cast<void**>(&a.cuDeviceGetName)},
        {"cuDeviceGetAttribute", 2000, reinterpret_cast<void**>(&a.cuDeviceGetAttribute)},
        {"cuDeviceTotalMem", 3020, reinterpret_cast<void**>(&a.cuDeviceTotalMem)},
        {"cuDeviceGetPCIBusId", 4010, reinterpret_cast<void**>(&a.cuDeviceGetPCIBusId)},
        {"cuDevicePrimaryCtxRetain", 7000, reinterpret_cast<void**>(&a.cuDevicePrimaryCtxRetain)},
        {"cuDevicePrimaryCtxRelease", 11000, reinterpret_cast<void**>(&a.cuDevicePrimaryCtxRelease)},
        {"cuCtxSetCurrent", 4000, reinterpret_cast<void**>(&a.cuCtxSetCurrent)},
        {"cuCtxPushCurrent", 4000, reinterpret_cast<void**>(&a.cuCtxPushCurrent)},
        {"cuCtxPopCurrent", 4000, reinterpret_cast<void**>(&a.cuCtxPopCurrent)},
        {"cuModuleLoadData", 2000, reinterpret_cast<void**>(&a.cuModuleLoadData)},
        {"cuModuleUnload", 2000, reinterpret_cast<void**>(&a.cuModuleUnload)},
        {"cuModuleGetFunction", 2000, reinterpret_cast<void**>(&a.cuModuleGetFunction)},
        {"cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
         reinterpret_cast<void**>(&a.cuOccupancyMaxActiveBlocksPerMultiprocessor)},
        {"cuMemAlloc", 3020, reinterpret_cast<void**>(&a.cuMemAlloc)},
        {"cuMemFree", 3020, reinterpret_cast<void**>(&a.cuMemFree)},
        {"cuMemGetInfo", 3020, reinterpret_cast<void**>(&a.cuMemGetInfo)},
        {"cuMemcpyHtoDAsync", 3020, reinterpret_cast<void**>(&a.cuMemcpyHtoDAsync)},
        {"cuMemcpyDtoH", 3020, reinterpret_cast<void**>(&a.cuMemcpyDtoH)},
        {"cuMemHostRegister", 6050, reinterpret_cast<void**>(&a.cuMemHostRegister)},
        {"cuMemHostUnregister", 4000, reinterpret_cast<void**>(&a.cuMemHostUnregister)},
        {"cuMemsetD8Async", 3020, reinterpret_cast<void**>(&a.cuMemsetD8Async)},
        {"cuFuncSetAttribute", 9000, reinterpret_cast<void**>(&a.cuFuncSetAttribute)},
        {"cuLaunchKernel", 4000, reinterpret_cast<void**>(&a.cuLaunchKernel)},
        {"cuTensorMapEncodeTiled", 12000, reinterpret_cast<void**>(&a.cuTensorMapEncodeTiled)},
        {"cuStreamCreate", 2000, reinterpret_cast<void**>(&a.cuStreamCreate)},
        {"cuStreamDestroy", 4000, reinterpret_cast<void**>(&a.cuStreamDestroy)},
        {"cuStreamQuery", 2000, reinterpret_cast<void**>(&a.cuStreamQuery)},
        {"cuEventCreate", 2000, reinterpret_cast<void**>(&a.cuEventCreate)},
        {"cuEventDestroy", 4000, reinterpret_cast<void**>(&a.cuEventDestroy)},
        {"cuEventRecord", 2000, reinterpret_cast<void**>(&a.cuEventRecord)},
        {"cuEventQuery", 2000, reinterpret_cast<void**>(&a.cuEventQuery)},
        {"cuEventElapsedTime", 2000, reinterpret_cast<void**>(&a.cuEventElapsedTime)},
        {"cuStreamBeginCapture", 10010, reinterpret_cast<void**>(&a.cuStreamBeginCapture)},
        {"cuStreamEndCapture", 10000, reinterpret_cast<void**>(&a.cuStreamEndCapture)},
        {"cuGraphInstantiateWithFlags", 11040, reinterpret_cast<void**>(&a.cuGraphInstantiateWithFlags)},
        {"cuGraphLaunch", 10000, reinterpret_cast<void**>(&a.cuGraphLaunch)},
        {"cuGraphExecDestroy", 10000, reinterpret_cast<void**>(&a.cuGraphExecDestroy)},
        {"cuGraphDestroy", 10000, reinterpret_cast<void**>(&a.cuGraphDestroy)},
    };
}

}  // namespace

namespace {

/// Opens libcuda from the first of its names that loads, into api; where none does, what each
/// said, in one line.
std::optional<std::string> open_driver_library(driver_api& api) {
    std::string tried;
    for (const auto& name : driver_library_names()) {
        api.handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (api.handle) {
            api.library = name;
            return std::nullopt;
        }
        const char* why = ::dlerror();
        tried += (tried.empty() ? "" : "; ") + (why ? std::string(why) : name);
    }
    return "no CUDA driver: could not load libcuda (" + tried + ")";
}

/// Every entry point kjit calls, resolved through cuGetProcAddress_v2 at its ABI version. False,
/// with out's state and detail saying why, where the library is the toolkit's stub or one is
/// missing (a driver older than CUDA 12, or than an entry point's ABI).
bool resolve_entry_points(driver_api& a, probe_result& out) {
    auto get_proc = reinterpret_cast<get_proc_fn>(::dlsym(a.handle, "cuGetProcAddress_v2"));
    if (!get_proc) {
        out.state = availability::insufficient_driver;
        out.detail = a.library + " has no cuGetProcAddress_v2: the driver is older than CUDA 12";
        return false;
    }
    for (const auto& e : entry_points(a)) {
        const CUresult result = resolve(get_proc, e.name, e.version, *e.slot);
        if (result == CUDA_ERROR_STUB_LIBRARY) {
            out.state = availability::stub_driver;
            out.detail = a.library + " is the toolkit's stub, not a driver (CUDA_ERROR_STUB_LIBRARY)";
            return false;
        }
        if (result != CUDA_SUCCESS) {
            out.state = availability::insufficient_driver;
            out.detail = std::string("symbol ") + e.name + " (ABI " + std::to_string(e.version) + ") not found in " +
                         a.library + ": driver too old?";
            return false;
        }
    }
    // cuEventElapsedTime_v2 (ABI 12080) has the same signature; prefer it where the driver has it.
    (void)resolve(get_proc, "cuEventElapsedTime", 12080, a.cuEventElapsedTime);
    return true;
}

/// cuInit's failure as an availability: no stub, no device, a mismatched driver, or another.
availability init_failure(CUresult init) {
    return init == CUDA_ERROR_STUB_LIBRARY               ? availability::stub_driver
           : init == CUDA_ERROR_NO_DEVICE                ? availability::no_device
           : init == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH   ? availability::insufficient_driver
                                                         : availability::init_failed;
}

}  // namespace

probe_result probe_driver() {
    trace::span span("driver_init");
    probe_result out;
    auto api = std::make_shared<driver_api>();
    if (const std::optional<std::string> missing = open_driver_library(*api)) {
        out.detail = *missing;
        return out;
    }
    driver_api& a = *api;
    if (!resolve_entry_points(a, out)) return out;
    const CUresult init = a.cuInit(0);
    out.init_ms = span.end();
    if (init != CUDA_SUCCESS) {
        out.state = init_failure(init);
        out.detail = "cuInit failed: " + a.describe(init) + " (" + a.library + ")";
        return out;
    }
    a.check(a.cuDriverGetVersion(&out.driver_version), "cuDriverGetVersion");
    a.check(a.cuDeviceGetCount(&out.device_count), "cuDeviceGetCount");
    if (out.device_count == 0) {
        out.state = availability::no_device;
        out.detail = "the CUDA driver sees no GPU";
        return out;
    }
    out.state = availability::ok;
    out.detail = std::to_string(out.device_count) + " GPU(s), driver " + std::to_string(out.driver_version / 1000) +
                 "." + std::to_string(out.driver_version % 1000 / 10);
    out.api = std::move(api);
    return out;
}

}  // namespace kjit::cuda
