// Ctrl-C and SIGTERM. kjit's main blocks both in every thread before any other starts (so no
// library's handler, NVRTC's included, ever takes them) and one thread waits for them. A command
// that can stop between units of work (a sweep, first-call, --watch) asks for a graceful stop:
// the first signal sets interrupted(), the command keeps what is done and exits 130. Elsewhere,
// and at a second signal, kjit removes its scratch files and exits 130 at once. Standard library
// and POSIX.
#pragma once
#include <filesystem>

namespace kjit {

/// First thing in main: blocks SIGINT and SIGTERM and starts the thread that waits for them.
void watch_for_interrupts();
/// From now on the first signal only sets interrupted(); the second still ends the process.
void stop_gracefully_on_interrupt();
/// True once a signal asked kjit to stop.
[[nodiscard]] bool interrupted() noexcept;
/// Sets or clears the flag as a signal would (for tests).
void set_interrupted(bool value) noexcept;

/// While alive, `path` (a scratch folder, a temp file kjit created) is removed if a signal ends
/// the process at once. Register only what kjit itself created.
class removed_if_interrupted {
public:
    explicit removed_if_interrupted(std::filesystem::path path);
    ~removed_if_interrupted();
    removed_if_interrupted(const removed_if_interrupted&) = delete;
    removed_if_interrupted& operator=(const removed_if_interrupted&) = delete;

private:
    std::filesystem::path m_path;
};

}  // namespace kjit
