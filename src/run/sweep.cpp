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

/// The order points run in on GPUs: points that share inputs and reference one after another,
/// so each worker makes them once per group instead of once per change (a sweep whose fastest axis
/// is n or dtype would otherwise remake them at every point). Records stay in point order.
struct run_order {
    std::vector<std::size_t> points;                       ///< point indices, in run order
    std::vector<std::size_t> group_of;                     ///< by position in `points`
    std::vector<const config::pipeline*> group_pipelines;  ///< a pipeline of each group
    std::vector<std::size_t> group_sizes;                  ///< the points of each group
};

run_order order_by_host_data(const std::vector<config::sweep_point>& points) {
    run_order order;
    order.points.resize(points.size());
    std::iota(order.points.begin(), order.points.end(), std::size_t{0});
    std::vector<std::pair<std::string, std::string>> keys;
    for (const auto& point : points) keys.emplace_back(inputs_key(point.pipeline), reference_key(point.pipeline));
    std::stable_sort(order.points.begin(), order.points.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    for (std::size_t k = 0; k < order.points.size(); ++k) {
        if (k == 0 || keys[order.points[k]] != keys[order.points[k - 1]]) {
            order.group_pipelines.push_back(&points[order.points[k]].pipeline);
            order.group_sizes.push_back(0);
        }
        order.group_of.push_back(order.group_pipelines.size() - 1);
        ++order.group_sizes.back();
    }
    return order;
}

/// A sweep's records as its points finish, in any order and from any thread: each handed to
/// `step` (one at a time) and kept in point order.
class point_records {
public:
    point_records(std::size_t count, const std::function<void(const report::record&)>& step)
        : m_records(count), m_step(step) {}

    void finish(std::size_t i, report::record rec) {
        {
            const std::lock_guard lock(m_mutex);
            if (m_step) m_step(rec);
        }
        m_records[i] = std::move(rec);
    }
    [[nodiscard]] bool finished(std::size_t i) const { return m_records[i].has_value(); }

    /// The finished ones, in point order; marked partial where the sweep was interrupted.
    std::vector<report::record> take() {
        std::vector<report::record> records;
        for (auto& r : m_records)
            if (r) {
                r->partial = interrupted();
                records.push_back(std::move(*r));
            }
        return records;
    }

private:
    std::vector<std::optional<report::record>> m_records;
    const std::function<void(const report::record&)>& m_step;
    std::mutex m_mutex;
};

/// A device's ceilings, measured on its first point and put on every record of it: the copy's
/// bytes per second, and the FLOP/s of each unit its kernels use.
struct device_ceilings {
    std::optional<double> copy;
    std::map<std::string, std::optional<double>> flops;  ///< by record::flops_unit

    void put_on(gpu& device, const build_context& ctx, report::record& rec) {
        if (!copy) copy = copy_ceiling_bytes_per_s(device, ctx);
        rec.copy_ceiling_bytes_per_s = copy;
        if (rec.flops_unit.empty()) return;
        if (!flops.contains(rec.flops_unit)) flops[rec.flops_unit] = flops_ceiling_for(device, ctx, rec);
        rec.flops_ceiling_per_s = flops[rec.flops_unit];
    }
};

/// What the GPU workers of one sweep share: the points in their run order, the next one to take,
/// and where records go.
struct gpu_sweep {
    const std::vector<config::sweep_point>& points;
    const std::string& source;
    const build_context& ctx;
    const run_order& order;
    host_data_ahead* ahead;  ///< null: each point makes its own host data
    const save_request* save;
    const std::string& counter_set;
    point_records& records;
    std::atomic<std::size_t> next{0};

    /// One worker: its device opened on this thread (so that its context is current here), then
    /// points taken until none is left. Returns why the device could not be opened, or "".
    std::string work_on(int index, const gpu_factory& open, const std::function<void()>& builds_ready) {
        trace::name_thread("GPU " + std::to_string(index));
        report::record startup;
        std::unique_ptr<gpu> device;
        try {
            device = open(index, startup);
        } catch (const error& e) {
            return "device " + std::to_string(index) + ": " + e.what();
        }
        if (builds_ready) builds_ready();
        device_ceilings ceilings;
        host_data host;  // reused while consecutive points share inputs (after `device`: it holds copies there)
        for (std::size_t k = next++; k < order.points.size() && !interrupted(); k = next++) {
            const std::size_t i = order.points[k];
            report::record rec = record_for(points[i], "run", source);
            // Start-up was paid once per device: it shows on that device's first point.
            rec.phases = std::exchange(startup.phases, {});
            try {
                trace::span span("point " + std::to_string(i), {{"point", points[i].label}});
                take_host_data(k, host, rec);
                run_variant(points[i].pipeline, *device, ctx, rec,
                            {.reuse = &host, .keep_on_device = true, .save = save, .counter_set = counter_set});
                ceilings.put_on(*device, ctx, rec);
            } catch (const error& e) {
                record_failure(rec, e.what());
            } catch (const std::exception& e) {  // e.g. std::bad_alloc for a huge n
                record_failure(rec, std::string("host: ") + e.what());
            }
            records.finish(i, std::move(rec));
        }
        return "";
    }

    /// The host data made ahead for the k-th point to run, its phases on the group's first point.
    void take_host_data(std::size_t k, host_data& host, report::record& rec) const {
        if (!ahead) return;
        auto made = ahead->get(order.group_of[k]);
        if (made.reference && (k == 0 || order.group_of[k - 1] != order.group_of[k])) {
            if (made.inputs_ms) rec.set(report::phase::host_inputs, *made.inputs_ms);
            rec.set(report::phase::host_reference, *made.reference_ms);
        }
        host.inputs = std::move(made.inputs);
        host.reference = std::move(made.reference);
    }
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
    point_records records(points.size(), step);
    if (!open) {  // compile only: no GPU
        if (builds_ready) builds_ready();
        for (std::size_t i = 0; i < points.size() && !interrupted(); ++i) {
            report::record rec = record_for(points[i], "compile", source);
            try {
                (void)build_variant(points[i].pipeline, config::compiled_arch(points[i].pipeline), ctx, rec);
            } catch (const error& e) {
                record_failure(rec, e.what());
            }
            records.finish(i, std::move(rec));
        }
        return records.take();
    }
    run_order order = order_by_host_data(points);
    std::optional<host_data_ahead> ahead;
    if (host_threads > 0) ahead.emplace(std::move(order.group_pipelines), std::move(order.group_sizes), host_threads);
    gpu_sweep sweep{points, source, ctx, order, ahead ? &*ahead : nullptr, save, counter_set, records};
    std::vector<std::string> open_errors(devices.size());
    {
        std::vector<std::jthread> workers;
        for (std::size_t w = 0; w < devices.size(); ++w)
            workers.emplace_back([&, w] { open_errors[w] = sweep.work_on(devices[w], open, builds_ready); });
    }
    std::string why;
    for (const auto& e : open_errors) why += (why.empty() || e.empty() ? "" : "; ") + e;
    for (std::size_t i = 0; i < points.size() && !interrupted(); ++i)
        if (!records.finished(i)) {
            report::record rec = record_for(points[i], "run", source);
            record_failure(rec, "no device could run it: " + why);
            records.finish(i, std::move(rec));
        }
    return records.take();
}

}  // namespace kjit::run
