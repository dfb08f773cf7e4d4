// Sweeps: compile every distinct source of a sweep in parallel, then run the points on one or
// more GPUs (one worker thread, context and stream per device; a point never moves between
// devices), recording failures per point and carrying on. Sharding splits a sweep across jobs.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "report/record.hpp"
#include "run/runner.hpp"
#include "run/save.hpp"

namespace kjit::run {

/// --shard K/N: this job runs the points whose index % N == K, K in 0..N-1 (a Slurm array's
/// SLURM_ARRAY_TASK_ID with --array=0-(N-1)). Every point lands in exactly one shard.
struct shard {
    std::size_t index = 0;
    std::size_t count = 1;

    /// This shard's point indices, of a sweep of `total` points.
    [[nodiscard]] std::vector<std::size_t> indices(std::size_t total) const;
};
[[nodiscard]] shard parse_shard(const std::string& text);

/// --devices all | 0,2: device indices, validated against `available`.
[[nodiscard]] std::vector<int> parse_devices(const std::string& text, int available);

struct compile_summary {
    std::size_t points = 0;
    std::size_t distinct = 0;  ///< distinct sources (cache keys)
    std::size_t compiled = 0;  ///< not found in the cache
    int threads = 0;
    double wall_ms = 0;    ///< the whole parallel pre-pass
    double serial_ms = 0;  ///< sum of the compiles' own times: what one thread would have taken
};

/// Sees a sweep's compiles: (0, distinct sources, "") before the first, then (done, distinct,
/// the variant just built) after each, from the compile threads one at a time.
using compile_progress = std::function<void(std::size_t done, std::size_t total, const std::string& label)>;

/// Compiles the distinct sources of `points` for sm_<arch> on `threads` threads through the
/// cache, keeping each fresh build in ctx.prebuilt so the first point of that source reports its
/// compile. A source that fails to compile is left for its points to report.
[[nodiscard]] compile_summary compile_points(const std::vector<config::sweep_point>& points, int arch,
                                             const build_context& ctx, int threads, const compile_progress& progress = {});

/// Opens device `index` and records its start-up phases (driver init, context) into `startup`.
using gpu_factory = std::function<std::unique_ptr<gpu>(int index, report::record& startup)>;

/// Threads that make the next group's host data while the GPUs run this one, by default: every
/// core but one per GPU worker and one for the rest of the process (at least 1).
[[nodiscard]] std::size_t default_host_threads(std::size_t devices);

/// Runs every point on `devices` (one worker each), or, with no factory, only builds them
/// (compile-only). Inputs and references are made one group ahead on `host_threads` threads
/// (0: by each worker, in line, between its points). `builds_ready` (if set) is waited for before
/// the first point, once the devices are open: a sweep compiles while the driver starts. `step`
/// is called after each point; with `save`, each point's checked output is saved (run::save_result).
/// With `counter_set`, each point's hardware counters are read after its timed loops (run_options).
/// Records come back in point order; a point that failed has outcome fail or error and the message.
[[nodiscard]] std::vector<report::record> run_points(const std::vector<config::sweep_point>& points,
                                                     const std::string& source, const std::vector<int>& devices,
                                                     const gpu_factory& open, const build_context& ctx,
                                                     std::size_t host_threads,
                                                     const std::function<void(const report::record&)>& step,
                                                     const std::function<void()>& builds_ready = {},
                                                     const save_request* save = nullptr,
                                                     const std::string& counter_set = {});

}  // namespace kjit::run
