// The pipeline computed in float64 on the host, and the allclose comparison of a GPU result with
// it. Pure host code: no CUDA, testable everywhere.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace kjit::reference {

/// An array as the GPU sees it: float or double elements.
class typed_array {
public:
    typed_array(config::dtype type, std::size_t count);
    [[nodiscard]] config::dtype type() const { return m_type; }
    [[nodiscard]] std::size_t size() const { return m_type == config::dtype::float32 ? m_f32.size() : m_f64.size(); }
    [[nodiscard]] std::size_t bytes() const { return size() * config::element_size(m_type); }
    [[nodiscard]] double get(std::size_t i) const {
        return m_type == config::dtype::float32 ? static_cast<double>(m_f32[i]) : m_f64[i];
    }
    /// Stores `value` rounded to the array's type.
    void set(std::size_t i, double value) {
        if (m_type == config::dtype::float32) m_f32[i] = static_cast<float>(value);
        else m_f64[i] = value;
    }
    [[nodiscard]] void* data() { return m_type == config::dtype::float32 ? static_cast<void*>(m_f32.data()) : m_f64.data(); }
    [[nodiscard]] const void* data() const {
        return m_type == config::dtype::float32 ? static_cast<const void*>(m_f32.data()) : m_f64.data();
    }

private:
    config::dtype m_type;
    std::vector<float> m_f32;
    std::vector<double> m_f64;
};

using input_arrays = std::map<std::string, typed_array>;

/// The pipeline's exact result in float64, from the inputs as stored (already rounded to the
/// dtype), so that the comparison measures the kernel's error and nothing else.
[[nodiscard]] std::vector<double> compute(const config::pipeline& p, const input_arrays& inputs);

struct comparison {
    bool pass = false;
    std::size_t count = 0;
    std::size_t mismatches = 0;  ///< outside tolerance, NaN and Inf included
    std::size_t nan_count = 0;
    std::size_t inf_count = 0;
    double max_abs_error = 0;  ///< over finite outputs
    double max_rel_error = 0;  ///< over finite outputs with a nonzero reference
    double max_ulp_error = 0;  ///< in ulps of the output type, at the reference value
    std::optional<std::size_t> first_bad;  ///< the first element outside tolerance
    config::tolerance tol;
};

/// allclose: |out − ref| ≤ atol + rtol·|ref| for every element, and no NaN or Inf.
[[nodiscard]] comparison compare(const typed_array& out, const std::vector<double>& ref, config::tolerance tol);

/// The distance between `value` and the next representable number of `type`, at |value|.
[[nodiscard]] double ulp_at(double value, config::dtype type);

}  // namespace kjit::reference
