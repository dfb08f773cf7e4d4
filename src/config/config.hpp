// The pipeline a user describes in JSON, as validated plain structs, and the functions that read
// it: strict parsing (one clear error line per problem), --set overrides, sweep expansion.
// Depends on util and nlohmann/json only; knows nothing of CUDA.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kjit::config {

/// JSON that keeps keys in the order they were written, so a sweep's axes nest in the order of
/// the block, and messages list keys as the user wrote them.
using json_value = nlohmann::ordered_json;

enum class dtype { float32, float64 };
enum class fusion { fused, separate };
enum class fill_kind { uniform, normal, constant };
enum class rounding { none, floor, nearest };
enum class op_kind { normalize, weigh, activate };
/// tanh written as the built-in tanh/tanhf, or as the seed's (e^x − e^−x)/(e^x + e^−x).
enum class tanh_formula { builtin, exp };

/// How one input array is filled on the host (deterministic from the config's seed).
struct input_spec {
    std::string name;  ///< a C identifier: it becomes a kernel parameter name
    fill_kind fill = fill_kind::uniform;
    double low = 0, high = 1;    ///< uniform
    double mean = 0, std = 1;    ///< normal
    double value = 0;            ///< constant
    rounding round = rounding::none;
};

/// One elementwise step. The first stage reads `input`; every later one reads the previous result.
struct stage {
    op_kind op = op_kind::normalize;
    std::string input;     ///< stages[0] only: the input array it reads
    double scale = 255;    ///< normalize: x / scale
    std::string by;        ///< weigh: x * by[i]
    tanh_formula formula = tanh_formula::builtin;  ///< activate (fn is always tanh for now)
};

struct launch_spec {
    int block = 256;                ///< threads per block: a multiple of 32 in 32..1024
    int vector_width = 0;           ///< elements per load: 1, 2 or 4; 0 = auto (16-byte loads)
    std::optional<long long> grid;  ///< blocks; nullopt = auto (fill the device, grid-stride)
};

struct compile_spec {
    bool fast_math = false;
    std::optional<int> arch;           ///< e.g. 90 for sm_90; nullopt = the device's (or sm_90)
    std::vector<std::string> options;  ///< extra NVRTC options, passed as given
};

struct measure_spec {
    int warmup = 3;
    int repeat = 50;
};

/// allclose: |out − ref| ≤ atol + rtol·|ref|.
struct tolerance {
    double rtol = 0;
    double atol = 0;
};

struct pipeline {
    std::string name;
    long long n = 0;
    config::dtype type = dtype::float32;
    std::vector<input_spec> inputs;
    std::vector<stage> stages;
    config::fusion fuse = fusion::fused;
    launch_spec launch;
    compile_spec compile;
    measure_spec measure;
    std::optional<tolerance> tol;  ///< nullopt = the default for dtype, formula and fast-math
    std::uint64_t seed = 1;
};

/// Where a document came from, for error messages: a file path or "<embedded hidden_layer.json>".
struct document {
    json_value json;
    std::string source;
};

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

/// Validates the whole document (except "sweep") and returns the pipeline. Throws on the first
/// problem: "SOURCE: key.path: expected …, got …".
[[nodiscard]] pipeline from_json(const document& doc);

/// One point of a sweep: its index, the values that make it ("dtype=float64 fusion=separate"),
/// and the validated pipeline.
struct sweep_point {
    std::size_t index = 0;
    std::string label;
    json_value values;  ///< key path → value, for reports
    config::pipeline pipeline;
};

/// The cartesian product of the document's "sweep" block (one point when there is none). Every
/// point is validated here, before any work starts; a bad one names its index and values.
[[nodiscard]] std::vector<sweep_point> expand_sweep(const document& doc);

/// The tolerance used when the config sets none: per dtype, tanh formula and fast-math.
[[nodiscard]] tolerance default_tolerance(const pipeline& p);

/// Names for reports and generated code.
[[nodiscard]] std::string_view to_string(dtype v);
[[nodiscard]] std::string_view to_string(fusion v);
[[nodiscard]] std::string_view to_string(tanh_formula v);
[[nodiscard]] std::string_view to_string(op_kind v);
[[nodiscard]] std::size_t element_size(dtype v);
/// 1, 2 or 4: the configured width, or 16 bytes' worth for auto.
[[nodiscard]] int effective_vector_width(const pipeline& p);
/// e.g. "fused float32 tanh=builtin block=256 vec=4".
[[nodiscard]] std::string variant_label(const pipeline& p);

}  // namespace kjit::config
