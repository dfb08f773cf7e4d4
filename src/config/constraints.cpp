#include "config/constraints.hpp"

#include <algorithm>
#include <map>

#include "config/reader.hpp"
#include "expr/evaluate.hpp"
#include "util/error.hpp"

namespace kjit::config {
namespace {

/// An axis value as a constraint sees it: a number, or true/false as 1/0.
std::optional<double> as_number(const json_value& value) {
    if (value.is_boolean()) return value.get<bool>() ? 1.0 : 0.0;
    if (value.is_number()) return value.get<double>();
    return std::nullopt;
}

}  // namespace

std::string axis_name(const std::string& path) {
    std::string last = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
    return last.substr(0, last.find('['));
}

std::vector<constraint> parse_constraints(const json_value& list, const std::string& where, const std::string& source,
                                          const std::vector<std::pair<std::string, std::vector<json_value>>>& axes) {
    expr::scope names;
    for (const auto& [path, values] : axes)
        if (std::all_of(values.begin(), values.end(), [](const json_value& v) { return as_number(v).has_value(); }) &&
            std::find(names.scalars.begin(), names.scalars.end(), axis_name(path)) == names.scalars.end())
            names.scalars.push_back(axis_name(path));
    names.scalars_called = "numeric axes";
    if (!list.is_array()) throw config_error(source, where, "expected a list of conditions such as \"block * vector_width <= 8192\"");
    std::vector<constraint> constraints;
    for (std::size_t c = 0; c < list.size(); ++c) {
        const std::string at = where + "[" + std::to_string(c) + "]";
        const json_value& text = list[c];
        if (!text.is_string()) throw config_error(source, at, "expected a condition as a string, got " + detail::shown(text));
        // Parsed as the condition of a ?: so that the language checks it is a comparison.
        const std::string wrapped = "(" + text.get<std::string>() + ") ? 1 : 0";
        try {
            constraint parsed{text.get<std::string>(), expr::parse(wrapped, names)};
            expr::used_names used;
            expr::collect_names(parsed.test, used);
            if (!used.positions.empty() || used.flowing)
                throw config_error(source, at, "names only the numeric axes (" + detail::quoted_list(names.scalars) +
                                                   "), not the element's x or position");
            constraints.push_back(std::move(parsed));
        } catch (const expr::parse_error& e) {
            if (std::string(e.what()).find("condition before '?'") != std::string::npos)  // a number, not a test
                throw config_error(source, at, "expected a condition such as \"block * vector_width <= 8192\"");
            throw config_error(source, at, "column " + std::to_string(std::max<std::size_t>(e.column(), 2) - 1) + ": " + e.what());
        }
    }
    return constraints;
}

bool allows(const std::vector<constraint>& constraints, const json_value& values) {
    if (constraints.empty()) return true;
    std::map<std::string, double> scalars;
    for (const auto& [path, value] : values.items())
        if (const auto number = as_number(value)) scalars[axis_name(path)] = *number;
    for (const auto& c : constraints) {
        const double flowing = 0;
        double result = 0;
        expr::evaluate(c.test, {.count = 1, .flowing = &flowing, .scalars = &scalars}, &result, nullptr);
        if (result == 0) return false;
    }
    return true;
}

}  // namespace kjit::config
