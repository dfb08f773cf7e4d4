#include "util/embedded.hpp"

#include "util/error.hpp"

namespace kjit {

std::string_view embedded_file(std::string_view name) {
    const auto& files = embedded_files();
    const auto found = files.find(name);
    if (found == files.end()) throw error(error_kind::io, "no embedded file named " + std::string(name));
    // CMake's file(READ) keeps the content as is; the raw string adds nothing, so no trimming.
    return found->second;
}

}  // namespace kjit
