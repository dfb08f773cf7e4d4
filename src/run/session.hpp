// What every command that builds or runs variants sets up, in one object: the templates, the disk
// cache (bounded), and GPUs from a provider — the Driver API in kjit, a fake in tests. `cli` turns
// flags into session_options and requests and prints what comes back, so every path from a config
// to records is tested without a process.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "jit/disk_cache.hpp"
#include "jit/jit.hpp"
#include "report/record.hpp"
#include "run/callable.hpp"
#include "run/gpu.hpp"
#include "run/save.hpp"
#include "run/sweep.hpp"
#include "util/error.hpp"

namespace kjit::run {

/// Opens GPUs. Nothing is loaded until first asked.
class gpu_provider {
public:
    virtual ~gpu_provider() = default;
    /// Empty when there are GPUs to run on; else why not, e.g. "no_driver_library: could not load libcuda".
    [[nodiscard]] virtual std::string unavailable() = 0;
    [[nodiscard]] virtual std::vector<device_info> devices() = 0;
    /// Opens device `index` on the calling thread (its context is current there), recording the
    /// driver's start-up (the first time in the process) and the context's into `startup`.
    [[nodiscard]] virtual std::unique_ptr<gpu> open(int index, report::record& startup) = 0;
};

/// The templates in `dir`, or the embedded ones when it is empty.
[[nodiscard]] codegen::template_set templates_in(const std::string& dir);
/// The cache in `dir` (disk_cache::default_root() when empty), bounded by `limit`
/// (disk_cache::default_limit() when empty).
[[nodiscard]] jit::disk_cache cache_in(const std::string& dir, std::optional<std::uintmax_t> limit);

struct session_options {
    std::string templates_dir;  ///< empty: the embedded templates
    std::string cache_dir;      ///< empty: disk_cache::default_root()
    std::optional<std::uintmax_t> cache_limit;  ///< empty: disk_cache::default_limit()
    jit::cache_mode mode = jit::cache_mode::use;  ///< off: no cache at all (--no-cache)
};

struct run_request {
    int device = 0;
    int calls = 1;             ///< records, one per call, in one process
    bool load_ptx = false;     ///< load PTX (driver JIT) instead of the cubin
    bool copy_ceiling = true;  ///< measure the device's copy bandwidth (once per device and driver)
    save_request save = {};    ///< --save: the first call's output as .npy (no folder: nothing saved)
    std::string tuned_launch = {};  ///< launch "tuned": where its launch came from (record::tuned_launch)
    /// Leave the device open in the session, so that the next run on it pays no CUDA start-up
    /// and this one no teardown (Python keeps it; `kjit run` closes it and shows the teardown).
    bool keep_device = false;
    std::string counter_set = {};  ///< --metrics: hardware counters read after the timed loops (run_options)
};

/// One pipeline for session::watch to run: the config as it is after a save.
struct watch_step {
    config::pipeline pipeline;
    std::string source;
    bool templates_changed = false;  ///< read the templates folder again first
};

struct sweep_request {
    std::string devices = "0";  ///< all | 0,1
    bool compile_only = false;  ///< build every point, run nothing (no GPU)
    int jobs = 0;               ///< compile threads; 0 = one per core
    /// Threads making the next group's inputs and reference ahead; 0 = in line on the GPU worker;
    /// nullopt = run::default_host_threads.
    std::optional<int> host_threads = std::nullopt;
    save_request save = {};  ///< --save: each point's output as .npy (no folder: nothing saved)
    std::string counter_set = {};  ///< --metrics: each point's hardware counters (run_options)
    compile_progress compiled = {};  ///< sees the compiles of the points' distinct sources
};

struct sweep_result {
    std::vector<report::record> records;  ///< point order; only finished points when interrupted
    compile_summary compiled;
    double wall_ms = 0;
};

class session {
public:
    /// Reads the templates and sets up the cache; throws kjit::error for a bad templates folder
    /// or KJIT_CACHE_LIMIT.
    session(const session_options& options, std::unique_ptr<gpu_provider> gpus);

