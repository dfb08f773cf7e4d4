// The result of compiling or running one variant, as plain data, and its flat form with stable
// column names that the JSON and CSV writers share. Knows nothing of CUDA or of how it was measured.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/device_state.hpp"

namespace kjit::report {

inline constexpr const char* k_schema_version = "1.10.0";

/// Every host-clock phase kjit can report, in the order they happen.
enum class phase {
    process_start,   ///< spawn → main: exec and loading libraries (known when a parent passed the time)
    setup,           ///< main → the first phase: options, config, templates, cache
    driver_init,     ///< dlopen libcuda + cuInit
    context,         ///< primary context + stream + first sync
    nvml,            ///< dlopen libnvidia-ml + nvmlInit + the device handle (for clock readings)
    codegen,         ///< templates → CUDA source
    cache_lookup,    ///< read and verify a cache entry
    compiler_load,   ///< dlopen of NVRTC (and nvJitLink): the first compile in a process
    nvrtc,           ///< C++ → PTX
    ptx_to_cubin,    ///< PTX → SASS: ptxas, in NVRTC or in nvJitLink (compile.method)
    cache_store,     ///< write the entry atomically
    module_load,     ///< cuModuleLoadData of the cubin
    get_function,    ///< cuModuleGetFunction (lazy loading finishes here or at first launch)
    host_inputs,     ///< kjit's own cost: fill the inputs on the host
    alloc,           ///< device buffers
    h2d,             ///< inputs to the device
    first_launch,    ///< the first launch of the chain, launch to completion (host clock)
    d2h,             ///< result back
    host_reference,  ///< kjit's own cost: the float64 CPU pipeline
    verify,          ///< compare with the reference
    graph_build,     ///< capture + instantiate the CUDA graph used for the graph timing
    timed_launches,  ///< kjit's measuring: the cold, batch and graph loops (L2 flushes, events, syncs)
    teardown,        ///< releasing the GPU: buffers, modules, stream, context
    count_
};
inline constexpr std::size_t k_phase_count = static_cast<std::size_t>(phase::count_);
[[nodiscard]] const char* phase_name(phase p);   ///< "ptx_to_cubin": column stem
[[nodiscard]] const char* phase_title(phase p);  ///< "PTX → cubin": table label

/// Summary of timed samples, in milliseconds.
struct sample_stats {
    std::size_t count = 0;
    double median = 0, min = 0, max = 0, mean = 0, stdev = 0;
};

/// measure.transfers "per_call": one call as @vectorize on NumPy arrays makes it, on the host
/// clock (run/per_call.hpp): copies in, kernels to completion, copies out, and all of it.
struct per_call_times {
    sample_stats h2d, kernels, d2h, total;
    int copies = 0;    ///< host↔device copies per call
    double bytes = 0;  ///< copied per call
};

struct kernel_row {
    std::string name;
    int registers = -1;
    int stack_bytes = -1;
    int spill_bytes = -1;  ///< stores + loads
    long long grid = 0;  ///< blocks in all
    int block = 0;       ///< threads per block
    std::array<long long, 3> grid_dims{0, 0, 0}, block_dims{0, 0, 0};  ///< as launched (x, y, z)
    int blocks_per_sm = 0;  ///< occupancy API; 0 when not run
    double occupancy = 0;   ///< theoretical: resident threads per SM / the SM's maximum
    /// kjit run --metrics: hardware counters of its launch, by column (why::counter::column).
    std::map<std::string, double> counters = {};
};

struct check_row {
    bool pass = false;
    std::size_t mismatches = 0, nan_count = 0, inf_count = 0, nonfinite_as_reference = 0;
    double max_abs_error = 0, max_rel_error = 0, max_ulp_error = 0;
    double rtol = 0, atol = 0;
    double rounding = 0;    ///< allowed error per unit of the reference's error scale
    /// Elements compared with the reference (all of them, or a sample of a large matmul's result:
    /// reference::expected_values::sampled), and elements of the result.
    std::size_t compared = 0, elements = 0;
    std::string first_bad;  ///< "element 7: greyscales=3, weights=0.41 → out=nan, ref=0.0048"
};

/// What became of a variant; the `status` column spells it ok | PASS | FAIL | error.
enum class outcome {
    compiled,  ///< "ok": built (compile, sweep --compile-only); nothing ran
    pass,      ///< "PASS": ran and every element is within tolerance
    fail,      ///< "FAIL": ran, and some element is not
    error,     ///< "error": a sweep point that could not be built or run; `error` says why
};
[[nodiscard]] const char* to_string(outcome o);
/// The outcome a `status` column names; nullopt for anything else (a damaged file).
[[nodiscard]] std::optional<outcome> parse_outcome(const std::string& text);
/// compiled or pass: what counts as success for exit codes and summaries.
[[nodiscard]] inline bool succeeded(outcome o) { return o == outcome::compiled || o == outcome::pass; }

struct record {
    std::string command;  ///< "compile" or "run"
    std::string config_source;
    std::string name;
    std::string variant;  ///< config::variant_label
    std::string sweep_point;  ///< "dtype=float64 fusion=separate", empty outside sweeps
    std::string tuned_launch;  ///< launch "tuned": the tune whose best point it is (tune/tuner.hpp)
    std::optional<std::size_t> sweep_index;
    nlohmann::json config = nlohmann::json::object();  ///< flat config fields: n, dtype, …
    /// The family's launch policy, resolved: a column policy_<key> each (tile, row_cache, …).
    nlohmann::ordered_json policy = nlohmann::ordered_json::object();
    /// Every scalar of the pipeline (params, and the numbers given to ops): a column param_<name> each.
    nlohmann::ordered_json params = nlohmann::ordered_json::object();
    /// A sweep point's values by key path: a column sweep_<path> each ("sweep_launch.block").
    nlohmann::ordered_json sweep_values = nlohmann::ordered_json::object();

