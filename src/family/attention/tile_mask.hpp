// Which tiles of scores a mask removes whole, decided per tile from its corners. A score
// expression `C ? -inf : E` (or `C ? E : -inf`) masks where C holds (or fails); where C joins
// comparisons of affine functions of the query and key positions (row, col) with &&, || and !,
// such a comparison holds over a whole tile when it holds at the tile's four corners (an affine
// function's extremes over a rectangle are at its corners). Causal masks, sliding windows and
// prefixes are of this form; a side that is abs, max or min of such functions is split first into
// the two comparisons it holds by (`abs(row - col) < w`: `row - col < w && -(row - col) < w`). A comparison of reads by token of inputs that ascend along each
// batch's tokens (fill "sorted": a document mask's ids), of terms that grow with row or col alone
// (`row // 512`, a chunk's index) and of terms free of row and col is told by bounds instead: over
// a tile, doc[row] runs from doc at its first query to doc at its last, so
// `doc[row] != doc[col]` holds over the whole tile where those two ranges do not meet. Where C is
// `A || B` and only A is told, A alone masking a tile suffices. Any other score computes every
// tile (and stays exact). The same comparisons, turned round, tell a tile the mask does not reach
// into, whose scores are x itself: the kernel skips the score expression there.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "expr/expr.hpp"

namespace kjit::family::attention {

/// The test of a tile: CUDA for what holds of every score of the tile of queries kjit_r0..kjit_r1
/// and keys kjit_c0..kjit_c1 (the four names are the kernel's), and the reads by
/// token whose values at the tile's first and last positions it compares (bound_loads loads
/// them, from tokens_parameter(read)).
struct tile_test {
    std::string code;
    std::vector<expr::token_read> bounded;
};

/// The test that every score of the tile is −inf whatever x is, for `score`, whose inputs named in
/// `ascending` ascend along each batch's tokens; nullopt where nothing tells.
[[nodiscard]] std::optional<tile_test> tile_masked(const expr::tree& score, const expr::cuda_style& style,
                                                   const std::vector<std::string>& ascending);

/// CUDA for a test that holds at every tile.
inline constexpr const char* k_every_tile = "true";

/// The test that every score of the tile is x itself (no mask reaches into it): k_every_tile where
/// the score is x; nullopt where nothing tells (a score that modifies x, or a mask not told by
/// tiles).
[[nodiscard]] std::optional<tile_test> tile_plain(const expr::tree& score, const expr::cuda_style& style,
                                                  const std::vector<std::string>& ascending);

/// True where `n` is −inf: the number, or `-inf` as written (the negation of inf).
[[nodiscard]] bool is_minus_inf(const expr::node& n);

/// Adds `read` to `reads` unless it is there: the reads several tests bound, each once.
void add_read(std::vector<expr::token_read>& reads, const expr::token_read& read);

/// The tile test's parameter that points at the tokens of the block's batch in read's input:
/// kjit_doc_row_tokens.
[[nodiscard]] std::string tokens_parameter(const expr::token_read& read);

/// The declarations, one a line, of the values the test compares: `const real kjit_doc_r0 =
/// load(kjit_doc_row_tokens[kjit_r0]);` and the like.
[[nodiscard]] std::vector<std::string> bound_loads(const tile_test& test);

}  // namespace kjit::family::attention
