#include "family/attention/tile_mask.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "codegen/codegen.hpp"

namespace kjit::family::attention {
namespace {

using expr::binary_op;
using expr::node;
using expr::node_kind;

bool is_minus_inf(const node& n) {
    if (n.kind == node_kind::number) return std::isinf(n.number) && n.number < 0;
    return n.kind == node_kind::negate && n.args[0]->kind == node_kind::number && std::isinf(n.args[0]->number) &&
           n.args[0]->number > 0;
}

bool uses_row_or_col(const expr::tree& t) {
    expr::used_names used;
    expr::collect_names(t, used);
    return std::any_of(used.positions.begin(), used.positions.end(), [](const std::string& p) { return p == "row" || p == "col"; });
}

/// Numbers, params, the sizes and row and col, with +, −, negation, and × or ÷ by a term free of
/// row and col.
bool is_affine(const node& n) {
    switch (n.kind) {
        case node_kind::number: return true;
        case node_kind::name: return n.binding == expr::name_kind::position || n.binding == expr::name_kind::scalar;
        case node_kind::negate: return is_affine(*n.args[0]);
        case node_kind::binary: {
            const expr::tree &a = n.args[0], &b = n.args[1];
            if (n.op == binary_op::add || n.op == binary_op::sub) return is_affine(*a) && is_affine(*b);
            if (n.op == binary_op::mul) return is_affine(*a) && is_affine(*b) && (!uses_row_or_col(a) || !uses_row_or_col(b));
            if (n.op == binary_op::div) return is_affine(*a) && !uses_row_or_col(b);
            return false;
        }
        default: return false;
    }
}

bool is_order(binary_op op) {
    return op == binary_op::lt || op == binary_op::le || op == binary_op::gt || op == binary_op::ge;
}

class corner_test {
public:
    explicit corner_test(const expr::cuda_style& style) : m_style(style) {}

    /// CUDA that is true only where `t` is `wanted` at every position of the tile.
    std::optional<std::string> all(const expr::tree& t, bool wanted) const {
        const node& n = *t;
        if (n.kind == node_kind::logical_not) return all(n.args[0], !wanted);
        if (n.kind != node_kind::binary) return std::nullopt;
        if (n.op == binary_op::logical_and || n.op == binary_op::logical_or) {
            const auto a = all(n.args[0], wanted), b = all(n.args[1], wanted);
            // all of (A && B) true: both; all of (A || B) true: either suffices, so a side the
            // corners cannot tell (a document mask's) leaves the other. False: the dual.
            const bool both = (n.op == binary_op::logical_and) == wanted;
            if (a && b) return "(" + *a + (both ? " && " : " || ") + *b + ")";
            return both ? std::nullopt : a ? a : b;
        }
        if (!is_order(n.op) || !is_affine(*n.args[0]) || !is_affine(*n.args[1])) return std::nullopt;
        std::vector<std::string> corners;
        for (const char* row : {"kjit_r0", "kjit_r1"})
            for (const char* col : {"kjit_c0", "kjit_c1"}) {
                const expr::tree at = expr::rebind(t, {{"row", {expr::name_kind::position, row}},
                                                        {"col", {expr::name_kind::position, col}}});
                corners.push_back(std::string(wanted ? "" : "!") + "(" + expr::to_cuda(at, m_style) + ")");
            }
        return "(" + codegen::wrapped(corners, " &&", 12) + ")";  // (in a return indented by 4)
    }

private:
    expr::cuda_style m_style;
};

}  // namespace

std::optional<std::string> tile_masked_code(const expr::tree& score, const expr::cuda_style& style) {
    if (score->kind != node_kind::conditional) return std::nullopt;
    const bool masked_when_true = is_minus_inf(*score->args[1]);
    if (!masked_when_true && !is_minus_inf(*score->args[2])) return std::nullopt;
    return corner_test(style).all(score->args[0], masked_when_true);
}

}  // namespace kjit::family::attention
