#include "run/per_call.hpp"

#include <algorithm>
#include <chrono>

#include "report/trace.hpp"
#include "run/stats.hpp"

namespace kjit::run {
namespace {

using clock = std::chrono::steady_clock;

double ms_since(clock::time_point start) {
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

/// A buffer's host side: an input's array, or host memory of its own (a temporary's result goes
/// back to the host and in again, as it does between two @vectorize calls).
struct host_side {
    buffer_id device = 0;
    const void* source = nullptr;  ///< what is copied in
    void* destination = nullptr;   ///< where it is copied out (nullptr: an input, never written)
    std::size_t bytes = 0;
};

}  // namespace

void measure_per_call(gpu& device, const family::program& prog, const std::vector<kernel_id>& kernels,
                      const std::vector<kernel_launch>& launches, const std::map<std::string, buffer_id>& buffers,
                      const reference::input_arrays& inputs, const config::measure_spec& m, report::record& rec) {
    trace::span span("per-call loop");
    std::map<std::string, std::vector<unsigned char>> own;
    std::map<std::string, host_side> sides;
    for (const auto& b : prog.buffers) {
        host_side side{buffers.at(b.name), nullptr, nullptr, b.bytes};
        if (b.role == family::buffer_role::input) {
            side.source = inputs.at(b.name).data();
        } else {
            side.destination = own.emplace(b.name, std::vector<unsigned char>(b.bytes)).first->second.data();
            side.source = side.destination;
        }
        sides.emplace(b.name, side);
    }
    // Each kernel's copies: what it reads in before it, what it writes out after it.
    std::vector<std::vector<const host_side*>> copies_in(prog.kernels.size()), copies_out(prog.kernels.size());
    int copies = 0;
    std::size_t bytes = 0;
    for (std::size_t k = 0; k < prog.kernels.size(); ++k)
        for (const auto& a : prog.kernels[k].args) {
            if (a.what != family::argument::kind::buffer) continue;
            const host_side* side = &sides.at(a.name);
            (a.written ? copies_out : copies_in)[k].push_back(side);
            ++copies;
            bytes += side->bytes;
        }

    std::vector<double> h2d, run, d2h, total;
    for (int call = 0; call < m.warmup + m.repeat; ++call) {
        double in_ms = 0, kernel_ms = 0, out_ms = 0;
        const auto start = clock::now();
        for (std::size_t k = 0; k < prog.kernels.size(); ++k) {
            auto t = clock::now();
            for (const host_side* side : copies_in[k]) device.copy_to_device(side->device, side->source, side->bytes);
            device.synchronize();
            in_ms += ms_since(t);
            t = clock::now();
            device.launch(kernels[k], launches[k]);
            device.synchronize();
            kernel_ms += ms_since(t);
            t = clock::now();
            for (const host_side* side : copies_out[k]) device.copy_to_host(side->destination, side->device, side->bytes);
            out_ms += ms_since(t);
        }
        if (call < m.warmup) continue;
        total.push_back(ms_since(start));
        h2d.push_back(in_ms);
        run.push_back(kernel_ms);
        d2h.push_back(out_ms);
    }
    rec.per_call = report::per_call_times{summarize(std::move(h2d)), summarize(std::move(run)), summarize(std::move(d2h)),
                                          summarize(std::move(total)), copies, static_cast<double>(bytes)};
}

}  // namespace kjit::run
