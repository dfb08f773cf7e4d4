// Constraints over the axes of a sweep or a tune space: conditions such as
// "block * vector_width <= 8192" that a point must meet to be made at all. An axis is named in
// them by its key path's last key ("launch.block" → "block"); its values must be numbers (true and
// false count as 1 and 0).
#pragma once
#include <string>
#include <vector>

#include "config/config.hpp"
#include "expr/expr.hpp"

namespace kjit::config {

/// A constraint as written, and its tree over the axes' names.
struct constraint {
    std::string text;
    expr::tree test;
};

/// The name an axis has in constraints: its path's last key ("stages[2].formula" → "formula").
[[nodiscard]] std::string axis_name(const std::string& path);

/// The conditions of the list `list` at key path `where` ("tune.constraints") of `source`, over
/// the numeric axes among `axes` (key path → its values). Throws kjit::error(config) naming the
/// condition's key path and column: not a list of strings, a text that does not parse, is not a
/// comparison, or names anything but a numeric axis.
[[nodiscard]] std::vector<constraint> parse_constraints(const json_value& list, const std::string& where, const std::string& source,
                                                        const std::vector<std::pair<std::string, std::vector<json_value>>>& axes);

/// True when every one of `constraints` holds for a point's values (key path → value).
[[nodiscard]] bool allows(const std::vector<constraint>& constraints, const json_value& values);

}  // namespace kjit::config
