// kjit tune's printed report: the best points, the search's progress, and how soon it came near
// the exhaustive best; and the figures a replay over several seeds compares strategies by.
#pragma once
#include <optional>
#include <ostream>
#include <vector>

#include "tune/tuner.hpp"

namespace kjit::tune {

/// How near a search came: its best against the exhaustive best (1 = found it), and the
/// evaluations it took to reach 95 % and 99 % of it.
struct nearness {
    double best_fraction = 0;
    std::optional<std::size_t> to_95, to_99;
};
/// nullopt when the exhaustive best is not known.
[[nodiscard]] std::optional<nearness> nearness_of(const tune_result& r);

/// The best points (at most `shown`), the progress at powers of two, the stop and the database.
void print_summary(std::ostream& out, const tune_result& r, std::size_t shown = 5);

}  // namespace kjit::tune
