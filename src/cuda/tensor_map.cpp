#include "cuda/tensor_map.hpp"

#include <string>

namespace kjit::cuda {

CUtensorMap encode_tensor_map(const driver_api& api, CUdeviceptr address, const family::tensor_map& m) {
    using element = family::tensor_map::element;
    const auto cols = static_cast<cuuint64_t>(m.cols), rows = static_cast<cuuint64_t>(m.rows);
    const cuuint64_t extents[3] = {cols, rows, static_cast<cuuint64_t>(m.planes)};
    const auto row_bytes = static_cast<cuuint64_t>(m.row_elements()) * 2;  // (16-bit elements)
    const cuuint64_t strides[2] = {row_bytes, row_bytes * rows};  // bytes between rows, and planes
    const cuuint32_t box[3] = {static_cast<cuuint32_t>(m.box_cols), static_cast<cuuint32_t>(m.box_rows), 1};
    const cuuint32_t element_strides[3] = {1, 1, 1};
    const cuuint32_t rank = m.planes > 0 ? 3 : 2;
    CUtensorMap map{};
    api.check(api.cuTensorMapEncodeTiled(&map, m.type == element::bfloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                         rank, reinterpret_cast<void*>(address), extents, strides, box, element_strides,
                                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              "cuTensorMapEncodeTiled",
              (m.planes > 0 ? std::to_string(m.planes) + " × " : std::string()) + std::to_string(m.rows) + " × " +
                  std::to_string(m.cols) + " matrix, boxes of " + std::to_string(m.box_rows) +
                  " × " + std::to_string(m.box_cols));
    return map;
}

}  // namespace kjit::cuda
