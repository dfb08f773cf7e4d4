// --set key.path=value: edits the JSON document before validation, so the usual checks and error
// messages apply to overridden values too.
#include <regex>
#include <variant>

#include "config/config.hpp"
#include "util/error.hpp"

namespace kjit::config {
namespace {

using step = std::variant<std::string, std::size_t>;  // object key or array index

std::vector<step> parse_key_path(std::string_view key_path, const std::string& origin) {
    static const std::regex token(R"(^(?:\.?([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]))");
    std::vector<step> steps;
    std::string rest(key_path);
    while (!rest.empty()) {
        std::smatch match;
        const bool first = steps.empty();
        if (!std::regex_search(rest, match, token) || (first && rest[0] == '.') ||
            (!first && match[1].matched && rest[0] != '.'))
            throw config_error(origin, std::string(key_path),
                               "expected a key path such as launch.block or stages[2].formula");
        if (match[1].matched) steps.emplace_back(match[1].str());
        else if (match[2].length() > 9)  // no config has a list that long
            throw config_error(origin, std::string(key_path), "list index " + match[2].str() + " is too large");
        else steps.emplace_back(static_cast<std::size_t>(std::stoul(match[2].str())));
        rest = match.suffix();
    }
    if (steps.empty()) throw config_error(origin, "", "empty key path");
    return steps;
}

}  // namespace

void set_path(json_value& root, std::string_view key_path, json_value value,
              const std::string& origin) {
    json_value* node = &root;
    std::string walked;
    for (const step& s : parse_key_path(key_path, origin)) {
        if (const auto* key = std::get_if<std::string>(&s)) {
            walked += (walked.empty() ? "" : ".") + *key;
            if (node->is_null()) *node = json_value::object();
            if (!node->is_object())
                throw config_error(origin, walked, "cannot set a key inside a " + std::string(node->type_name()));
            node = &(*node)[*key];
        } else {
            const std::size_t index = std::get<std::size_t>(s);
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
    const std::string origin = "--set " + std::string(assignment);
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
