// The strict JSON object reader every config block goes through: it knows its key path, rejects
// unknown keys with the list of allowed ones, and fails with one line "SOURCE: key.path: …".
// Used by the config module and by the kernel families (src/family) for their own keys.
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/ops.hpp"
#include "expr/expr.hpp"
#include "util/error.hpp"

namespace kjit::config::detail {

using json = json_value;

/// Names (a config's, inputs', params', row values') are C identifiers of at most this many
/// characters: they become CUDA identifiers, and a compiler is not the place to find a limit.
inline constexpr std::size_t k_max_identifier = 64;

/// A value as JSON, cut to 40 characters: messages quote what they refuse, never all of it.
inline std::string shown(const json& value) {
    // A string from the command line may not be UTF-8: show it with replacement characters.
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 40) text.replace(37, std::string::npos, "...");
    return text;
}

inline std::string quoted_list(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "\"" : ", \"") + name + "\"";
    return text;
}

/// True where `key` of `object` leaves the choice to kjit: absent, or "auto".
inline bool leaves_auto(const json& object, const std::string& key) {
    const auto it = object.find(key);
    return it == object.end() || (it->is_string() && *it == "auto");
}

/// A JSON object being read: remembers its key path and which keys were used, so that unknown
/// keys are reported with the list of allowed ones.
class object_reader {
public:
    object_reader(const json& value, std::string path, const std::string& source,
                  std::vector<std::string> allowed)
        : m_value(value), m_path(std::move(path)), m_source(source), m_allowed(std::move(allowed)) {
        if (!value.is_object()) fail_at(m_path, "expected an object, got " + shown(value));
        for (const auto& [key, unused] : value.items()) {
            if (std::find(m_allowed.begin(), m_allowed.end(), key) == m_allowed.end())
                fail_at(child_path(key), "unknown key; expected one of " + quoted_list(m_allowed));
        }
    }

    [[nodiscard]] std::string child_path(const std::string& key) const {
        return m_path.empty() ? key : m_path + "." + key;
    }
    [[noreturn]] void fail_at(const std::string& path, const std::string& what) const {
        throw config_error(m_source, path, what);
    }
    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        fail_at(child_path(key), what);
    }
    [[nodiscard]] const json* find(const std::string& key) const {
        const auto it = m_value.find(key);
        return it == m_value.end() ? nullptr : &*it;
    }
    /// True where `key` leaves the choice to kjit: absent, or "auto".
    [[nodiscard]] bool leaves_auto(const std::string& key) const { return detail::leaves_auto(m_value, key); }
    [[nodiscard]] const json& require(const std::string& key, const std::string& what) const {
        const json* value = find(key);
        if (value == nullptr) fail(key, "missing; expected " + what);
        return *value;
    }
    [[nodiscard]] const std::string& source() const { return m_source; }

    std::string string(const std::string& key, std::optional<std::string> fallback) const {
        const json* value = fallback ? find(key) : &require(key, "a string");
        if (value == nullptr) return *fallback;
        if (!value->is_string()) fail(key, "expected a string, got " + shown(*value));
        return value->get<std::string>();
    }

    template <class Enum>
    Enum choice(const std::string& key, const std::vector<std::pair<std::string, Enum>>& options,
                std::optional<Enum> fallback) const {
        std::vector<std::string> names;
        for (const auto& option : options) names.push_back(option.first);
        const json* value = fallback ? find(key) : &require(key, "one of " + quoted_list(names));
        if (value == nullptr) return *fallback;
        if (value->is_string()) {
            for (const auto& [name, result] : options)
                if (name == value->get<std::string>()) return result;
        }
        fail(key, "expected one of " + quoted_list(names) + ", got " + shown(*value));
    }

    long long integer(const std::string& key, long long low, long long high,
                      std::optional<long long> fallback) const {
        const std::string expected =
            "an integer in " + std::to_string(low) + ".." + std::to_string(high);
        const json* value = fallback ? find(key) : &require(key, expected);
        if (value == nullptr) return *fallback;
        if (!value->is_number_integer()) fail(key, "expected " + expected + ", got " + shown(*value));
        if (value->is_number_unsigned() && value->get<unsigned long long>() >
                                               static_cast<unsigned long long>(high))
            fail(key, "expected " + expected + ", got " + shown(*value));
        const long long number = value->get<long long>();
        if (number < low || number > high) fail(key, "expected " + expected + ", got " + shown(*value));
        return number;
    }

    double number(const std::string& key, std::optional<double> fallback) const {
        const json* value = fallback ? find(key) : &require(key, "a number");
        if (value == nullptr) return *fallback;
        if (!value->is_number() || !std::isfinite(value->get<double>()))
            fail(key, "expected a finite number, got " + shown(*value));
        return value->get<double>();
    }

    bool boolean(const std::string& key, bool fallback) const {
        const json* value = find(key);
        if (value == nullptr) return fallback;
        if (!value->is_boolean()) fail(key, "expected true or false, got " + shown(*value));
        return value->get<bool>();
    }

private:
    const json& m_value;
    std::string m_path;
    const std::string& m_source;
    std::vector<std::string> m_allowed;
};

/// [A-Za-z_][A-Za-z0-9_]*, checked without a regex (a long name must not overflow the stack).
[[nodiscard]] bool is_identifier(const std::string& name);

/// The expression at `key`, parsed against `names`; a bad one fails at that key with the
/// expression shown and a caret under the column.
[[nodiscard]] expr::tree parse_expression(const object_reader& r, const std::string& key, const expr::scope& names);

// stages.cpp
/// True for a name a user's input or param may not take: one the kernels or CUDA already use.
[[nodiscard]] bool is_reserved(const std::string& name);
/// inputs.NAME, read at `path`.
/// A file's relative path resolves against `folder` (document::folder).
[[nodiscard]] input_spec read_input(const std::string& name, const json& value, const std::string& path,
                                    const std::string& source, const std::filesystem::path& folder);
/// Reads stages[index] into trees bound to the pipeline's inputs, scalars and the row values of
/// earlier reduce stages (`row_names`, to which a reduce adds its own); numbers given to an op
/// become scalars of `p` named s<index>_<param>.
[[nodiscard]] stage read_stage(const json& value, std::size_t index, bool last, const std::string& source,
                               pipeline& p, std::size_t user_params, const op_library& ops,
                               std::vector<std::string>& row_names);

}  // namespace kjit::config::detail
