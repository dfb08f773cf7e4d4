// Records to files: JSON (a list of flat objects) and CSV (one row each), both with the columns of
// report::flatten, so pandas.read_json / read_csv take either without options. Written atomically.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "report/record.hpp"

namespace kjit::report {

[[nodiscard]] std::string to_json(const std::vector<record>& records);
[[nodiscard]] std::string to_csv(const std::vector<record>& records);
/// Writes JSON or CSV to `path` (temp + rename). Throws kjit::error(io).
void write_json(const std::filesystem::path& path, const std::vector<record>& records);
void write_csv(const std::filesystem::path& path, const std::vector<record>& records);

}  // namespace kjit::report
