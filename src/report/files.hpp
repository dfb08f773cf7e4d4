// Records to files: JSON (a list of flat objects) and CSV (one row each), both with the columns of
// report::flatten, so pandas.read_json / read_csv take either without options.
// Rows are ordered JSON objects, so that merged shards (read back from JSON) print and write the
// same way as records fresh from a run.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "report/record.hpp"

namespace kjit::report {

[[nodiscard]] std::vector<row> rows_of(const std::vector<record>& records);
/// Reads a JSON file written by --json; throws kjit::error(usage) naming the file when it is not one.
[[nodiscard]] std::vector<row> read_rows(const std::filesystem::path& path);

[[nodiscard]] std::string to_json(const std::vector<row>& rows);
[[nodiscard]] std::string to_csv(const std::vector<row>& rows);
/// Writes JSON or CSV to `path` (see fs::write_output: "-" is stdout, devices and pipes are written
/// in place, regular files atomically). Throws kjit::error(io).
void write_json(const std::filesystem::path& path, const std::vector<row>& rows);
void write_csv(const std::filesystem::path& path, const std::vector<row>& rows);

}  // namespace kjit::report
