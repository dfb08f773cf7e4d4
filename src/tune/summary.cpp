#include "tune/summary.hpp"

#include <algorithm>
#include <cmath>

#include "util/units.hpp"

namespace kjit::tune {
namespace {

std::string percent(double fraction) { return std::to_string(static_cast<int>(std::lround(100 * fraction))) + " %"; }

}  // namespace

std::optional<nearness> nearness_of(const tune_result& r) {
    if (!r.exhaustive_best_ms) return std::nullopt;
    std::vector<evaluation> evaluations;
    std::optional<double> best;
    for (const auto& p : r.points) {
        evaluations.push_back({0, p.result});
        if (p.result.ms && (!best || *p.result.ms < *best)) best = p.result.ms;
    }
    const double exhaustive = *r.exhaustive_best_ms;
    return nearness{best ? exhaustive / *best : 0, evaluations_to_reach(evaluations, exhaustive, 0.95),
                    evaluations_to_reach(evaluations, exhaustive, 0.99)};
}

void print_summary(std::ostream& out, const tune_result& r, std::size_t shown) {
    std::size_t from_database = 0, failed = 0;
    for (const auto& p : r.points) {
        from_database += p.from == "database";
        failed += !p.result.ms;
    }
    out << "kjit tune · " << r.strategy << (r.budget ? ", budget " + std::to_string(r.budget) : "") << " on "
        << r.device << "\n"
        << "  space     " << r.space_points << " points, " << r.allowed_points
        << " allowed (the constraints and the family refuse the rest)\n"
        << "  measured  " << r.points.size() << " points";
    if (from_database > 0) out << " (" << from_database << " found in the database: no GPU time)";
    out << ", " << failed << " failed, in " << units::duration_ms(r.wall_ms) << "; stopped: " << to_string(r.stopped) << "\n";

    std::vector<const tuned_point*> ranked;
    for (const auto& p : r.points)
        if (p.result.ms) ranked.push_back(&p);
    std::sort(ranked.begin(), ranked.end(), [](const auto* a, const auto* b) { return *a->result.ms < *b->result.ms; });
    for (std::size_t k = 0; k < ranked.size() && k < shown; ++k) {
        const tuned_point& p = *ranked[k];
        out << (k == 0 ? "  best      " : "            ") << units::duration_ms(*p.result.ms)
            << (p.result.roofline ? ", " + percent(*p.result.roofline) + " of roofline" : "") << "  (#" << p.evaluation
            << ")  " << config::point_label(p.values) << "\n";
    }
    // Best so far at 1, 2, 4, … evaluations and at the last: the search's progress.
    std::string progress;
    std::optional<double> best;
    for (std::size_t k = 0; k < r.points.size(); ++k) {
        if (r.points[k].result.ms && (!best || *r.points[k].result.ms < *best)) best = r.points[k].result.ms;
        const std::size_t count = k + 1;
        if (((count & (count - 1)) == 0 || count == r.points.size()) && best)
            progress += (progress.empty() ? "" : ", ") + std::to_string(count) + ": " + units::duration_ms(*best);
    }
    if (!progress.empty()) out << "  progress  best after " << progress << "\n";
    if (const auto near = nearness_of(r)) {
        const auto at = [](const std::optional<std::size_t>& n) { return n ? "evaluation " + std::to_string(*n) : std::string("never"); };
        out << "  reached   " << percent(near->best_fraction) << " of the exhaustive best ("
            << units::duration_ms(*r.exhaustive_best_ms) << "); 95 % at " << at(near->to_95) << ", 99 % at "
            << at(near->to_99) << "\n";
    } else {
        out << "  reached   (the exhaustive best is known once every allowed point has been measured)\n";
    }
    if (!r.database_file.empty()) out << "  database  " << r.database_file << "\n";
}

}  // namespace kjit::tune
