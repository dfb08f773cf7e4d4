#include "cuda/wait.hpp"

#include <cmath>
#include <cstdlib>
#include <thread>

#include "util/error.hpp"
#include "util/units.hpp"

namespace kjit::cuda {

std::chrono::milliseconds gpu_wait_limit() {
    constexpr std::chrono::seconds k_default{60};
    const char* text = std::getenv("KJIT_GPU_WAIT_LIMIT");
    if (!text || !*text) return k_default;
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (*end != '\0' || !(seconds >= 0) || seconds > 1e9)  // (not NaN; and 30 years at most, which milliseconds hold)
        throw error(error_kind::usage,
                    std::string("KJIT_GPU_WAIT_LIMIT=") + text + ": expected seconds, e.g. 60 (0: wait for ever)");
    return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
}

bool wait_until_done(const driver_api& api, const std::function<CUresult()>& query, const char* call,
                     const std::string& what, std::chrono::milliseconds limit) {
    using clock = std::chrono::steady_clock;
    constexpr auto k_spin = std::chrono::milliseconds(10);  // a kernel's or a copy's usual wait, at the driver's latency
    constexpr auto k_nap = std::chrono::microseconds(100);  // then a core spared, within 1 % of a longer wait
    const auto start = clock::now();
    for (;;) {
        const CUresult answer = query();
        if (answer != CUDA_ERROR_NOT_READY) {
            api.check(answer, call, what);
            return true;
        }
        const auto waited = clock::now() - start;
        if (limit.count() > 0 && waited >= limit) return false;
        if (waited < k_spin) std::this_thread::yield();
        else std::this_thread::sleep_for(k_nap);
    }
}

work_watch::work_watch(std::shared_ptr<const driver_api> api, int device)
    : m_api(std::move(api)), m_device(device), m_limit(gpu_wait_limit()) {}

void work_watch::wait(const std::function<CUresult()>& query, const char* call, const std::string& what) {
    refuse_if_abandoned();
    if (!wait_until_done(*m_api, query, call, what, m_limit)) abandon(what);
}

void work_watch::abandon(const std::string& what) {
    m_abandoned = true;
    throw error(error_kind::driver, "device " + std::to_string(m_device) + ": the work waited for (" + what + ") did not finish in " +
                                            units::duration_ms(static_cast<double>(m_limit.count())) +
                                            ": a kernel that never ends? kjit leaves the device as it is, its memory freed when "
                                            "this process ends ($KJIT_GPU_WAIT_LIMIT: the seconds to wait)");
}

void work_watch::refuse_if_abandoned() const {
    if (m_abandoned)
        throw error(error_kind::driver,
                    "device " + std::to_string(m_device) + ": earlier work never finished there; restart the process to use it again");
}

}  // namespace kjit::cuda
