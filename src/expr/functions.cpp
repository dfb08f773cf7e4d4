#include "expr/functions.hpp"

#include <array>
#include <cmath>
#include <numbers>

namespace kjit::expr {
namespace {

constexpr double pi = std::numbers::pi;

// Values and partial derivatives in float64. A partial is given the value already computed (most
// derivatives are cheap in it); `which` picks the argument for functions of several.
double v_exp(const double* a) { return std::exp(a[0]); }
double d_exp(const double*, double v, int) { return v; }
double v_exp2(const double* a) { return std::exp2(a[0]); }
double d_exp2(const double*, double v, int) { return std::numbers::ln2 * v; }
double v_log(const double* a) { return std::log(a[0]); }
double d_log(const double* a, double, int) { return 1 / a[0]; }
double v_log2(const double* a) { return std::log2(a[0]); }
double d_log2(const double* a, double, int) { return 1 / (a[0] * std::numbers::ln2); }
double v_log1p(const double* a) { return std::log1p(a[0]); }
double d_log1p(const double* a, double, int) { return 1 / (1 + a[0]); }
double v_expm1(const double* a) { return std::expm1(a[0]); }
double d_expm1(const double*, double v, int) { return v + 1; }
double v_sqrt(const double* a) { return std::sqrt(a[0]); }
double d_sqrt(const double*, double v, int) { return 0.5 / v; }
double v_rsqrt(const double* a) { return 1 / std::sqrt(a[0]); }
double d_rsqrt(const double* a, double v, int) { return -0.5 * v / a[0]; }
double v_cbrt(const double* a) { return std::cbrt(a[0]); }
double d_cbrt(const double*, double v, int) { return 1 / (3 * v * v); }
double v_abs(const double* a) { return std::fabs(a[0]); }
double d_abs(const double*, double, int) { return 1; }
double v_sin(const double* a) { return std::sin(a[0]); }
double d_sin(const double* a, double, int) { return std::cos(a[0]); }
double v_cos(const double* a) { return std::cos(a[0]); }
double d_cos(const double* a, double, int) { return -std::sin(a[0]); }
double v_tan(const double* a) { return std::tan(a[0]); }
double d_tan(const double*, double v, int) { return 1 + v * v; }
double v_tanh(const double* a) { return std::tanh(a[0]); }
double d_tanh(const double*, double v, int) { return 1 - v * v; }
double v_sinh(const double* a) { return std::sinh(a[0]); }
double d_sinh(const double* a, double, int) { return std::cosh(a[0]); }
double v_cosh(const double* a) { return std::cosh(a[0]); }
double d_cosh(const double* a, double, int) { return std::sinh(a[0]); }
double v_erf(const double* a) { return std::erf(a[0]); }
double d_erf(const double* a, double, int) { return 2 / std::sqrt(pi) * std::exp(-a[0] * a[0]); }
double v_erfc(const double* a) { return std::erfc(a[0]); }
double d_erfc(const double* a, double, int) { return -2 / std::sqrt(pi) * std::exp(-a[0] * a[0]); }
// Steps: flat almost everywhere; a value next to a step may round either way on the GPU.
double v_floor(const double* a) { return std::floor(a[0]); }
double v_ceil(const double* a) { return std::ceil(a[0]); }
double v_round(const double* a) { return std::round(a[0]); }  // half away from zero, as roundf
double d_step(const double*, double, int) { return 0; }
double v_pow(const double* a) { return std::pow(a[0], a[1]); }
double d_pow(const double* a, double v, int which) {
    return which == 0 ? a[1] * std::pow(a[0], a[1] - 1) : std::log(std::fabs(a[0])) * v;
}
// min, max and clamp are piecewise: an argument a rounding away from the switch may take the
// other piece, so each argument's error passes through whole (their Lipschitz bound, 1), not only
// the chosen one's: relu(max(a, 0)) of a product a rounding below 0 is that rounding above it.
double v_min(const double* a) { return std::fmin(a[0], a[1]); }
double d_min(const double*, double, int) { return 1; }
double v_max(const double* a) { return std::fmax(a[0], a[1]); }
double d_max(const double*, double, int) { return 1; }
double v_fma(const double* a) { return std::fma(a[0], a[1], a[2]); }
double d_fma(const double* a, double, int which) { return which == 0 ? a[1] : which == 1 ? a[0] : 1; }
double v_sigmoid(const double* a) { return 1 / (1 + std::exp(-a[0])); }
double d_sigmoid(const double*, double v, int) { return v * (1 - v); }
double v_clamp(const double* a) { return std::fmin(std::fmax(a[0], a[1]), a[2]); }
double d_clamp(const double*, double, int) { return 1; }  // piecewise, as min and max

// clamp and sigmoid have no CUDA function of their own: to_cuda spells them with fmin/fmax and
// with 1 / (1 + exp(-x)) (an exp, an add and a division: 2 + 2 ulps).
constexpr std::array k_functions{
    function_info{"exp", 1, "expf", "exp", "__expf", 2, v_exp, d_exp},
    function_info{"exp2", 1, "exp2f", "exp2", "", 2, v_exp2, d_exp2},
    function_info{"log", 1, "logf", "log", "__logf", 1, v_log, d_log},
    function_info{"log2", 1, "log2f", "log2", "__log2f", 1, v_log2, d_log2},
    function_info{"log1p", 1, "log1pf", "log1p", "", 1, v_log1p, d_log1p},
    function_info{"expm1", 1, "expm1f", "expm1", "", 1, v_expm1, d_expm1},
    function_info{"sqrt", 1, "sqrtf", "sqrt", "", 0.5, v_sqrt, d_sqrt},
    function_info{"rsqrt", 1, "rsqrtf", "rsqrt", "", 2, v_rsqrt, d_rsqrt},
    function_info{"cbrt", 1, "cbrtf", "cbrt", "", 1, v_cbrt, d_cbrt},
    function_info{"abs", 1, "fabsf", "fabs", "", 0, v_abs, d_abs},
    function_info{"sin", 1, "sinf", "sin", "__sinf", 2, v_sin, d_sin},
    function_info{"cos", 1, "cosf", "cos", "__cosf", 2, v_cos, d_cos},
    function_info{"tan", 1, "tanf", "tan", "__tanf", 4, v_tan, d_tan},
    function_info{"tanh", 1, "tanhf", "tanh", "__tanhf", 2, v_tanh, d_tanh},
    function_info{"sinh", 1, "sinhf", "sinh", "", 3, v_sinh, d_sinh},
    function_info{"cosh", 1, "coshf", "cosh", "", 2, v_cosh, d_cosh},
    function_info{"erf", 1, "erff", "erf", "", 2, v_erf, d_erf},
    function_info{"erfc", 1, "erfcf", "erfc", "", 4, v_erfc, d_erfc},
    function_info{"floor", 1, "floorf", "floor", "", 0, v_floor, d_step},
    function_info{"ceil", 1, "ceilf", "ceil", "", 0, v_ceil, d_step},
    function_info{"round", 1, "roundf", "round", "", 0, v_round, d_step},
    function_info{"pow", 2, "powf", "pow", "__powf", 4, v_pow, d_pow},
    function_info{"min", 2, "fminf", "fmin", "", 0, v_min, d_min},
    function_info{"max", 2, "fmaxf", "fmax", "", 0, v_max, d_max},
    function_info{"fma", 3, "fmaf", "fma", "", 0.5, v_fma, d_fma},
    function_info{"clamp", 3, "", "", "", 0, v_clamp, d_clamp},
    function_info{"sigmoid", 1, "", "", "", 4, v_sigmoid, d_sigmoid},
};

}  // namespace

double error_ulps(const function_info& f, const approximations& which, double x) {
    if (!is_approximated(f, which)) return f.ulps;
    return f.name == "tanh" ? k_tanh_approx_ulps : 2 + 1.173 * std::fabs(x);
}

const function_info* find_function(std::string_view name) {
    for (const auto& f : k_functions)
        if (f.name == name) return &f;
    return nullptr;
}

std::string function_names() {
    std::string names;
    for (const auto& f : k_functions) names += (names.empty() ? "" : " ") + std::string(f.name);
    return names;
}

bool is_cuda_function_name(std::string_view name) {
    for (const auto& f : k_functions)
        if (name == f.name || name == f.cuda_float || name == f.cuda_double || name == f.cuda_fast) return true;
    return name == "fminf" || name == "fmaxf" || name == "fmin" || name == "fmax";
}

}  // namespace kjit::expr
