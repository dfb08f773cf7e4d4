// Config documents: JSON text (comments allowed) with kjit's limits, a file or the embedded default.
#include <string>
#include <unordered_set>
#include <vector>

#include "config/config.hpp"
#include "config/reader.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::config {

using json = json_value;

namespace {

/// Builds a document from the parser's events in one pass, applying kjit's limits as the text
/// enters: nesting, keys an object, the length of keys and strings, no duplicate key. Keys keep
/// their order (ordered_json), each appended after a hash lookup for duplicates: ordered_json's own
/// insertion searches the object's keys one by one, which made wide objects quadratic.
class document_builder : public nlohmann::json_sax<json> {
public:
    explicit document_builder(const std::string& source) : m_source(source) {}
    [[nodiscard]] json take() { return std::move(m_root); }

    bool null() override { return value(json(nullptr)); }
    bool boolean(bool v) override { return value(json(v)); }
    bool number_integer(number_integer_t v) override { return value(json(v)); }
    bool number_unsigned(number_unsigned_t v) override { return value(json(v)); }
    bool number_float(number_float_t v, const string_t& /*text*/) override { return value(json(v)); }
    bool binary(binary_t& v) override { return value(json::binary(std::move(v))); }  // (never in JSON text)
    bool string(string_t& v) override {
        if (v.size() > k_max_string)
            throw config_error(m_source, path(), "a string of " + std::to_string(v.size()) + " characters: at most " +
                                                     std::to_string(k_max_string));
        return value(json(std::move(v)));
    }
    bool start_object(std::size_t /*unknown*/) override { return open(json::object()); }
    bool start_array(std::size_t /*unknown*/) override { return open(json::array()); }
    bool key(string_t& k) override {
        frame& top = m_frames.back();
        if (k.size() > k_max_key)  // (named by where it is, not quoted)
            throw config_error(m_source, path(), "a key of " + std::to_string(k.size()) + " characters: at most " +
                                                     std::to_string(k_max_key));
        top.key = k;
        if (top.keys.size() == k_max_keys)
            throw config_error(m_source, path(), "more than " + std::to_string(k_max_keys) + " keys in one object");
        if (!top.keys.insert(k).second) throw config_error(m_source, path(), "duplicate key (JSON would keep only the last)");
        return true;
    }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    /// A syntax error or a number out of range: thrown as nlohmann's own parser throws it.
    bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const nlohmann::detail::exception& e) override {
        if (e.id / 100 == 1) throw *static_cast<const json::parse_error*>(&e);
        if (e.id / 100 == 4) throw *static_cast<const json::out_of_range*>(&e);
        throw config_error(m_source, path(), std::string("invalid JSON: ") + e.what());
    }

private:
    /// Deep nesting would exhaust the stack later, when the document is copied or printed.
    static constexpr std::size_t k_max_depth = 64;
    /// The longest key and string a document may hold: longer than any key path or expression
    /// needs (an expression is at most expr::k_max_length), short enough that every message
    /// quoting one stays a line.
    static constexpr std::size_t k_max_key = 256, k_max_string = expr::k_max_length;
    /// The most keys an object may have: a config's params or a record's columns (about 150)
    /// number in the tens to hundreds; more is a mistake or an attack.
    static constexpr std::size_t k_max_keys = 4096;

    struct frame {
        json value;  ///< the object or array being read (an array's size: its next element's index)
        std::string key;  ///< an object's current key
        std::unordered_set<std::string> keys;
    };

    bool open(json container) {
        if (m_frames.size() >= k_max_depth)
            throw config_error(m_source, path(), "nested deeper than " + std::to_string(k_max_depth) + " levels");
        m_frames.emplace_back().value = std::move(container);
        return true;
    }
    bool close() {
        json done = std::move(m_frames.back().value);
        m_frames.pop_back();
        return value(std::move(done));
    }
    bool value(json v) {
        if (m_frames.empty()) {
            m_root = std::move(v);
            return true;
        }
        frame& top = m_frames.back();
        if (top.value.is_array()) {
            top.value.get_ref<json::array_t&>().push_back(std::move(v));
        } else {
            top.value.get_ref<json::object_t&>().emplace_back(top.key, std::move(v));  // a new key: key() checked
        }
        return true;
    }
    [[nodiscard]] std::string path() const {
        std::string text;
        for (const auto& f : m_frames)
            text += f.value.is_array() ? "[" + std::to_string(f.value.size()) + "]" : (text.empty() ? "" : ".") + f.key;
        return text;
    }

    const std::string& m_source;
    std::vector<frame> m_frames;
    json m_root;
};

}  // namespace

json_value parse_json(std::string_view text, const std::string& source) {
    document_builder builder(source);
    // Comments are allowed: a config is edited by hand, and a note beside a value helps.
    json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true, /*ignore_comments=*/true);
    return builder.take();
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