    /// Codegen and compile-or-load for the config's arch (or its target's).
    [[nodiscard]] report::record compile(const config::pipeline& p, const std::string& source);
    /// The variant of `p` planned and compiled (or taken from the cache) for the config's arch, to
    /// be read rather than run: its PTX (emit --ptx), or with `line_info` a -lineinfo cubin whose
    /// SASS maps to the source (kjit sass; a cache entry of its own).
    [[nodiscard]] built_variant build_to_read(const config::pipeline& p, bool line_info);
    /// `request.calls` runs of `p` on one GPU; `done` sees each record as soon as it is made.
    /// Throws kjit::error(driver) when there is no GPU (saying `kjit compile` works without one).
    [[nodiscard]] std::vector<report::record> run(const config::pipeline& p, const std::string& source,
                                                  const run_request& request,
                                                  const std::function<void(const report::record&)>& done = {});
    /// kjit run --watch: opens one GPU once, then runs each pipeline `next` returns (it blocks until
    /// the next save; nullopt ends the loop) with `done` seeing its record. Inputs and reference are
    /// kept while an edit leaves them unchanged. A compile or config error goes to `failed` and the
    /// loop goes on; a CUDA error (the context may be lost) ends it by throwing.
    void watch(const run_request& request, const std::function<std::optional<watch_step>()>& next,
               const std::function<void(const report::record&)>& done,
               const std::function<void(const error&)>& failed);
    /// `p` built for device `index` and loaded there, to call on the caller's arrays; its
    /// phases (and the GPU's start-up, the first time) are recorded into `rec`. The device is
    /// kept open in the session, as run_request::keep_device keeps it.
    [[nodiscard]] std::unique_ptr<callable> load(const config::pipeline& p, int index, report::record& rec);
    /// Every point: compiled in parallel, then run on the requested GPUs (or only built).
    /// `step` is called after each point.
    [[nodiscard]] sweep_result sweep(const std::vector<config::sweep_point>& points, const std::string& source,
                                     const sweep_request& request,
                                     const std::function<void(const report::record&)>& step = {});

    /// After the work: prunes the cache to its limit if anything was stored. A cache that cannot
    /// shrink is not a failure: the returned warning says why.
    [[nodiscard]] std::optional<std::string> finish();

    [[nodiscard]] jit::disk_cache& cache() { return m_cache; }
    [[nodiscard]] const codegen::template_set& templates() const { return m_templates; }
    /// What device `index` is; throws kjit::error(driver) when there is no GPU, (usage) when
    /// there is no such device.
    [[nodiscard]] device_info device(int index);
    /// The target pipelines are resolved for when they run on device `index`; nullopt where there
    /// is no GPU (the run then fails, after the config has been checked). Throws
    /// kjit::error(usage) for a device that does not exist.
    [[nodiscard]] std::optional<config::target> target_if_any(int index);
    /// The same for a sweep on `devices` (as --devices takes them): the first of them.
    [[nodiscard]] std::optional<config::target> target_if_any(const std::string& devices);

private:
    [[nodiscard]] build_context context(prebuilt_binaries* prebuilt = nullptr);
    void require_gpu(const std::string& without_one);
    /// Why there is no GPU to run on ("" where there is one). The first call probes the driver
    /// (cuInit), which is CUDA start-up, not setup: it marks where the process's setup ended.
    [[nodiscard]] std::string gpus_unavailable();

    std::string m_templates_dir;
    codegen::template_set m_templates;
    jit::disk_cache m_cache;
    jit::cache_mode m_mode;
    std::unique_ptr<gpu_provider> m_gpus;
    std::optional<std::chrono::steady_clock::time_point> m_driver_first_asked;
    /// Devices left open by run_request::keep_device and load (a callable shares its device).
    std::map<int, std::shared_ptr<gpu>> m_kept;
    std::map<int, host_data> m_kept_host;  ///< the last kept run's host data per device (released first)
};

}  // namespace kjit::run
