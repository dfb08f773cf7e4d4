// Loading libcuda without a GPU: a missing library and the toolkit's stub are recognised, and
// the CLI says so clearly; on tables of driver calls that record them, how the copies are made,
// how waits end, and what a device abandoned by work that never ends still does.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cuda/cuda_gpu.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/nvml.hpp"
#include "cuda/wait.hpp"
#include "helpers.hpp"

using namespace kjit;

namespace {
/// The driver calls a fake table made, in order, with the stream they were made in.
std::vector<std::string> g_calls;
CUresult CUDAAPI fake_copy_in(CUdeviceptr, const void*, size_t bytes, CUstream stream) {
    g_calls.push_back("cuMemcpyHtoDAsync " + std::to_string(bytes) + " in stream " +
                      std::to_string(reinterpret_cast<std::uintptr_t>(stream)));
    return CUDA_SUCCESS;
}
/// A stream whose work is done at the third query.
int g_queries = 0;
CUresult CUDAAPI fake_query(CUstream stream) {
    g_calls.push_back("cuStreamQuery " + std::to_string(reinterpret_cast<std::uintptr_t>(stream)));
    return ++g_queries < 3 ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

/// Sets an environment variable for the scope.
struct environment_override {
    const char* name;
    environment_override(const char* n, const char* value) : name(n) { ::setenv(name, value, 1); }
    ~environment_override() { ::unsetenv(name); }
};

/// Sets KJIT_LIBCUDA for the scope.
struct libcuda_override : environment_override {
    explicit libcuda_override(const char* path) : environment_override("KJIT_LIBCUDA", path) {}
};
}  // namespace

TEST_CASE("no libcuda: no_driver_library, with the dlopen reason") {
    libcuda_override chosen("/nonexistent/libcuda.so.1");
    const auto probe = cuda::probe_driver();
    CHECK(probe.state == cuda::availability::no_driver_library);
    CHECK(probe.detail.find("/nonexistent/libcuda.so.1") != std::string::npos);
    CHECK(probe.api == nullptr);
}

TEST_CASE("no NVML: the device state is empty and says why; measuring goes on without it") {
    // NVML is loaded once per process: this is the first and only use in unit_tests.
    ::setenv("KJIT_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    const cuda::nvml_device device("0000:19:00.0");
    ::unsetenv("KJIT_LIBNVML");
    CHECK_FALSE(device.available());
    CHECK(device.why_not().find("cannot load /nonexistent/libnvidia-ml.so.1") == 0);
    CHECK(device.read().empty());
}

TEST_CASE("the toolkit's stub libcuda is not a driver") {
    if (!std::filesystem::exists(KJIT_CUDA_STUB)) {
        MESSAGE("skipped: no stub at " KJIT_CUDA_STUB);
        return;
    }
    libcuda_override chosen(KJIT_CUDA_STUB);
    const auto probe = cuda::probe_driver();
    CHECK(probe.state == cuda::availability::stub_driver);
    CHECK(probe.detail.find("stub") != std::string::npos);
}

TEST_CASE("kjit run with no driver: exit 1 and one clear line") {
    libcuda_override chosen("/nonexistent/libcuda.so.1");
    std::ostringstream out, err;
    const char* argv[] = {"kjit", "run", "--set", "n=10"};
    CHECK(cli::run(4, argv, out, err) == exit_status::failure);
    const std::string text = err.str();
    CHECK(text.rfind("kjit: no GPU to run on (no_driver_library: ", 0) == 0);
    CHECK(text.find("kjit compile` works without one") != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

TEST_CASE("kjit devices with no driver: exit 1") {
    libcuda_override chosen("/nonexistent/libcuda.so.1");
    std::ostringstream out, err;
    const char* argv[] = {"kjit", "devices"};
    CHECK(cli::run(2, argv, out, err) == exit_status::failure);
    CHECK(err.str().find("no GPU (no_driver_library)") != std::string::npos);
}

TEST_CASE("an input is copied in kjit's stream, and has landed when the copy returns") {
    // cuMemcpyHtoD from pageable memory returns once the bytes are staged, in the legacy stream,
    // which a kernel in kjit's non-blocking stream does not wait for: under load the kernel read
    // inputs still in flight (an attention run, four processes at a time on one H100, 1,750 of
    // 8,192 sampled elements wrong; bench/results/2026-12-05-wgmma/sixth).
    cuda::driver_api api;
    api.cuMemcpyHtoDAsync = fake_copy_in;
    api.cuStreamQuery = fake_query;
    g_calls.clear();
    g_queries = 0;
    const auto stream = reinterpret_cast<CUstream>(std::uintptr_t{42});
    const std::vector<char> host(4096);
    CHECK(cuda::copy_to_device_in(api, stream, CUdeviceptr{0x1000}, host.data(), host.size(), std::chrono::seconds(5)));
    CHECK(g_calls == std::vector<std::string>{"cuMemcpyHtoDAsync 4096 in stream 42", "cuStreamQuery 42", "cuStreamQuery 42",
                                              "cuStreamQuery 42"});
}

TEST_CASE("a wait for the GPU's work returns when the limit passes first, and a failed query throws") {
    // cuStreamSynchronize on a kernel that never ends never returns: kjit hung with it.
    const cuda::driver_api api;
    using std::chrono::milliseconds;
    int queries = 0;
    const auto never_done = [&] { return ++queries, CUDA_ERROR_NOT_READY; };
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(cuda::wait_until_done(api, never_done, "cuStreamQuery", "a test", milliseconds(30)));
    CHECK(std::chrono::steady_clock::now() - start >= milliseconds(30));
    CHECK(queries > 1);
    int answered = 0;
    CHECK(cuda::wait_until_done(api, [&] { return ++answered < 5 ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS; }, "cuStreamQuery",
                                "a test", milliseconds(0)));  // no limit: until done
    CHECK(answered == 5);
    try {
        (void)cuda::wait_until_done(api, [] { return CUDA_ERROR_LAUNCH_FAILED; }, "cuEventQuery", "the timed work", milliseconds(30));
        FAIL("a failed query returned");
    } catch (const error& e) {
        CHECK(e.kind() == error_kind::driver);
        CHECK(std::string(e.what()).starts_with("cuEventQuery(the timed work) failed: CUDA_ERROR_LAUNCH_FAILED"));
    }
}

TEST_CASE("KJIT_GPU_WAIT_LIMIT: seconds, 60 unless set, 0 for no limit; anything else is a usage error") {
    CHECK(cuda::gpu_wait_limit() == std::chrono::seconds(60));
    {
        const environment_override limit("KJIT_GPU_WAIT_LIMIT", "2.5");
        CHECK(cuda::gpu_wait_limit() == std::chrono::milliseconds(2500));
    }
    {
        const environment_override limit("KJIT_GPU_WAIT_LIMIT", "0");
        CHECK(cuda::gpu_wait_limit().count() == 0);
    }
    for (const char* bad : {"ten", "-1", "5s"}) {
        const environment_override limit("KJIT_GPU_WAIT_LIMIT", bad);
        CAPTURE(bad);
        try {
            (void)cuda::gpu_wait_limit();
            FAIL("accepted");
        } catch (const error& e) {
            CHECK(e.kind() == error_kind::usage);
            CHECK(std::string(e.what()).find("KJIT_GPU_WAIT_LIMIT=" + std::string(bad) + ": expected seconds") == 0);
        }
    }
}

namespace {
/// A device of the Driver API in a table: every call that makes or destroys something is
/// recorded, and the work in its stream never ends while `hung` is set.
namespace fake_device {
std::vector<std::string> calls;
bool hung = false;
CUresult ok_for(const char* call) {
    calls.emplace_back(call);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI device_get(CUdevice* device, int) {
    *device = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI name(char* into, int length, CUdevice) {
    std::snprintf(into, length, "fake");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI attribute(int* value, CUdevice_attribute, CUdevice) {
    *value = 1;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI total_memory(std::size_t* bytes, CUdevice) {
    *bytes = 1 << 30;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI retain(CUcontext* context, CUdevice) {
    *context = reinterpret_cast<CUcontext>(std::uintptr_t{0x10});
    return ok_for("cuDevicePrimaryCtxRetain");
}
CUresult CUDAAPI release(CUdevice) { return ok_for("cuDevicePrimaryCtxRelease"); }
CUresult CUDAAPI set_current(CUcontext) { return CUDA_SUCCESS; }
CUresult CUDAAPI push_current(CUcontext) { return CUDA_SUCCESS; }
CUresult CUDAAPI pop_current(CUcontext*) { return CUDA_SUCCESS; }
CUresult CUDAAPI stream_create(CUstream* stream, unsigned) {
    *stream = reinterpret_cast<CUstream>(std::uintptr_t{0x20});
    return ok_for("cuStreamCreate");
}
CUresult CUDAAPI stream_destroy(CUstream) { return ok_for("cuStreamDestroy"); }
CUresult CUDAAPI work_query(CUstream) { return hung ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS; }
CUresult CUDAAPI event_create(CUevent* event, unsigned) {
    *event = reinterpret_cast<CUevent>(std::uintptr_t{0x30});
    return ok_for("cuEventCreate");
}
CUresult CUDAAPI event_destroy(CUevent) { return ok_for("cuEventDestroy"); }
CUresult CUDAAPI module_load(CUmodule* module, const void*) {
    *module = reinterpret_cast<CUmodule>(std::uintptr_t{0x40});
    return ok_for("cuModuleLoadData");
}
CUresult CUDAAPI module_unload(CUmodule) { return ok_for("cuModuleUnload"); }
CUresult CUDAAPI get_function(CUfunction* function, CUmodule, const char*) {
    *function = reinterpret_cast<CUfunction>(std::uintptr_t{0x50});
    return CUDA_SUCCESS;
}
CUresult CUDAAPI allocate(CUdeviceptr* pointer, std::size_t) {
    *pointer = 0x1000;
    return ok_for("cuMemAlloc");
}
CUresult CUDAAPI free_memory(CUdeviceptr) { return ok_for("cuMemFree"); }
CUresult CUDAAPI pin(void*, std::size_t, unsigned) { return ok_for("cuMemHostRegister"); }
CUresult CUDAAPI unpin(void*) { return ok_for("cuMemHostUnregister"); }
CUresult CUDAAPI launch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void**, void**) {
    return ok_for("cuLaunchKernel");
}

std::shared_ptr<const cuda::driver_api> table() {
    auto api = std::make_shared<cuda::driver_api>();
    api->cuDeviceGet = device_get;
    api->cuDeviceGetName = name;
    api->cuDeviceGetAttribute = attribute;
    api->cuDeviceTotalMem = total_memory;
    api->cuDeviceGetPCIBusId = name;
    api->cuDevicePrimaryCtxRetain = retain;
    api->cuDevicePrimaryCtxRelease = release;
    api->cuCtxSetCurrent = set_current;
    api->cuCtxPushCurrent = push_current;
    api->cuCtxPopCurrent = pop_current;
    api->cuStreamCreate = stream_create;
    api->cuStreamDestroy = stream_destroy;
    api->cuStreamQuery = work_query;
    api->cuEventCreate = event_create;
    api->cuEventDestroy = event_destroy;
    api->cuModuleLoadData = module_load;
    api->cuModuleUnload = module_unload;
    api->cuModuleGetFunction = get_function;
    api->cuMemAlloc = allocate;
    api->cuMemFree = free_memory;
    api->cuMemHostRegister = pin;
    api->cuMemHostUnregister = unpin;
    api->cuLaunchKernel = launch;
    return api;
}
}  // namespace fake_device
}  // namespace

TEST_CASE("a device whose work never ends is abandoned: later work refused, nothing it made destroyed, host memory left pinned") {
    // Each destroy call (cuMemFree, cuModuleUnload, unpinning, the last release of the primary
    // context) could wait for a kernel that never ends, and hang kjit after its run had failed.
    const environment_override limit("KJIT_GPU_WAIT_LIMIT", "0.05");
    for (const bool never_ends : {false, true}) {
        CAPTURE(never_ends);
        fake_device::calls.clear();
        fake_device::hung = false;
        cuda::probe_result driver{cuda::availability::ok, "", fake_device::table(), 1, 13000, 0};
        cuda::open_times times;
        auto gpu = cuda::open_gpu(driver, 0, times);
        const auto module = gpu->load_module("cubin");
        const auto kernel = gpu->get_kernel(module, "k");
        const auto buffer = gpu->allocate(4096);
        std::vector<char> host(4096);
        auto pinned = gpu->pin(host.data(), host.size());
        gpu->launch(kernel, {{1, 1, 1}, {32, 1, 1}, 0, {}});
        fake_device::hung = never_ends;
        const std::size_t made = fake_device::calls.size();
        if (never_ends) {
            const std::string message = kjit::testing::error_message([&] { gpu->synchronize(); }, error_kind::driver);
            INFO(message);
            CHECK(message.starts_with("device 0: the work waited for (kjit's stream) did not finish in 50.0 ms: "
                                      "a kernel that never ends?"));
            for (const auto& refused : std::vector<std::function<void()>>{
                     [&] { gpu->launch(kernel, {{1, 1, 1}, {32, 1, 1}, 0, {}}); },
                     [&] { gpu->copy_to_device(buffer, host.data(), host.size()); },
                     [&] { gpu->copy_to_host(host.data(), buffer, host.size()); },
                     [&] { gpu->fill_bytes(buffer, 0, host.size()); }, [&] { (void)gpu->allocate(64); },
                     [&] { (void)gpu->load_module("cubin"); }, [&] { (void)gpu->pin(host.data(), 64); },
                     [&] { (void)gpu->time_ms([] {}); }})
                CHECK(kjit::testing::error_message(refused, error_kind::driver) ==
                      "device 0: earlier work never finished there; restart the process to use it again");
        } else {
            gpu->synchronize();
        }
        gpu->release(buffer);
        gpu->unload_module(module);
        gpu.reset();
        pinned.reset();  // the pinned memory outlives the device, as a run's result may
        const std::vector<std::string> after(fake_device::calls.begin() + static_cast<std::ptrdiff_t>(made),
                                             fake_device::calls.end());
        if (never_ends) {
            CHECK(after.empty());
        } else {
            CHECK(after == std::vector<std::string>{"cuMemFree", "cuModuleUnload", "cuEventDestroy", "cuEventDestroy",
                                                    "cuStreamDestroy", "cuDevicePrimaryCtxRelease", "cuMemHostUnregister",
                                                    "cuDevicePrimaryCtxRelease"});
        }
    }
}
