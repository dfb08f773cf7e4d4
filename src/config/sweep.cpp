// Sweep expansion: the cartesian product of the "sweep" block's axes, less the points its
// constraints refuse, each point validated.
#include <numeric>

#include "config/config.hpp"
#include "config/constraints.hpp"
#include "util/error.hpp"

namespace kjit::config {
std::string point_label(const json_value& values, const pipeline* p) {
    std::string label;
    for (const auto& [path, value] : values.items()) {
        std::string shown = value.is_string() ? value.get<std::string>()
                                              : value.dump(-1, ' ', false, json_value::error_handler_t::replace);
        if (p && value.is_object() && path.starts_with("stages[") && path.ends_with("]")) {
            const std::size_t stage = std::stoul(path.substr(7, path.size() - 8));
            if (stage < p->stages.size()) shown = describe(p->stages[stage]);
        }
        label += (label.empty() ? "" : " ") + path + "=" + shown;
    }
    return label;
}

namespace {

/// A sweep block's key that is not an axis: conditions a point must meet to be made.
constexpr const char* k_constraints_key = "constraints";

/// The "sweep" block read: its axes (an empty object where there is none), each a non-empty list,
/// how many points they make, and its constraints.
struct sweep_block {
    json_value axes = json_value::object();
    std::size_t total = 1;
    std::vector<constraint> constraints;
};

sweep_block block_of(const document& doc) {
    sweep_block block;
    json_value given = json_value::object();
    if (doc.json.is_object() && doc.json.contains("sweep")) given = doc.json["sweep"];
    if (!given.is_object())
        throw config_error(doc.source, "sweep", "expected an object of key path → list of values");
    std::vector<std::pair<std::string, std::vector<json_value>>> named;
    for (const auto& [path, values] : given.items()) {
        if (path == k_constraints_key) continue;
        if (!values.is_array() || values.empty())
            throw config_error(doc.source, "sweep." + path, "expected a non-empty list of values");
        if (values.size() > k_max_sweep_points / block.total)  // checked before multiplying: no overflow
            throw config_error(doc.source, "sweep", "more than " + std::to_string(k_max_sweep_points) +
                                                        " points; split the sweep into several configs");
        block.total *= values.size();
        block.axes[path] = values;
        named.emplace_back(path, std::vector<json_value>(values.begin(), values.end()));
    }
    if (given.contains(k_constraints_key))
        block.constraints = parse_constraints(given[k_constraints_key], "sweep.constraints", doc.source, named);
    return block;
}

/// The values of point `index` (key path → value): the last axis varies fastest, like nested
/// loops written in the order of the block.
json_value values_at(const json_value& axes, std::size_t index) {
    std::vector<std::pair<std::string, json_value>> chosen(axes.size());
    std::size_t axis = axes.size();
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
        const auto& values = it.value();
        chosen[--axis] = {it.key(), values[index % values.size()]};
        index /= values.size();
    }
    json_value values = json_value::object();
    for (auto& [path, value] : chosen) values[path] = std::move(value);
    return values;
}

}  // namespace

std::size_t sweep_size(const document& doc) { return block_of(doc).total; }

std::vector<std::size_t> allowed_sweep_points(const document& doc) {
    const sweep_block block = block_of(doc);
    std::vector<std::size_t> allowed;
    for (std::size_t index = 0; index < block.total; ++index)  // (no point's values are made where nothing refuses one)
        if (block.constraints.empty() || allows(block.constraints, values_at(block.axes, index))) allowed.push_back(index);
    return allowed;
}

std::vector<sweep_point> expand_sweep(const document& doc, loader load,
                                      const std::optional<std::vector<std::size_t>>& indices) {
    const sweep_block block = block_of(doc);
    document base = doc;
    if (base.json.is_object()) base.json.erase("sweep");
    if (indices)
        for (const std::size_t index : *indices)
            if (index >= block.total)
                throw config_error(doc.source, "sweep", "has " + std::to_string(block.total) + " points; there is no point " +
                                                            std::to_string(index));
    // Every point, or those given; the constraints are asked once, below, for each.
    std::vector<std::size_t> chosen_points = indices ? *indices : std::vector<std::size_t>(block.total);
    if (!indices) std::iota(chosen_points.begin(), chosen_points.end(), std::size_t{0});

    // Validate the base first so that a mistake outside the sweep is reported once, plainly.
    (void)load(base);

    std::vector<sweep_point> points;
    for (const std::size_t index : chosen_points) {
        sweep_point point;
        point.index = index;
        point.values = values_at(block.axes, index);
        if (!allows(block.constraints, point.values)) continue;
        document variant = base;
        for (const auto& [path, value] : point.values.items()) set_path(variant.json, path, value, doc.source + ": sweep." + path);
        const std::string raw_label = point_label(point.values);
        variant.source = doc.source + ": sweep point " + std::to_string(index) +
                         (raw_label.empty() ? "" : " (" + raw_label + ")");
        try {
            point.pipeline = load(variant);
        } catch (const error& e) {
            if (e.kind() != error_kind::config) throw;
            throw error(error_kind::config, std::string(e.what()) + " (a \"constraints\" list in the sweep block skips such points)");
        }
        point.label = point_label(point.values, &point.pipeline);
        points.push_back(std::move(point));
    }
    return points;
}

}  // namespace kjit::config
