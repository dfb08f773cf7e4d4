// measure.transfers "per_call": the chain timed as a Python user's @vectorize calls on NumPy
// arrays run it. Before each kernel, the arrays it reads are copied in from pageable host memory;
// after it, what it writes is copied back. That is what the seed's three calls cost each time
// (its 1.23 s), beside the kernels on device-resident arrays that measure_kernel times.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "family/program.hpp"
#include "reference/reference.hpp"
#include "report/record.hpp"
#include "run/gpu.hpp"

namespace kjit::run {

/// After m.warmup untimed calls, m.repeat calls timed on the host clock, part by part (copies
/// in, kernels to completion, copies out): the copies are synchronous, as a NumPy array's are.
/// `inputs` are the host copies of the input buffers; every other buffer gets a host array of
/// its own. Fills rec.per_call.
void measure_per_call(gpu& device, const family::program& prog, const std::vector<kernel_id>& kernels,
                      const std::vector<kernel_launch>& launches, const std::map<std::string, buffer_id>& buffers,
                      const reference::input_arrays& inputs, const config::measure_spec& m, report::record& rec);

}  // namespace kjit::run
