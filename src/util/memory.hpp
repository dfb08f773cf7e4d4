// How much host memory can be had, so that a run too large for the machine is refused with a
// clear message instead of being killed by the kernel's out-of-memory killer. Linux only.
#pragma once
#include <cstddef>

namespace kjit {

/// MemAvailable from /proc/meminfo (what can be allocated without swapping), in bytes; when it
/// cannot be read, free pages from sysconf.
[[nodiscard]] std::size_t available_host_memory();

}  // namespace kjit
