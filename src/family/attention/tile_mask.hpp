// Which tiles of scores a mask removes whole, decided per tile from its corners. A score
// expression `C ? -inf : E` (or `C ? E : -inf`) masks where C holds (or fails); where C joins
// comparisons of affine functions of the query and key positions (row, col) with &&, || and !,
// such a comparison holds over a whole tile when it holds at the tile's four corners (an affine
// function's extremes over a rectangle are at its corners). Causal masks, sliding windows and
// prefixes are of this form. Where C is `A || B` and only A is (B reads documents by token, say),
// A alone masking a tile suffices. Any other score computes every tile (and stays exact).
#pragma once
#include <optional>
#include <string>

#include "expr/expr.hpp"

namespace kjit::family::attention {

/// CUDA for "every score of the tile of queries kjit_r0..kjit_r1 and keys kjit_c0..kjit_c1 is
/// −inf whatever x is" (the four names are the kernel's), or nullopt where the corners cannot
/// tell.
[[nodiscard]] std::optional<std::string> tile_masked_code(const expr::tree& score, const expr::cuda_style& style);

}  // namespace kjit::family::attention
