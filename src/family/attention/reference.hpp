// The attention family's float64 reference: whole output rows of sampled queries (every batch and
// head, its first, middle and last query and hashed others), each with its error scale.
#pragma once
#include "config/config.hpp"
#include "reference/reference.hpp"

namespace kjit::family::attention {

[[nodiscard]] reference::expected_values reference(const config::pipeline& p, const reference::input_arrays& inputs);

}  // namespace kjit::family::attention
