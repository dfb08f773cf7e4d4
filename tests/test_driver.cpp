// Loading libcuda without a GPU: a missing library and the toolkit's stub are recognised, and
// the CLI says so clearly; how the copies are made, on a table of driver calls that records them.
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
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
