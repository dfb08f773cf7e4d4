#include "run/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <numeric>
#include <regex>
#include <set>
#include <thread>

#include "report/trace.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/parallel.hpp"

namespace kjit::run {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}


report::record record_for(const config::sweep_point& point, const std::string& command, const std::string& source) {
    report::record rec = new_record(command, point.pipeline, source);
    rec.sweep_index = point.index;
    rec.sweep_point = point.label;
    rec.sweep_values = point.values;
    return rec;
}

void record_failure(report::record& rec, const std::string& message) {
    rec.status = report::outcome::error;
    rec.error = message;
}

/// Makes each group's inputs and reference on a thread of its own, one group ahead of the GPU
/// workers: the host work of the next group overlaps the GPU work of this one, and several GPUs
/// share one copy. A group is a run of points, in run order, with equal keys. Its parallel loops
/// use `threads` cores, leaving the others to the workers' launching threads.
class host_data_ahead {
public:
    /// What was made for one group. Empty pointers if making it failed: the point then makes its
    /// own in run_variant, which reports the failure in its proper place (after the compile).
    struct made {
        std::shared_ptr<const host_inputs> inputs;
        std::shared_ptr<const host_reference> reference;
        std::optional<double> inputs_ms;  ///< when this group made new inputs
        std::optional<double> reference_ms;
    };

    /// `groups[g]`: a pipeline of group g; `points[g]`: how many points will ask for it.
    host_data_ahead(std::vector<const config::pipeline*> groups, std::vector<std::size_t> points, std::size_t threads)
        : m_groups(std::move(groups)), m_made(m_groups.size()), m_unserved(std::move(points)), m_threads(threads),
          m_thread([this](std::stop_token stop) { make_all(stop); }) {}

    /// Waits for group `g`'s data, for one of its points; the maker goes on to g + 1. The group's
    /// last point lets the data go here (the workers that use it hold their own references).
    made get(std::size_t g) {
        std::unique_lock lock(m_mutex);
        m_wanted = std::max(m_wanted, g);
        m_changed.notify_all();
        m_changed.wait(lock, [&] { return m_made[g].has_value(); });
        made group = *m_made[g];
        if (--m_unserved[g] == 0) m_made[g].reset();
        return group;
    }

private:
    void make_all(std::stop_token stop) {
        trace::name_thread("host data");
        const parallel_limit limit(m_threads);
        std::shared_ptr<const host_inputs> inputs;
        for (std::size_t g = 0; g < m_groups.size(); ++g) {
            {
                std::unique_lock lock(m_mutex);
                if (!m_changed.wait(lock, stop, [&] { return g <= m_wanted + 1; })) return;
            }
            const config::pipeline& p = *m_groups[g];
            made group;
            try {
                report::record timed;  // where the make_ functions put their phases
                if (!inputs || inputs->key != inputs_key(p)) {
                    inputs = nullptr;  // let the last group's arrays go before making new ones
                    inputs = make_host_inputs(p, timed);
                }
                group.inputs = inputs;
                group.reference = make_host_reference(p, *inputs, timed);
                group.inputs_ms = timed.get(report::phase::host_inputs);
                group.reference_ms = timed.get(report::phase::host_reference);
            } catch (const std::exception&) {
                group = {};
                inputs = nullptr;
            }
            const std::lock_guard lock(m_mutex);
            m_made[g] = std::move(group);
            m_changed.notify_all();
        }
    }

    std::vector<const config::pipeline*> m_groups;
    std::mutex m_mutex;
    std::condition_variable_any m_changed;
    std::vector<std::optional<made>> m_made;
    std::vector<std::size_t> m_unserved;  ///< per group: points that have not asked for it yet
    std::size_t m_wanted = 0;             ///< the highest group asked for
    std::size_t m_threads;
    std::jthread m_thread;  // last: it starts once the members above exist, and is joined first
};

}  // namespace

shard parse_shard(const std::string& text) {
    static const std::regex form("([0-9]{1,9})/([0-9]{1,9})");  // at most 999,999,999 shards
    std::smatch match;
    if (text.size() <= 19 && std::regex_match(text, match, form)) {
        const shard s{std::stoul(match[1]), std::stoul(match[2])};
        if (s.count > 0 && s.index < s.count) return s;
    }
    throw error(error_kind::usage, "--shard " + text + ": expected K/N with 0 <= K < N, e.g. 0/4");
}

std::vector<std::size_t> shard::indices(std::size_t total) const {
    std::vector<std::size_t> mine;
    for (std::size_t i = index; i < total; i += count) mine.push_back(i);
    return mine;
}

