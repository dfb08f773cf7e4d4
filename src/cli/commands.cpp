#include "cli/commands.hpp"

#include <chrono>
#include <iomanip>
#include <iostream>
#include <thread>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "cuda/cuda_gpu.hpp"
#include "report/files.hpp"
#include "report/progress.hpp"
#include "report/table.hpp"
#include "run/runner.hpp"
#include "run/first_call.hpp"
#include "run/sweep.hpp"
#include "util/fs.hpp"
#include "util/units.hpp"

namespace kjit::cli {
namespace {

struct loaded_config {
    config::pipeline pipeline;
    std::string source;
};

loaded_config load(const options& o) {
    config::document doc = config::load_document(o.config_path);
    for (const auto& assignment : o.sets) config::apply_override(doc, assignment);
    if (o.arch) config::set_path(doc.json, "compile.arch", *o.arch, "--arch");
    config::pipeline p = config::from_json(doc);
    return {std::move(p), doc.source};
}

codegen::template_set templates(const options& o) {
    return o.templates_dir.empty() ? codegen::template_set::embedded()
                                   : codegen::template_set::from_directory(o.templates_dir);
}

jit::disk_cache cache_for(const options& o) {
    return jit::disk_cache(o.cache_dir.empty() ? jit::disk_cache::default_root() : std::filesystem::path(o.cache_dir));
}

jit::cache_mode cache_mode(const options& o) {
    return o.no_cache ? jit::cache_mode::off : o.refresh ? jit::cache_mode::refresh : jit::cache_mode::use;
}

void write_outputs(const options& o, const std::vector<report::record>& records) {
    const auto rows = report::rows_of(records);
    if (!o.json_path.empty()) report::write_json(o.json_path, rows);
    if (!o.csv_path.empty()) report::write_csv(o.csv_path, rows);
}

}  // namespace

exit_status cmd_emit(const options& o, std::ostream& out) {
    const auto cfg = load(o);
    out << codegen::generate(cfg.pipeline, templates(o)).source;
    return exit_status::ok;
}

exit_status cmd_compile(const options& o, std::ostream& out, std::ostream& err) {
    const auto cfg = load(o);
    const auto tmpl = templates(o);
    jit::disk_cache cache = cache_for(o);
    report::record rec = run::new_record("compile", cfg.pipeline, cfg.source);
    const int arch = cfg.pipeline.compile.arch.value_or(90);
    (void)run::build_variant(cfg.pipeline, arch, {tmpl, &cache, cache_mode(o)}, rec);
    if (!rec.cache_problem.empty()) err << "kjit: warning: " << rec.cache_problem << "\n";
    report::print_record(out, rec);
    write_outputs(o, {rec});
    return exit_status::ok;
}

exit_status cmd_run(const options& o, std::ostream& out, std::ostream& err) {
    const auto cfg = load(o);
    const auto tmpl = templates(o);
    jit::disk_cache cache = cache_for(o);
    const cuda::probe_result driver = cuda::probe_driver();
    if (driver.state != cuda::availability::ok)
        throw error(error_kind::driver, "no GPU to run on (" + std::string(cuda::to_string(driver.state)) + "): " +
                                            driver.detail + "; `kjit compile` works without one");
    cuda::open_times opened;
    auto gpu = cuda::open_gpu(driver, o.device, opened);
    const run::build_context ctx{tmpl, o.no_cache ? nullptr : &cache, cache_mode(o)};
    std::vector<report::record> records;
    bool failed = false;
    for (int call = 1; call <= o.calls; ++call) {
        report::record rec = run::new_record("run", cfg.pipeline, cfg.source);
        if (call == 1) {  // paid once per process
            rec.set(report::phase::driver_init, driver.init_ms);
            rec.set(report::phase::context, opened.context_ms);
        }
        if (o.calls > 1) rec.call_index = call;
        run::run_variant(cfg.pipeline, *gpu, ctx, rec, {.load_ptx = o.load_ptx});
        if (!o.skip_ceiling) rec.copy_ceiling_bytes_per_s = run::copy_ceiling_bytes_per_s(*gpu, ctx);
        if (!rec.cache_problem.empty()) err << "kjit: warning: " << rec.cache_problem << "\n";
        if (call > 1) out << "\n";
        report::print_record(out, rec);
        if (rec.status == "FAIL") {
            err << "kjit: FAIL: " << rec.check->mismatches << " of " << cfg.pipeline.n
                << " elements outside tolerance; first: " << rec.check->first_bad << "\n";
            failed = true;
        }
        records.push_back(std::move(rec));
    }
    write_outputs(o, records);
    return failed ? exit_status::failure : exit_status::ok;
}

exit_status cmd_devices(std::ostream& out) {
    const cuda::probe_result driver = cuda::probe_driver();
    if (driver.state != cuda::availability::ok)
        throw error(error_kind::driver, std::string("no GPU (") + cuda::to_string(driver.state) + "): " + driver.detail);
    out << "driver: " << driver.detail << " (" << driver.api->library << ")\n";
    for (const auto& d : cuda::list_devices(driver)) {
        out << "  [" << d.index << "] " << d.name << "  sm_" << d.arch << ", " << d.sm_count << " SMs, "
            << units::bytes(static_cast<double>(d.memory_bytes)) << ", L2 " << units::bytes(static_cast<double>(d.l2_bytes))
            << ", SM clock " << d.clock_mhz << " MHz, memory clock " << d.memory_clock_mhz << " MHz × "
            << d.memory_bus_bits << " bit\n";
    }
    return exit_status::ok;
}

exit_status cmd_cache(const options& o, std::ostream& out) {
    jit::disk_cache cache = cache_for(o);
    const std::string& action = o.cache_action;
    if (action == "path") {
        out << cache.entries_dir().string() << "\n";
    } else if (action == "list" || action == "stats") {
        const auto entries = cache.list();
        std::uintmax_t total = 0;
        for (const auto& e : entries) {
            total += e.bytes;
            if (action == "list")
                out << e.key.substr(0, 12) << "  " << std::setw(10) << std::left << e.meta.value("arch", "?") << " "
                    << std::setw(21) << e.meta.value("created", "?") << " " << std::setw(11)
                    << units::bytes(static_cast<double>(e.bytes)) << e.meta.value("label", e.meta.value("problem", "")) << "\n";
        }
        if (action == "stats" || entries.empty())
            out << entries.size() << " entries, " << units::bytes(static_cast<double>(total)) << " in "
                << cache.entries_dir().string() << "\n";
    } else if (action == "clear") {
        out << "removed " << cache.clear() << " entries from " << cache.root().string() << "\n";
    } else {
        throw error(error_kind::usage, "cache: expected list, stats, clear or path" +
                                           (action.empty() ? std::string() : ", got '" + action + "'"));
    }
    return exit_status::ok;
}

}  // namespace kjit::cli

