// kjit sweep and kjit merge.
#include <algorithm>
#include <map>
#include <set>

#include "cli/commands.hpp"
#include "family/family.hpp"
#include "report/files.hpp"
#include "report/progress.hpp"
#include "report/table.hpp"
#include "util/interrupt.hpp"
#include "util/units.hpp"

namespace kjit::cli {

namespace {

/// --resume FILE: the rows an interrupted sweep of this config wrote, each checked to be the point
/// of this sweep at its index (a file of another config or sweep block is refused).
std::vector<report::row> finished_rows(const options& o, const config::document& doc,
                                       const std::optional<config::target>& gpu) {
    if (o.resume_path.empty()) return {};
    std::vector<report::row> rows;
    std::vector<std::size_t> indices;
    const std::size_t total = config::sweep_size(doc);
    for (auto& row : report::read_rows(o.resume_path)) {
        const auto index = row.find("sweep_index");
        if (index == row.end() || !index->is_number_unsigned() || index->get<std::size_t>() >= total)
            throw error(error_kind::usage, "--resume " + o.resume_path + ": a row that is not a point of this sweep (" +
                                               std::to_string(total) + " points)");
        indices.push_back(index->get<std::size_t>());
        rows.push_back(std::move(row));
    }
    std::map<std::size_t, std::string> labels;  // (a point the constraints now refuse has none)
    for (const auto& point : family::expand_sweep(doc, gpu, indices)) labels[point.index] = point.label;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto mine = labels.find(indices[i]);
        const std::string written = rows[i].value("sweep_point", "");
        if (mine == labels.end() || mine->second != written)
            throw error(error_kind::usage, "--resume " + o.resume_path + ": its point " + std::to_string(indices[i]) + " is \"" +
                                               written + "\", this sweep's is " +
                                               (mine == labels.end() ? "refused by its constraints" : "\"" + mine->second + "\"") +
                                               " (a file of another config?)");
    }
    return rows;
}

/// The points this call runs: every point, or the shard's, less those --resume's file has.
std::optional<std::vector<std::size_t>> points_to_run(const options& o, const config::document& doc,
                                                      const std::vector<report::row>& finished) {
    if (o.shard.empty() && finished.empty()) return std::nullopt;
    const std::size_t total = config::sweep_size(doc);
    const run::shard mine = o.shard.empty() ? run::shard{} : run::parse_shard(o.shard);
    std::set<std::size_t> done;
    for (const auto& row : finished) done.insert(row["sweep_index"].get<std::size_t>());
    std::vector<std::size_t> indices;
    for (const std::size_t index : mine.indices(total))
        if (!done.contains(index)) indices.push_back(index);
    return indices;
}

}  // namespace

exit_status cmd_sweep(const options& o, std::ostream& out, std::ostream& err) {
    stop_gracefully_on_interrupt();  // Ctrl-C: finish the points in flight, write them, exit 130
    const config::document doc = load_document(o);
    run::session s = session_for(o);
    const auto gpu = o.compile_only ? std::nullopt : s.target_if_any(o.devices);
    const std::vector<report::row> finished = finished_rows(o, doc, gpu);
    const auto points = family::expand_sweep(doc, gpu, points_to_run(o, doc, finished));  // validated before any work

    // Two stages, each with its own pace: the distinct sources compiled, then the points run.
    report::progress_bar bar(err, points.size(), report::progress_wanted(2, o.quiet));
    const auto show_compiles = [&](std::size_t done, std::size_t total, const std::string& label) {
        bar.compiled(done, total, label);
        if (done == total) bar.stage(o.compile_only ? "build" : "run", points.size());
    };
    const auto result = s.sweep(points, doc.source, {o.devices, o.compile_only, o.jobs, o.host_threads, o.save, o.counter_set, show_compiles},
                                [&](const report::record& r) { bar.step(r.sweep_point); });
    bar.finish();
    finish(s, err);
    const auto& records = result.records;
    const auto& compiled = result.compiled;
    auto rows = report::rows_of(records);
    if (!finished.empty()) {  // the earlier rows join these, in point order
        for (auto row : finished) {
            row["partial"] = interrupted();  // whole again, unless this call was stopped too
            rows.push_back(std::move(row));
        }
        std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a["sweep_index"] < b["sweep_index"]; });
    }
    report::print_summary(out, rows);
    std::size_t failed = 0;
    for (const auto& r : records) failed += !report::succeeded(r.status);
    const std::size_t total = config::sweep_size(doc), refused = total - config::allowed_sweep_points(doc).size();
    out << "\n" << points.size() << " points" << (o.shard.empty() ? "" : " (shard " + o.shard + ")")
        << (refused == 0 ? "" : " (the constraints skip " + std::to_string(refused) + " of the sweep's " + std::to_string(total) + ")")
        << (finished.empty() ? "" : " (and " + std::to_string(finished.size()) + " finished before, from " + o.resume_path + ")") << ", "
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
    warn_about_points(err, missing, "are missing before the last one: a shard left out (or points the sweep's constraints skip)?");
    report::print_summary(out, rows);
    write_rows(o, rows);
    return exit_status::ok;
}

}  // namespace kjit::cli
