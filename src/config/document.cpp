// Config documents: JSON text (comments allowed) with kjit's limits, a file or the embedded default.
#include <functional>
#include <set>

#include "config/config.hpp"
#include "config/reader.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::config {

using json = json_value;

namespace {

/// Where the parser is, for messages about a key: a stack of object keys and array indices.
class json_path_tracker {
public:
    /// The nlohmann parser callback: rejects duplicate keys and nesting deeper than a config
    /// needs (deep nesting would exhaust the stack later, when the document is copied or printed).
    bool operator()(int depth, json::parse_event_t event, json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                if (depth >= k_max_depth)
                    throw config_error(m_source, path(), "nested deeper than " + std::to_string(k_max_depth) + " levels");
                m_frames.push_back({event == json::parse_event_t::array_start, 0, {}, {}});
                break;
            case json::parse_event_t::key: {
                frame& top = m_frames.back();
                if (parsed.get_ref<const std::string&>().size() > k_max_key)
                    throw config_error(m_source, path(), "a key of " + std::to_string(parsed.get_ref<const std::string&>().size()) +
                                                             " characters: at most " + std::to_string(k_max_key));
                top.key = parsed.get<std::string>();
                if (top.keys.size() == k_max_keys)  // a key is found by a linear search: bounded, so is the work
                    throw config_error(m_source, path(), "more than " + std::to_string(k_max_keys) + " keys in one object");
                if (!top.keys.insert(top.key).second)
                    throw config_error(m_source, path(), "duplicate key (JSON would keep only the last)");
                break;
            }
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                m_frames.pop_back();
                element_done();
                break;
            case json::parse_event_t::value:
                if (parsed.is_string() && parsed.get_ref<const std::string&>().size() > k_max_string)
                    throw config_error(m_source, path(), "a string of " + std::to_string(parsed.get_ref<const std::string&>().size()) +
                                                             " characters: at most " + std::to_string(k_max_string));
                element_done();
                break;
        }
        return true;
    }
    explicit json_path_tracker(const std::string& source) : m_source(source) {}

private:
    static constexpr int k_max_depth = 64;
    /// The longest key and string a document may hold: longer than any key path or expression
    /// needs (an expression is at most expr::k_max_length), short enough that every message
    /// quoting one stays a line.
    static constexpr std::size_t k_max_key = 256, k_max_string = expr::k_max_length;
    /// The most keys an object may have: a config's params or a record's columns number in the
    /// hundreds; ordered_json finds a key by a linear search, so 40,000 of them took seconds.
    static constexpr std::size_t k_max_keys = 4096;
    struct frame {
        bool array;
        std::size_t index;
        std::string key;
        std::set<std::string> keys;
    };
    void element_done() {
        if (!m_frames.empty() && m_frames.back().array) ++m_frames.back().index;
    }
    [[nodiscard]] std::string path() const {
        std::string text;
        for (const auto& f : m_frames)
            text += f.array ? "[" + std::to_string(f.index) + "]" : (text.empty() ? "" : ".") + f.key;
        return text;
    }
    const std::string& m_source;
    std::vector<frame> m_frames;
};

}  // namespace

json_value parse_json(std::string_view text, const std::string& source) {
    json_path_tracker tracker(source);
    // Comments are allowed: a config is edited by hand, and a note beside a value helps.
    return json::parse(text, std::ref(tracker), /*allow_exceptions=*/true, /*ignore_comments=*/true);
}

document parse_document(std::string_view text, std::string source) {
    try {
        return {parse_json(text, source), std::move(source)};
    } catch (const json::parse_error& e) {
        // e.byte is 1-based and points just past the offending character.
        const std::size_t offset = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
        const std::size_t line = 1 + static_cast<std::size_t>(
                                         std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
        const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
        const std::size_t column = offset - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
        std::string what = e.what();
        const auto cut = what.find("syntax error");
        if (cut != std::string::npos) what = what.substr(cut);
        throw config_error(source + ":" + std::to_string(line) + ":" + std::to_string(column), "",
                           "invalid JSON: " + what);
    } catch (const json::out_of_range& e) {  // a number too large for a double, e.g. 1e400
        std::string what = e.what();
        throw config_error(source, "", "invalid JSON: " + what.substr(what.find(']') + 2));
    }
}

std::filesystem::path input_path(const std::filesystem::path& folder, const std::filesystem::path& given) {
    return std::filesystem::absolute(folder / given).lexically_normal();  // an absolute `given` replaces the folder
}

std::vector<std::filesystem::path> input_files(const document& doc) {
    std::vector<std::filesystem::path> files;
    const auto inputs = doc.json.is_object() ? doc.json.find("inputs") : doc.json.end();
    if (inputs == doc.json.end() || !inputs->is_object()) return files;
    for (const auto& [name, input] : inputs->items())
        if (input.is_object() && input.value("fill", json_value()) == "file" && input.contains("path") && input["path"].is_string())
            files.push_back(input_path(doc.folder, input["path"].get<std::string>()));
    return files;
}

document load_document(const std::string& path) {
    if (path.empty())
        return parse_document(embedded_file("configs/hidden_layer.json"),
                              "<embedded configs/hidden_layer.json>");
    std::string text;
    try {
        text = fs::read_text_file(path);
    } catch (const error& e) {
        throw error(error_kind::usage, e.what());  // a missing config is a usage error (exit 2)
    }
    fs::note_read(path);
    document doc = parse_document(text, path);
    doc.folder = std::filesystem::absolute(path).parent_path();  // as it is now, whatever the working folder later
    return doc;
}

}  // namespace kjit::config
