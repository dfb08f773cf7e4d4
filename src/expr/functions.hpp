// The fixed table of functions an expression may call: arity, CUDA spellings per compute type,
// the float64 value and partial derivatives for the reference, and CUDA's documented float32 error.
#pragma once
#include <string>
#include <string_view>

#include "expr/expr.hpp"

namespace kjit::expr {

struct function_info {
    std::string_view name;
    int arity;
    std::string_view cuda_float;   ///< float compute (float32, float16, bfloat16 storage)
    std::string_view cuda_double;  ///< double compute
    std::string_view cuda_fast;    ///< float compute under fast math ("" = as cuda_float)
    /// Maximum error of the float32 CUDA function in ulps (CUDA Programming Guide, math appendix):
    /// the reference's error scale charges this much rounding per call.
    double ulps;
    double (*value)(const double* args);
    /// Partial derivative by argument `which` at `args`, where the function's value is `value`,
    /// for the error scale.
    double (*partial)(const double* args, double value, int which);
};

/// The error of __tanhf (tanh.approx.f32), in float's unit roundoff 2⁻²⁴ as `ulps` is: a relative
/// error of up to 2^-10.987 (PTX ISA), so 2^13.013 ≈ 8264, rounded up.
inline constexpr double k_tanh_approx_ulps = 8300;

/// True when `f` is spelled by its fast form where `which` says (config::approximations_of): the
/// functions whose fast forms a kernel takes without fast math.
[[nodiscard]] inline bool is_approximated(const function_info& f, const approximations& which) {
    return (which.tanh && f.name == "tanh") || (which.exp && f.name == "exp");
}

/// The error of `f` at `x` in float ulps, as the kernel computes it: __tanhf's k_tanh_approx_ulps,
/// __expf's 2 + 1.173·|x| (CUDA C++ Programming Guide, intrinsic functions), else f.ulps.
[[nodiscard]] double error_ulps(const function_info& f, const approximations& which, double x);

/// nullptr when `name` is not in the table.
[[nodiscard]] const function_info* find_function(std::string_view name);
/// "exp, exp2, log, …": for messages.
[[nodiscard]] std::string function_names();
/// True for every identifier the generated code may call (expf, __expf, fminf, …): such names
/// cannot be inputs or params, or they would shadow the function.
[[nodiscard]] bool is_cuda_function_name(std::string_view name);

}  // namespace kjit::expr
