// Joining strings, the one way kjit does it, and showing untrusted text on a terminal. Depends on the
// standard library only.
#pragma once
#include <algorithm>
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

/// `text` followed by spaces to `width` columns, counting code points, not bytes, so that "µs"
/// and "→" line up in a table.
[[nodiscard]] inline std::string padded(const std::string& text, std::size_t width) {
    std::size_t shown = 0;
    for (const unsigned char c : text) shown += (c & 0xC0) != 0x80;
    return text + std::string(width > shown ? width - shown : 0, ' ');
}

/// `text`'s lines without their line breaks, as std::getline gives them: a final line break ends
/// the last line and starts none.
[[nodiscard]] inline std::vector<std::string> lines_of(std::string_view text) {
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        lines.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
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

/// `text` at most `max` characters (bytes): its head, " … ", and its tail, where it is longer. The
/// cut never splits a UTF-8 character.
[[nodiscard]] inline std::string bounded(std::string_view text, std::size_t max) {
    if (text.size() <= max) return std::string(text);
    const auto continuation = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; };
    std::size_t head = (max - 5) * 2 / 5, tail = text.size() - (max - 5 - head);
    while (head > 0 && continuation(text[head])) --head;
    while (tail < text.size() && continuation(text[tail])) ++tail;
    return std::string(text.substr(0, head)) + " … " + std::string(text.substr(tail));
}

/// A path as a message shows it: printable (a newline in a name stays on its line) and at most 200
/// characters, its tail (the file's name) kept.
[[nodiscard]] inline std::string shown_path(std::string_view path) { return bounded(printable(path), 200); }

/// A message as kjit prints it: each line printable and at most 400 characters. Lines stay lines
/// (a compile log, an expression's caret); tabs stay tabs.
[[nodiscard]] inline std::string printable_message(std::string_view text) {
    std::string shown;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string line;
        for (const char c : text.substr(start, end - start)) line += c == '\t' ? std::string(1, c) : printable(std::string_view(&c, 1));
        shown += bounded(line, 400);
        if (end == text.size()) break;
        shown += '\n';
        start = end + 1;
    }
    return shown;
}

}  // namespace kjit
