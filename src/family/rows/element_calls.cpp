#include "family/rows/element_calls.hpp"

#include "family/rows/geometry.hpp"

namespace kjit::family::rows {
namespace {

/// Position `name` of the element a row function's loops are at: its row, and its column from
/// the vector and the element in it (less the row's lead where rows are misaligned); rows and cols
/// are the kernel's parameters.
std::string position_value(const std::string& name, bool misaligned) {
    if (name == "i") return "kjit_base + kjit_v * kjit_width + kjit_k";
    if (name == "row") return "kjit_row_index";
    if (name == "col") return misaligned ? "kjit_v * kjit_width + kjit_k - kjit_lead" : "kjit_v * kjit_width + kjit_k";
    if (name == "n") return "rows * cols";
    return name;
}

}  // namespace

void add_names(const expr::used_names& used, const expr::cuda_style& style, bool misaligned,
               std::vector<std::string>& params, std::vector<std::string>& args) {
    for (const auto& names : {used.rows, used.scalars})
        for (const auto& name : names) {
            params.push_back("real " + name);
            args.push_back(name);
        }
    for (const auto& name : used.positions) {
        params.push_back(std::string(expr::position_type(style)) + " " + name);
        args.push_back(expr::position_argument(position_value(name, misaligned), style));
    }
}

expr::tree unread_where(const config::pipeline& p, const chain_kernel& k) {
    const config::stage& first = p.stages[k.stages.front()];
    if (k.first_value.empty() || first.reduce != config::reduction::none || !may_skip_reads(p)) return nullptr;
    expr::tree where = expr::flowing_ignored_where(first.kernel);
    if (!where) return nullptr;
    expr::used_names used;
    expr::collect_names(where, used);
    if (!used.arrays.empty() || !used.rows.empty()) return nullptr;  // a test that would read memory
    return where;
}

codegen::mu::data unread_test(const expr::tree& where, std::size_t stage, const expr::cuda_style& style,
                              bool misaligned) {
    codegen::mu::data list{codegen::mu::data::type::list};
    if (!where) return list;
    expr::used_names used;
    expr::collect_names(where, used);
    std::vector<std::string> params, args;
    add_names(used, style, misaligned, params, args);
    codegen::mu::data test;
    test.set("index", std::to_string(stage));
    test.set("condition", expr::to_text(where));
    test.set("code", expr::to_cuda(where, style));
    test.set("params", codegen::parameter_list(params));
    test.set("args", codegen::parameter_list(args, 20));  // the call is on a line indented by 12
    list.push_back(test);
    return list;
}

}  // namespace kjit::family::rows
