// A tuning space: the config's "tune" block (or its family's default space) as axes of values,
// paired axes that move together, and constraints over the axes. A point is one value of each
// axis, numbered like a sweep's points (the last axis fastest). Config only: no GPU, no session.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/constraints.hpp"

namespace kjit::tune {

/// One dimension of the space: a key path and its values, or (paired) several key paths whose
/// values move together: value k of the axis sets each path to its k-th value.
struct axis {
    std::vector<std::string> paths;
    std::vector<std::vector<config::json_value>> values;  ///< values[k][p]: path p's value at step k
};

struct space {
    std::vector<axis> axes;
    std::vector<config::constraint> constraints;
    bool from_family = false;  ///< the family's default space: the config has no "tune" block

    /// Points in the whole space, constraints aside.
    [[nodiscard]] std::size_t size() const;
    /// The number of values of each axis (strategy.hpp numbers the points from them).
    [[nodiscard]] std::vector<std::size_t> dims() const;
    /// Key path → value at point `index`, in axis order.
    [[nodiscard]] config::json_value values_of(std::size_t index) const;
    /// True when every constraint holds at point `index`.
    [[nodiscard]] bool allowed(std::size_t index) const;
};

/// The space of `doc`: its "tune" block, else `family_space` (the family's own, in the same
/// form). The block: {"axes": {path: [values]}, "paired": [{path: [values], path: [values]}],
/// "constraints": ["block * vector_width <= 8192"]}. Throws kjit::error(config) naming the key
/// path: an empty or unequal list, more than config::k_max_sweep_points points, a constraint
/// that does not parse or names no numeric axis.
[[nodiscard]] space parse_space(const config::document& doc, const config::json_value& family_space);

}  // namespace kjit::tune