std::vector<int> parse_devices(const std::string& text, int available) {
    std::vector<int> devices;
    if (text == "all") {
        for (int i = 0; i < available; ++i) devices.push_back(i);
        return devices;
    }
    static const std::regex list("[0-9]{1,4}(,[0-9]{1,4})*");
    if (text.size() > 256 || !std::regex_match(text, list))  // std::regex recurses per character
        throw error(error_kind::usage, "--devices " + text + ": expected all or a list such as 0,1");
    std::set<int> seen;
    static const std::regex number("[0-9]+");
    for (std::sregex_iterator it(text.begin(), text.end(), number), end; it != end; ++it) {
        const int index = std::stoi(it->str());
        if (index >= available)
            throw error(error_kind::usage, "--devices " + text + ": there are " + std::to_string(available) + " GPU(s)");
        if (seen.insert(index).second) devices.push_back(index);
    }
    return devices;
}

compile_summary compile_points(const std::vector<config::sweep_point>& points, int arch, const build_context& ctx,
                               int threads, const compile_progress& progress) {
    compile_summary summary;
    summary.points = points.size();
    std::map<std::string, std::pair<jit::compile_request, std::string>> distinct;  // key → request, label
    for (const auto& point : points) {
        const family::program program = family::plan(point.pipeline, ctx.templates);
        const int point_arch = point.pipeline.compile.arch.value_or(arch);
        if (!runs_on(program, point_arch)) continue;  // refused, in one line, when the point runs
        auto request = compile_request_for(point.pipeline, program, point_arch);
        const std::string key = jit::cache_key(request);
        distinct.try_emplace(key, std::move(request), config::variant_label(point.pipeline));
    }
    summary.distinct = distinct.size();
    summary.threads = std::max(1, std::min<int>(threads, static_cast<int>(distinct.size())));

    std::vector<const std::pair<jit::compile_request, std::string>*> work;
    for (const auto& [key, item] : distinct) work.push_back(&item);
    std::atomic<std::size_t> next{0};
    std::mutex merge;
    std::size_t done = 0;  // (under `merge`)
    if (progress) progress(0, work.size(), "");
    const auto start = std::chrono::steady_clock::now();
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < summary.threads; ++t)
            pool.emplace_back([&, t] {
                trace::name_thread("compile " + std::to_string(t));
                // One NVRTC program and one nvJitLink handle per call: compiles run concurrently.
                for (std::size_t i = next++; i < work.size() && !interrupted(); i = next++) {
                    try {
                        trace::span span("build", {{"variant", work[i]->second}});
                        auto build = jit::build(work[i]->first, ctx.cache, ctx.mode, work[i]->second);
                        const std::lock_guard lock(merge);
                        if (build.compiled) {
                            ++summary.compiled;
                            summary.serial_ms += build.nvrtc_ms + build.ptx_to_cubin_ms;
                        }
                        if (ctx.prebuilt) ctx.prebuilt->put(std::move(build));
                    } catch (const std::exception&) {
                        // Reported by the points that use this source, when they build it; no
                        // exception may leave a thread (that would abort the process).
                    }
                    const std::lock_guard lock(merge);
                    if (progress) progress(++done, work.size(), work[i]->second);
                }
            });
    }
    summary.wall_ms = ms_since(start);
    return summary;
}

std::size_t default_host_threads(std::size_t devices) {
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    return cores > devices + 1 ? cores - devices - 1 : 1;
}

