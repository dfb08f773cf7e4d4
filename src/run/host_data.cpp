// The host's side of a run before the GPU's: its inputs and float64 reference (what session::run
// makes while the driver creates the context), and the checks that the host and the device can
// hold the run, made before anything is allocated.
#include <functional>

#include "expr/expr.hpp"
#include "run/inputs.hpp"
#include "run/runner.hpp"
#include "run/timed.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/units.hpp"

namespace kjit::run {

using detail::timed;
using report::phase;

namespace {

/// "4096 × 768 bfloat16", or "n = 1000000 float32": the run an error names.
std::string sized(const config::pipeline& p) {
    const std::string size = p.shape ? std::to_string(p.shape->rows) + " × " + std::to_string(p.shape->cols)
                                     : "n = " + std::to_string(p.n);
    return size + " " + std::string(config::to_string(p.type));
}

}  // namespace

void check_host_memory(const config::pipeline& p) {
    const double element = static_cast<double>(config::element_size(p.type));
    double inputs = 0;
    for (const auto& in : p.inputs) inputs += static_cast<double>(config::elements_of(p, in));
    const double outputs = static_cast<double>(config::output_count(p));
    const double host_needed = inputs * element + outputs * (element + 2 * sizeof(double));
    const double host_available = static_cast<double>(available_host_memory());
    if (host_needed > host_available)
        throw error(error_kind::memory, sized(p) + " needs " + units::bytes(host_needed) +
                                            " of host memory (inputs, result, float64 reference); " +
                                            units::bytes(host_available) + " is available");
}

void check_device_memory(const config::pipeline& p, const family::program& prog, gpu& device,
                         const std::function<bool(const family::buffer&)>& needed) {
    double device_needed = 0;
    std::size_t count = 0;
    for (const auto& b : prog.buffers) {
        if (!needed(b)) continue;
        device_needed += static_cast<double>(b.bytes);
        ++count;
    }
    const double device_free = static_cast<double>(device.free_memory());
    if (device_needed > device_free)
        throw error(error_kind::memory, sized(p) + " needs " + units::bytes(device_needed) + " of GPU memory (" +
                                            std::to_string(count) + " buffers); " + device.device().name + " has " +
                                            units::bytes(device_free) + " free");
}

std::string reference_key(const config::pipeline& p) {
    nlohmann::json key = {{"fusion", config::to_string(p.fuse)}, {"family", p.family},
                          {"by_family", family::family_of(p).reference_key(p)}};
    for (const auto& s : p.stages)
        if (s.reduce != config::reduction::none) key["reduce"].push_back({config::to_string(s.reduce), s.as, s.formula});
    for (const auto& s : p.scalars) key["scalars"].push_back({s.name, s.value});
    for (const auto& s : p.stages) key["stages"].push_back({s.input, expr::to_text(s.exact), expr::to_text(s.kernel)});
    return key.dump();
}

std::shared_ptr<const host_inputs> make_host_inputs(const config::pipeline& p, report::record& rec) {
    check_host_memory(p);
    return timed(rec, phase::host_inputs,
                 [&] { return std::make_shared<const host_inputs>(host_inputs{inputs_key(p), make_inputs(p)}); });
}

std::shared_ptr<const host_reference> make_host_reference(const config::pipeline& p, const host_inputs& inputs,
                                                          report::record& rec) {
    return timed(rec, phase::host_reference, [&] {
        return std::make_shared<const host_reference>(
            host_reference{inputs.key, reference_key(p), family::family_of(p).reference(p, inputs.arrays)});
    });
}

host_data make_host_data(const config::pipeline& p, report::record& rec) {
    host_data host;
    host.inputs = make_host_inputs(p, rec);
    host.reference = make_host_reference(p, *host.inputs, rec);
    return host;
}

}  // namespace kjit::run
