// Attention with fusion "separate", as eager frameworks compute it: three kernels of the mma
// rung's warps (attention_separate.cu.mustache), with the batch · heads · queries × keys scores in
// memory between them. Q · Kᵀ writes the scores through the score expression; a softmax turns each
// row into probabilities, in place; P · V reads them and applies the epilogue as it stores.
#pragma once
#include <string>
#include <vector>

#include "config/reader.hpp"
#include "family/attention/problem.hpp"
#include "family/attention/score_code.hpp"
#include "family/family.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family::attention {

/// The buffer of scores, then of probabilities: rows score_stride apart.
inline constexpr const char* k_scores_buffer = "scores";

/// The kernels' names: the pipeline's, then these.
inline constexpr const char* k_scores_kernel = "_scores";
inline constexpr const char* k_softmax_kernel = "_softmax";
inline constexpr const char* k_values_kernel = "_values";

/// The elements from one row of scores to the next, its keys in whole 16-byte chunks (the P · V
/// kernel copies them 16 bytes at a time).
[[nodiscard]] long long score_stride(const problem& pr, config::dtype type);

/// Its bytes.
[[nodiscard]] std::size_t scores_bytes(const config::pipeline& p, const problem& pr);

/// The separate kernels' launch over `chosen` (the launch read as the mma rung's, resolve's):
/// marks it separate, sizes the softmax's blocks, and refuses the wgmma rung, the fused kernels'
/// plain tiles, split keys and packed heads, and a grid past CUDA's limits, naming `source` and the key.
void read_separate_launch(const config::detail::object_reader& l, const problem& pr, config::dtype type, const std::string& source,
                          policy& chosen);

/// The three kernels, in launch order, with their grids, arguments and work.
[[nodiscard]] std::vector<kernel> separate_kernels(const config::pipeline& p, const problem& pr, const policy& t,
                                                   const score_call& call, const element_call& epilogue);

/// Their names, parameters and headings, and what their softmax spells (exp, the online sum), as
/// the template's placeholders.
void set_separate_data(const config::pipeline& p, const policy& t, const std::vector<kernel>& kernels, const score_call& call,
                       codegen::mu::data& data);

}  // namespace kjit::family::attention
