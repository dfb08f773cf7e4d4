// kjit run --save DIR: a run's output (and with --save-reference its float64 reference) as .npy
// files that NumPy loads, named by the config and the variant, written atomically.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "family/program.hpp"
#include "reference/reference.hpp"

namespace kjit::run {

struct save_request {
    std::string dir = "";    ///< created if missing
    bool reference = false;  ///< the float64 reference too
};

/// Writes DIR/<name>[.p<sweep index>].<variant>.npy: the output in its dtype (bfloat16, which
/// NumPy lacks, widened exactly to float32), shaped as the program's result; with
/// `to.reference`, the reference beside it as <…>.reference.npy (float64). Returns the paths
/// written. Throws kjit::error(io) naming the file.
std::vector<std::string> save_result(const save_request& to, const config::pipeline& p, const family::program& prog,
                                     std::optional<std::size_t> sweep_index, const reference::typed_array& out,
                                     const reference::expected_values& expected);

}  // namespace kjit::run
