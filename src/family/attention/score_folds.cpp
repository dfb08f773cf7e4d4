// The score's constant factors, taken out for the fused kernels (score_folds.hpp).
#include "family/attention/score_folds.hpp"

#include "expr/functions.hpp"
#include "family/attention/tile_mask.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string_view>
#include <vector>

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

/// The values a score (or a term of it) takes whatever x and the positions are.
struct bounds {
    double low, high;
};

std::optional<bounds> bounds_of(const tree& t, bool is_score);

/// A product's or a quotient's bounds: the extremes of the corners.
bounds corners(const bounds& a, const bounds& b, double (*op)(double, double)) {
    const std::array values{op(a.low, b.low), op(a.low, b.high), op(a.high, b.low), op(a.high, b.high)};
    return {*std::min_element(values.begin(), values.end()), *std::max_element(values.begin(), values.end())};
}

std::optional<bounds> binary_bounds(const node& n) {
    const auto a = bounds_of(n.args[0], false);
    const auto b = bounds_of(n.args[1], false);
    if (!a || !b) return std::nullopt;
    switch (n.op) {
    case binary_op::add: return bounds{a->low + b->low, a->high + b->high};
    case binary_op::sub: return bounds{a->low - b->high, a->high - b->low};
    case binary_op::mul: return corners(*a, *b, [](double u, double v) { return u * v; });
    case binary_op::div:  // by a constant alone: a bounded divisor may come as near 0 as it likes
        if (b->low != b->high || b->low == 0) return std::nullopt;
        return corners(*a, *b, [](double u, double v) { return u / v; });
    default: return std::nullopt;
    }
}

std::optional<bounds> call_bounds(const node& n) {
    const std::string_view f = n.function->name;
    if (f == "tanh" || f == "erf" || f == "sin" || f == "cos") return bounds{-1, 1};
    if (f == "sigmoid") return bounds{0, 1};
    if (f != "min" && f != "max" && f != "clamp") return std::nullopt;
    std::vector<bounds> args;
    for (const auto& arg : n.args) {
        const auto b = bounds_of(arg, false);
        if (!b && !(f == "clamp" && args.empty())) return std::nullopt;  // (clamp's value may be anything)
        args.push_back(b.value_or(bounds{}));
    }
    if (f == "min") return bounds{std::min(args[0].low, args[1].low), std::min(args[0].high, args[1].high)};
    if (f == "max") return bounds{std::max(args[0].low, args[1].low), std::max(args[0].high, args[1].high)};
    return bounds{std::min(args[1].low, args[2].low), args[2].high};  // clamp(v, lo, hi): fmin(fmax(v, lo), hi)
}

/// The bounds of `t`; where `is_score` (the score, or a branch of its conditionals), a −inf branch
/// is a masked score and bounds nothing. nullopt where a value is unbounded (x, a position, a
/// param, −inf within arithmetic).
std::optional<bounds> bounds_of(const tree& t, bool is_score) {
    switch (t->kind) {
    case node_kind::number:
        if (!std::isfinite(t->number)) return std::nullopt;
        return bounds{t->number, t->number};
    case node_kind::negate:
        if (const auto b = bounds_of(t->args[0], false)) return bounds{-b->high, -b->low};
        return std::nullopt;
    case node_kind::binary: return binary_bounds(*t);
    case node_kind::call: return call_bounds(*t);
    case node_kind::conditional: {
        std::optional<bounds> hull;
        for (const tree& branch : {t->args[1], t->args[2]}) {
            if (is_score && is_minus_inf(*branch)) continue;
            const auto b = bounds_of(branch, is_score);
            if (!b) return std::nullopt;
            hull = hull ? bounds{std::min(hull->low, b->low), std::max(hull->high, b->high)} : *b;
        }
        return hull;
    }
    default: return std::nullopt;
    }
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

std::optional<fixed_base> fixed_base_of(const tree& score, config::dtype storage) {
    const auto b = bounds_of(score, true);
    if (!b || !std::isfinite(b->low) || !std::isfinite(b->high)) return std::nullopt;
    // the exponents' limits, as powers of 2: the lowest weight's and the highest's
    const bool half = storage == config::dtype::float16;
    const double lowest = half ? -14 : -100, highest = half ? 15 : 64;
    const double low2 = b->low * std::numbers::log2e, high2 = b->high * std::numbers::log2e;
    const double base2 = std::min(high2, low2 - lowest);
    if (!(high2 - base2 <= highest)) return std::nullopt;
    return fixed_base{base2 / std::numbers::log2e, b->low, b->high};
}

}  // namespace kjit::family::attention
