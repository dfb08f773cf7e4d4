// The TMA unit's description of a matrix in device memory (a CUtensorMap), made from a family's
// family::tensor_map by cuTensorMapEncodeTiled: host-side work, no GPU call.
#pragma once
#include "cuda/driver_api.hpp"
#include "family/program.hpp"

namespace kjit::cuda {

/// The tensor map of the matrix `m` at `address`: 16-bit elements, rows of m.cols, boxes of
/// m.box_rows × m.box_cols, 128-byte swizzled, zeros past the edges. Throws kjit::error(driver)
/// naming the call and the shapes where the driver refuses (an address or a row not 16-byte
/// aligned).
[[nodiscard]] CUtensorMap encode_tensor_map(const driver_api& api, CUdeviceptr address, const family::tensor_map& m);

}  // namespace kjit::cuda
