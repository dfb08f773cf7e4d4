// kjit sweep and kjit merge.
#include <algorithm>

#include "cli/commands.hpp"
#include "family/family.hpp"
#include "report/files.hpp"
#include "report/progress.hpp"
#include "report/table.hpp"
#include "util/interrupt.hpp"
#include "util/units.hpp"

namespace kjit::cli {

exit_status cmd_sweep(const options& o, std::ostream& out, std::ostream& err) {
    stop_gracefully_on_interrupt();  // Ctrl-C: finish the points in flight, write them, exit 130
    const config::document doc = load_document(o);
    run::session s = session_for(o);
    const auto gpu = o.compile_only ? std::nullopt : s.target_if_any(o.devices);
    std::optional<std::vector<std::size_t>> mine;  // every point, or the shard's
    if (!o.shard.empty()) mine = run::parse_shard(o.shard).indices(config::sweep_size(doc));
    const auto points = family::expand_sweep(doc, gpu, mine);  // validated before any work

    report::progress_bar bar(err, points.size(), report::progress_wanted(2, o.quiet));
    const auto result = s.sweep(points, doc.source, {o.devices, o.compile_only, o.jobs, o.host_threads, o.save, o.counter_set},
                                [&](const report::record& r) { bar.step(r.sweep_point); });
    bar.finish();
    finish(s, err);
    const auto& records = result.records;
    const auto& compiled = result.compiled;
    const auto rows = report::rows_of(records);
    report::print_summary(out, rows);
    std::size_t failed = 0;
    for (const auto& r : records) failed += !report::succeeded(r.status);
    out << "\n" << points.size() << " points" << (o.shard.empty() ? "" : " (shard " + o.shard + ")") << ", "
        << compiled.distinct << " distinct sources, " << compiled.compiled << " compiled on " << compiled.threads
        << " threads in " << units::duration_ms(compiled.wall_ms);
    if (compiled.compiled > 0)
        out << " (their compile times add up to " << units::duration_ms(compiled.serial_ms) << ")";
    out << "; whole sweep " << units::duration_ms(result.wall_ms) << "; " << failed << " failed\n";
    if (interrupted() && records.empty()) {  // nothing to write: earlier results stay as they were
        err << "kjit: interrupted before any point finished; no file was written\n";
        return exit_status::interrupted;
    }
    write_rows(o, rows);
    if (interrupted()) {
        err << "kjit: interrupted: " << records.size() << " of " << points.size()
            << " points finished; what was written is marked partial\n";
        return exit_status::interrupted;
    }
    return failed > 0 ? exit_status::failure : exit_status::ok;
}

namespace {
/// One warning for a list of sweep points: how many, the first few, and `what` of them.
void warn_about_points(std::ostream& err, const std::vector<long long>& points, const char* what) {
    if (points.empty()) return;
    err << "kjit: warning: " << points.size() << " sweep points (";
    for (std::size_t i = 0; i < std::min<std::size_t>(points.size(), 5); ++i) err << (i ? ", " : "") << points[i];
    err << (points.size() > 5 ? ", …" : "") << ") " << what << "\n";
}
}  // namespace

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
    std::vector<long long> repeated, missing;  // a file merged twice; a shard left out (a gap before the last point)
    long long next = 0;                         // the index the next row should have
    for (const auto& row : rows) {
        const long long at = index(row);
        if (at < 0) continue;  // not a sweep's row
        if (at < next) repeated.push_back(at);
        for (; next < at; ++next) missing.push_back(next);
        next = at + 1;
    }
    warn_about_points(err, repeated, "appear more than once: a file merged twice?");
    warn_about_points(err, missing, "are missing before the last one: a shard left out?");
    report::print_summary(out, rows);
    write_rows(o, rows);
    return exit_status::ok;
}

}  // namespace kjit::cli
