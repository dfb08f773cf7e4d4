// The GEMM family: pipelines that multiply the flowing matrix by an input ({"op": "matmul",
// "by": "W"}), then apply maps to the product, their epilogue: fused into the matmul kernel, or
// (fusion "separate") a kernel each, as eager frameworks run them. Each rung of the ladder is a
// policy (launch.policy): "simt" tiles on CUDA cores, "mma" on tensor cores with mma.sync.
#pragma once
#include "family/family.hpp"

namespace kjit::family {
[[nodiscard]] const family& gemm_family();
}  // namespace kjit::family
