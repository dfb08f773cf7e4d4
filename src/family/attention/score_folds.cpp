// The score's constant factors, taken out for the fused kernels (score_folds.hpp).
#include "family/attention/score_folds.hpp"

#include "family/attention/tile_mask.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace kjit::family::attention {

namespace {

using expr::binary_op;
using expr::node;
using expr::node_kind;
using expr::tree;

bool is_flowing(const tree& t) { return t->kind == node_kind::name && t->binding == expr::name_kind::flowing; }

/// A finite, positive constant: a factor that keeps the order of scores (so the max of the
/// products is the product of the max) and the sign of −inf.
bool is_positive_number(const tree& t) { return t->kind == node_kind::number && std::isfinite(t->number) && t->number > 0; }

/// `n` as a tree, its depth recomputed from its (replaced) arguments.
tree rebuilt(node n) {
    n.depth = 1;
    for (const auto& arg : n.args) n.depth = std::max(n.depth, arg->depth + 1);
    return std::make_shared<const node>(std::move(n));
}

/// The factor of x in `t` where t is x · c, c · x or (folding divisions) x / c; nullopt otherwise.
std::optional<double> factor_of_x(const tree& t, bool division_as_product) {
    if (t->kind != node_kind::binary) return std::nullopt;
    const tree& a = t->args[0];
    const tree& b = t->args[1];
    if (t->op == binary_op::mul && is_flowing(a) && b->kind == node_kind::number) return b->number;
    if (t->op == binary_op::mul && is_flowing(b) && a->kind == node_kind::number) return a->number;
    if (t->op == binary_op::div && division_as_product && is_flowing(a) && expr::is_division_by_constant(*t)) return 1 / b->number;
    return std::nullopt;
}

/// `t` with each x · c replaced by x, where every x in t is such a product with the same c (into
/// `factor`, nullopt before the first); nullptr where one is not.
tree without_inner_factor(const tree& t, std::optional<double>& factor, bool division_as_product) {
    if (is_flowing(t)) return nullptr;  // x alone: a factor of 1 here, not the others' c
    if (const auto c = factor_of_x(t, division_as_product)) {
        if (factor && *factor != *c) return nullptr;
        factor = c;
        return t->args[0]->kind == node_kind::number && t->op == binary_op::mul ? t->args[1] : t->args[0];
    }
    if (t->args.empty()) return t;
    node copy = *t;
    for (auto& arg : copy.args) {
        arg = without_inner_factor(arg, factor, division_as_product);
        if (!arg) return nullptr;
    }
    return rebuilt(std::move(copy));
}

/// `t` as c · E: E and c where every branch of t's conditionals is −inf or c · E with the same
/// c > 0; nullopt otherwise.
struct outer_factor {
    tree rest;
    double factor;
};
std::optional<outer_factor> outer_factor_of(const tree& t) {
    if (t->kind == node_kind::binary && t->op == binary_op::mul) {
        if (is_positive_number(t->args[0])) return outer_factor{t->args[1], t->args[0]->number};
        if (is_positive_number(t->args[1])) return outer_factor{t->args[0], t->args[1]->number};
        return std::nullopt;
    }
    if (t->kind != node_kind::conditional) return std::nullopt;
    const tree& yes = t->args[1];
    const tree& no = t->args[2];
    const auto yes_factor = is_minus_inf(*yes) ? std::nullopt : outer_factor_of(yes);
    const auto no_factor = is_minus_inf(*no) ? std::nullopt : outer_factor_of(no);
    if ((!yes_factor && !is_minus_inf(*yes)) || (!no_factor && !is_minus_inf(*no))) return std::nullopt;
    if (yes_factor && no_factor && yes_factor->factor != no_factor->factor) return std::nullopt;
    const double factor = yes_factor ? yes_factor->factor : no_factor ? no_factor->factor : 1;
    node copy = *t;
    if (yes_factor) copy.args[1] = yes_factor->rest;
    if (no_factor) copy.args[2] = no_factor->rest;
    return outer_factor{rebuilt(std::move(copy)), factor};
}

}  // namespace

score_folds fold_score(const tree& score, bool division_as_product) {
    score_folds folds{score};
    std::optional<double> inner;
    if (tree rest = without_inner_factor(score, inner, division_as_product); rest && inner && std::isfinite(*inner) && *inner != 0) {
        folds.folded = rest;
        folds.inner = *inner;
    }
    if (const auto outer = outer_factor_of(folds.folded); outer && outer->factor != 1) {
        folds.folded = outer->rest;
        folds.outer = outer->factor;
    }
    return folds;
}

}  // namespace kjit::family::attention
