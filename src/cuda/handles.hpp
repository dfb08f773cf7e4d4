// One generic owner for every driver handle: move-only, destroyed through a noexcept deleter that
// holds the driver table (so the table outlives every handle it made). Destructors never throw: a
// failed destroy after a sticky error must not hide the report of that error.
#pragma once
#include <memory>
#include <utility>

#include "cuda/driver_api.hpp"

namespace kjit::cuda {

template <class Handle, class Deleter>
class unique_handle {
public:
    unique_handle() = default;
    unique_handle(Handle handle, Deleter deleter) : m_handle(handle), m_deleter(std::move(deleter)) {}
    unique_handle(unique_handle&& other) noexcept
        : m_handle(std::exchange(other.m_handle, Handle{})), m_deleter(std::move(other.m_deleter)) {}
    unique_handle& operator=(unique_handle&& other) noexcept {
        unique_handle moved(std::move(other));  // destroys our old handle after the swap, self-safe
        std::swap(m_handle, moved.m_handle);
        std::swap(m_deleter, moved.m_deleter);
        return *this;
    }
    unique_handle(const unique_handle&) = delete;
    unique_handle& operator=(const unique_handle&) = delete;
    ~unique_handle() {
        if (m_handle != Handle{}) m_deleter(m_handle);
    }

    [[nodiscard]] Handle get() const noexcept { return m_handle; }
    /// Lets the handle go without destroying it (a context abandoned with work that never ends,
    /// whose destroy calls could wait for ever: the process's end frees what it held).
    void abandon() noexcept { m_handle = Handle{}; }
    explicit operator bool() const noexcept { return m_handle != Handle{}; }

private:
    Handle m_handle{};
    Deleter m_deleter{};
};

/// Deleter for any handle whose destroy call is `CUresult fn(Handle)`.
template <class Handle, auto driver_api::*destroy>
struct api_deleter {
    std::shared_ptr<const driver_api> api;
    void operator()(Handle handle) const noexcept { (void)((*api).*destroy)(handle); }
};

using module_handle = unique_handle<CUmodule, api_deleter<CUmodule, &driver_api::cuModuleUnload>>;
using buffer_handle = unique_handle<CUdeviceptr, api_deleter<CUdeviceptr, &driver_api::cuMemFree>>;
using stream_handle = unique_handle<CUstream, api_deleter<CUstream, &driver_api::cuStreamDestroy>>;
using event_handle = unique_handle<CUevent, api_deleter<CUevent, &driver_api::cuEventDestroy>>;
using graph_handle = unique_handle<CUgraph, api_deleter<CUgraph, &driver_api::cuGraphDestroy>>;
using graph_exec_handle = unique_handle<CUgraphExec, api_deleter<CUgraphExec, &driver_api::cuGraphExecDestroy>>;

/// The device's primary context, retained for the handle's life (released, not destroyed: other
/// code in the process may share it).
struct primary_context_deleter {
    std::shared_ptr<const driver_api> api;
    CUdevice device = 0;
    void operator()(CUcontext) const noexcept { (void)api->cuDevicePrimaryCtxRelease(device); }
};
using context_handle = unique_handle<CUcontext, primary_context_deleter>;

}  // namespace kjit::cuda
