// The row family: pipelines with a reduce stage over `shape` rows (softmax, layer norm, RMS
// norm, a row sum), one block (or cluster) per row, or blocks that loop over rows.
#pragma once
#include "family/family.hpp"

namespace kjit::family {
[[nodiscard]] const family& rows_family();
}  // namespace kjit::family
