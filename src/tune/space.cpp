#include "tune/space.hpp"

#include "config/reader.hpp"
#include "tune/strategy.hpp"
#include "util/error.hpp"

namespace kjit::tune {
namespace {

using config::json_value;
using config::detail::object_reader;
using config::detail::shown;

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

bool space::allowed(std::size_t index) const { return config::allows(constraints, values_of(index)); }

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
    if (const auto* constraints = block.find("constraints")) {
        std::vector<std::pair<std::string, std::vector<json_value>>> axes;
        for (const auto& a : s.axes)
            for (std::size_t p = 0; p < a.paths.size(); ++p) {
                std::vector<json_value> values;
                for (const auto& step : a.values) values.push_back(step[p]);
                axes.emplace_back(a.paths[p], std::move(values));
            }
        s.constraints = config::parse_constraints(*constraints, "tune.constraints", source, axes);
    }
    return s;
}

}  // namespace kjit::tune
