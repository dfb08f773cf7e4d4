#include "config/ops.hpp"

#include "config/reader.hpp"
#include "util/embedded.hpp"

namespace kjit::config {
namespace {

using detail::is_identifier;
using detail::object_reader;
using detail::parse_expression;
using detail::shown;

op_param read_param(const std::string& name, const json_value& value, const std::string& path,
                    const std::string& source) {
    object_reader r(value, path, source, {"kind", "default", "nonzero"});
    op_param param;
    param.name = name;
    if (!is_identifier(name) || expr::is_language_name(name))
        r.fail_at(path, "expected a parameter name that is an identifier and not a name of the expression language "
                        "(x, i, row, col, rows, cols, n, inf, nan, pi)");
    param.is_input = r.choice<bool>("kind", {{"number", false}, {"input", true}}, std::nullopt);
    if (param.is_input && r.find("default")) r.fail("default", "an input parameter has no default");
    if (r.find("default")) param.fallback = r.number("default", std::nullopt);
    param.nonzero = r.boolean("nonzero", false);
    if (param.nonzero && param.fallback == 0.0) r.fail("default", "expected a nonzero default");
    return param;
}

op_formula read_formula(const std::string& name, const json_value& value, const std::string& path,
                        const std::string& source, const expr::scope& names) {
    object_reader r(value, path, source, {"expr", "note", "atol", "atol_ulps"});
    op_formula formula;
    formula.name = name;
    formula.tree = parse_expression(r, "expr", names);
    formula.note = r.string("note", std::string());
    formula.atol = r.number("atol", 0.0);
    formula.atol_ulps = r.number("atol_ulps", 0.0);
    if (formula.atol < 0) r.fail("atol", "expected a number ≥ 0, got " + shown(formula.atol));
    if (formula.atol_ulps < 0) r.fail("atol_ulps", "expected a number ≥ 0, got " + shown(formula.atol_ulps));
    return formula;
}

op_definition read_op(const std::string& name, const json_value& value, const std::string& path,
                      const std::string& source) {
    object_reader r(value, path, source, {"description", "activation", "params", "expr", "exact", "formulas"});
    op_definition op;
    op.name = name;
    op.description = r.string("description", std::string());
    op.activation = r.boolean("activation", false);
    expr::scope names;
    names.arrays_called = "input parameters";
    names.scalars_called = "number parameters";
    if (const json_value* params = r.find("params")) {
        if (!params->is_object()) r.fail("params", "expected an object of parameters, got " + shown(*params));
        for (const auto& [param_name, spec] : params->items()) {
            op.params.push_back(read_param(param_name, spec, r.child_path("params") + "." + param_name, source));
            (op.params.back().is_input ? names.arrays : names.scalars).push_back(param_name);
        }
    }
    if (r.find("expr") && r.find("formulas"))
        r.fail("formulas", "an op has either \"expr\" (one form) or \"formulas\" (named forms), not both");
    if (r.find("expr")) {
        op.formulas.push_back({"", parse_expression(r, "expr", names), "", 0, 0});
    } else {
        const json_value& formulas = r.require("formulas", "an object of named formulas, or \"expr\"");
        if (!formulas.is_object() || formulas.empty())
            r.fail("formulas", "expected an object with at least one named formula, got " + shown(formulas));
        for (const auto& [formula_name, spec] : formulas.items()) {
            const std::string formula_path = r.child_path("formulas") + "." + formula_name;
            if (!is_identifier(formula_name))
                r.fail_at(formula_path, "expected a formula name that is an identifier");
            op.formulas.push_back(read_formula(formula_name, spec, formula_path, source, names));
        }
    }
    op.exact = r.find("exact") ? parse_expression(r, "exact", names) : op.formulas.front().tree;
    return op;
}

}  // namespace

op_library read_op_library(const json_value& block, const std::string& source, const std::string& path,
                           const op_library& taken) {
    if (!block.is_object())
        throw config_error(source, path, "expected an object of ops, got " + shown(block));
    op_library ops;
    for (const auto& [name, value] : block.items()) {
        const std::string op_path = path.empty() ? name : path + "." + name;
        if (!is_identifier(name) || name == "map" || name == "reduce" || name == "activate")
            throw config_error(source, op_path, "expected an op name that is an identifier other than map, reduce and activate");
        if (taken.count(name))
            throw config_error(source, op_path, "op \"" + name + "\" is built in; give yours another name");
        ops.emplace(name, read_op(name, value, op_path, source));
    }
    return ops;
}

const op_library& builtin_ops() {
    static const op_library ops = [] {
        const std::string source = "<embedded kernel_templates/ops.json>";
        return read_op_library(parse_document(embedded_file("kernel_templates/ops.json"), source).json, source, "");
    }();
    return ops;
}

}  // namespace kjit::config
