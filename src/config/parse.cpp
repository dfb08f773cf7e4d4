// JSON → validated pipeline. Every check throws one line: "SOURCE: key.path: expected …, got …".
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include "config/config.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::config {
namespace {

using json = json_value;

std::string shown(const json& value) {
    std::string text = value.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return text;
}

std::string quoted_list(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "\"" : ", \"") + name + "\"";
    return text;
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

bool is_identifier(const std::string& name) {
    static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
    return std::regex_match(name, identifier);
}

// Input names become kernel parameters beside these generated names.
bool is_reserved(const std::string& name) {
    static const std::set<std::string> reserved{
        "out", "n", "x", "i", "v", "k", "y", "real", "vec", "first", "stride", "done", "nvec",
        "scale", "by", "auto", "int", "float", "double", "long", "const", "void", "return",
        "if", "for", "while", "struct", "typedef", "extern", "unsigned", "signed", "char"};
    return reserved.count(name) > 0 || name.rfind("op_", 0) == 0 || name.rfind("tmp", 0) == 0 ||
           name.rfind("__", 0) == 0;
}

input_spec read_input(const std::string& name, const json& value, const std::string& path,
                      const std::string& source) {
    object_reader r(value, path, source, {"fill", "low", "high", "round", "mean", "std", "value"});
    input_spec in;
    in.name = name;
    in.fill = r.choice<fill_kind>("fill", {{"uniform", fill_kind::uniform},
                                           {"normal", fill_kind::normal},
                                           {"constant", fill_kind::constant}},
                                  std::nullopt);
    auto only_for = [&](std::initializer_list<const char*> keys, const char* fill) {
        for (const char* key : keys)
            if (r.find(key)) r.fail(key, std::string("only applies to fill \"") + fill + "\"");
    };
    switch (in.fill) {
        case fill_kind::uniform:
            in.low = r.number("low", 0.0);
            in.high = r.number("high", 1.0);
            if (!(in.low < in.high))
                r.fail("high", "expected a number greater than low (" + shown(in.low) + "), got " +
                                   shown(in.high));
            only_for({"mean", "std", "value"}, "normal/constant");
            break;
        case fill_kind::normal:
            in.mean = r.number("mean", 0.0);
            in.std = r.number("std", 1.0);
            if (in.std < 0) r.fail("std", "expected a number ≥ 0, got " + shown(in.std));
            only_for({"low", "high", "value"}, "uniform/constant");
            break;
        case fill_kind::constant:
            in.value = r.number("value", std::nullopt);
            only_for({"low", "high", "mean", "std"}, "uniform/normal");
            break;
    }
    in.round = r.choice<rounding>(
        "round", {{"none", rounding::none}, {"floor", rounding::floor}, {"nearest", rounding::nearest}},
        rounding::none);
    return in;
}

std::vector<std::string> input_names(const std::vector<input_spec>& inputs) {
    std::vector<std::string> names;
    for (const auto& in : inputs) names.push_back(in.name);
    return names;
}

stage read_stage(const json& value, std::size_t index, const std::string& source,
                 const std::vector<input_spec>& inputs) {
    const std::string path = "stages[" + std::to_string(index) + "]";
    object_reader r(value, path, source, {"op", "input", "scale", "by", "fn", "formula"});
    stage s;
    s.op = r.choice<op_kind>("op", {{"normalize", op_kind::normalize},
                                    {"weigh", op_kind::weigh},
                                    {"activate", op_kind::activate}},
                             std::nullopt);
    const auto names = input_names(inputs);
    auto input_name = [&](const std::string& key, const std::string& why) {
        const std::string name = r.string(key, std::nullopt);
        if (std::find(names.begin(), names.end(), name) == names.end())
            r.fail(key, "expected the name of an input (" + quoted_list(names) + ") " + why +
                            ", got \"" + name + "\"");
        return name;
    };
    if (index == 0) {
        s.input = input_name("input", "for the first stage to read");
    } else if (r.find("input")) {
        r.fail("input", "only stages[0] names an input; later stages read the previous result");
    }
    auto only_for = [&](const char* key, const char* op) {
        if (r.find(key)) r.fail(key, std::string("only applies to op \"") + op + "\"");
    };
    if (s.op != op_kind::normalize) only_for("scale", "normalize");
    if (s.op != op_kind::weigh) only_for("by", "weigh");
    if (s.op != op_kind::activate) {
        only_for("fn", "activate");
        only_for("formula", "activate");
    }
    switch (s.op) {
        case op_kind::normalize:
            s.scale = r.number("scale", 255.0);
            if (s.scale == 0) r.fail("scale", "expected a nonzero number, got 0");
            break;
        case op_kind::weigh: s.by = input_name("by", "to multiply by"); break;
        case op_kind::activate:
            (void)r.choice<int>("fn", {{"tanh", 0}}, 0);
            s.formula = r.choice<tanh_formula>(
                "formula", {{"builtin", tanh_formula::builtin}, {"exp", tanh_formula::exp}},
                tanh_formula::builtin);
            break;
    }
    return s;
}

std::optional<int> read_arch(const object_reader& r) {
    const json* value = r.find("arch");
    if (value == nullptr || (value->is_string() && value->get<std::string>() == "auto"))
        return std::nullopt;
    static const std::regex sm("sm_([0-9]{2,3})a?");
    std::smatch match;
    std::string text = value->is_string() ? value->get<std::string>() : "";
    int arch = 0;
    if (value->is_number_integer()) arch = value->get<int>();
    else if (std::regex_match(text, match, sm)) arch = std::stoi(match[1]);
    if (arch < 75 || arch > 121)
        r.fail("arch", "expected \"auto\", \"sm_XX\" or XX with XX in 75..121, got " + shown(*value));
    return arch;
}

}  // namespace

