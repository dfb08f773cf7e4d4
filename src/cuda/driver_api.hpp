// libcuda, loaded at run time with dlopen so that kjit starts (and emits, compiles, caches) on
// machines with no driver. Entry points are resolved through cuGetProcAddress by base name and
// ABI version, never by dlsym of a name that may be a legacy ABI (cuMemAlloc vs cuMemAlloc_v2).
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace kjit::cuda {

/// What kjit found when it looked for a GPU.
enum class availability { ok, no_driver_library, stub_driver, insufficient_driver, no_device, init_failed };
[[nodiscard]] const char* to_string(availability a);

struct driver_api {
    PFN_cuInit_v2000 cuInit = nullptr;
    PFN_cuDriverGetVersion_v2020 cuDriverGetVersion = nullptr;
    PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
    PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
    PFN_cuDeviceGetCount_v2000 cuDeviceGetCount = nullptr;
    PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
    PFN_cuDeviceGetName_v2000 cuDeviceGetName = nullptr;
    PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;
    PFN_cuDeviceTotalMem_v3020 cuDeviceTotalMem = nullptr;
    PFN_cuDeviceGetPCIBusId_v4010 cuDeviceGetPCIBusId = nullptr;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain = nullptr;
    PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease = nullptr;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent = nullptr;
    PFN_cuCtxPushCurrent_v4000 cuCtxPushCurrent = nullptr;
    PFN_cuCtxPopCurrent_v4000 cuCtxPopCurrent = nullptr;
    PFN_cuModuleLoadData_v2000 cuModuleLoadData = nullptr;
    PFN_cuModuleUnload_v2000 cuModuleUnload = nullptr;
    PFN_cuModuleGetFunction_v2000 cuModuleGetFunction = nullptr;
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 cuOccupancyMaxActiveBlocksPerMultiprocessor = nullptr;
    PFN_cuMemAlloc_v3020 cuMemAlloc = nullptr;
    PFN_cuMemFree_v3020 cuMemFree = nullptr;
    PFN_cuMemGetInfo_v3020 cuMemGetInfo = nullptr;
    PFN_cuMemcpyHtoDAsync_v3020 cuMemcpyHtoDAsync = nullptr;
    PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH = nullptr;
    PFN_cuMemHostRegister_v6050 cuMemHostRegister = nullptr;
    PFN_cuMemHostUnregister_v4000 cuMemHostUnregister = nullptr;
    PFN_cuMemsetD8Async_v3020 cuMemsetD8Async = nullptr;
    PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute = nullptr;
    PFN_cuLaunchKernel_v4000 cuLaunchKernel = nullptr;
    PFN_cuTensorMapEncodeTiled_v12000 cuTensorMapEncodeTiled = nullptr;
    PFN_cuStreamCreate_v2000 cuStreamCreate = nullptr;
    PFN_cuStreamDestroy_v4000 cuStreamDestroy = nullptr;
    PFN_cuStreamQuery_v2000 cuStreamQuery = nullptr;
    PFN_cuEventCreate_v2000 cuEventCreate = nullptr;
    PFN_cuEventDestroy_v4000 cuEventDestroy = nullptr;
    PFN_cuEventRecord_v2000 cuEventRecord = nullptr;
    PFN_cuEventQuery_v2000 cuEventQuery = nullptr;
    PFN_cuEventElapsedTime_v2000 cuEventElapsedTime = nullptr;
    PFN_cuStreamBeginCapture_v10010 cuStreamBeginCapture = nullptr;
    PFN_cuStreamEndCapture_v10000 cuStreamEndCapture = nullptr;
    PFN_cuGraphInstantiateWithFlags_v11040 cuGraphInstantiateWithFlags = nullptr;
    PFN_cuGraphLaunch_v10000 cuGraphLaunch = nullptr;
    PFN_cuGraphExecDestroy_v10000 cuGraphExecDestroy = nullptr;
    PFN_cuGraphDestroy_v10000 cuGraphDestroy = nullptr;

    std::string library;  ///< the file that was loaded
    void* handle = nullptr;

    /// "CUDA_ERROR_OUT_OF_MEMORY: out of memory", also when the lookup itself fails.
    [[nodiscard]] std::string describe(CUresult result) const;
    /// Throws kjit::error(driver): "cuMemAlloc(out, 4.0 MB) failed: CUDA_ERROR_…: …".
    void check(CUresult result, const char* call, const std::string& object = {}) const {
        if (result != CUDA_SUCCESS) fail(result, call, object);
    }
    [[noreturn]] void fail(CUresult result, const char* call, const std::string& object) const;
};

/// Copies `bytes` from the host to device memory `to` in `stream`'s order, and waits up to `limit`
/// for them to land: false where the limit passed first (the stream holds work that does not
/// finish). Not cuMemcpyHtoD: from pageable memory it returns once the bytes are staged, before
/// they land, and it is ordered in the legacy stream, which a kernel launched in a non-blocking
/// stream (kjit's) does not wait for; that kernel could read the input before it arrived.
[[nodiscard]] bool copy_to_device_in(const driver_api& api, CUstream stream, CUdeviceptr to, const void* from,
                                     std::size_t bytes, std::chrono::milliseconds limit);

/// The outcome of looking for a driver: the loaded table when state is ok, else why not.
struct probe_result {
    availability state = availability::no_driver_library;
    std::string detail;  ///< one line for the user
    std::shared_ptr<const driver_api> api;
    int device_count = 0;
    int driver_version = 0;
    double init_ms = 0;  ///< dlopen + symbol lookup + cuInit
};

/// Loads libcuda (KJIT_LIBCUDA overrides the name: tests point it at the stub or at nothing) and
/// calls cuInit. Never throws for a missing or unusable driver: that is the state.
[[nodiscard]] probe_result probe_driver();

/// The names tried in order when KJIT_LIBCUDA is not set.
[[nodiscard]] std::vector<std::string> driver_library_names();

}  // namespace kjit::cuda
