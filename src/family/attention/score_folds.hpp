// Products by constants the fused kernels take out of the score expression, as FlashAttention-3
// does for soft-capping (`30 * tanh(x / 30)`): two multiplies a score fewer, in the tiles where
// the expression runs.
#pragma once
#include "expr/expr.hpp"

namespace kjit::family::attention {

/// The score as the fused kernels compute it: `outer · folded(x · inner)`.
/// - inner: x reaches the expression only as x · c or x / c, one constant for every use; the
///   kernel multiplies its products by scale · inner (one product, where the expression took two)
///   and `folded` takes x where the score had x · c.
/// - outer: the expression is c · E on every branch but −inf ones, with c > 0; `folded` is E, and
///   the online softmax takes c into the multiply-add that makes each exponent (c · log2 e), where
///   the expression multiplied every score.
/// Both 1, and `folded` the score, where nothing folds.
struct score_folds {
    expr::tree folded;
    double inner = 1, outer = 1;
};

/// The folds of `score`; a division folds only where the kernel spells it as a product by the
/// reciprocal anyway (`division_as_product`, expr::approximations::division).
[[nodiscard]] score_folds fold_score(const expr::tree& score, bool division_as_product);

}  // namespace kjit::family::attention
