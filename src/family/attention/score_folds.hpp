// Products by constants the fused kernels take out of the score expression, as FlashAttention-3
// does for soft-capping (`30 * tanh(x / 30)`): two multiplies a score fewer, in the tiles where
// the expression runs; and, for a score bounded whatever x is, the fixed base the online softmax
// takes its exponents from in place of a running max.
#pragma once
#include <optional>

#include "config/config.hpp"
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

/// Where every score but −inf lies within finite bounds whatever x is (`30 * tanh(x / 30)`: ±30;
/// tanh, erf, sin, cos, sigmoid, min, max and clamp of bounded arguments, and +, −, · and / by a
/// constant of bounded terms), the fused kernel's online softmax takes each exponent from one
/// constant, e^(score − base), instead of from each query's running max: no max is kept, nothing
/// is rescaled, and a query's sum and output rows are the same multiple of the usual ones.
/// `base` is the highest that keeps e^(low − base) at or above 2^−100 (2^−14 in float16: the
/// weights stay normal numbers of the storage type), taken where e^(high − base) is then at most
/// 2^64 (2^15 in float16: the weights and their sums stay far from the largest); nullopt otherwise.
struct fixed_base {
    double base, low, high;
};
[[nodiscard]] std::optional<fixed_base> fixed_base_of(const expr::tree& score, config::dtype storage);

}  // namespace kjit::family::attention
