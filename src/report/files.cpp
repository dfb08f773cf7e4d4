#include "report/files.hpp"

#include <set>
#include <string_view>

#include "config/config.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

namespace kjit::report {
namespace {

std::string csv_cell(const row& value) {
    if (value.is_null()) return "";
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    // Text a spreadsheet would run as a formula (= + - @, or a tab or CR before one) is quoted
    // and starts with an apostrophe, which spreadsheets show as text; numbers are left alone.
    const bool formula = value.is_string() && !text.empty() && std::string_view("=+-@\t\r").find(text[0]) != std::string_view::npos;
    if (formula) text.insert(0, "'");
    if (!formula && text.find_first_of(",\"\n\r") == std::string::npos) return text;
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
        text = fs::read_text_file(path);
    } catch (const error& e) {
        throw error(error_kind::usage, e.what());
    }
    // kjit's one JSON reader: its depth, key and string limits refuse a text no kjit wrote as it is
    // read, before it could exhaust the stack or take seconds.
    row parsed;
    try {
        parsed = config::parse_json(text, path.string());
    } catch (const row::exception& e) {
        throw error(error_kind::usage, path.string() + ": not a kjit JSON result (" + bounded(e.what(), 200) + ")");
    }
    if (!parsed.is_array() || !std::all_of(parsed.begin(), parsed.end(), [](const row& r) {
            return r.is_object() && r.contains("schema_version");
        }))
        throw error(error_kind::usage, path.string() + ": not a kjit JSON result (a list of records)");
    // The columns merge and the summary read must have the types kjit writes (or be null).
    for (std::size_t i = 0; i < parsed.size(); ++i) {
        const auto fail = [&](const char* column, const std::string& expected) {
            throw error(error_kind::usage, path.string() + ": record " + std::to_string(i) + ": " + column +
                                               ": expected " + expected + ", got " +
                                               parsed[i][column].dump(-1, ' ', false, row::error_handler_t::replace));
        };
        for (const char* column : {"sweep_point", "variant", "status", "error", "cache"})
            if (parsed[i].contains(column) && !parsed[i][column].is_string() && !parsed[i][column].is_null())
                fail(column, "a string");
        for (const char* column : {"kernel_cold_median_ms", "kernel_batch_median_ms", "effective_gbps", "nvrtc_ms",
                                   "ptx_to_cubin_ms"})
            if (parsed[i].contains(column) && !parsed[i][column].is_number() && !parsed[i][column].is_null())
                fail(column, "a number");
        if (const auto index = parsed[i].find("sweep_index"); index != parsed[i].end() && !index->is_null() &&
                                                             !(index->is_number_unsigned() &&
                                                               index->get<std::size_t>() < config::k_max_sweep_points))
            fail("sweep_index", "an integer in 0.." + std::to_string(config::k_max_sweep_points - 1));
    }
    return {parsed.begin(), parsed.end()};
}

std::string to_json(const std::vector<row>& rows) { return row(rows).dump(2) + "\n"; }

std::string to_csv(const std::vector<row>& rows) {
    // Every row's columns, in the order first seen: points of one sweep may differ in their
    // params (an op's number) or policy columns, and a cell a row lacks is empty.
    std::vector<std::string> columns;
    std::set<std::string, std::less<>> seen;
    for (const auto& r : rows)
        for (const auto& [column, value] : r.items())
            if (seen.insert(column).second) columns.push_back(column);
    if (rows.empty()) return "";
    std::string text;
    for (std::size_t c = 0; c < columns.size(); ++c) text += (c ? "," : "") + columns[c];
    text += "\n";
    for (const auto& r : rows) {
        for (std::size_t c = 0; c < columns.size(); ++c) {
            const auto cell = r.find(columns[c]);
            text += (c ? "," : "") + (cell == r.end() ? std::string() : csv_cell(*cell));
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
