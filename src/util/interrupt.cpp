#include "util/interrupt.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace kjit {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<bool> g_graceful{false};

std::mutex g_scratch_mutex;
std::vector<std::filesystem::path> g_scratch;  // what removed_if_interrupted holds now

[[noreturn]] void exit_now() {
    {
        const std::lock_guard lock(g_scratch_mutex);
        for (const auto& path : g_scratch) {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
    }
    static constexpr char message[] = "kjit: interrupted\n";
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message, sizeof message - 1);
    std::_Exit(130);  // no destructors: other threads may be inside NVRTC or the driver
}

// An ordinary thread, not a signal handler: it may lock, allocate and touch the file system.
void wait_for_signals(sigset_t signals) {
    for (;;) {
        int signal_number = 0;
        if (sigwait(&signals, &signal_number) != 0) continue;
        if (!g_graceful.load() || g_interrupted.exchange(true)) exit_now();
    }
}

}  // namespace

void watch_for_interrupts() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread started later
    std::thread(wait_for_signals, signals).detach();
}

void stop_gracefully_on_interrupt() { g_graceful.store(true); }

bool interrupted() noexcept { return g_interrupted.load(); }

void set_interrupted(bool value) noexcept { g_interrupted.store(value); }

removed_if_interrupted::removed_if_interrupted(std::filesystem::path path) : m_path(std::move(path)) {
    const std::lock_guard lock(g_scratch_mutex);
    g_scratch.push_back(m_path);
}

removed_if_interrupted::~removed_if_interrupted() {
    const std::lock_guard lock(g_scratch_mutex);
    g_scratch.erase(std::find(g_scratch.begin(), g_scratch.end(), m_path));
}

}  // namespace kjit
