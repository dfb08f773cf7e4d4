#include "report/files.hpp"

#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::report {
namespace {

std::string csv_cell(const row& value) {
    if (value.is_null()) return "";
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

}  // namespace

std::vector<row> rows_of(const std::vector<record>& records) {
    std::vector<row> rows;
    for (const auto& r : records) {
        row object = row::object();
        for (const auto& [column, value] : flatten(r)) object[column] = value;
        rows.push_back(std::move(object));
    }
    return rows;
}

std::vector<row> read_rows(const std::filesystem::path& path) {
    std::string text;
    try {
        text = fs::read_file(path);
    } catch (const error& e) {
        throw error(error_kind::usage, e.what());
    }
    const row parsed = row::parse(text, nullptr, false);
    if (!parsed.is_array() || !std::all_of(parsed.begin(), parsed.end(), [](const row& r) {
            return r.is_object() && r.contains("schema_version");
        }))
        throw error(error_kind::usage, path.string() + ": not a kjit JSON result (a list of records)");
    return {parsed.begin(), parsed.end()};
}

std::string to_json(const std::vector<row>& rows) { return row(rows).dump(2) + "\n"; }

std::string to_csv(const std::vector<row>& rows) {
    std::string text;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (r == 0) {
            bool first = true;
            for (const auto& [column, value] : rows[r].items()) {
                text += (first ? "" : ",") + column;
                first = false;
            }
            text += "\n";
        }
        bool first = true;
        for (const auto& [column, value] : rows[r].items()) {
            text += (first ? "" : ",") + csv_cell(value);
            first = false;
        }
        text += "\n";
    }
    return text;
}

void write_json(const std::filesystem::path& path, const std::vector<row>& rows) {
    fs::write_output(path, to_json(rows));
}

void write_csv(const std::filesystem::path& path, const std::vector<row>& rows) {
    fs::write_output(path, to_csv(rows));
}

}  // namespace kjit::report
