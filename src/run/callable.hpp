// A pipeline's kernels built once, loaded on a GPU and called on the caller's own device arrays
// (kjit's Python kernels on PyTorch, CuPy or JAX arrays): no copy, no allocation per call, on
// the caller's stream. Every array is checked first; a mistake is one line naming the array.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "family/program.hpp"
#include "report/record.hpp"
#include "run/gpu.hpp"
#include "run/runner.hpp"

namespace kjit::run {

/// A device array the caller owns, as DLPack (or __cuda_array_interface__) describes it.
struct caller_array {
    std::uintptr_t address = 0;
    std::string_view dtype;  ///< kjit's name for its element type ("bfloat16"), or what it is ("int64")
    std::vector<long long> shape;
    bool contiguous = true;  ///< C order, no gaps
    int device = -1;         ///< the CUDA device it is on; -1: host memory or another kind of device
};

/// An array the kernels take: an input, or the output ("out"), with the shape it must have.
struct array_parameter {
    std::string name;
    std::vector<long long> shape;  ///< [n], or [rows, cols] for a row pipeline's arrays
    bool written = false;
};

class callable {
public:
    /// Builds `p` (or loads it from the cache) for the device's arch, recording the phases in
    /// `rec`, and loads it there with its temporaries. The device stays open while this lives.
    callable(std::shared_ptr<gpu> device, const config::pipeline& p, const build_context& ctx, report::record& rec);
    ~callable();
    callable(const callable&) = delete;
    callable& operator=(const callable&) = delete;

    [[nodiscard]] const config::pipeline& pipeline() const { return m_pipeline; }
    [[nodiscard]] int device_index() const { return m_device->device().index; }
    /// The arrays a call takes, in the order `arrays` gives them: the inputs, then "out".
    [[nodiscard]] const std::vector<array_parameter>& parameters() const { return m_parameters; }

    /// Checks each array against its parameter (dtype, shape, contiguity, device) and enqueues
    /// the kernels on `stream`, returning at once. Throws kjit::error(usage) naming the array.
    /// Calls share the temporaries: calls on different streams at once are not supported.
    void operator()(std::span<const caller_array> arrays, std::uintptr_t stream);
    /// One call, then its inputs and output read back and compared with the float64 reference.
    [[nodiscard]] report::check_row verify(std::span<const caller_array> arrays, std::uintptr_t stream);

private:
    void bind(std::span<const caller_array> arrays);

    std::shared_ptr<gpu> m_device;
    config::pipeline m_pipeline;
    family::program m_program;
    module_id m_module = 0;
    std::vector<kernel_id> m_kernels;
    std::vector<kernel_launch> m_launches;  ///< bound once; each call sets the caller's addresses
    /// Where each caller array goes: launch, argument slot, parameter.
    struct slot {
        std::size_t launch, argument, parameter;
    };
    std::vector<slot> m_slots;
    std::vector<array_parameter> m_parameters;
    device_arrays m_temporaries;
};

}  // namespace kjit::run
