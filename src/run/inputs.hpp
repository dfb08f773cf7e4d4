// Host input arrays from the config's fill rules. Deterministic: the same seed gives the same
// values on any machine and with any number of threads.
#pragma once
#include "config/config.hpp"
#include "reference/reference.hpp"

namespace kjit::run {

/// Every input of `p`, rounded to its dtype.
[[nodiscard]] reference::input_arrays make_inputs(const config::pipeline& p);

}  // namespace kjit::run
