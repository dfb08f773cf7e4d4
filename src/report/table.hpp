// Terminal output: one record as a table of phases, or many (a sweep) as a summary table.
// Reads only report::record.
#pragma once
#include <ostream>
#include <vector>

#include "report/record.hpp"

namespace kjit::report {

/// Every phase with its time and share of the whole, kernel statistics, throughput and the check.
void print_record(std::ostream& out, const record& r);
/// A record's cache problem and measurement warnings, as "kjit: warning: …" lines.
void print_warnings(std::ostream& out, const record& r);

/// What changed from `before` to `after` (kjit run --watch): the variant, the cold kernel time and
/// the error with their Δ, the check, and the phases that ran only in one of them (a compile, a
/// reference made again).
void print_change(std::ostream& out, const record& before, const record& after);

/// One line per row, sorted by median cold kernel time, the fastest passing one marked with '*'.
void print_summary(std::ostream& out, const std::vector<row>& rows);

}  // namespace kjit::report
