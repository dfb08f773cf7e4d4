#include "report/files.hpp"

#include "util/fs.hpp"

namespace kjit::report {
namespace {

std::string csv_cell(const nlohmann::json& value) {
    if (value.is_null()) return "";
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

}  // namespace

std::string to_json(const std::vector<record>& records) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& r : records) {
        nlohmann::ordered_json row = nlohmann::ordered_json::object();
        for (const auto& [column, value] : flatten(r)) row[column] = value;
        list.push_back(std::move(row));
    }
    return list.dump(2) + "\n";
}

std::string to_csv(const std::vector<record>& records) {
    std::string text;
    bool header = true;
    for (const auto& r : records) {
        const auto row = flatten(r);
        if (header) {
            for (std::size_t i = 0; i < row.size(); ++i) text += (i ? "," : "") + row[i].first;
            text += "\n";
            header = false;
        }
        for (std::size_t i = 0; i < row.size(); ++i) text += (i ? "," : "") + csv_cell(row[i].second);
        text += "\n";
    }
    return text;
}

void write_json(const std::filesystem::path& path, const std::vector<record>& records) {
    fs::write_file_atomic(path, to_json(records));
}

void write_csv(const std::filesystem::path& path, const std::vector<record>& records) {
    fs::write_file_atomic(path, to_csv(records));
}

}  // namespace kjit::report
