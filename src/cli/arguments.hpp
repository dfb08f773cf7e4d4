// The command line's words: the subcommands, each one's options (cxxopts), and how they are read
// into the options record the commands take. cli.cpp wires them to the commands.
#pragma once
#include <optional>
#include <ostream>
#include <span>

#include "cli/commands.hpp"

namespace kjit::cli {

/// A subcommand: its name, its usage line and summary, and the option groups it takes.
struct subcommand {
    const char* name;
    const char* usage;  ///< positional part of the usage line
    const char* summary;
    bool config, compile, outputs, device;  ///< which option groups it takes
};

/// Every subcommand, in the order the overview lists them.
[[nodiscard]] std::span<const subcommand> subcommands();

/// `kjit --help`: the usage line, each subcommand's summary, the exit codes.
void print_overview(std::ostream& out);

/// The options of `kjit SUB ARGS…` (argv[0] is SUB), read and checked; nullopt where --help asked
/// for the subcommand's help, which is printed to `out`. A bad option throws error(usage) naming
/// it.
[[nodiscard]] std::optional<options> parse_arguments(const subcommand& sub, int argc, const char* const* argv, std::ostream& out);

}  // namespace kjit::cli
