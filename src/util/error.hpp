// The one exception type of kjit and the exit codes it maps to. Depends on the standard library only.
#pragma once
#include <stdexcept>
#include <string>

namespace kjit {

/// What went wrong, coarse enough for an exit code; the message says the rest.
enum class error_kind {
    usage,    ///< bad command line                       → exit 2
    config,   ///< bad config file, --set or template    → exit 2
    compile,  ///< NVRTC or PTX → cubin failed            → exit 1
    driver,   ///< no driver / device, or a CUDA call failed → exit 1
    io,       ///< a file could not be read or written    → exit 1
    check,    ///< results disagree with the reference    → exit 1
    memory,   ///< the host or the GPU has too little memory → exit 1
    interrupted,  ///< Ctrl-C or SIGTERM                  → exit 130
};

enum class exit_status : int { ok = 0, failure = 1, usage = 2, interrupted = 130 };

/// Thrown within a phase, caught once in cli::run (or per point by the sweep runner).
class error : public std::runtime_error {
public:
    error(error_kind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
    [[nodiscard]] error_kind kind() const noexcept { return m_kind; }

private:
    error_kind m_kind;
};

[[nodiscard]] exit_status exit_status_for(error_kind kind) noexcept;

/// Formats a config error the one way kjit prints them: "FILE: KEY.PATH: WHAT".
[[nodiscard]] error config_error(const std::string& source, const std::string& key_path,
                                 const std::string& what);

}  // namespace kjit
