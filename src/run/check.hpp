// The check of a run: its output compared with the float64 reference (reference::compare), as the
// record's check row. Shared by the runner and the Python callable's verify.
#pragma once
#include "config/config.hpp"
#include "family/program.hpp"
#include "reference/reference.hpp"
#include "report/record.hpp"

namespace kjit::run {

/// `out` compared with the float64 reference, as a record's check: the counts, the largest
/// errors, and the first bad element with its inputs (`inputs` made for `p`, whose plan is `prog`).
[[nodiscard]] report::check_row check_output(const config::pipeline& p, const family::program& prog,
                                             const reference::input_arrays& inputs, const reference::typed_array& out,
                                             const reference::expected_values& expected);

}  // namespace kjit::run
