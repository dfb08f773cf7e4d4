// The op library: named ops as data. Each op is an expression over `x` and its parameters, with
// named formula variants and an exact float64 definition. kjit's own ops live in
// kernel_templates/ops.json (embedded); a config's "ops" block adds more in the same format.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "expr/expr.hpp"

namespace kjit::config {

struct op_param {
    std::string name;
    bool is_input = false;            ///< an input array's name; else a number (a kernel scalar)
    std::optional<double> fallback;   ///< default number; nullopt = required
    bool nonzero = false;
};

struct op_formula {
    std::string name;  ///< "" for an op with one form
    expr::tree tree;
    std::string note;  ///< what a user should know about its accuracy
    double atol = 0;
    double atol_ulps = 0;
};

struct op_definition {
    std::string name;
    std::string description;
    bool activation = false;  ///< can be chosen as {"op": "activate", "fn": NAME}
    std::vector<op_param> params;
    std::vector<op_formula> formulas;  ///< the first is the default
    expr::tree exact;                  ///< what the reference computes
};

using op_library = std::map<std::string, op_definition, std::less<>>;

/// Reads an op block (the op file, or a config's "ops" at `path`). Errors name `source` and the key;
/// a name already in `taken` is an error (ops cannot be redefined).
[[nodiscard]] op_library read_op_library(const json_value& block, const std::string& source,
                                         const std::string& path, const op_library& taken = {});

/// kjit's own ops, parsed once from the embedded kernel_templates/ops.json.
[[nodiscard]] const op_library& builtin_ops();

}  // namespace kjit::config
