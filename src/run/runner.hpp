// The data path for one variant: build (run/build.hpp) → (on a GPU) load, copy, launch, time,
// copy back, verify. Each phase's time goes into a report::record. Talks to the GPU only through
// run::gpu, so tests drive it with a fake.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "codegen/codegen.hpp"
#include "family/family.hpp"
#include "config/config.hpp"
#include "jit/jit.hpp"
#include "reference/reference.hpp"
#include "report/record.hpp"
#include "run/build.hpp"
#include "run/gpu.hpp"
#include "run/inputs.hpp"
#include "run/measure.hpp"
#include "run/save.hpp"

namespace kjit::run {

/// A record with the config's fields filled in, for `command` ("compile", "run").
[[nodiscard]] report::record new_record(const std::string& command, const config::pipeline& p,
                                        const std::string& source);

/// What its reference depends on beyond the inputs, read from the stage model: the exact trees,
/// the formulas' trees (they give the error scale), the scalars, the fusion (separate stages
/// round intermediates, which the error scale counts), and what its family adds (the order of
/// a row's additions).
[[nodiscard]] std::string reference_key(const config::pipeline& p);

/// Buffers on one GPU by name, released with the object, however a run ends (a sweep goes on
/// after a failed point, and must not carry its buffers along).
struct device_arrays {
    gpu* device = nullptr;
    std::map<std::string, buffer_id> ids;

    device_arrays() = default;
    explicit device_arrays(gpu& on) : device(&on) {}
    device_arrays(device_arrays&& other) noexcept;
    device_arrays& operator=(device_arrays&& other) noexcept;
    device_arrays(const device_arrays&) = delete;
    device_arrays& operator=(const device_arrays&) = delete;
    ~device_arrays();

private:
    void release() noexcept;
};

/// A run's inputs, made for `key` (inputs_key). Immutable once made: shared by every point, and
/// every GPU, that needs them.
struct host_inputs {
    std::string key;
    reference::input_arrays arrays;
};

/// The float64 reference for `key` (reference_key) from the inputs of `inputs_key`. Immutable, shared.
struct host_reference {
    std::string inputs_key;
    std::string key;
    reference::expected_values expected;
};

/// The host side of a run. A sweep worker, or run --watch, keeps the last one: inputs and
/// reference are used again while their keys match (a sweep makes them ahead and hands them in);
/// the result array and the inputs' copies on the GPU belong to the one worker that keeps it.
struct host_data {
    std::shared_ptr<const host_inputs> inputs;
    std::shared_ptr<const host_reference> reference;
    std::optional<reference::typed_array> result;  ///< the GPU's output, copied back (reused storage)
    /// `result` pinned, when kept for the next run (run_options::keep_inputs_on_device); declared
    /// after it, so it is unpinned before its memory goes.
    std::unique_ptr<gpu::pinned_memory> result_pinned;
    /// The copies of `copied` on the GPU, kept when run_options::keep_on_device: the points
    /// of a group copy them once. Declare the host data after the gpu it is used with.
    device_arrays inputs_on_device;
    std::shared_ptr<const host_inputs> copied;
    /// The run's own buffers (outputs, temporaries) on the GPU, kept the same way for the next run
    /// whose program has the same ones (`own_layout`): a warm session's run allocates nothing.
    device_arrays own_on_device;
    std::string own_layout;
};

/// Inputs for `p`, made now, their phase recorded into `rec`. Throws kjit::error(memory) when the
/// host cannot hold the run (inputs, result and reference).
[[nodiscard]] std::shared_ptr<const host_inputs> make_host_inputs(const config::pipeline& p, report::record& rec);
/// The reference for `p` from `inputs` (made for `p`), its phase recorded into `rec`.
[[nodiscard]] std::shared_ptr<const host_reference> make_host_reference(const config::pipeline& p,
                                                                        const host_inputs& inputs,
                                                                        report::record& rec);

/// Inputs and reference for `p`, made now, their phases recorded into `rec`: host work that needs
/// no GPU, which session::run does while the driver creates the context.
[[nodiscard]] host_data make_host_data(const config::pipeline& p, report::record& rec);

/// Refuses a run the host cannot hold, before anything is allocated: the inputs, the result and
/// the float64 reference with its error scales.
void check_host_memory(const config::pipeline& p);
/// Refuses a run whose buffers still to allocate (those `needed` says) the device cannot hold.
void check_device_memory(const config::pipeline& p, const family::program& prog, gpu& device,
                         const std::function<bool(const family::buffer&)>& needed);

struct run_options {
    /// Load the PTX instead of the cubin, so the driver JIT-compiles it at module load: what a
    /// tool that ships PTX (Numba, CuPy) pays on a first call.
    bool load_ptx = false;
    /// Host data from the previous call, used when it fits (its phases are then not recorded).
    host_data* reuse = nullptr;
    /// Keep the inputs' device copies and the run's own buffers in `reuse` for the next call on
    /// the same GPU (its h2d and allocations are then not repeated).
    bool keep_on_device = false;
    /// Save the checked output (and the reference) as .npy files (kjit run --save).
    const save_request* save = nullptr;
    /// The variant as build_variant made it for this run (a session builds it while the device
    /// opens); nullptr: built here.
    const built_variant* built = nullptr;
    /// kjit run --metrics: the set of hardware counters (why::counters_of) read in a pass of their
    /// own after the timed loops; empty: none.
    std::string counter_set = {};
};

/// The blocks of k's grid on a device that holds `resident` of them at once.
[[nodiscard]] family::dims grid_on_device(const family::kernel& k, long long resident);

/// Kernel k of `p`'s program `prog` as launched on `grid`: its block, its shared memory and its
/// arguments in parameter order, each scalar in the compute type, each size as planned, and each
/// buffer as `buffer` gives it (a buffer of kjit's, or the caller's memory).
[[nodiscard]] kernel_launch launch_of(const config::pipeline& p, const family::program& prog, const family::kernel& k,
                                      family::dims grid,
                                      const std::function<argument_value(const family::argument&)>& buffer);

/// Runs `p` on `device` and fills `rec`: every phase, cold, batch and graph kernel times, the
/// check. A result outside tolerance sets outcome::fail (it does not throw); a CUDA failure throws
/// kjit::error(driver) whose message starts with the phase it happened in.
void run_variant(const config::pipeline& p, gpu& device, const build_context& ctx, report::record& rec,
                 const run_options& options = {});

/// The device's copy bandwidth (bytes read + written per second), measured once with kjit's own
/// float4 copy kernel over 16 × L2 each way (up to 1 GiB), and kept in the cache directory per device and
/// driver. This is the ceiling a memory-bound variant is compared with.
[[nodiscard]] double copy_ceiling_bytes_per_s(gpu& device, const build_context& ctx);

/// The device's compute ceiling for `unit`, in floating-point operations per second: kjit's FMA
/// probe (independent FMA chains on every thread), or for the tensor cores kjit's tensor probe
/// (bfloat16 products on operands already on chip: wgmma on sm_90, mma.sync from sm_80; nullopt
/// before). Measured once per device and driver and kept beside the copy ceiling. These are the
/// roofs a variant's FLOP/s are compared with.
[[nodiscard]] std::optional<double> compute_ceiling_flops_per_s(gpu& device, const build_context& ctx,
                                                                family::math_unit unit);
/// The compute ceiling for the unit `rec`'s flops run on (record::flops_unit); nullopt for a
/// record with no flops.
[[nodiscard]] std::optional<double> flops_ceiling_for(gpu& device, const build_context& ctx, const report::record& rec);

}  // namespace kjit::run
