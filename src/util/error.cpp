#include "util/error.hpp"

#include "util/strings.hpp"

namespace kjit {

exit_status exit_status_for(error_kind kind) noexcept {
    switch (kind) {
        case error_kind::usage:
        case error_kind::config: return exit_status::usage;
        case error_kind::interrupted: return exit_status::interrupted;
        default: return exit_status::failure;
    }
}

error config_error(const std::string& source, const std::string& key_path, const std::string& what) {
    std::string message = shown_path(source) + ": ";
    if (!key_path.empty()) message += key_path + ": ";
    return error(error_kind::config, message + what);
}

}  // namespace kjit
