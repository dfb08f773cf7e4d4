// The attention family's launch, read once by resolve: the rung, the tiles of queries and keys,
// and the wgmma rung's consumers, buffers, schedule and persistent blocks, each as given or chosen
// by rules measured on Hopper for the head dim, the mask and the target's shared memory.
#pragma once
#include "config/reader.hpp"
#include "family/attention/problem.hpp"

namespace kjit::family::attention {

/// The launch keys given, over the rung's "auto" policy, each checked for the rung. Where the rung
/// is "auto" and a key of one rung is given (warps; consumers, buffers, schedule), that rung.
/// `skips`: the score's mask skips tiles (no persistent blocks where "auto").
[[nodiscard]] policy read_launch(const config::detail::object_reader& l, const config::pipeline& p, const problem& pr,
                                 bool skips);

}  // namespace kjit::family::attention
