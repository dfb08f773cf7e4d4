// Sweep expansion: the cartesian product of the "sweep" block's axes, each point validated.
#include <numeric>

#include "config/config.hpp"
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

/// The "sweep" block's axes (an empty object where there is none), each checked to be a non-empty
/// list, and how many points they make.
std::pair<json_value, std::size_t> axes_of(const document& doc) {
    json_value axes = json_value::object();
    if (doc.json.is_object() && doc.json.contains("sweep")) axes = doc.json["sweep"];
    if (!axes.is_object())
        throw config_error(doc.source, "sweep", "expected an object of key path → list of values");
    std::size_t total = 1;
    for (const auto& [path, values] : axes.items()) {
        if (!values.is_array() || values.empty())
            throw config_error(doc.source, "sweep." + path, "expected a non-empty list of values");
        if (values.size() > k_max_sweep_points / total)  // checked before multiplying: no overflow
            throw config_error(doc.source, "sweep", "more than " + std::to_string(k_max_sweep_points) +
                                                        " points; split the sweep into several configs");
        total *= values.size();
    }
    return {std::move(axes), total};
}

}  // namespace

std::size_t sweep_size(const document& doc) { return axes_of(doc).second; }

std::vector<sweep_point> expand_sweep(const document& doc, loader load,
                                      const std::optional<std::vector<std::size_t>>& indices) {
    auto [axes, total] = axes_of(doc);
    document base = doc;
    if (base.json.is_object()) base.json.erase("sweep");
    std::vector<std::size_t> chosen_points;
    if (indices) {
        chosen_points = *indices;
        for (const std::size_t index : chosen_points)
            if (index >= total)
                throw config_error(doc.source, "sweep", "has " + std::to_string(total) + " points; there is no point " +
                                                            std::to_string(index));
    } else {
        chosen_points.resize(total);
        std::iota(chosen_points.begin(), chosen_points.end(), std::size_t{0});
    }

    // Validate the base first so that a mistake outside the sweep is reported once, plainly.
    (void)load(base);

    std::vector<sweep_point> points;
    for (const std::size_t index : chosen_points) {
        sweep_point point;
        point.index = index;
        point.values = json_value::object();
        document variant = base;
        // The last axis varies fastest, like nested loops written in the order of the block.
        std::size_t rest = index;
        std::vector<std::pair<std::string, json_value>> chosen(axes.size());
        std::size_t axis = axes.size();
        for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
            const auto& values = it.value();
            chosen[--axis] = {it.key(), values[rest % values.size()]};
            rest /= values.size();
        }
        for (const auto& [path, value] : chosen) {
            set_path(variant.json, path, value, doc.source + ": sweep." + path);
            point.values[path] = value;
        }
        const std::string raw_label = point_label(point.values);
        variant.source = doc.source + ": sweep point " + std::to_string(index) +
                         (raw_label.empty() ? "" : " (" + raw_label + ")");
        point.pipeline = load(variant);
        point.label = point_label(point.values, &point.pipeline);
        points.push_back(std::move(point));
    }
    return points;
}

}  // namespace kjit::config
