// Starting a program and waiting for it: first-call's child processes, the disassembler; and the
// name of the machine this process runs on. POSIX only.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace kjit::process {

struct finished {
    int exit_code = -1;  ///< its exit status, or 128 + the signal that ended it
    double wall_ms = 0;  ///< from the spawn to its end
};

/// Starts `executable args…` with `env` set in this process's environment (replacing an inherited
/// value of the same name) and no signal blocked, sends its stdout and stderr to `output_file`,
/// and waits. Throws kjit::error(io) when it cannot be started.
[[nodiscard]] finished run(const std::string& executable, const std::vector<std::string>& args,
                           const std::vector<std::pair<std::string, std::string>>& env, const std::string& output_file);

/// This machine's host name (gethostname), which records carry so that a sweep spread over a
/// cluster says where each point ran; "" if it cannot be read.
[[nodiscard]] std::string host_name();

}  // namespace kjit::process
