#include "run/session.hpp"

#include <chrono>
#include <future>
#include <thread>

#include "report/trace.hpp"
#include "util/error.hpp"

namespace kjit::run {

codegen::template_set templates_in(const std::string& dir) {
    return dir.empty() ? codegen::template_set::embedded() : codegen::template_set::from_directory(dir);
}

jit::disk_cache cache_in(const std::string& dir, std::optional<std::uintmax_t> limit) {
    return jit::disk_cache(dir.empty() ? jit::disk_cache::default_root() : std::filesystem::path(dir),
                           limit.value_or(jit::disk_cache::default_limit()));
}

config::target target_of(const device_info& d) {
    config::target t = config::named_target("sm_" + std::to_string(d.arch)).value_or(config::default_target());
    t.name = d.name;
    t.like.clear();
    t.arch = d.arch;
    if (d.sm_count > 0) t.sm_count = d.sm_count;
    if (d.shared_per_block > 0) t.shared_per_block = d.shared_per_block;
    if (d.shared_per_sm > 0) t.shared_per_sm = d.shared_per_sm;
    if (d.registers_per_sm > 0) t.registers_per_sm = d.registers_per_sm;
    if (d.l2_bytes > 0) t.l2_bytes = d.l2_bytes;
    return t;
}

session::session(const session_options& options, std::unique_ptr<gpu_provider> gpus)
    : m_templates_dir(options.templates_dir),
      m_templates(templates_in(options.templates_dir)),
      m_cache(cache_in(options.cache_dir, options.cache_limit)),
      m_mode(options.mode),
      m_gpus(std::move(gpus)) {}

build_context session::context(prebuilt_binaries* prebuilt) {
    return {m_templates, m_mode == jit::cache_mode::off ? nullptr : &m_cache, m_mode, prebuilt};
}

std::string session::gpus_unavailable() {
    if (!m_driver_first_asked) m_driver_first_asked = trace::clock::now();
    return m_gpus ? m_gpus->unavailable() : "no GPU provider";
}

void session::require_gpu(const std::string& without_one) {
    const std::string why = gpus_unavailable();
    if (!why.empty()) throw error(error_kind::driver, "no GPU to run on (" + why + "); " + without_one + " works without one");
}

device_info session::device(int index) {
    require_gpu("`kjit compile`");
    const auto known = m_gpus->devices();
    if (index < 0 || static_cast<std::size_t>(index) >= known.size())
        throw error(error_kind::usage, "--device " + std::to_string(index) + ": there are " +
                                           std::to_string(known.size()) + " GPU(s)");
    return known[static_cast<std::size_t>(index)];
}

std::optional<config::target> session::target_if_any(int index) {
    if (!gpus_unavailable().empty()) return std::nullopt;
    return target_of(device(index));
}

std::optional<config::target> session::target_if_any(const std::string& devices) {
    if (!gpus_unavailable().empty()) return std::nullopt;
    return target_if_any(parse_devices(devices, static_cast<int>(m_gpus->devices().size())).front());
}

namespace {
/// The process's time before the first phase, where kjit's main set the marks: spawn → main
/// (when a parent passed the spawn time) and main → now, or → the driver's probe where it came
/// before (CUDA start-up is a phase of its own).
void record_process_start(report::record& rec, std::optional<trace::clock::time_point> driver_asked) {
    const auto main = trace::main_entered();
    if (!main) return;
    if (const auto spawned = trace::spawned_at())
        rec.set(report::phase::process_start, std::chrono::duration<double, std::milli>(*main - *spawned).count());
    const auto end = std::min(trace::clock::now(), driver_asked.value_or(trace::clock::time_point::max()));
    trace::add(report::phase_name(report::phase::setup), *main, end);
    rec.set(report::phase::setup, std::chrono::duration<double, std::milli>(end - *main).count());
}
}  // namespace

report::record session::compile(const config::pipeline& p, const std::string& source) {
    report::record rec = new_record("compile", p, source);
    record_process_start(rec, m_driver_first_asked);
    (void)build_variant(p, config::compiled_arch(p), context(), rec);
    return rec;
}

built_variant session::build_to_read(const config::pipeline& p, bool line_info) {
    report::record unused = new_record("compile", p, "");
    build_context ctx = context();
    ctx.line_info = line_info;
    return build_variant(p, config::compiled_arch(p), ctx, unused);
}

std::vector<report::record> session::run(const config::pipeline& p, const std::string& source,
                                         const run_request& request,
                                         const std::function<void(const report::record&)>& done) {
    report::record startup;
    record_process_start(startup, m_driver_first_asked);
    const device_info chosen = device(request.device);
    // The compile (or cache lookup) and the host data need no GPU: they run on another thread while
    // the driver creates the context, the longest wait of a first call. Their phases are recorded
    // as they were; overlapped_ms says how much of them the wait hid.
    std::optional<built_variant> early_build;
    report::record early;
    std::shared_ptr<gpu> device;  // before the host data, whose device copies go first
    // A device kept open keeps its last run's host data: inputs and reference are made again only
    // when they changed, and the inputs stay on the device (a warm session's run).
    const auto kept_host = m_kept_host.find(request.device);
    const bool reuse_kept = request.keep_device && kept_host != m_kept_host.end() && m_kept.contains(request.device);
    host_data host = reuse_kept ? std::move(kept_host->second) : host_data{};
    if (kept_host != m_kept_host.end()) m_kept_host.erase(kept_host);
    const auto early_start = trace::clock::now();
    // With the device open already there is no wait to hide: the work runs here, with no thread.
    const bool opening = !m_kept.contains(request.device);
    auto early_work = std::async(opening ? std::launch::async : std::launch::deferred, [&] {
        if (opening) trace::name_thread("host work");
        const auto arch = p.compile.arch.value_or(chosen.arch);
        early_build.emplace(build_variant(p, arch, context(), early));
        if (!reuse_kept) host = make_host_data(p, early);
        return trace::clock::now();
    });
    // (If opening throws, the future's destructor waits for the work before the objects it uses go.)
    const auto open_start = trace::clock::now();
    if (const auto kept = m_kept.find(request.device); kept != m_kept.end()) {  // open since an earlier run
        device = std::move(kept->second);
        m_kept.erase(kept);
    } else {
        device = m_gpus->open(request.device, startup);
    }
    const auto open_end = trace::clock::now();
    const auto early_end = early_work.get();
    const double overlapped = std::chrono::duration<double, std::milli>(std::min(open_end, early_end) -
                                                                         std::max(open_start, early_start)).count();

    std::vector<report::record> records;
    for (int call = 1; call <= request.calls; ++call) {
        report::record rec = new_record("run", p, source);
        if (request.calls > 1) rec.call_index = call;
        rec.tuned_launch = request.tuned_launch;
        const save_request* save = call == 1 && !request.save.dir.empty() ? &request.save : nullptr;
        run_variant(p, *device, context(), rec,
                    {.load_ptx = request.load_ptx, .reuse = call == 1 ? &host : nullptr,
                     .keep_on_device = request.keep_device, .save = save,
                     .built = call == 1 ? &*early_build : nullptr, .counter_set = request.counter_set});
        if (call == 1) {  // start-up and the early work are paid once per process
            for (std::size_t i = 0; i < report::k_phase_count; ++i)
                for (const auto* from : {&startup, &early})
                    if (from->phases[i]) rec.phases[i] = from->phases[i];
            rec.overlapped_ms = std::max(0.0, overlapped);
        }
        if (request.copy_ceiling) {
            trace::span span("copy ceiling");
            rec.copy_ceiling_bytes_per_s = copy_ceiling_bytes_per_s(*device, context());
            rec.flops_ceiling_per_s = flops_ceiling_for(*device, context(), rec);
        }
        if (call == request.calls && request.keep_device) {
            m_kept[request.device] = std::move(device);
            m_kept_host[request.device] = std::move(host);
        } else if (call == request.calls && device.use_count() > 1) {  // a callable still uses it
            m_kept[request.device] = std::move(device);
        } else if (call == request.calls) {  // released before the last record is shown, so it shows the cost
            trace::span span(report::phase_name(report::phase::teardown));
            device.reset();
            rec.set(report::phase::teardown, span.end());
        }
        if (done) done(rec);
        records.push_back(std::move(rec));
    }
    return records;
}

std::unique_ptr<callable> session::load(const config::pipeline& p, int index, report::record& rec) {
    record_process_start(rec, m_driver_first_asked);
    (void)device(index);
    if (!m_kept.contains(index)) m_kept[index] = m_gpus->open(index, rec);
    return std::make_unique<callable>(m_kept.at(index), p, context(), rec);
}

void session::watch(const run_request& request, const std::function<std::optional<watch_step>()>& next,
                    const std::function<void(const report::record&)>& done,
                    const std::function<void(const error&)>& failed) {
    report::record startup;
    record_process_start(startup, m_driver_first_asked);
    require_gpu("`kjit compile`");
    auto device = m_gpus->open(request.device, startup);
    const build_context ctx = context();
    std::optional<double> ceiling;
    host_data host;  // kept across saves (an edit of the launch or the formula reuses the inputs); after `device`
    while (auto step = next()) {
        report::record rec = new_record("run", step->pipeline, step->source);
        rec.phases = startup.phases;  // start-up shows on the first run only
        startup.phases = {};
        try {
            if (step->templates_changed) m_templates = templates_in(m_templates_dir);
            run_variant(step->pipeline, *device, ctx, rec,
                        {.load_ptx = request.load_ptx, .reuse = &host, .keep_on_device = true});
            if (request.copy_ceiling && !ceiling) ceiling = copy_ceiling_bytes_per_s(*device, ctx);
        } catch (const error& e) {
            if (e.kind() == error_kind::driver) throw;
            failed(e);
            continue;
        }
        rec.copy_ceiling_bytes_per_s = ceiling;
        done(rec);
    }
}

sweep_result session::sweep(const std::vector<config::sweep_point>& points, const std::string& source,
                            const sweep_request& request, const std::function<void(const report::record&)>& step) {
    std::vector<int> devices;
    int arch = points.empty() ? config::default_target().arch : points.front().pipeline.target.arch;  // compile-only: the target's
    if (!request.compile_only) {
        require_gpu("`kjit sweep --compile-only`");
        const auto known = m_gpus->devices();
        devices = parse_devices(request.devices, static_cast<int>(known.size()));
        arch = known.at(static_cast<std::size_t>(devices.front())).arch;
    }
    const auto start = std::chrono::steady_clock::now();
    prebuilt_binaries prebuilt;
    const build_context ctx = context(&prebuilt);
    sweep_result result;
    const int jobs = request.jobs > 0 ? request.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // The compiles run while the devices open and the first inputs are made: none needs the others.
    auto compiled = std::async(std::launch::async, [&] { return compile_points(points, arch, ctx, jobs, request.compiled); });
    gpu_factory open;
    if (!request.compile_only)
        open = [this](int index, report::record& startup) { return m_gpus->open(index, startup); };
    const std::size_t host_threads = request.host_threads ? static_cast<std::size_t>(*request.host_threads)
                                                          : default_host_threads(devices.size());
    const std::shared_future<compile_summary> builds = compiled.share();
    result.records = run_points(points, source, devices, open, ctx, host_threads, step, [&] { builds.wait(); },
                                request.save.dir.empty() ? nullptr : &request.save, request.counter_set);
    result.compiled = builds.get();
    result.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
}

std::optional<std::string> session::finish() {
    if (m_mode == jit::cache_mode::off || !m_cache.stored_any()) return std::nullopt;
    try {
        (void)m_cache.prune();
    } catch (const error& e) {
        return std::string(e.what());
    }
    return std::nullopt;
}

}  // namespace kjit::run
