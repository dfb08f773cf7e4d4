// Split keys (launch.splits, Flash-Decoding): where an item's keys are shared among several
// blocks, each block computes its queries' softmax over its share of the keys and writes it
// partial, in float: the output row not yet divided by its sum, the max the exponentials were
// taken from, and the sum. A second kernel joins each query's partials, rescaling each to the
// largest max, divides by the joined sum, applies the epilogue and stores the output. Decoding
// (one query a head against a long cache) has too few work items to fill the GPU otherwise.
#pragma once
#include <vector>

#include "family/attention/problem.hpp"
#include "family/family.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family::attention {

/// The buffer of partials: for each query row of all batch · heads · queries and each split, in
/// that order, head_dim floats of the output row, then the max and the sum.
inline constexpr const char* k_partials_buffer = "partials";

/// The kernels' names: the pipeline's, then these.
inline constexpr const char* k_partials_kernel = "_partials";
inline constexpr const char* k_combine_kernel = "_combine";

/// Floats from one query's partial (of one split) to the next: the output row, the max, the sum.
[[nodiscard]] inline long long partial_stride(const problem& pr) { return pr.head_dim + 2; }

/// The partials' buffer.
[[nodiscard]] buffer partials_buffer(const problem& pr, const policy& t);

/// The kernel parameter of the partials: floats, written by the kernel that splits, read by the join.
[[nodiscard]] argument partials_argument(bool written);

/// The tiles of keys each split takes, as the kernel shares them: ⌈tiles / splits⌉ (the last
/// split may take fewer, or none).
[[nodiscard]] inline long long split_share(long long tiles, long long splits) { return (tiles + splits - 1) / splits; }

/// The kernel that joins the partials: a warp a query row, through the epilogue.
[[nodiscard]] kernel combine_kernel(const config::pipeline& p, const problem& pr, const policy& t, const element_call& epilogue);

/// Its name, parameters and heading, and the partials' buffer, as the template's placeholders.
void set_split_data(const problem& pr, const kernel& combine, codegen::mu::data& data);

}  // namespace kjit::family::attention
