// The wgmma rung's padded operands: where A's or B's rows do not start on the 16-byte boundaries
// the TMA unit needs (policy::pad_a, pad_b), a kernel before the product copies the matrix to
// rows that do, and the product's tensor map reads that copy with its pitch.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.hpp"
#include "family/family.hpp"
#include "family/gemm/policy.hpp"

namespace kjit::family::gemm {

/// An operand copied first: which matrix, the input and its copy, its rows and columns, and the
/// elements from one row's start to the next's in the copy.
struct padded_operand {
    std::string matrix, from, to;  ///< "A" or "B"; the buffers
    long long rows = 0, cols = 0, pitch = 0;
};

/// The operands the policy pads, A's first.
[[nodiscard]] std::vector<padded_operand> padded_operands(const config::pipeline& p, const policy& t, const sizes& s);
/// The buffer the matmul reads `matrix` from, and its pitch (0: its rows follow one another).
[[nodiscard]] std::pair<std::string, long long> operand_read(const std::string& matrix, const std::vector<padded_operand>& pads);
/// The kernel that copies `pad`'s matrix to its padded rows before the product, and its
/// template item (kernel_templates/gemm.cu.mustache's `pads`).
[[nodiscard]] std::pair<kernel, codegen::mu::data> pad_kernel(const config::pipeline& p, const padded_operand& pad);
/// A launch's operand as a dense matrix of doubles, where its tensor map gives its rows a pitch
/// (the host model of the product, family::host_op).
[[nodiscard]] std::vector<double> operand_values(const config::pipeline& p, const host_launch& launch, const argument& operand);

}  // namespace kjit::family::gemm