document parse_document(std::string_view text, std::string source) {
    try {
        return {json::parse(text), std::move(source)};
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
    }
}

document load_document(const std::string& path) {
    if (path.empty())
        return parse_document(embedded_file("configs/hidden_layer.json"),
                              "<embedded configs/hidden_layer.json>");
    std::string text;
    try {
        text = fs::read_file(path);
    } catch (const error& e) {
        throw error(error_kind::usage, e.what());  // a missing config is a usage error (exit 2)
    }
    return parse_document(text, path);
}

pipeline from_json(const document& doc) {
    const std::string& src = doc.source;
    object_reader r(doc.json, "", src,
                    {"name", "n", "dtype", "inputs", "stages", "fusion", "launch", "compile",
                     "measure", "tolerance", "seed", "sweep", "description"});
    pipeline p;
    p.name = r.string("name", std::nullopt);
    if (!is_identifier(p.name))
        r.fail("name", "expected a C identifier (it names the kernels), got \"" + p.name + "\"");
    (void)r.string("description", std::string());
    p.n = r.integer("n", 1, 1LL << 40, std::nullopt);
    p.type = r.choice<dtype>("dtype", {{"float32", dtype::float32}, {"float64", dtype::float64}},
                             dtype::float32);

    const json& inputs = r.require("inputs", "an object of input arrays");
    if (!inputs.is_object() || inputs.empty())
        r.fail("inputs", "expected an object with at least one input, got " + shown(inputs));
    for (const auto& [name, spec] : inputs.items()) {
        const std::string path = "inputs." + name;
        if (!is_identifier(name) || is_reserved(name))
            r.fail_at(path, "expected a C identifier that is not a reserved name, got \"" + name + "\"");
        p.inputs.push_back(read_input(name, spec, path, src));
    }

    const json& stages = r.require("stages", "a list of stages");
    if (!stages.is_array() || stages.empty())
        r.fail("stages", "expected a list with at least one stage, got " + shown(stages));
    for (std::size_t i = 0; i < stages.size(); ++i)
        p.stages.push_back(read_stage(stages[i], i, src, p.inputs));

    p.fuse = r.choice<fusion>("fusion", {{"fused", fusion::fused}, {"separate", fusion::separate}},
                              fusion::fused);

    if (const json* launch = r.find("launch")) {
        object_reader l(*launch, "launch", src, {"block", "vector_width", "grid"});
        p.launch.block = static_cast<int>(l.integer("block", 32, 1024, 256));
        if (p.launch.block % 32 != 0)
            l.fail("block", "expected a multiple of 32 in 32..1024, got " + std::to_string(p.launch.block));
        if (const json* width = l.find("vector_width"); width && !(width->is_string() && *width == "auto")) {
            if (!width->is_number_integer() || (*width != 1 && *width != 2 && *width != 4))
                l.fail("vector_width", "expected 1, 2, 4 or \"auto\", got " + shown(*width));
            p.launch.vector_width = width->get<int>();
        }
        if (const json* grid = l.find("grid"); grid && !(grid->is_string() && *grid == "auto"))
            p.launch.grid = l.integer("grid", 1, (1LL << 31) - 1, std::nullopt);
    }

    if (const json* compile = r.find("compile")) {
        object_reader c(*compile, "compile", src, {"fast_math", "arch", "options"});
        p.compile.fast_math = c.boolean("fast_math", false);
        p.compile.arch = read_arch(c);
        if (const json* options = c.find("options")) {
            if (!options->is_array()) c.fail("options", "expected a list of strings, got " + shown(*options));
            for (std::size_t i = 0; i < options->size(); ++i) {
                if (!(*options)[i].is_string())
                    c.fail_at("compile.options[" + std::to_string(i) + "]",
                              "expected a string, got " + shown((*options)[i]));
                p.compile.options.push_back((*options)[i].get<std::string>());
            }
        }
    }

    if (const json* measure = r.find("measure")) {
        object_reader m(*measure, "measure", src, {"warmup", "repeat"});
        p.measure.warmup = static_cast<int>(m.integer("warmup", 0, 10000, 3));
        p.measure.repeat = static_cast<int>(m.integer("repeat", 1, 100000, 50));
    }

    if (const json* tol = r.find("tolerance")) {
        object_reader t(*tol, "tolerance", src, {"rtol", "atol"});
        tolerance chosen = default_tolerance(p);
        chosen.rtol = t.number("rtol", chosen.rtol);
        chosen.atol = t.number("atol", chosen.atol);
        if (chosen.rtol < 0) t.fail("rtol", "expected a number ≥ 0, got " + shown(chosen.rtol));
        if (chosen.atol < 0) t.fail("atol", "expected a number ≥ 0, got " + shown(chosen.atol));
        p.tol = chosen;
    }

    p.seed = static_cast<std::uint64_t>(r.integer("seed", 0, std::numeric_limits<long long>::max(), 1));
    return p;
}

