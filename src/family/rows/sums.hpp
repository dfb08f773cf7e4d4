// A row pipeline's sums: each "online" sum paired with the max before it (the online softmax:
// both in one pass), and the formula of a sum the config leaves to kjit chosen for where the row
// waits between passes (policy.hpp).
#pragma once
#include <string>

#include "config/config.hpp"

namespace kjit::family::rows {

/// Sets stage::online_with on every sum computed with its max: those "formula": "online" asks for
/// (or fails at that key saying why the pair is not the online softmax's), and those that leave
/// the formula where the row is not kept in registers (row_cache "shared" or "none") in a fused
/// pipeline, when they are of exp(v − m) after the max m of v. Needs the resolved policy.
void choose_sum_formulas(config::pipeline& p, const std::string& source);

}  // namespace kjit::family::rows