std::vector<report::record> run_points(const std::vector<config::sweep_point>& points, const std::string& source,
                                       const std::vector<int>& devices, const gpu_factory& open,
                                       const build_context& ctx, std::size_t host_threads,
                                       const std::function<void(const report::record&)>& step,
                                       const std::function<void()>& builds_ready, const save_request* save,
                                       const std::string& counter_set) {
    std::vector<std::optional<report::record>> results(points.size());
    std::atomic<std::size_t> next{0};
    std::mutex step_mutex;
    auto finish = [&](std::size_t i, report::record rec) {
        {
            const std::lock_guard lock(step_mutex);
            if (step) step(rec);
        }
        results[i] = std::move(rec);
    };

    if (!open) {  // compile only: no GPU
        if (builds_ready) builds_ready();
        for (std::size_t i = 0; i < points.size() && !interrupted(); ++i) {
            report::record rec = record_for(points[i], "compile", source);
            try {
                (void)build_variant(points[i].pipeline, config::compiled_arch(points[i].pipeline), ctx, rec);
            } catch (const error& e) {
                record_failure(rec, e.what());
            }
            finish(i, std::move(rec));
        }
    } else {
        // Points that share inputs and reference run one after another, so each worker makes
        // them once per group instead of once per change (a sweep whose fastest axis is n or
        // dtype would otherwise remake them at every point). Records stay in point order.
        std::vector<std::size_t> order(points.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::vector<std::pair<std::string, std::string>> keys;
        for (const auto& point : points) keys.emplace_back(inputs_key(point.pipeline), reference_key(point.pipeline));
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
        std::vector<std::size_t> group_of(order.size());  // by position in `order`
        std::vector<const config::pipeline*> group_pipelines;
        std::vector<std::size_t> group_points;
        for (std::size_t k = 0; k < order.size(); ++k) {
            if (k == 0 || keys[order[k]] != keys[order[k - 1]]) {
                group_pipelines.push_back(&points[order[k]].pipeline);
                group_points.push_back(0);
            }
            group_of[k] = group_pipelines.size() - 1;
            ++group_points.back();
        }
        std::optional<host_data_ahead> ahead;
        if (host_threads > 0) ahead.emplace(std::move(group_pipelines), std::move(group_points), host_threads);
        std::vector<std::string> open_errors(devices.size());
        {
            std::vector<std::jthread> workers;
            for (std::size_t w = 0; w < devices.size(); ++w)
                workers.emplace_back([&, w] {
                    trace::name_thread("GPU " + std::to_string(devices[w]));
                    // The device is opened on this thread, so its context is current here.
                    report::record startup;
                    std::unique_ptr<gpu> device;
                    try {
                        device = open(devices[w], startup);
                    } catch (const error& e) {
                        open_errors[w] = "device " + std::to_string(devices[w]) + ": " + e.what();
                        return;
                    }
                    if (builds_ready) builds_ready();
                    std::optional<double> ceiling;
                    std::map<std::string, std::optional<double>> flops_ceilings;  // by record::flops_unit
                    host_data host;  // reused while consecutive points share inputs (after `device`: it holds copies there)
                    for (std::size_t k = next++; k < order.size() && !interrupted(); k = next++) {
                        const std::size_t i = order[k];
                        report::record rec = record_for(points[i], "run", source);
                        // Start-up was paid once per device: it shows on that device's first point.
                        rec.phases = startup.phases;
                        startup.phases = {};
                        try {
                            trace::span span("point " + std::to_string(i), {{"point", points[i].label}});
                            if (ahead) {
                                auto made = ahead->get(group_of[k]);
                                if (made.reference && (k == 0 || group_of[k - 1] != group_of[k])) {
                                    if (made.inputs_ms) rec.set(report::phase::host_inputs, *made.inputs_ms);
                                    rec.set(report::phase::host_reference, *made.reference_ms);
                                }
                                host.inputs = std::move(made.inputs);
                                host.reference = std::move(made.reference);
                            }
                            run_variant(points[i].pipeline, *device, ctx, rec,
                                        {.reuse = &host, .keep_on_device = true, .save = save, .counter_set = counter_set});
                            if (!ceiling) ceiling = copy_ceiling_bytes_per_s(*device, ctx);
                            rec.copy_ceiling_bytes_per_s = ceiling;
                            if (!rec.flops_unit.empty() && !flops_ceilings.contains(rec.flops_unit))
                                flops_ceilings[rec.flops_unit] = flops_ceiling_for(*device, ctx, rec);
                            if (!rec.flops_unit.empty()) rec.flops_ceiling_per_s = flops_ceilings[rec.flops_unit];
                        } catch (const error& e) {
                            record_failure(rec, e.what());
                        } catch (const std::exception& e) {  // e.g. std::bad_alloc for a huge n
                            record_failure(rec, std::string("host: ") + e.what());
                        }
                        finish(i, std::move(rec));
                    }
                });
        }
        std::string why;
        for (const auto& e : open_errors) why += (why.empty() || e.empty() ? "" : "; ") + e;
        for (std::size_t i = 0; i < points.size() && !interrupted(); ++i)
            if (!results[i]) {
                report::record rec = record_for(points[i], "run", source);
                record_failure(rec, "no device could run it: " + why);
                finish(i, std::move(rec));
            }
    }
    std::vector<report::record> records;  // interrupted: the points finished, marked partial
    for (auto& r : results)
        if (r) {
            r->partial = interrupted();
            records.push_back(std::move(*r));
        }
    return records;
}

}  // namespace kjit::run
