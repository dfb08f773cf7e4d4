// The attention family: softmax(score(scale · Q · Kᵀ)) · V per batch and head, fused into one
// kernel (FlashAttention's order: mma.sync on sm_80 and newer, wgmma on sm_90), the score a kjit
// expression (masks, soft-capping).
#pragma once
#include "family/family.hpp"

namespace kjit::family {

[[nodiscard]] const family& attention_family();

}  // namespace kjit::family
