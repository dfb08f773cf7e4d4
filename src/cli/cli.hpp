// The command line: subcommand table, option parsing, and the one place where errors become exit
// codes. main() only calls cli::run.
#pragma once
#include <ostream>

#include "util/error.hpp"

namespace kjit::cli {

/// Runs `kjit argv...`, printing results to `out` and errors to `err` (one line, "kjit: …").
[[nodiscard]] exit_status run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace kjit::cli
