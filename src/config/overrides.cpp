// --set key.path=value: edits the JSON document before validation, so the usual checks and error
// messages apply to overridden values too.
#include <algorithm>
#include <cctype>
#include <variant>

#include "config/config.hpp"
#include "util/error.hpp"

namespace kjit::config {
namespace {

using step = std::variant<std::string, std::size_t>;  // object key or array index

/// A key path, at most this long: a config's keys are short, and a message quotes the path.
constexpr std::size_t k_max_key_path = 256;

std::vector<step> parse_key_path(std::string_view key_path, const std::string& origin) {
    if (key_path.size() > k_max_key_path)  // quoted in part: the message stays a line
        throw config_error("--set " + std::string(key_path.substr(0, 40)) + "...", "",
                           "a key path of " + std::to_string(key_path.size()) + " characters: at most " +
                               std::to_string(k_max_key_path));
    const auto fail = [&](const std::string& what) { throw config_error(origin, std::string(key_path), what); };
    const auto is_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
    const auto is_rest = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::vector<step> steps;
    std::size_t at = 0;
    while (at < key_path.size()) {
        if (key_path[at] == '[') {  // [index]
            const std::size_t close = key_path.find(']', at);
            const std::string_view digits = key_path.substr(at + 1, close == std::string_view::npos ? 0 : close - at - 1);
            if (close == std::string_view::npos || digits.empty() ||
                !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
                fail("expected a key path such as launch.block or stages[2].formula");
            if (digits.size() > 9) fail("list index " + std::string(digits) + " is too large");  // no config has a list that long
            steps.emplace_back(static_cast<std::size_t>(std::stoul(std::string(digits))));
            at = close + 1;
            continue;
        }
        // A key: first without a dot, after that always after one.
        if (!steps.empty() && key_path[at++] != '.') fail("expected a key path such as launch.block or stages[2].formula");
        const std::size_t start = at;
        if (at >= key_path.size() || !is_start(key_path[at])) fail("expected a key path such as launch.block or stages[2].formula");
        while (at < key_path.size() && is_rest(key_path[at])) ++at;
        steps.emplace_back(std::string(key_path.substr(start, at - start)));
    }
    if (steps.empty()) fail("empty key path");
    return steps;
}

/// The key that the key steps from `first` name in `object`: the longest run of them, joined by
/// dots, that is a key there already (a sweep's or tune's axis, "launch.block"), else the first
/// alone; and the index of the run's last step.
std::pair<std::string, std::size_t> key_at(const json_value& object, const std::vector<step>& steps, std::size_t first) {
    std::size_t end = first;
    while (end < steps.size() && std::holds_alternative<std::string>(steps[end])) ++end;
    for (std::size_t last = end - 1; last > first; --last) {
        std::string joined = std::get<std::string>(steps[first]);
        for (std::size_t k = first + 1; k <= last; ++k) joined += "." + std::get<std::string>(steps[k]);
        if (object.contains(joined)) return {joined, last};
    }
    return {std::get<std::string>(steps[first]), first};
}

}  // namespace

void set_path(json_value& root, std::string_view key_path, json_value value,
              const std::string& origin) {
    json_value* node = &root;
    std::string walked;
    const std::vector<step> steps = parse_key_path(key_path, origin);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        if (std::holds_alternative<std::string>(steps[i])) {
            if (node->is_null()) *node = json_value::object();
            if (!node->is_object())
                throw config_error(origin, walked + (walked.empty() ? "" : ".") + std::get<std::string>(steps[i]),
                                   "cannot set a key inside a " + std::string(node->type_name()));
            const auto [key, last] = key_at(*node, steps, i);
            walked += (walked.empty() ? "" : ".") + key;
            node = &(*node)[key];
            i = last;
        } else {
            const std::size_t index = std::get<std::size_t>(steps[i]);
            walked += "[" + std::to_string(index) + "]";
            if (!node->is_array() || index >= node->size())
                throw config_error(origin, walked,
                                   "no such element (the list has " +
                                       std::to_string(node->is_array() ? node->size() : 0) + ")");
            node = &(*node)[index];
        }
    }
    *node = std::move(value);
}

void apply_override(document& doc, std::string_view assignment) {
    // Quoted in part in messages: a value may be long.
    const std::string origin =
        "--set " + std::string(assignment.substr(0, 80)) + (assignment.size() > 80 ? "..." : "");
    const auto equals = assignment.find('=');
    if (equals == std::string_view::npos || equals == 0)
        throw error(error_kind::usage, origin + ": expected KEY=VALUE, e.g. --set launch.block=128");
    const std::string_view text = assignment.substr(equals + 1);
    // Numbers, booleans, lists and quoted strings are JSON; anything else is a plain string, so
    // that --set dtype=float64 needs no quotes.
    json_value value;
    try {
        value = parse_json(text, origin);
    } catch (const json_value::exception&) {  // not JSON (or a number out of range): a plain string
        value = std::string(text);
    }
    set_path(doc.json, assignment.substr(0, equals), std::move(value), origin);
}

}  // namespace kjit::config
