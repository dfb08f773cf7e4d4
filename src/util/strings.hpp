// Joining strings, the one way kjit does it, and showing untrusted text on a terminal. Depends on the
// standard library only.
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

/// `text` safe to print on a terminal: each control character (a byte below 0x20, and 0x7F) as
/// \xNN, so that text from a file cannot move the cursor, clear the screen or ring the bell.
[[nodiscard]] inline std::string printable(std::string_view text) {
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string shown;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte != 0x7F) {
            shown += c;
            continue;
        }
        shown += "\\x";
        shown += k_hex[byte >> 4];
        shown += k_hex[byte & 0xF];
    }
    return shown;
}

}  // namespace kjit
