#include "cuda/tensor_map.hpp"

#include <string>

namespace kjit::cuda {

CUtensorMap encode_tensor_map(const driver_api& api, CUdeviceptr address, const family::tensor_map& m) {
    using element = family::tensor_map::element;
    const auto cols = static_cast<cuuint64_t>(m.cols), rows = static_cast<cuuint64_t>(m.rows);
    const cuuint64_t extents[2] = {cols, rows};
    const cuuint64_t row_bytes[1] = {cols * 2};  // 16-bit elements
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(m.box_cols), static_cast<cuuint32_t>(m.box_rows)};
    const cuuint32_t element_strides[2] = {1, 1};
    CUtensorMap map{};
    api.check(api.cuTensorMapEncodeTiled(&map, m.type == element::bfloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                         2, reinterpret_cast<void*>(address), extents, row_bytes, box, element_strides,
                                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              "cuTensorMapEncodeTiled",
              std::to_string(m.rows) + " × " + std::to_string(m.cols) + " matrix, boxes of " + std::to_string(m.box_rows) +
                  " × " + std::to_string(m.box_cols));
    return map;
}

}  // namespace kjit::cuda
