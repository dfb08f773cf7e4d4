#include "cli/commands.hpp"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "family/family.hpp"
#include "config/config.hpp"
#include "cuda/cuda_gpu.hpp"
#include "cuda/devices.hpp"
#include "report/files.hpp"
#include "report/trace.hpp"
#include "report/table.hpp"
#include "run/runner.hpp"
#include "run/session.hpp"
#include "util/units.hpp"

namespace kjit::cli {

config::document load_document(const options& o) {
    config::document doc = config::load_document(o.config_path);
    for (const auto& assignment : o.sets) config::apply_override(doc, assignment);
    if (o.arch) config::set_path(doc.json, "compile.arch", *o.arch, "--arch");
    if (o.target) config::set_path(doc.json, "compile.target", *o.target, "--target");
    return doc;
}

loaded_config load(const options& o, const std::optional<config::target>& gpu) {
    config::document doc = load_document(o);
    config::pipeline p = family::load(doc, gpu);
    return {std::move(p), doc.source};
}

jit::cache_mode cache_mode_of(const options& o) {
    return o.no_cache ? jit::cache_mode::off : o.refresh ? jit::cache_mode::refresh : jit::cache_mode::use;
}

run::session session_for(const options& o) {
    return run::session({o.templates_dir, o.cache_dir, o.cache_limit, cache_mode_of(o)}, cuda::driver_gpus());
}

void finish(run::session& s, std::ostream& err) {
    if (const auto problem = s.finish()) err << "kjit: warning: " << *problem << "\n";
}

bool print_result(const report::record& rec, std::ostream& out, std::ostream& err) {
    report::print_warnings(err, rec);
    report::print_record(out, rec);
    if (rec.status != report::outcome::fail) return true;
    err << "kjit: FAIL: " << rec.check->mismatches << " of " << rec.config.value("n", 0LL)
        << " elements outside tolerance; first: " << rec.check->first_bad << "\n";
    return false;
}

void mark_elapsed(std::vector<report::record>& records) {
    const auto spawned = trace::spawned_at();
    if (!spawned) return;
    const double ms = std::chrono::duration<double, std::milli>(trace::clock::now() - *spawned).count();
    for (auto& r : records) r.process_elapsed_ms = ms;
}

void write_rows(const options& o, const std::vector<report::row>& rows) {
    if (!o.json_path.empty()) report::write_json(o.json_path, rows);
    if (!o.csv_path.empty()) report::write_csv(o.csv_path, rows);
}

exit_status cmd_emit(const options& o, std::ostream& out) {
    if (o.sass) return cmd_sass(o, out);
    if (o.ptx) {
        run::session s = session_for(o);
        out << s.build_to_read(load(o).pipeline, false).binary.ptx;
        return exit_status::ok;
    }
    out << family::plan(load(o).pipeline, run::templates_in(o.templates_dir)).source;
    return exit_status::ok;
}

exit_status cmd_compile(const options& o, std::ostream& out, std::ostream& err) {
    const auto cfg = load(o);
    run::session s = session_for(o);
    std::vector<report::record> records{s.compile(cfg.pipeline, cfg.source)};
    report::print_warnings(err, records.front());
    finish(s, err);
    report::print_record(out, records.front());
    mark_elapsed(records);
    write_rows(o, report::rows_of(records));
    return exit_status::ok;
}

exit_status cmd_run(const options& o, std::ostream& out, std::ostream& err) {
    config::document doc = load_document(o);
    run::session s = session_for(o);
    run::run_request request{o.device, o.calls, o.load_ptx, !o.skip_ceiling, o.save};
    request.counter_set = o.counter_set;
    if (tune::wants_tuned_launch(doc)) doc = tune::with_tuned_launch(s, doc, o.device, request.tuned_launch);
    const loaded_config cfg{family::load(doc, s.target_if_any(o.device)), doc.source};
    bool failed = false;
    auto records = s.run(cfg.pipeline, cfg.source, request, [&](const report::record& rec) {
        if (rec.call_index.value_or(1) > 1) out << "\n";
        failed = !print_result(rec, out, err) || failed;
    });
    finish(s, err);
    mark_elapsed(records);
    write_rows(o, report::rows_of(records));
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

}  // namespace kjit::cli
