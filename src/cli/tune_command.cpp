// kjit tune: on the GPU, or replayed from recorded results over several seeds.
#include <algorithm>

#include "cli/commands.hpp"
#include "report/files.hpp"
#include "report/progress.hpp"
#include "run/stats.hpp"
#include "tune/summary.hpp"
#include "util/fs.hpp"
#include "util/interrupt.hpp"
#include "util/strings.hpp"
#include "util/units.hpp"

namespace kjit::cli {
namespace {

double median(std::vector<double> values) { return run::summarize(std::move(values)).median; }

/// The rows of `kjit tune --json`.
std::vector<report::row> read_recording(const std::string& path) {
    try {
        const report::row rows = config::parse_json(fs::read_text_file(path), "--replay " + path);  // depth-limited
        if (!rows.is_array() || rows.empty() || !rows[0].contains("values"))
            throw error(error_kind::usage, "--replay " + path + ": expected the rows of `kjit tune --json`");
        return {rows.begin(), rows.end()};
    } catch (const report::row::exception& e) {
        throw error(error_kind::usage, "--replay " + path + ": not JSON (" + bounded(e.what(), 200) + ")");
    }
}

/// --write-best: the config with the best point's values (measured, or recorded for --replay).
void write_best(const options& o, const config::document& doc, const tune::tune_result& r, std::ostream& out) {
    if (o.write_best_path.empty()) return;
    const auto winner = std::min_element(r.points.begin(), r.points.end(), [](const auto& a, const auto& b) {
        return a.result.ms.value_or(INFINITY) < b.result.ms.value_or(INFINITY);
    });
    if (winner == r.points.end() || !winner->result.ms)
        throw error(error_kind::check, "--write-best " + o.write_best_path + ": no point passed its check; nothing written");
    const config::document written = tune::with_values(doc, winner->values);  // --set included
    fs::write_output(o.write_best_path, written.json.dump(2) + "\n");
    out << "  written   " << o.write_best_path << ": the config with the best point's values\n";
}

/// --replay: the strategy over seeds K… on recorded results, beside random search at the same budget.
exit_status replay_command(const options& o, const config::document& doc, std::ostream& out) {
    const auto recorded = read_recording(o.replay_path);
    std::vector<double> found, random_found, to_99;
    tune::tune_result last;
    for (int k = 0; k < o.seeds; ++k) {
        tune::tune_options chosen = o.tune;
        chosen.seed = o.tune.seed + static_cast<std::uint64_t>(k);
        last = tune::replay(doc, recorded, chosen);
        if (last.allowed_points == 0)
            throw error(error_kind::usage, "--replay " + o.replay_path + ": none of its " + std::to_string(recorded.size()) +
                                               " rows is an allowed point of this config's space (a recording of another config?)");
        const auto near = tune::nearness_of(last);
        if (!near) throw error(error_kind::usage, "--replay " + o.replay_path + ": every recorded point of the space failed");
        found.push_back(near->best_fraction);
        to_99.push_back(near->to_99 ? static_cast<double>(*near->to_99) : INFINITY);
        chosen.strategy = "random";
        chosen.budget = last.budget ? last.budget : last.allowed_points;
        random_found.push_back(tune::nearness_of(tune::replay(doc, recorded, chosen))->best_fraction);
    }
    tune::print_summary(out, last);
    out << "\nreplayed " << o.seeds << " seed(s) from " << o.tune.seed << ": median best " << units::fixed(100 * median(found), 1)
        << " % of the exhaustive best in " << last.points.size() << " of " << last.allowed_points << " points ("
        << units::fixed(100.0 * static_cast<double>(last.points.size()) / static_cast<double>(last.allowed_points), 1)
        << " %); 99 % at evaluation " << (std::isinf(median(to_99)) ? std::string("never") : units::fixed(median(to_99), 0))
        << " (median); random search at the same budget: " << units::fixed(100 * median(random_found), 1) << " %\n";
    if (last.unrecorded_points > 0)
        out << "the recording lacks " << last.unrecorded_points << " of the space's " << last.unrecorded_points + last.allowed_points
            << " allowed points: \"exhaustive best\" is the best of the " << last.allowed_points
            << " it has; record an exhaustive tune to compare strategies on the whole space\n";
    write_rows(o, tune::rows_of(last));
    write_best(o, doc, last, out);
    return exit_status::ok;
}

/// --dry-run: the space sized and every allowed point compiled, with no GPU.
exit_status dry_run_command(const options& o, const config::document& doc, std::ostream& out, std::ostream& err) {
    run::session s = session_for(o);
    report::progress_bar bar(err, 0, report::progress_wanted(2, o.quiet));  // a large space compiles for minutes
    const tune::dry_run_result r = tune::dry_run(s, doc, o.tune, [&](std::size_t done, std::size_t total, const std::string& label) {
        bar.compiled(done, total, label);
    });
    bar.finish();
    finish(s, err);
    const auto& c = r.compiled;
    out << "kjit tune --dry-run · " << doc.source << " for " << r.target.describe() << "\n"
        << "  space     " << r.space_points << " points, " << r.allowed_points << " allowed"
        << (r.allowed_points < r.space_points ? " (the constraints and the family refuse the rest)" : "") << "\n"
        << "  compiled  " << c.distinct << " distinct sources of the allowed points, " << c.compiled << " compiled on "
        << c.threads << " threads in " << units::duration_ms(c.wall_ms)
        << (c.compiled > 0 ? " (their compile times add up to " + units::duration_ms(c.serial_ms) + ")" : "") << ", "
        << c.distinct - c.compiled << " found in the cache\n"
        << "  a tune    " << r.strategy << ", " << (r.budget ? std::to_string(r.budget) + " points" : "every allowed point")
        << " (--strategy, --budget); on a GPU of this target it compiles nothing new\n";
    return exit_status::ok;
}

}  // namespace

exit_status cmd_tune(const options& o, std::ostream& out, std::ostream& err) {
    const config::document doc = load_document(o);
    if (!o.replay_path.empty()) return replay_command(o, doc, out);
    if (o.dry_run) return dry_run_command(o, doc, out, err);
    stop_gracefully_on_interrupt();  // Ctrl-C: the points in flight finish and are kept; exit 130
    run::session s = session_for(o);
    std::optional<double> best;
    const auto result = tune::tune(s, doc, o.tune, [&](const tune::tuned_point& p) {
        if (o.quiet || !p.result.ms || (best && *p.result.ms >= *best)) return;
        best = p.result.ms;
        err << "kjit: tune: #" << p.evaluation << " " << units::duration_ms(*best) << "  " << config::point_label(p.values)
            << (p.from == "database" ? "  (database)" : "") << "\n";
    });
    finish(s, err);
    if (!result.database_warning.empty()) err << "kjit: warning: " << result.database_warning << "\n";
    tune::print_summary(out, result);
    write_rows(o, tune::rows_of(result));
    write_best(o, doc, result, out);
    if (interrupted()) {
        err << "kjit: interrupted: " << result.points.size() << " points measured; they are in the tuning database, "
            << "and the same command resumes\n";
        return exit_status::interrupted;
    }
    return exit_status::ok;
}

}  // namespace kjit::cli
