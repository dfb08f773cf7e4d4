// The attention kernels on the host, as a fake GPU that executes plans runs them
// (family::host_op): from the launch's buffers, in double, each row of scores, its softmax and
// its weighted sum of the values.
#pragma once
#include "family/family.hpp"

namespace kjit::family::attention {

/// The fused kernel's output: every head's softmax(score(scale · q · k)) · v.
[[nodiscard]] host_matrix host_fused(const config::pipeline& p, const host_launch& launch);

/// Where keys are split (split_keys.hpp), kernel `launch.k`'s: each query's partial softmax of
/// each split's keys, or the output joined from them.
[[nodiscard]] host_matrix host_split(const config::pipeline& p, const host_launch& launch);

/// Separate kernel `launch.k`'s: the scores (NaN in each row's padding, which that kernel does not
/// write), the probabilities (zeros there), or the output.
[[nodiscard]] host_matrix host_separate(const config::pipeline& p, const host_launch& launch);

}  // namespace kjit::family::attention
