// The GEMM family's shape rule, for its resolve (policy.cpp): the policy "auto" chooses for a
// product on a target, and what follows from the shapes for any tile.
#pragma once
#include "config/config.hpp"
#include "family/gemm/policy.hpp"

namespace kjit::family::gemm {

/// The rung's policy at large shapes, before the shape rule picks its tile.
[[nodiscard]] policy large_shape_policy(rung kind, config::dtype type);

/// What follows from the shapes, for a tile: the vector widths, and whether rows of A and B are
/// 16-byte chunks that cp.async or TMA can copy (and so whether clusters can multicast). Made here
/// only, for resolve.
void fit_to(policy& chosen, const sizes& s, config::dtype type);

/// The policy where "auto": a thin product's, or the rung's large-shape policy with the tile and
/// split the wave model chooses for `s` on `gpu`.
[[nodiscard]] policy auto_policy(rung kind, const sizes& s, const config::target& gpu, config::dtype type);

}  // namespace kjit::family::gemm