    std::string kjit_version, nvrtc_version, arch;
    std::string host;  ///< the machine it ran on (its host name)
    std::string device_name, driver_version;
    int device_index = -1;

    std::string cache_status;  ///< hit | miss | off | refresh
    std::string cache_key, cache_problem;
    std::size_t ptx_bytes = 0, cubin_bytes = 0;
    std::string compile_method;  ///< "nvrtc" (one NVRTC call for sm_XX) or "nvjitlink" (PTX, then nvJitLink)
    std::optional<double> nvrtc_front_end_ms, nvrtc_optimizer_ms;  ///< NVRTC's own split of the nvrtc phase
    std::string module_image;  ///< what was loaded: "cubin", or "ptx" (driver JIT); empty when nothing ran
    std::optional<int> call_index;  ///< kjit run --calls N: 1 for the first call in the process, 2 …
    std::string first_call_state;   ///< kjit first-call: the start state of the child process
    std::optional<double> process_wall_ms;  ///< kjit first-call: the child's whole wall time
    /// A process started by first-call: from its spawn to this record's completion, before the
    /// files are written; first-call's process_exit_ms is the wall time left after it.
    std::optional<double> process_elapsed_ms;
    std::optional<double> process_exit_ms;  ///< kjit first-call: writing the results and exiting

    std::array<std::optional<double>, k_phase_count> phases{};  ///< ms; empty = did not happen
    /// ms during which phases ran at the same time as CUDA start-up (kjit run compiles and makes
    /// its host data on another thread while the driver creates the context): the phases add up
    /// to this much more than the time they took.
    std::optional<double> overlapped_ms;
    std::vector<kernel_row> kernels;
    std::vector<std::string> saved;  ///< .npy files written by --save

    std::optional<per_call_times> per_call;    ///< measure.transfers "per_call" only
    std::optional<sample_stats> kernel_cold;   ///< per launch of the chain, L2 flushed before each
    std::optional<sample_stats> kernel_batch;  ///< back-to-back chains, total / count, per batch
    std::optional<sample_stats> kernel_graph;  ///< the same chains replayed from one CUDA graph, per chain
    /// The cold median's relative standard error (robust: from the median absolute deviation):
    /// the timed loop stops once it is below measure.noise, or when measure.max_ms is spent.
    std::optional<double> kernel_cold_noise;
    /// The device before and after the timed loops (NVML); empty where NVML is not there.
    device_state state_before, state_after;
    /// Why a figure may not be trusted: clocks changed or were held down during the timed loops,
    /// the noise target was not reached. Printed, and kept in the `warnings` column.
    std::vector<std::string> warnings;
    double bytes_moved = 0;                    ///< per pass of the pipeline (every kernel's reads + writes; a row read again counts again)
    std::optional<double> copy_ceiling_bytes_per_s;  ///< kjit's own measured copy bandwidth
    double flops = 0;  ///< floating-point operations per pass: a matmul's 2·M·N·K (0 where none is counted)
    std::string flops_unit;  ///< where the flops run: "tensor" (tensor cores) or "fma"; empty without flops
    /// The measured ceiling of that unit (run::compute_ceiling_flops_per_s), operations per second.
    std::optional<double> flops_ceiling_per_s;
    /// kjit run --metrics: the pass's hardware counters by column, its kernels' combined
    /// (why::combine); a column metric_<name> each.
    std::map<std::string, double> counters = {};

    std::optional<check_row> check;
    bool partial = false;  ///< from a sweep stopped by Ctrl-C or SIGTERM before all its points ran
    outcome status = outcome::compiled;
    std::string error;

    void set(phase p, double ms) { phases[static_cast<std::size_t>(p)] = ms; }
    [[nodiscard]] std::optional<double> get(phase p) const { return phases[static_cast<std::size_t>(p)]; }
    /// Derived: bytes_moved / median cold time, in bytes per second.
    [[nodiscard]] std::optional<double> effective_bytes_per_s() const;
    /// Where the variant sits on this GPU's roofline: its arithmetic intensity (flops per byte
    /// moved), the roof above it there (the compute ceiling, or the copy ceiling times the
    /// intensity, whichever is lower), which of the two that is, and the share of it reached.
    struct roofline_place {
        double intensity = 0;
        double roof_flops_per_s = 0;
        bool memory_bound = true;
        double fraction = 0;  ///< of the roof; for a variant with no flops, of the copy ceiling
    };
    /// nullopt without a cold time or the ceilings it needs.
    [[nodiscard]] std::optional<roofline_place> roofline() const;
    /// Derived: the DRAM bytes the counters saw (read + written) over bytes_moved, the bytes kjit's
    /// model of the program says it moves; nullopt without both.
    [[nodiscard]] std::optional<double> dram_bytes_over_model() const;
    /// Derived: flops / median cold time, per second; nullopt where no flops are counted.
    [[nodiscard]] std::optional<double> flops_per_s() const;
};

/// One record as a flat JSON object (columns of flatten, in order): what files hold and what the
/// sweep summary prints, also for records read back from shards.
using row = nlohmann::ordered_json;

/// succeeded() for a row read back from a file: a status it does not know is not a success.
[[nodiscard]] bool succeeded(const row& r);

/// Column name → value, in a fixed order: every record of every command has the same columns
/// (null where a value does not apply), so CSV and JSON from different runs line up.
[[nodiscard]] std::vector<std::pair<std::string, nlohmann::json>> flatten(const record& r);

}  // namespace kjit::report
