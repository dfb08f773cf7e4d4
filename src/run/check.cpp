// A run's output against its float64 reference, as a record's check row: the counts, the largest
// errors, and the first bad element described with its position and inputs.
#include "run/check.hpp"

#include <cmath>

#include "run/timed.hpp"

namespace kjit::run {
namespace {

using detail::number;

/// Output row `row` as the program names its parts: "row 9", or "batch 0, head 2, query 1".
std::string describe_row(const family::program& prog, std::size_t row) {
    if (prog.output_row_parts.empty()) return "row " + std::to_string(row);
    std::string text;
    std::size_t inner = 1;
    for (const auto& part : prog.output_row_parts) inner *= static_cast<std::size_t>(part.second);
    for (const auto& [name, size] : prog.output_row_parts) {
        inner /= static_cast<std::size_t>(size);
        text += (text.empty() ? "" : ", ") + name + " " + std::to_string(row / inner % static_cast<std::size_t>(size));
    }
    return text;
}

/// "element 7", for a matrix "element 7 (row 0, col 7)", or "row 3" where the result is one per row.
std::string describe_position(const family::program& prog, std::size_t i) {
    std::string text = (prog.result_per_row ? "row " : "element ") + std::to_string(i);
    if (prog.output_cols > 0 && !prog.result_per_row) {
        const auto cols = static_cast<std::size_t>(prog.output_cols);
        text += " (" + describe_row(prog, i / cols) + ", " + prog.output_col_name + " " + std::to_string(i % cols) + ")";
    }
    return text;
}

/// "element 7: greyscales=3, weights=0.41 → out=nan, ref=0.0048 (|out − ref| 0.1 > 1e-6)".
std::string describe_element(const family::program& prog, std::size_t i, const reference::input_arrays& inputs,
                             const reference::typed_array& out, double ref, double scale,
                             const config::tolerance& tol) {
    std::string text = describe_position(prog, i) + ":";
    const char* sep = " ";
    for (const auto& [name, array] : inputs) {
        if (prog.result_per_row || !prog.inputs_align_with_output) break;  // not one input element's result
        text += sep + name + "=" + number(array.get(i % array.size()));  // a per-column input repeats
        sep = ", ";
    }
    const double value = out.get(i);
    text += " → out=" + number(value) + ", ref=" + number(ref) + " (|out − ref| " + number(std::fabs(value - ref)) +
            " > allowed " + number(reference::allowed_error(tol, ref, scale)) + ")";
    return text;
}

}  // namespace

report::check_row check_output(const config::pipeline& p, const family::program& prog,
                               const reference::input_arrays& inputs, const reference::typed_array& out,
                               const reference::expected_values& expected) {
    const config::tolerance tol = p.tol.value_or(config::default_tolerance(p));
    const auto result = reference::compare(out, expected, tol);
    report::check_row check{result.pass, result.mismatches, result.nan_count, result.inf_count,
                            result.nonfinite_as_reference, result.max_abs_error, result.max_rel_error,
                            result.max_ulp_error, tol.rtol, tol.atol, tol.rounding,
                            expected.sampled.empty() ? out.size() : expected.sampled.size(), out.size(), {}};
    if (result.first_bad_entry)
        check.first_bad = describe_element(prog, *result.first_bad, inputs, out, expected.values[*result.first_bad_entry],
                                           expected.scales[*result.first_bad_entry], tol);
    else if (result.first_bad)
        check.first_bad = describe_position(prog, *result.first_bad) + ": out=" + number(out.get(*result.first_bad)) +
                          (reference::holds_poison(out, *result.first_bad)
                                   ? ", never written (it still holds the poison)"
                                   : ", outside the sample compared with the reference, where none is expected");
    return check;
}

}  // namespace kjit::run