tolerance default_tolerance(const pipeline& p) {
    const bool exp_formula = std::any_of(p.stages.begin(), p.stages.end(), [](const stage& s) {
        return s.op == op_kind::activate && s.formula == tanh_formula::exp;
    });
    // rtol covers a few ulps of tanh and the two roundings before it. The exp formula's error is
    // absolute (e^x − e^−x cancels near 0): atol of a few ulps of 1.0 admits that and nothing
    // more; the report still shows its thousands of ulps, and NaN always fails.
    if (p.type == dtype::float64) return {1e-13, exp_formula ? 1e-15 : 0.0};
    if (p.compile.fast_math) return {2e-3, 1e-6};  // tanh.approx.f32: 2^-11 relative
    return {4e-6, exp_formula ? 6e-7 : 0.0};
}

std::string_view to_string(dtype v) { return v == dtype::float32 ? "float32" : "float64"; }
std::string_view to_string(fusion v) { return v == fusion::fused ? "fused" : "separate"; }
std::string_view to_string(tanh_formula v) { return v == tanh_formula::builtin ? "builtin" : "exp"; }
std::string_view to_string(op_kind v) {
    switch (v) {
        case op_kind::normalize: return "normalize";
        case op_kind::weigh: return "weigh";
        case op_kind::activate: return "activate";
    }
    return "?";
}
std::size_t element_size(dtype v) { return v == dtype::float32 ? 4 : 8; }

int effective_vector_width(const pipeline& p) {
    if (p.launch.vector_width != 0) return p.launch.vector_width;
    return static_cast<int>(16 / element_size(p.type));
}

std::string variant_label(const pipeline& p) {
    std::string label = std::string(to_string(p.fuse)) + " " + std::string(to_string(p.type));
    for (const auto& s : p.stages)
        if (s.op == op_kind::activate) label += " tanh=" + std::string(to_string(s.formula));
    label += " block=" + std::to_string(p.launch.block) +
             " vec=" + std::to_string(effective_vector_width(p));
    if (p.launch.grid) label += " grid=" + std::to_string(*p.launch.grid);
    if (p.compile.fast_math) label += " fast-math";
    return label;
}

}  // namespace kjit::config
