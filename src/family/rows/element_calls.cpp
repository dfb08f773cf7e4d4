#include "family/rows/element_calls.hpp"

#include <algorithm>

#include "expr/evaluate.hpp"
#include "family/rows/geometry.hpp"

namespace kjit::family::rows {
namespace {

/// Rows on which read_share evaluates a kernel's unread test, spread over all.
constexpr long long k_share_rows = 256;

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

double read_share(const config::pipeline& p, const expr::tree& unread) {
    if (!unread) return 1;
    const long long rows = p.shape->rows, cols = p.shape->cols, width = p.launch.vector_width;
    const long long sampled = std::min(rows, k_share_rows);
    const std::map<std::string, double> scalars = config::scalar_values(p);
    const auto count = static_cast<std::size_t>(cols);
    std::vector<double> zeros(count, 0.0), skipped(count);
    long long read = 0, vectors = 0;
    for (long long i = 0; i < sampled; ++i) {
        const expr::positions at{.first = i * rows / sampled * cols, .rows = rows, .cols = cols, .n = p.n};
        const expr::chunk in{count, zeros.data(), nullptr, nullptr, &scalars, true, nullptr, &at};
        expr::evaluate(unread, in, skipped.data(), nullptr);
        for (long long v = 0; v < cols; v += width, ++vectors) {
            bool all = true;
            for (long long c = v; c < std::min(v + width, cols); ++c) all = all && skipped[static_cast<std::size_t>(c)] != 0;
            read += !all;
        }
    }
    return static_cast<double>(read) / static_cast<double>(vectors);
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
