// The float64 reference of a matmul and its epilogue. Each element of the product is a dot
// product of K terms, computed exactly enough in float64 from the inputs as stored; its error
// scale is (K + 1) · Σ|a·b|, a kernel accumulating in its compute type in any order (each
// product rounded once, each partial sum once per term) errs by less than that many roundings
// of Σ|a·b| (docs/gemm.md). Up to k_full_elements the whole result is computed; beyond, a sample
// of at least k_sample_elements that covers every row and every column, in runs of 8 adjacent
// columns placed by a fixed hash (the same sample every run), and the runner checks every other
// element for having been written.
#pragma once
#include "config/config.hpp"
#include "reference/reference.hpp"

namespace kjit::family::gemm {

inline constexpr std::size_t k_full_elements = 1 << 18;
inline constexpr std::size_t k_sample_elements = 1 << 16;

[[nodiscard]] reference::expected_values reference(const config::pipeline& p, const reference::input_arrays& inputs);

}  // namespace kjit::family::gemm
