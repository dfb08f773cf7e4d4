#include "util/interrupt.hpp"

#include <atomic>
#include <csignal>

namespace kjit {
namespace {

std::atomic<bool> g_interrupted{false};  // lock-free, so safe to set from a signal handler

extern "C" void on_signal(int signal_number) {
    if (g_interrupted.exchange(true)) {  // asked twice: stop now
        std::signal(signal_number, SIG_DFL);
        std::raise(signal_number);
    }
}

}  // namespace

void install_interrupt_handlers() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

bool interrupted() noexcept { return g_interrupted.load(); }

void set_interrupted(bool value) noexcept { g_interrupted.store(value); }

}  // namespace kjit
