// The pipeline computed in float64 on the host, from the same expression trees the CUDA is made
// from, and the comparison of a GPU result with it. Pure host code: no CUDA, testable everywhere.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "expr/evaluate.hpp"
#include "util/uninitialized.hpp"

namespace kjit::reference {

/// An array as the GPU stores it: float, double, half or bfloat16 elements. Its elements start
/// unset (not zeroed): whoever makes one writes every element.
class typed_array {
public:
    typed_array(config::dtype type, std::size_t count);
    [[nodiscard]] config::dtype type() const { return m_type; }
    [[nodiscard]] std::size_t size() const { return m_bytes.size() / config::element_size(m_type); }
    [[nodiscard]] std::size_t bytes() const { return m_bytes.size(); }
    [[nodiscard]] double get(std::size_t i) const;
    /// Stores `value` rounded to nearest (even) in the array's type.
    void set(std::size_t i, double value);
    [[nodiscard]] void* data() { return m_bytes.data(); }
    [[nodiscard]] const void* data() const { return m_bytes.data(); }

private:
    config::dtype m_type;
    uninitialized_vector<unsigned char> m_bytes;
};

using input_arrays = std::map<std::string, typed_array>;

/// Element i of an array of `type` at `bytes`, as double; and stored there from a double, rounded
/// to nearest even. What typed_array does, for memory it does not own.
[[nodiscard]] double get_element(config::dtype type, const void* bytes, std::size_t i);
void set_element(config::dtype type, void* bytes, std::size_t i, double value);

/// The reference: each element's exact value, and its error scale — a first-order bound on how
/// far rounding in the kernel's own formula may move it, in units of the compute type's rounding
/// (see expr/evaluate.hpp). Large where terms cancel; about |value| times a few elsewhere.
struct expected_values {
    uninitialized_vector<double> values;
    uninitialized_vector<double> scales;
    /// Empty: values[i] is element i's. Otherwise values[j] is element sampled[j]'s, in increasing
    /// order: a sample of a result too large to compute whole (a matmul's). The elements outside
    /// it are checked for having been written, and for being finite where the sample's values
    /// all are.
    std::vector<std::size_t> sampled;
};

/// The byte the runner fills every buffer it did not copy in with before the first launch: all
/// ones is NaN in every dtype, and a bit pattern no arithmetic makes (CUDA's NaN is 0x7fff…),
/// so an element that still holds it was never written.
inline constexpr unsigned char k_poison_byte = 0xFF;

/// How a row pipeline's kernels add up a row: each element passes through at most `depth`
/// roundings on its way into a sum (`online_depth` for an online sum). The row family derives
/// both from its policy, in the order its template adds.
struct row_sums {
    long long depth = 0;
    long long online_depth = 0;
};

/// The stages' exact definitions in float64 from the inputs as stored (already rounded to the
/// dtype), so that the comparison measures the kernel's error and nothing else. Separate stages
/// add the rounding of each intermediate array to the error scale. With `rows`, the pipeline is
/// evaluated a row at a time (its reduce stages need the whole row).
[[nodiscard]] expected_values compute(const config::pipeline& p, const input_arrays& inputs,
                                      std::optional<row_sums> rows);

/// One stage over a chunk: its values from the stage's exact definition, their error scales
/// from the formula the GPU runs.
void evaluate_stage(const config::stage& st, const expr::chunk& in, double* values, double* scales);

struct comparison {
    bool pass = false;
    std::size_t count = 0;
    std::size_t mismatches = 0;  ///< outside tolerance, NaN and Inf included
    std::size_t nan_count = 0;   ///< NaN where the reference is not NaN
    std::size_t inf_count = 0;   ///< ±Inf where the reference is not the same
    /// NaN or ±Inf where the reference is the same (a fully masked row's NaN): these pass.
    std::size_t nonfinite_as_reference = 0;
    double max_abs_error = 0;  ///< over finite outputs
    double max_rel_error = 0;  ///< over finite outputs with a nonzero reference
    double max_ulp_error = 0;  ///< in ulps of the output type, at the reference value
    std::optional<std::size_t> first_bad;  ///< the first element outside tolerance
    /// Its entry in the expected values; nullopt when it is outside a sample (unwritten, or not finite).
    std::optional<std::size_t> first_bad_entry;
    std::size_t unwritten = 0;  ///< elements outside a sample that still hold the poison (counted as NaN too)
    config::tolerance tol;
};

/// |out − ref| ≤ atol + rtol·|ref| + rounding·scale for every element (of the sample, if `ref`
/// is one: see expected_values::sampled for the others), and NaN or ±Inf only where the
/// reference has the same.
[[nodiscard]] comparison compare(const typed_array& out, const expected_values& ref, config::tolerance tol);

/// True when element i of `out` still holds the poison: no kernel wrote it.
[[nodiscard]] bool holds_poison(const typed_array& out, std::size_t i);

/// An intermediate array (of separate stages) rounds x to `type`: in units of the compute type's
/// rounding, that is this many.
[[nodiscard]] double storage_rounding(config::dtype type);
/// Adds to each of `count` error scales the rounding of storing its value in an intermediate
/// array (`rounding` · |value|). An infinity (a masked score) is stored exactly and adds none:
/// u·|inf| would make every bound after it inf or NaN, and the check fail where out equals ref.
void add_storage_rounding(double* scales, const double* values, std::size_t count, double rounding);

/// The allowed |out − ref| of one element.
[[nodiscard]] double allowed_error(const config::tolerance& tol, double ref, double scale);

/// The distance between `value` and the next representable number of `type`, at |value|.
[[nodiscard]] double ulp_at(double value, config::dtype type);

}  // namespace kjit::reference
