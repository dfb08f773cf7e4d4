// What a family plans for one variant, and all the runner needs to execute it: the source, the
// kernels in launch order with their launch shapes and typed arguments, the device buffers with
// their sizes and roles, and the bytes each kernel moves. The runner knows no family: it
// allocates and poisons the buffers, binds the arguments, launches, measures and compares.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kjit::family {

struct dims {
    long long x = 1, y = 1, z = 1;
    [[nodiscard]] long long count() const { return x * y * z; }
    bool operator==(const dims&) const = default;
};

/// What a buffer holds. Inputs are made on the host and copied in; the others are poisoned
/// (all-ones bytes: NaN) before the first launch, so an element no kernel wrote cannot pass.
enum class buffer_role { input, temporary, row_value, output };

struct buffer {
    std::string name;
    std::size_t bytes = 0;
    buffer_role role = buffer_role::input;
    /// Its elements are float32 whatever the pipeline's type (partial results between two kernels).
    bool float_elements = false;
};

/// How the TMA unit (sm_90) copies a buffer: as a rows × cols matrix of 16-bit elements, in boxes
/// of box_rows × box_cols with 128-byte swizzling; or, where `planes` is not 0, as that many such
/// matrices one after another (a 3-D map, a box from one matrix at a time: elements past a
/// matrix's last row arrive as zeros, not as the next one's). The kernel gets a tensor map of the
/// buffer (made by cuTensorMapEncodeTiled on the host) instead of its address.
struct tensor_map {
    enum class element { bfloat16, float16 } type = element::bfloat16;
    long long rows = 0, cols = 0;
    int box_rows = 0, box_cols = 0;
    long long planes = 0;
    /// Elements from the start of a row to the next's, where more than cols (rows padded to
    /// 16-byte boundaries, which the TMA unit needs): 0 where rows follow one another.
    long long pitch = 0;
    [[nodiscard]] long long row_elements() const { return pitch > 0 ? pitch : cols; }
    bool operator==(const tensor_map&) const = default;
};

/// One kernel parameter, in order: a buffer (by name), a scalar of the pipeline (by name, passed
/// in the compute type), or a size (a 64-bit integer known when planning).
struct argument {
    enum class kind { buffer, scalar, size } what = kind::buffer;
    std::string name;  ///< the buffer or scalar; for a size, what it is ("n", "rows", "cols")
    long long size = 0;
    bool written = false;  ///< a buffer the kernel writes
    std::string cuda;      ///< its declaration in the kernel: "const store_t* __restrict__ weights"
    std::string cuda_name; ///< its name there: "weights", or "kjit_row_m" for a row value
    std::optional<tensor_map> map = std::nullopt;  ///< a buffer passed as a TMA tensor map
};

/// How many blocks the device holding them all at once caps the grid at (SMs × resident blocks
/// per SM, from the occupancy API, known only on the device): not at all, at most that many
/// (grid-stride or row loops that need no more), or exactly that many (launch.grid "resident").
enum class resident_rule { none, at_most, exactly };


/// The unit whose throughput bounds a kernel's floating-point operations.
enum class math_unit {
    fma,     ///< the FMA (and other CUDA-core) pipes
    tensor,  ///< the tensor cores: mma.sync or wgmma
};
[[nodiscard]] inline const char* to_string(math_unit u) { return u == math_unit::tensor ? "tensor" : "fma"; }

struct kernel {
    std::string name;  ///< extern "C", so it needs no name lowering
    std::string what;  ///< "stages[1]: weigh, a kernel of its own" or "normalize → …, fused"
    std::vector<std::size_t> stages;  ///< the stages it computes, in order
    std::string reads_x;              ///< the buffer x starts from ("": the first stage needs none)
    dims grid, block;
    resident_rule resident = resident_rule::none;  ///< applies to grid.x
    std::size_t shared_bytes = 0;                  ///< dynamic shared memory per block
    std::vector<argument> args;
    double bytes_read = 0, bytes_written = 0;  ///< global memory per launch, as planned
    /// Floating-point operations per launch: a matmul's 2·M·N·K; for expression kernels each +, −,
    /// ×, ÷ and function call of the stages, per element.
    double flops = 0;
    /// Where those operations run, so the roofline puts the launch under the right roof.
    math_unit flops_on = math_unit::fma;
    /// Where not 0, a kernel with no stages that lays a matrix out anew: it copies its first
    /// argument, a matrix of its sizes "rows" × "cols" stored row after row, to its second, whose
    /// rows start this many elements apart, the elements between them zero (a GEMM's operand in
    /// rows the TMA unit can copy).
    long long pads_rows_to = 0;
};

struct program {
    std::string family;  ///< the family that planned it
    std::string source;
    std::vector<std::string> headers;  ///< toolkit headers it includes (float16, bfloat16)
    /// The one architecture it runs on, where it uses features of that architecture alone (90:
    /// wgmma and setmaxnreg, compiled for sm_90a); 0 for any.
    int only_arch = 0;
    std::string only_arch_why;  ///< "the wgmma rung: Hopper's warp-group tensor cores"
    /// The oldest architecture it runs on (80: cp.async and mbarrier); 0 for any. Both are checked
    /// in one place, run::check_arch, for compile, emit --ptx and run.
    int min_arch = 0;
    std::string min_arch_why;  ///< "the mma rung: cp.async and mbarrier"
    std::vector<kernel> kernels;       ///< in launch order
    std::vector<buffer> buffers;       ///< every device buffer, inputs first
    bool double_scalars = false;       ///< scalars are passed as double (float64 pipelines)
    int vector_width = 1;
    /// Bytes every array's address must be a multiple of: the widest load or store the kernels
    /// make at once (kjit's own buffers always are; a caller's view into an array may not be).
    /// 0: one element's (the elementwise kernels test alignment themselves, and fall back).
    std::size_t array_alignment = 0;
    /// The result as a matrix of output_rows × output_cols (0 × 0: a 1-D result), and whether
    /// it has one value per row of the input (a final reduce).
    long long output_rows = 0, output_cols = 0;
    bool result_per_row = false;
    /// What an output row and column are, where they are more than a row and a column: the
    /// row's index over these sizes, outermost first, and the column's name (attention's batch,
    /// head and query, and "column" of head_dim), so a bad element is named by them.
    std::vector<std::pair<std::string, long long>> output_row_parts;
    std::string output_col_name = "col";
    /// Input element i is where output element i came from (not so through a transpose): a bad
    /// element's message can show its inputs.
    bool inputs_align_with_output = true;
};

/// Name of the buffer that holds the pipeline's result.
inline constexpr const char* k_output_buffer = "out";

}  // namespace kjit::family
