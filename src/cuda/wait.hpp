// Waiting for the GPU's work within a limit, so that a kernel that never ends fails its run
// instead of hanging kjit: the limit, the wait that polls, and a device's watch over its waits.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "cuda/driver_api.hpp"

namespace kjit::cuda {

/// How long kjit waits for work it gave the GPU before it calls that work stuck (a kernel that
/// never ends): $KJIT_GPU_WAIT_LIMIT seconds, 60 unless set; 0 waits for ever. Throws
/// kjit::error(usage) for a value that is not a number of seconds.
[[nodiscard]] std::chrono::milliseconds gpu_wait_limit();

/// Asks `query` (cuStreamQuery or cuEventQuery of the work waited for) until it stops answering
/// CUDA_ERROR_NOT_READY, the way the driver's own synchronize waits (spinning, yielding the core)
/// for the first 10 ms, then every 100 µs. True once the work is done; false when `limit` (none
/// where zero) passed first; throws kjit::error(driver) naming `call` and `what` where the query
/// fails. Unlike cuStreamSynchronize, it returns from a kernel that never ends.
[[nodiscard]] bool wait_until_done(const driver_api& api, const std::function<CUresult()>& query, const char* call,
                                   const std::string& what, std::chrono::milliseconds limit);

/// One device's waits within the wait limit. The first that passes it abandons the device: its
/// work never finished, so nothing made in its context may be destroyed (every destroy call could
/// wait for that work; the process's end frees it), and the device runs nothing more.
class work_watch {
public:
    work_watch(std::shared_ptr<const driver_api> api, int device);

    /// Waits for the work `query` asks about (`call`: its name); past the limit, abandons.
    void wait(const std::function<CUresult()>& query, const char* call, const std::string& what);
    /// Marks the device abandoned and throws kjit::error(driver) naming `what` was waited for.
    [[noreturn]] void abandon(const std::string& what);
    /// Throws kjit::error(driver) where the device was abandoned.
    void refuse_if_abandoned() const;
    [[nodiscard]] bool abandoned() const noexcept { return m_abandoned; }
    [[nodiscard]] std::chrono::milliseconds limit() const noexcept { return m_limit; }

private:
    std::shared_ptr<const driver_api> m_api;
    int m_device;
    std::chrono::milliseconds m_limit;
    std::atomic<bool> m_abandoned{false};
};

}  // namespace kjit::cuda
