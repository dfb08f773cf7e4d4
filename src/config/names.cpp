// The names, sizes and labels of a pipeline's parts, and its default tolerance.
#include <algorithm>
#include <functional>
#include <numeric>

#include "config/config.hpp"
#include "expr/expr.hpp"

namespace kjit::config {

const std::vector<dtype_info>& dtype_table() {
    static const std::vector<dtype_info> table{
        {dtype::float32, "float32", 4, false, 24, -126, 4e-6, 0x1p-126, "float", "v", "x", ""},
        {dtype::float64, "float64", 8, true, 53, -1022, 1e-13, 0x1p-1022, "double", "v", "x", ""},
        {dtype::float16, "float16", 2, false, 11, -14, 4e-3, 0x1p-24, "__half", "__half2float(v)", "__float2half_rn(x)",
         "cuda_fp16.h"},
        {dtype::bfloat16, "bfloat16", 2, false, 8, -126, 3.2e-2, 0x1p-126, "__nv_bfloat16", "__bfloat162float(v)",
         "__float2bfloat16_rn(x)", "cuda_bf16.h"},
    };
    return table;
}

const dtype_info& info(dtype v) { return dtype_table()[static_cast<std::size_t>(v)]; }

tolerance default_tolerance(const pipeline& p) {
    // rtol and atol: the storage type's (dtype_info). rounding: twice the compute type's unit
    // roundoff, times each element's error scale: what cancellation inside the expression may cost.
    tolerance tol{info(p.type).rtol, info(p.type).atol, 0};
    const double unit = computes_in_double(p.type) ? 0x1p-53 : 0x1p-24;
    tol.rounding = 2 * unit;
    // A formula's own error beyond rounding, declared in the op file (the seed's tanh cancels
    // near 0; the tanh-approximated GELU is 4.7e-4 from the true one).
    for (const auto& s : p.stages) tol.atol = std::max({tol.atol, s.atol, s.atol_ulps * 2 * unit});
    if (p.compile.fast_math && !computes_in_double(p.type)) {  // tanh.approx.f32: 2^-11 relative
        tol.rtol = std::max(tol.rtol, 2e-3);
        tol.atol = std::max(tol.atol, 1e-6);
    }
    return tol;
}

namespace {

/// Where the kernel takes the hardware's approximations unless the config says otherwise: under
/// fast math, and wherever results are stored in 16 bits. Never in float64.
bool approximates_by_default(const pipeline& p) {
    return !computes_in_double(p.type) && (p.compile.fast_math || info(p.type).bytes == 2);
}

}  // namespace

bool approximates_tanh(const pipeline& p) {
    if (computes_in_double(p.type)) return false;
    return p.compile.tanh == spelling::automatic ? approximates_by_default(p) : p.compile.tanh == spelling::approx;
}

bool approximates_exp(const pipeline& p) {
    if (computes_in_double(p.type)) return false;
    return p.compile.exp == spelling::automatic ? approximates_by_default(p) : p.compile.exp == spelling::approx;
}

bool approximates_division(const pipeline& p) { return approximates_by_default(p); }

expr::approximations approximations_of(const pipeline& p) {
    return {approximates_tanh(p), approximates_exp(p), approximates_division(p)};
}

std::string_view to_string(dtype v) { return info(v).name; }
const std::vector<int>& known_archs() {
    // nvrtcGetSupportedArchs of CUDA 13.0 (a test keeps this list equal to it).
    static const std::vector<int> archs{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
    return archs;
}

std::string known_arch_list() {
    std::string text;
    for (int arch : known_archs()) text += (text.empty() ? "sm_" : ", sm_") + std::to_string(arch);
    return text;
}

std::optional<int> parse_arch(std::string_view text) {
    if (text.starts_with("sm_")) text.remove_prefix(3);
    if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    const int arch = std::stoi(std::string(text));
    const auto& archs = known_archs();
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) return std::nullopt;
    return arch;
}

std::string_view to_string(fusion v) { return v == fusion::fused ? "fused" : "separate"; }
std::string_view to_string(fast_compile v) {
    switch (v) {
        case fast_compile::off: return "off";
        case fast_compile::min: return "min";
        case fast_compile::mid: return "mid";
        case fast_compile::max: return "max";
    }
    return "?";
}
std::size_t element_size(dtype v) { return info(v).bytes; }
bool computes_in_double(dtype v) { return info(v).double_compute; }

std::string describe(const stage& s) {
    if (s.op == "map") return "map(" + expr::to_text(s.kernel) + ")";
    if (s.reduce != reduction::none) {
        const std::string of = expr::to_text(s.kernel);
        return "reduce " + std::string(to_string(s.reduce)) + (of == "x" ? "" : "(" + of + ")") +
               (s.as.empty() ? "" : " as " + s.as) + (s.formula == "online" ? ", online" : "");
    }
    return s.formula.empty() ? s.op : s.op + "=" + s.formula;
}

std::string describe_stages(const pipeline& p) {
    std::string text;
    for (const auto& s : p.stages) text += (text.empty() ? "" : " → ") + describe(s);
    return text;
}

const scalar_param* find_scalar(const pipeline& p, std::string_view name) {
    const auto found =
        std::find_if(p.scalars.begin(), p.scalars.end(), [&](const scalar_param& s) { return s.name == name; });
    return found == p.scalars.end() ? nullptr : &*found;
}

long long elements_of(const pipeline& p, const input_spec& in) {
    if (!in.dims.empty()) return std::accumulate(in.dims.begin(), in.dims.end(), 1LL, std::multiplies<>());
    return in.per_column ? result_columns(p) : p.n;
}

long long result_columns(const pipeline& p) {
    long long cols = p.shape ? p.shape->cols : p.n;
    for (const auto& s : p.stages) {
        const auto by = s.options.is_object() ? s.options.find("by") : s.options.end();
        if (!s.family_op || by == s.options.end() || !by->is_string()) continue;
        if (const input_spec* matrix = find_input(p, by->get<std::string>()); matrix && matrix->dims.size() == 2)
            cols = matrix->dims[1];
    }
    return cols;
}

bool result_per_row(const pipeline& p) { return p.stages.back().reduce != reduction::none; }

long long output_count(const pipeline& p) {
    if (result_per_row(p)) return p.shape->rows;
    return p.shape ? p.shape->rows * result_columns(p) : p.n;
}

const input_spec* find_input(const pipeline& p, std::string_view name) {
    const auto found = std::find_if(p.inputs.begin(), p.inputs.end(), [&](const input_spec& in) { return in.name == name; });
    return found == p.inputs.end() ? nullptr : &*found;
}

std::string_view to_string(reduction v) {
    switch (v) {
        case reduction::none: return "none";
        case reduction::max: return "max";
        case reduction::min: return "min";
        case reduction::sum: return "sum";
        case reduction::mean: return "mean";
    }
    return "none";
}

json_value grid_value(const launch_spec& launch) {
    return launch.grid ? json_value(*launch.grid) : launch.grid_resident ? json_value("resident") : json_value("auto");
}

std::string variant_label(const pipeline& p) {
    std::string label = std::string(to_string(p.fuse)) + " " + std::string(to_string(p.type));
    for (const auto& s : p.stages)
        if (!s.formula.empty()) label += " " + s.op + "=" + s.formula;
    label += " block=" + std::to_string(p.launch.block) +
             " vec=" + std::to_string(p.launch.vector_width);
    if (p.launch.grid) label += " grid=" + std::to_string(*p.launch.grid);
    if (p.launch.grid_resident) label += " grid=resident";
    if (p.policy) label += p.policy->label();  // a family's own choices (a row cache, a tile)
    if (p.compile.fast_math) label += " fast-math";
    if (p.compile.tf32) label += " tf32";
    if (p.compile.tanh != spelling::automatic) label += p.compile.tanh == spelling::approx ? " approx-tanh" : " precise-tanh";
    if (p.compile.exp != spelling::automatic) label += p.compile.exp == spelling::approx ? " approx-exp" : " precise-exp";
    if (p.compile.path == compile_path::nvjitlink) label += " via-nvjitlink";
    if (p.compile.fast_compile != fast_compile::off) label += " fast-compile=" + std::string(to_string(p.compile.fast_compile));
    return label;
}

}  // namespace kjit::config
