// Joining strings, the one way kjit does it. Depends on the standard library only.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

/// "a, b, c" for join({"a", "b", "c"}, ", ").
[[nodiscard]] inline std::string join(const std::vector<std::string>& parts, std::string_view separator) {
    std::string text;
    for (const auto& part : parts) {
        if (!text.empty()) text += separator;
        text += part;
    }
    return text;
}

}  // namespace kjit