namespace kjit::cli {

exit_status cmd_sweep(const options& o, std::ostream& out, std::ostream& err) {
    config::document doc = config::load_document(o.config_path);
    for (const auto& assignment : o.sets) config::apply_override(doc, assignment);
    if (o.arch) config::set_path(doc.json, "compile.arch", *o.arch, "--arch");
    auto points = config::expand_sweep(doc);  // every point validated before any work
    if (!o.shard.empty()) points = run::select_shard(points, run::parse_shard(o.shard));

    const auto tmpl = templates(o);
    jit::disk_cache cache = cache_for(o);
    run::prebuilt_binaries prebuilt;
    const run::build_context ctx{tmpl, o.no_cache ? nullptr : &cache, cache_mode(o), &prebuilt};

    cuda::probe_result driver;
    std::vector<int> devices;
    int arch = 90;
    if (!o.compile_only) {
        driver = cuda::probe_driver();
        if (driver.state != cuda::availability::ok)
            throw error(error_kind::driver, "no GPU to run on (" + std::string(cuda::to_string(driver.state)) +
                                                "): " + driver.detail + "; `kjit sweep --compile-only` works without one");
        devices = run::parse_devices(o.devices, driver.device_count);
        arch = cuda::list_devices(driver).at(static_cast<std::size_t>(devices.front())).arch;
    }

    const auto start = std::chrono::steady_clock::now();
    const int jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const auto compiled = run::compile_points(points, arch, ctx, jobs);

    report::progress_bar bar(err, points.size(), report::progress_wanted(2, o.quiet));
    run::gpu_factory open;
    if (!o.compile_only)
        open = [&](int index, report::record& startup) {
            if (index == devices.front()) startup.set(report::phase::driver_init, driver.init_ms);
            cuda::open_times opened;
            auto gpu = cuda::open_gpu(driver, index, opened);
            startup.set(report::phase::context, opened.context_ms);
            return gpu;
        };
    const auto records = run::run_points(points, doc.source, devices, open, ctx,
                                         [&](const report::record& r) { bar.step(r.sweep_point); });
    bar.finish();
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    const auto rows = report::rows_of(records);
    report::print_summary(out, rows);
    std::size_t failed = 0;
    for (const auto& r : records) failed += r.status != "PASS" && r.status != "ok";
    out << "\n" << points.size() << " points" << (o.shard.empty() ? "" : " (shard " + o.shard + ")") << ", "
        << compiled.distinct << " distinct sources, " << compiled.compiled << " compiled on " << compiled.threads
        << " threads in " << units::duration_ms(compiled.wall_ms);
    if (compiled.compiled > 0)
        out << " (their compile times add up to " << units::duration_ms(compiled.serial_ms) << ")";
    out << "; whole sweep " << units::duration_ms(wall_ms) << "; " << failed << " failed\n";
    if (!o.json_path.empty()) report::write_json(o.json_path, rows);
    if (!o.csv_path.empty()) report::write_csv(o.csv_path, rows);
    return failed > 0 ? exit_status::failure : exit_status::ok;
}

exit_status cmd_merge(const options& o, std::ostream& out, std::ostream& err) {
    if (o.files.empty()) throw error(error_kind::usage, "merge: expected one or more JSON files (see kjit merge --help)");
    std::vector<report::row> rows;
    for (const auto& file : o.files) {
        auto more = report::read_rows(file);
        rows.insert(rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    const auto index = [](const report::row& r) {
        const auto it = r.find("sweep_index");
        return it != r.end() && it->is_number() ? it->get<long long>() : -1;
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) { return index(a) < index(b); });
    for (std::size_t i = 1; i < rows.size(); ++i)
        if (index(rows[i]) >= 0 && index(rows[i]) == index(rows[i - 1]))
            err << "kjit: warning: sweep point " << index(rows[i]) << " appears more than once\n";
    report::print_summary(out, rows);
    if (!o.json_path.empty()) report::write_json(o.json_path, rows);
    if (!o.csv_path.empty()) report::write_csv(o.csv_path, rows);
    return exit_status::ok;
}

}  // namespace kjit::cli

namespace kjit::cli {

exit_status cmd_first_call(const options& o, std::ostream& out, std::ostream& err) {
    (void)load(o);  // a bad config is reported here, once, before any child starts
    const bool have_gpu = cuda::probe_driver().state == cuda::availability::ok;
    const auto root = std::filesystem::temp_directory_path() / ("kjit-first-call-" + fs::unique_suffix());
    std::filesystem::create_directories(root);
    struct cleanup {
        std::filesystem::path dir;
        ~cleanup() {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        }
    } remove_root{root};

    // What every child gets: the user's config and overrides, a tiny timing loop (the children are
    // about start-up, and every extra launch would land in "the rest"), no copy-ceiling probe.
    std::vector<std::string> common;
    if (!o.config_path.empty()) common.push_back(o.config_path);
    for (const auto& s : o.sets) common.insert(common.end(), {"--set", s});
    if (!o.templates_dir.empty()) common.insert(common.end(), {"--templates", o.templates_dir});
    if (have_gpu) common.insert(common.end(), {"--skip-ceiling", "--set", "measure.warmup=0", "--set", "measure.repeat=1"});
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const std::string log = (root / "child.log").string();
    int counter = 0;
    auto child = [&](const run::start_state& state, const std::filesystem::path& cache,
                     const std::vector<std::pair<std::string, std::string>>& env) {
        const std::string json_file = (root / ("child" + std::to_string(counter++) + ".json")).string();
        std::vector<std::string> args = state.args;
        args.insert(args.end(), common.begin(), common.end());
        args.insert(args.end(), {"--cache-dir", cache.string(), "--json", json_file});
        const auto result = run::run_child(self, args, env, log);
        if (result.exit_code != 0) {
            std::string output;
            try {
                output = fs::read_file(log);
            } catch (const error&) {
            }
            throw error(error_kind::driver, "first-call: the child for state " + state.name + " exited " +
                                                std::to_string(result.exit_code) + ":\n" + output);
        }
        return std::make_pair(result, report::read_rows(json_file));
    };

    const auto warm_cache = root / "warm-cache";
    const auto driver_cache = root / "driver-cache";
    const auto states = run::first_call_states(have_gpu);
    // Fill the shared cache once (a compile for this machine's GPU, or sm_90 without one).
    (void)child(run::warm_up_state(have_gpu), warm_cache, {{"CUDA_CACHE_PATH", driver_cache.string()}});

    std::vector<report::row> rows;
    report::progress_bar bar(err, states.size() * static_cast<std::size_t>(o.repeat), report::progress_wanted(2, false));
    for (const auto& state : states) {
        auto env = state.env;
        env.emplace_back("CUDA_CACHE_PATH", driver_cache.string());  // never the user's own cache
        if (state.warm_driver_cache) (void)child(state, warm_cache, env);
        for (int k = 0; k < o.repeat; ++k) {
            const auto cache = state.empty_cache ? root / ("empty-" + std::to_string(counter)) : warm_cache;
            auto [result, child_rows] = child(state, cache, env);
            for (auto& r : child_rows) {
                const int call = r["call_index"].is_number() ? r["call_index"].get<int>() : 1;
                if (call != state.take_call) continue;
                r["first_call_state"] = state.name;
                if (state.take_call == 1) r["process_wall_ms"] = result.wall_ms;
                rows.push_back(std::move(r));
            }
            bar.step(state.name);
        }
    }
    bar.finish();

    const auto summary = run::summarize_first_call(rows);
    if (!have_gpu) out << "no GPU here: the children compile only, so these are the compile-side phases\n";
    out << "  " << std::left << std::setw(20) << "state" << std::setw(30) << "process wall (min..max)" << std::setw(12)
        << "CUDA init" << std::setw(12) << "context" << std::setw(12) << "NVRTC" << std::setw(12) << "PTX→cubin"
        << std::setw(12) << "load" << "first launch\n";
    for (const auto& s : summary) {
        const auto cell = [&](const char* column) {
            return s.contains(column) ? units::duration_ms(s[column].get<double>()) : std::string("-");
        };
        std::string wall = "-";
        if (s.contains("process_wall_ms"))
            wall = cell("process_wall_ms") + " (" + cell("process_wall_min_ms") + ".." + cell("process_wall_max_ms") + ")";
        out << "  " << std::setw(20) << s.value("first_call_state", "") << std::setw(30) << wall << std::setw(12)
            << cell("driver_init_ms") << std::setw(12) << cell("context_ms") << std::setw(12) << cell("nvrtc_ms")
            << std::setw(12) << cell("ptx_to_cubin_ms") << std::setw(12) << cell("module_load_ms")
            << cell("first_launch_ms") << "\n";
    }
    out << "\n";
    for (const auto& state : states) out << "  " << state.name << ": " << state.description << "\n";
    out << "\n" << run::explain_first_call(summary);
    if (!o.json_path.empty()) report::write_json(o.json_path, rows);
    if (!o.csv_path.empty()) report::write_csv(o.csv_path, rows);
    return exit_status::ok;
}

}  // namespace kjit::cli
