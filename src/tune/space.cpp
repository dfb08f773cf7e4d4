#include "tune/space.hpp"

#include <map>

#include "config/reader.hpp"
#include "expr/evaluate.hpp"
#include "tune/strategy.hpp"
#include "util/error.hpp"

namespace kjit::tune {
namespace {

using config::json_value;
using config::detail::object_reader;
using config::detail::shown;

/// A constraint's names are numeric axes: a number, or true/false as 1/0.
std::optional<double> as_number(const json_value& value) {
    if (value.is_boolean()) return value.get<bool>() ? 1.0 : 0.0;
    if (value.is_number()) return value.get<double>();
    return std::nullopt;
}

/// The axis' values, each a non-empty list; all lists of a paired group the same length.
axis read_axis(const object_reader& block, const std::string& where, const json_value& paths) {
    axis a;
    for (const auto& [path, values] : paths.items()) {
        if (!values.is_array() || values.empty())
            block.fail_at(where + "." + path, "expected a non-empty list of values, got " + shown(values));
        if (!a.paths.empty() && values.size() != a.values.size())
            block.fail_at(where + "." + path, "expected " + std::to_string(a.values.size()) +
                                                  " values, as many as " + a.paths.front() + " has (paired values move together), got " +
                                                  std::to_string(values.size()));
        a.values.resize(values.size());
        for (std::size_t k = 0; k < values.size(); ++k) a.values[k].push_back(values[k]);
        a.paths.push_back(path);
    }
    return a;
}

}  // namespace

std::string short_name(const std::string& path) {
    std::string last = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
    return last.substr(0, last.find('['));
}

std::size_t space::size() const {
    std::size_t total = 1;
    for (const auto& a : axes) total *= a.values.size();
    return total;
}

std::vector<std::size_t> space::dims() const {
    std::vector<std::size_t> sizes;
    for (const auto& a : axes) sizes.push_back(a.values.size());
    return sizes;
}

json_value space::values_of(std::size_t index) const {
    const auto steps = tune::steps_of(dims(), index);
    json_value values = json_value::object();
    for (std::size_t k = 0; k < axes.size(); ++k)
        for (std::size_t p = 0; p < axes[k].paths.size(); ++p) values[axes[k].paths[p]] = axes[k].values[steps[k]][p];
    return values;
}

bool space::allowed(std::size_t index) const {
    if (constraints.empty()) return true;
    std::map<std::string, double> scalars;
    const json_value values = values_of(index);
    for (const auto& [path, value] : values.items())
        if (const auto number = as_number(value)) scalars[short_name(path)] = *number;
    for (const auto& c : constraints) {
        const double flowing = 0;
        double result = 0;
        expr::evaluate(c.test, {.count = 1, .flowing = &flowing, .scalars = &scalars}, &result, nullptr);
        if (result == 0) return false;
    }
    return true;
}

space parse_space(const config::document& doc, const json_value& family_space) {
    const bool given = doc.json.is_object() && doc.json.contains("tune");
    const json_value& block_json = given ? doc.json["tune"] : family_space;
    const std::string& source = given ? doc.source : std::string("the family's default tune space");
    const object_reader block(block_json, "tune", source, {"axes", "paired", "constraints"});
    space s;
    s.from_family = !given;
    if (const auto* axes = block.find("axes")) {
        if (!axes->is_object()) block.fail("axes", "expected an object of key path → list of values, got " + shown(*axes));
        for (const auto& [path, values] : axes->items())
            s.axes.push_back(read_axis(block, "tune.axes", json_value::object({{path, values}})));
    }
    if (const auto* paired = block.find("paired")) {
        if (!paired->is_array()) block.fail("paired", "expected a list of objects of key path → list of values");
        for (std::size_t g = 0; g < paired->size(); ++g) {
            const std::string where = "tune.paired[" + std::to_string(g) + "]";
            if (!(*paired)[g].is_object() || (*paired)[g].empty())
                block.fail_at(where, "expected an object of key path → list of values, got " + shown((*paired)[g]));
            s.axes.push_back(read_axis(block, where, (*paired)[g]));
        }
    }
    if (s.axes.empty()) block.fail_at("tune", "expected \"axes\" or \"paired\": the space has no axis");
    std::size_t total = 1;
    for (const auto& a : s.axes) {
        if (a.values.size() > config::k_max_sweep_points / total)
            block.fail_at("tune", "more than " + std::to_string(config::k_max_sweep_points) + " points");
        total *= a.values.size();
    }

    expr::scope names;
    std::map<std::string, std::string> numeric;  // short name → its path
    for (const auto& a : s.axes)
        for (std::size_t p = 0; p < a.paths.size(); ++p)
            if (std::all_of(a.values.begin(), a.values.end(), [&](const auto& v) { return as_number(v[p]).has_value(); }) &&
                numeric.emplace(short_name(a.paths[p]), a.paths[p]).second)
                names.scalars.push_back(short_name(a.paths[p]));
    names.scalars_called = "numeric tune axes";
    if (const auto* constraints = block.find("constraints")) {
        if (!constraints->is_array()) block.fail("constraints", "expected a list of conditions such as \"block * vector_width <= 8192\"");
        for (std::size_t c = 0; c < constraints->size(); ++c) {
            const std::string where = "tune.constraints[" + std::to_string(c) + "]";
            const json_value& text = (*constraints)[c];
            if (!text.is_string()) block.fail_at(where, "expected a condition as a string, got " + shown(text));
            // Parsed as the condition of a ?: so that the language checks it is a comparison.
            const std::string wrapped = "(" + text.get<std::string>() + ") ? 1 : 0";
            try {
                constraint parsed{text.get<std::string>(), expr::parse(wrapped, names)};
                expr::used_names used;
                expr::collect_names(parsed.test, used);
                if (!used.positions.empty() || used.flowing)
                    block.fail_at(where, "names only the numeric tune axes (" + config::detail::quoted_list(names.scalars) +
                                             "), not the element's x or position");
                s.constraints.push_back(std::move(parsed));
            } catch (const expr::parse_error& e) {
                if (std::string(e.what()).find("condition before '?'") != std::string::npos)  // a number, not a test
                    block.fail_at(where, "expected a condition such as \"block * vector_width <= 8192\"");
                block.fail_at(where, "column " + std::to_string(std::max<std::size_t>(e.column(), 2) - 1) + ": " + e.what());
            }
        }
    }
    return s;
}

}  // namespace kjit::tune
