// Files compiled into the binary at build time (kernel templates, the default config).
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace kjit {

/// Repository-relative path → content. Defined in the CMake-generated embedded_files.cpp.
const std::map<std::string, std::string_view, std::less<>>& embedded_files();

/// The content of one embedded file; throws kjit::error(io) for an unknown name.
[[nodiscard]] std::string_view embedded_file(std::string_view name);

}  // namespace kjit
