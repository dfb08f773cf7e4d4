// Ctrl-C and SIGTERM as a request to stop, not a kill: long commands (a sweep) check interrupted()
// between units of work, finish cleanly, keep what is done and exit 130. Standard library and POSIX.
#pragma once

namespace kjit {

/// Installs handlers for SIGINT and SIGTERM that set the flag; a second signal ends the process
/// at once, as the default would.
void install_interrupt_handlers();
/// True once a signal asked kjit to stop.
[[nodiscard]] bool interrupted() noexcept;
/// Sets or clears the flag as a signal would (for tests).
void set_interrupted(bool value) noexcept;

}  // namespace kjit
