// How a row function's loops call the element functions of the stages: the arguments they pass
// for the names an expression uses (row values, scalars, positions from the loop variables), and
// the test under which the first stage ignores the row's x, so that a masked vector is not read.
#pragma once
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "expr/expr.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family::rows {

/// The row values, scalars and positions `used` names, as an element function's parameters and
/// the arguments a row function's loops pass to them. Where rows are misaligned (geometry.hpp), a
/// row's column 0 is kjit_lead elements into its first vector.
void add_names(const expr::used_names& used, const expr::cuda_style& style, bool misaligned,
               std::vector<std::string>& params, std::vector<std::string>& args);

/// Where the kernel's first stage, a map, ignores the x it loads, as a test of the element's
/// scalars and positions (a causal mask): a vector of the row where every element passes it is
/// not read. nullptr where there is no such test, or where the policy reads every vector
/// (may_skip_reads).
[[nodiscard]] expr::tree unread_where(const config::pipeline& p, const chain_kernel& k);

/// The share of its x row's vectors a kernel reads where `unread` (unread_where) lets it skip
/// those its first stage ignores: the test on every element of up to 256 rows spread over all, a
/// vector skipped where it holds for all of its elements (a causal mask: about half). 1 without
/// a test. The row model's bytes count only these.
[[nodiscard]] double read_share(const config::pipeline& p, const expr::tree& unread);

/// The template's {{#unread}}: the test as an element function, and its arguments at a vector's
/// element; an empty list where `where` is null.
[[nodiscard]] codegen::mu::data unread_test(const expr::tree& where, std::size_t stage, const expr::cuda_style& style,
                                            bool misaligned);

}  // namespace kjit::family::rows
