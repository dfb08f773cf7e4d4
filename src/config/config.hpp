// The pipeline a user describes in JSON, as validated plain structs, and the functions that read
// it: strict parsing (one clear error line per problem), --set overrides, sweep expansion.
// Stages are resolved here into expression trees (src/expr), from the op library
// (kernel_templates/ops.json and a config's "ops" block) or a map's "expr". Depends on util, expr
// and nlohmann/json; knows nothing of CUDA.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/target.hpp"
#include "expr/expr.hpp"
#include "util/npy.hpp"

namespace kjit::config {

/// JSON that keeps keys in the order they were written, so a sweep's axes nest in the order of
/// the block, and messages list keys as the user wrote them.
using json_value = nlohmann::ordered_json;

/// Storage type of every array. float16 and bfloat16 are stored narrow and computed in float.
enum class dtype { float32, float64, float16, bfloat16 };

/// Everything kjit decides by storage type, in one row per type (dtype_table): adding a type is
/// a row here and its conversions in reference::typed_array.
struct dtype_info {
    dtype type;
    std::string_view name;  ///< as configs write it
    std::size_t bytes;
    bool double_compute;  ///< the arithmetic is done in double (else in float)
    int precision;        ///< significand bits, for ulps
    int min_exponent;     ///< of the smallest normal number
    /// The default tolerance: rtol a few ulps of the storage type (float32 ≈ 32 ulps, float16 and
    /// bfloat16 ≈ 4); atol where a result underflows (the smallest normal, or float16's
    /// smallest subnormal).
    double rtol, atol;
    /// Its CUDA spelling: the storage type, a load to the compute type (of `v`) and a store from
    /// it (of `x`), and the toolkit header it needs ("" for none).
    std::string_view cuda_type, cuda_load, cuda_store, cuda_header;
};
[[nodiscard]] const std::vector<dtype_info>& dtype_table();
[[nodiscard]] const dtype_info& info(dtype v);
enum class fusion { fused, separate };
enum class fill_kind { uniform, normal, constant, file };
enum class rounding { none, floor, nearest };

/// How one input array is filled on the host (deterministic from the config's seed).
struct input_spec {
    std::string name;  ///< a C identifier: it becomes a kernel parameter name
    fill_kind fill = fill_kind::uniform;
    double low = 0, high = 1;    ///< uniform
    double mean = 0, std = 1;    ///< normal
    double value = 0;            ///< constant
    rounding round = rounding::none;
    /// "sorted": each row of the input (of its own shape's columns, else the pipeline's; the
    /// whole array without a shape) in ascending order: ids that run in segments, as a document
    /// mask's document of each token. A drawn fill is sorted; a file's rows are checked when it
    /// is read. Kernels may rely on it (an attention score's tile test bounds such ids by a
    /// tile's first and last), so arrays a caller passes must be sorted too.
    bool sorted = false;
    /// "per": "column": one value per column (cols elements, the same for every row), such as a
    /// norm's weight and bias; otherwise one per element.
    bool per_column = false;
    /// "shape": [rows, cols]: an input with a shape of its own, not the pipeline's (the matrix a
    /// matmul multiplies by); empty for the others.
    std::vector<long long> dims;
    /// fill "file": the file (a relative "path" is relative to the config's folder), and what
    /// its .npy header says (or, with "format", its raw element type and count). The data is
    /// read, and converted to the pipeline's dtype, when a run needs it.
    std::filesystem::path path;
    npy::layout file;
};

/// A scalar kernel argument: an entry of the "params" block, or a number given to an op ("s0_scale"
/// for stages[0]'s scale). Scalars are arguments, not literals: changing one does not recompile.
struct scalar_param {
    std::string name;
    double value = 0;
};

/// How a reduce stage combines a row's values into one.
enum class reduction { none, max, min, sum, mean };

/// One step, resolved from an op of the library, a `map` expression, or a `reduce`. The first
/// stage's `x` is its input array; every later stage's `x` is the previous stage's result. A
/// reduce stage combines `kernel` (by default x) over each row into a row value named `as`, and
/// passes x on unchanged; the last stage may be a reduce, and then the result is one per row.
struct stage {
    std::string op;       ///< "map", "reduce", or the op's name ("normalize"; activate names its fn)
    std::string formula;  ///< the op's chosen formula; "" when the op has one form, or a sum leaves it ("auto")
    std::string input;    ///< stages[0]: the array x starts from ("" if the expression needs no x)
    expr::tree kernel;    ///< what the GPU computes; names bound to inputs and pipeline scalars
    expr::tree exact;     ///< the op's exact definition, which the float64 reference evaluates
    /// What the chosen formula may err beyond rounding: absolute, and in ulps of 1.0 of the
    /// compute type (e.g. the seed's tanh, which cancels near 0).
    double atol = 0;
    double atol_ulps = 0;
    bool kernel_is_exact = true;  ///< kernel and exact are one expression (one walk evaluates both)
    reduction reduce = reduction::none;  ///< reduce stages only
    std::string as;                      ///< the row value's name ("" for a final reduce without one)
    /// A sum with "formula": "online" (the online softmax): the index of the max stage it is
    /// computed with, in one pass over the row. Each thread keeps a running max and a sum
    /// relative to it, rescaled by exp(old max − new max) when the max grows; so the sum must be
    /// of exp(v − m), where m is that max of v, with only maps between.
    std::optional<std::size_t> online_with;
    /// An op no expression describes, which a kernel family implements itself (a transpose): x
    /// flows through it rearranged. `kernel` and `exact` are x; its other keys are in `options`,
    /// for the family to read.
    bool family_op = false;
    json_value options;
};

/// A 2-D problem: `rows` independent rows of `cols` elements, stored row after row.
struct row_shape {
    long long rows = 0;
    long long cols = 0;
};

/// The launch block as parsed. Each key is validated by the family that uses it (a key its
/// family does not know is an error), which also resolves every "auto" here, once.
struct launch_spec {
    int block = 256;                ///< threads per block: a multiple of 32 in 32..1024
    bool block_auto = true;  ///< "auto" or not given: the family chooses
    int vector_width = 0;           ///< elements per load: 1, 2, 4 or 8; 0 = auto until resolved
    /// Blocks to launch; nullopt = "auto": for elementwise kernels enough for one pass, at most
    /// what the device holds at once (a grid-stride loop does the rest); for row kernels one
    /// block (or cluster) per row. A row kernel given a grid loops: block b works on rows b,
    /// b + grid, … (and with a row cached in shared memory copies its next row while it works on
    /// this one).
    std::optional<long long> grid;
    /// "grid": "resident": as many blocks as the device holds at once (SMs × blocks per SM).
    bool grid_resident = false;
    /// The launch block as written, for the keys a family reads itself (a row kernel's cluster,
    /// a GEMM's tile).
    json_value given = json_value::object();
};

/// The most threads an SM of any architecture holds at once (sm_80 and sm_90: 2048).
inline constexpr int k_max_threads_per_sm = 2048;

/// How the cubin is made: NVRTC alone for the real architecture, or NVRTC's PTX through nvJitLink.
enum class compile_path { nvrtc, nvjitlink };

/// NVRTC's fast-compile level (-Ofc): how much optimization it trades for compile time.
/// NVRTC's fast-compile level (-Ofc): the higher, the faster the compile and the less optimized the code.
enum class fast_compile { off, min, mid, max };

/// How the kernel computes tanh, or exp: `automatic`, the hardware's approximation where results
/// are stored in 16 bits (approximates_tanh, approximates_exp), the precise function elsewhere; or
/// as asked.
enum class spelling { automatic, approx, precise };

struct compile_spec {
    bool fast_math = false;
    /// "fp32_precision": "tf32" lets a float32 matmul multiply on tensor cores, its operands
    /// rounded to TF32 (10 bits of mantissa; products added in float), as PyTorch's
    /// torch.backends.cuda.matmul.fp32_precision does; "ieee" (the default) keeps float32's.
    bool tf32 = false;
    spelling tanh = spelling::automatic;
    spelling exp = spelling::automatic;
    compile_path path = compile_path::nvrtc;
    config::fast_compile fast_compile = config::fast_compile::off;  ///< off: no -Ofc
    std::optional<int> arch;           ///< e.g. 90 for sm_90; nullopt = the device's (or the target's)
    /// "target": the GPU `compile` and `emit` resolve for (a name or sm_XX); nullopt = the arch's
    /// typical GPU, or default_target(). `run` resolves for its device whatever this says.
    std::optional<config::target> target;
    std::vector<std::string> options;  ///< extra NVRTC options, passed as given
};

/// How long the timed loops run. Cold samples are taken until there are at least `repeat` and the
/// median's relative standard error is at most `noise`, or `max_ms` of sampling is spent (as
/// nvbench stops on noise or a timeout); batches and graph replays are up to `repeat` chains each
/// (fewer for slow chains: see run::chains_per_batch).
struct measure_spec {
    int warmup = 3;
    int repeat = 50;
    double noise = 0.005;
    double max_ms = 500;
    /// "transfers": "per_call": also time calls that copy their arrays in from the host and the
    /// result back, as @vectorize on NumPy arrays does (run/per_call.hpp); "once" (the default):
    /// the arrays stay on the device.
    bool per_call_transfers = false;
};

/// Per element: |out − ref| ≤ atol + rtol·|ref| + rounding·scale, where scale is the reference's
/// error scale of that element (how much the computation amplifies rounding: large where terms
/// cancel) and rounding is twice the compute type's unit roundoff.
struct tolerance {
    double rtol = 0;
    double atol = 0;
    double rounding = 0;
};

/// A family's resolved launch, typed in its family (src/family/<name>/policy.hpp): made once by
/// the family's resolve and carried with the pipeline to its plan, the variant's label and the
/// record. Here only what every one has.
struct launch_policy {
    virtual ~launch_policy() = default;
    /// Every launch choice as record columns, key → value.
    [[nodiscard]] virtual json_value columns() const = 0;
    /// The choices of its own, as the variant's label shows them: " rung=wgmma tile_m=128 …".
    [[nodiscard]] virtual std::string label() const = 0;
};
/// Two policies that choose the same launch.
[[nodiscard]] inline bool operator==(const launch_policy& a, const launch_policy& b) { return a.columns() == b.columns(); }

struct pipeline {
    std::string family;  ///< the kernel family that resolved it (src/family): "" until then
    config::target target;  ///< the GPU its family resolved every "auto" for (family::load)
    std::string name;
    long long n = 0;                 ///< elements of every input array (rows × cols for a shape)
    std::optional<row_shape> shape;  ///< "shape": [rows, cols]; nullopt = 1-D over n
    config::dtype type = dtype::float32;
    std::vector<input_spec> inputs;
    std::vector<scalar_param> scalars;  ///< the "params" block, then the numbers ops were given
    std::vector<stage> stages;
    config::fusion fuse = fusion::fused;
    launch_spec launch;
    /// The family's typed policy, where it has one (gemm, transpose); set by its resolve.
    std::shared_ptr<const launch_policy> policy;
    compile_spec compile;
    measure_spec measure;
    std::optional<tolerance> tol;  ///< nullopt = the default for dtype, formula and fast-math
    std::uint64_t seed = 1;
};

/// The policy `p`'s family resolved, as that family's own type; `family` names it in the logic
/// error a pipeline that another family resolved is.
template <class Policy>
[[nodiscard]] const Policy& policy_as(const pipeline& p, std::string_view family) {
    const auto* resolved = dynamic_cast<const Policy*>(p.policy.get());
    if (!resolved) throw std::logic_error(std::string(family) + ": the pipeline was not resolved by this family");
    return *resolved;
}

/// Where a document came from, for error messages: a file path or "<embedded hidden_layer.json>";
/// and the folder its relative input paths resolve against, whatever `source` says (a sweep
/// point's is "CONFIG: sweep point N").
struct document {
    json_value json;
    std::string source;
    std::filesystem::path folder = {};  ///< the config file's folder; empty: the working folder
};

/// Where an input's `path` points: against the config's folder (document::folder) unless absolute,
/// made absolute, so records name the file that was read.
[[nodiscard]] std::filesystem::path input_path(const std::filesystem::path& folder, const std::filesystem::path& given);
/// The files `doc`'s inputs read (fill "file"), resolved as from_json resolves them, with no other
/// check: what a result file must not replace.
[[nodiscard]] std::vector<std::filesystem::path> input_files(const document& doc);

/// Parses JSON text (comments allowed) with kjit's limits: a duplicate key or nesting deeper than
/// 64 levels throws kjit::error(config) naming the key path; a syntax error throws
/// nlohmann's parse_error.
[[nodiscard]] json_value parse_json(std::string_view text, const std::string& source);
/// Parses JSON text; a syntax error names the source, line and column. Throws kjit::error(config).
[[nodiscard]] document parse_document(std::string_view text, std::string source);
/// Reads a config file, or the embedded default (configs/hidden_layer.json) when `path` is empty.
[[nodiscard]] document load_document(const std::string& path);

/// Applies one "--set key.path=value" (value is JSON if it parses, else a string).
void apply_override(document& doc, std::string_view assignment);
/// Sets the value at a key path such as "stages[2].formula"; missing object keys are created,
/// missing array elements are an error. Throws kjit::error(config) naming `origin`.
void set_path(json_value& root, std::string_view key_path, json_value value,
              const std::string& origin);

/// Validates the whole document (except "sweep") and returns the pipeline, not yet resolved by
/// its family (family::load does both). Throws on the first problem: "SOURCE: key.path:
/// expected …, got …".
[[nodiscard]] pipeline from_json(const document& doc);

/// One point of a sweep: its index, the values that make it ("dtype=float64 fusion=separate"),
/// and the validated pipeline.
struct sweep_point {
    std::size_t index = 0;
    std::string label;
    json_value values;  ///< key path → value, for reports
    config::pipeline pipeline;
};

/// The most elements an array may have (n, a shape's rows × cols, a product's M × N): 2^40.
inline constexpr long long k_max_elements = 1LL << 40;

/// The most points a sweep may have.
inline constexpr std::size_t k_max_sweep_points = 1'000'000;

/// Makes a validated pipeline of a document (family::load).
using loader = std::function<pipeline(const document&)>;

/// How many points the document's "sweep" block makes (1 when there is none), its constraints
/// aside; a malformed block is a config_error. A sweep block is key path → list of values, and
/// may have "constraints": conditions over the numeric axes, as a tune block's
/// ("block * vector_width <= 4096"); a point that fails one is skipped, not made.
[[nodiscard]] std::size_t sweep_size(const document& doc);
/// The indices of the points the sweep's constraints allow (every point where it has none).
[[nodiscard]] std::vector<std::size_t> allowed_sweep_points(const document& doc);

/// The cartesian product of the document's "sweep" block (one point when there is none) less the
/// points its constraints refuse, or those of the points at `indices` (a shard, a cluster
/// worker's batch; the others are not made) that the constraints allow, in that order. Every
/// point returned is made by `load` here, before any work starts; a bad one names its index and
/// values, an index past the last point is a config_error.
[[nodiscard]] std::vector<sweep_point> expand_sweep(const document& doc, loader load,
                                                    const std::optional<std::vector<std::size_t>>& indices = std::nullopt);

/// "dtype=float64 launch.block=128": a sweep or tune point's values (key path → value, in order)
/// as its label; with the point's pipeline, a whole stage given as a value is shown as the stage
/// model describes it ("stages[0]=gelu=tanh").
[[nodiscard]] std::string point_label(const json_value& values, const pipeline* p = nullptr);

/// The architecture `p`'s kernels are compiled for where no device says: compile.arch, else its
/// target's (run and sweeps on a GPU compile for the device's own).
/// The pipeline's scalars by name, as expression evaluation takes them.
[[nodiscard]] inline std::map<std::string, double> scalar_values(const pipeline& p) {
    std::map<std::string, double> values;
    for (const auto& s : p.scalars) values[s.name] = s.value;
    return values;
}
[[nodiscard]] inline int compiled_arch(const pipeline& p) { return p.compile.arch.value_or(p.target.arch); }

/// The tolerance used when the config sets none: per dtype, formula slack and fast-math.
[[nodiscard]] tolerance default_tolerance(const pipeline& p);
/// True when the kernel computes tanh with the hardware's approximation (__tanhf, one instruction
/// instead of about twenty): under fast math, where compile.tanh asks, and by default wherever
/// results are stored in 16 bits, whose rounding (2⁻⁸ relative for bfloat16, 2⁻¹¹ for float16)
/// is as coarse as its error (2⁻¹⁰·⁹⁸⁷) or coarser. Never in float64. The reference charges that
/// error where the kernel makes it.
[[nodiscard]] bool approximates_tanh(const pipeline& p);
/// True when the kernel computes exp as __expf (ex2.approx of x·log2e: two instructions where
/// expf takes eight), as Triton's tl.exp does: under fast math, where compile.exp asks, and by
/// default wherever results are stored in 16 bits. Its error, 2 + 1.173·|x| float ulps at most
/// (CUDA's intrinsic functions table), is under 2⁻¹⁶ relative for every x whose exp is a normal
/// float: a 30th of float16's rounding, a 240th of bfloat16's. Never in float64. The reference
/// charges that error where the kernel makes it.
[[nodiscard]] bool approximates_exp(const pipeline& p);
/// True when the kernel divides by a constant as a product by its reciprocal (x / 30 as
/// x * 0.0333333f: one multiply where float's division takes about ten instructions): under fast
/// math and wherever results are stored in 16 bits. It rounds twice, an ulp of float at most.
[[nodiscard]] bool approximates_division(const pipeline& p);
/// What the kernel approximates: what codegen spells and the reference charges.
[[nodiscard]] expr::approximations approximations_of(const pipeline& p);

/// The GPU architectures NVRTC compiles for (75 for sm_75, …).
[[nodiscard]] const std::vector<int>& known_archs();
/// "sm_75, sm_80, …" for messages.
[[nodiscard]] std::string known_arch_list();
/// "sm_90" or "90" → 90; nullopt for anything that is not a known architecture.
[[nodiscard]] std::optional<int> parse_arch(std::string_view text);

/// Names for reports and generated code.
[[nodiscard]] std::string_view to_string(dtype v);
[[nodiscard]] std::string_view to_string(fusion v);
[[nodiscard]] std::string_view to_string(fast_compile v);  ///< "off", "min", "mid", "max"
[[nodiscard]] std::size_t element_size(dtype v);
/// True when the arithmetic is done in double (float64 storage), false for float.
[[nodiscard]] bool computes_in_double(dtype v);
/// "normalize", "tanh=exp", "map(x * w + b)": one stage for labels and reports.
[[nodiscard]] std::string describe(const stage& s);
/// "normalize → weigh → tanh=builtin".
[[nodiscard]] std::string describe_stages(const pipeline& p);
/// Elements of an input array: its own shape's, n, or result_columns for a per-column input.
[[nodiscard]] long long elements_of(const pipeline& p, const input_spec& in);
/// Columns of the matrix the stages end with: the shape's, unless a stage multiplies x by an
/// input (a family op with "by", a matmul), which gives it that input's columns.
[[nodiscard]] long long result_columns(const pipeline& p);
/// True when the last stage is a reduce: the result is one value per row.
[[nodiscard]] bool result_per_row(const pipeline& p);
/// Elements of the result: n (rows × result_columns for a shape), or one per row when the last
/// stage is a reduce.
[[nodiscard]] long long output_count(const pipeline& p);
/// The input named `name`, or nullptr.
[[nodiscard]] const input_spec* find_input(const pipeline& p, std::string_view name);
/// The scalar named `name`, or nullptr.
[[nodiscard]] const scalar_param* find_scalar(const pipeline& p, std::string_view name);
[[nodiscard]] std::string_view to_string(reduction v);
/// "grid" as written: a number, "resident" or "auto".
[[nodiscard]] json_value grid_value(const launch_spec& launch);
/// e.g. "fused float32 tanh=builtin block=256 vec=4".
[[nodiscard]] std::string variant_label(const pipeline& p);

}  // namespace kjit::config
