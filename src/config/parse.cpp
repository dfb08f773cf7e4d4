// JSON → validated pipeline. Every check throws one line: "SOURCE: key.path: expected …, got …".
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <functional>
#include <set>

#include "config/config.hpp"
#include "config/ops.hpp"
#include "config/reader.hpp"
#include "expr/functions.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::config {

namespace detail {

bool is_identifier(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

namespace {
/// The expression with a caret under `column`, as two indented lines; a long expression is cut
/// to a window around the column.
std::string caret_lines(const std::string& text, std::size_t column) {
    constexpr std::size_t width = 72;
    std::size_t first = 0;
    std::size_t at = std::min(column == 0 ? 0 : column - 1, text.size());
    if (text.size() > width && at > width / 2) first = std::min(at - width / 2, text.size() - width);
    std::string shown_text = text.substr(first, width);
    for (char& c : shown_text)
        if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    const std::string before = first > 0 ? "..." : "", after = first + width < text.size() ? "..." : "";
    return "    " + before + shown_text + after + "\n    " + std::string(before.size() + at - first, ' ') + "^";
}
}  // namespace

expr::tree parse_expression(const object_reader& r, const std::string& key, const expr::scope& names) {
    const std::string text = r.string(key, std::nullopt);
    try {
        return expr::parse(text, names);
    } catch (const expr::parse_error& e) {
        r.fail(key, std::string(e.what()) + " (column " + std::to_string(e.column()) + ")\n" +
                        caret_lines(text, e.column()));
    }
}

}  // namespace detail

namespace {

using json = json_value;
using detail::is_identifier;
using detail::object_reader;
using detail::parse_expression;
using detail::quoted_list;
using detail::shown;

// Input and param names become kernel parameters beside the kernels' own parameters and types, CUDA's
// built-ins and the math functions the expressions call: none of those may be shadowed. Every other
// name the templates use starts with kjit (their locals too), which no user name may.
bool is_reserved(const std::string& name) {
    static const std::set<std::string, std::less<>> reserved{
        // the expression language's flowing value, and the kernels' vocabulary: their types, load
        // and store, the output and the sizes
        "x", "real", "store_t", "vec", "load", "store", "out", "n", "rows", "cols",
        // CUDA built-ins and types
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "half", "float2", "float4", "double2",
        "size_t", "nullptr", "true", "false", "NULL",
        // C++ keywords
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
        "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
        "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
        "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "float", "for", "friend",
        "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "requires",
        "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch",
        "template", "this", "thread_local", "throw", "try", "typedef", "typeid", "typename", "union", "unsigned",
        "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
    if (reserved.count(name) || expr::is_cuda_function_name(name) || name.starts_with("__") || name.starts_with("kjit"))
        return true;
    // s<digits>_… are the scalars of op stages, tmp<digits> the intermediate arrays.
    for (const std::string_view prefix : {"s", "tmp"}) {
        if (!name.starts_with(prefix)) continue;
        std::size_t i = prefix.size();
        while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
        if (i > prefix.size() && (i == name.size() || (prefix == "s" && name[i] == '_'))) return true;
    }
    return false;
}

input_spec read_input(const std::string& name, const json& value, const std::string& path,
                      const std::string& source) {
    object_reader r(value, path, source, {"fill", "low", "high", "round", "mean", "std", "value", "per"});
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
    in.per_column = r.choice<bool>("per", {{"element", false}, {"column", true}}, false);
    return in;
}

std::vector<std::string> input_names(const std::vector<input_spec>& inputs) {
    std::vector<std::string> names;
    for (const auto& in : inputs) names.push_back(in.name);
    return names;
}

std::vector<std::string> op_names(const op_library& ops, bool activations_only) {
    std::vector<std::string> names;
    if (!activations_only) names = {"map", "reduce", "activate"};
    for (const auto& [name, op] : ops)
        if (!activations_only || op.activation) names.push_back(name);
    return names;
}

/// A stage whose op is neither the library's nor map or reduce: a kernel family's own (such as
/// a transpose), which its family validates; an op no family has is refused there.
stage read_family_op(const json& value, std::size_t index, const std::string& source, const pipeline& p) {
    stage s;
    s.op = value.at("op").get<std::string>();
    s.family_op = true;
    s.kernel = s.exact = expr::parse("x", expr::scope{});
    s.options = value;
    s.options.erase("op");
    if (const auto input = s.options.find("input"); input != s.options.end()) {
        const std::string path = "stages[" + std::to_string(index) + "].input";
        if (index > 0) throw config_error(source, path, "only stages[0] names an input; later stages read the previous result");
        if (!input->is_string() || !find_input(p, input->get<std::string>()))
            throw config_error(source, path, "expected the name of an input (" + quoted_list(input_names(p.inputs)) +
                                                 ") for the first stage to read, got " + shown(*input));
        s.input = input->get<std::string>();
        s.options.erase(input);
    } else if (index == 0) {
        throw config_error(source, "stages[0].input", "missing; the first stage must name the input x starts from (one of " +
                                                          quoted_list(input_names(p.inputs)) + ")");
    }
    return s;
}

/// Reads stages[index] into trees bound to the pipeline's inputs, scalars and the row values of
/// earlier reduce stages (`row_names`, to which a reduce adds its own); numbers given to an op
/// become scalars of `p` named s<index>_<param>.
stage read_stage(const json& value, std::size_t index, bool last, const std::string& source, pipeline& p,
                 std::size_t user_params, const op_library& ops, std::vector<std::string>& row_names) {
    const std::string path = "stages[" + std::to_string(index) + "]";
    if (!value.is_object()) throw config_error(source, path, "expected an object, got " + shown(value));
    const auto names = input_names(p.inputs);
    std::vector<std::string> param_names;
    for (std::size_t i = 0; i < user_params; ++i) param_names.push_back(p.scalars[i].name);

    // Which op, and so which keys the stage may have.
    const auto op_value = value.find("op");
    if (op_value == value.end() || !op_value->is_string())
        throw config_error(source, path + ".op",
                           (op_value == value.end() ? std::string("missing; expected") : "expected") + " one of " +
                               quoted_list(op_names(ops, false)) +
                               (op_value == value.end() ? "" : ", got " + shown(*op_value)));
    stage s;
    s.op = op_value->get<std::string>();
    const op_definition* op = nullptr;
    std::vector<std::string> allowed{"op", "input"};
    if (s.op == "map") {
        allowed.push_back("expr");
    } else if (s.op == "reduce") {
        allowed.insert(allowed.end(), {"fn", "as", "expr", "formula"});
    } else if (s.op == "activate") {
        const auto fn = value.find("fn");
        const std::string chosen = fn == value.end() ? "tanh" : fn->is_string() ? fn->get<std::string>() : "";
        const auto found = ops.find(chosen);
        if (found == ops.end() || !found->second.activation)
            throw config_error(source, path + ".fn", "expected one of " + quoted_list(op_names(ops, true)) +
                                                       ", got " + shown(fn == value.end() ? json() : *fn));
        op = &found->second;
        allowed.push_back("fn");
    } else {
        const auto found = ops.find(s.op);
        if (found == ops.end()) return read_family_op(value, index, source, p);
        op = &found->second;
    }
    if (op) {
        s.op = op->name;
        allowed.push_back("formula");
        for (const auto& param : op->params) allowed.push_back(param.name);
    }
    object_reader r(value, path, source, allowed);
    const auto input_name = [&](const std::string& key, const std::string& why) {
        const std::string name = r.string(key, std::nullopt);
        if (std::find(names.begin(), names.end(), name) == names.end())
            r.fail(key, "expected the name of an input (" + quoted_list(names) + ")" + why + ", got \"" + name + "\"");
        return name;
    };

    if (index == 0 && r.find("input")) {
        s.input = input_name("input", " for the first stage to read");
    } else if (index > 0 && r.find("input")) {
        r.fail("input", "only stages[0] names an input; later stages read the previous result");
    }

    const expr::scope scope{names, param_names, row_names};
    if (s.op == "reduce") {
        if (!p.shape)
            r.fail("op", "\"reduce\" combines the elements of each row: the config needs \"shape\": [rows, cols] "
                         "instead of \"n\"");
        s.reduce = r.choice<reduction>("fn", {{"max", reduction::max}, {"min", reduction::min}, {"sum", reduction::sum},
                                              {"mean", reduction::mean}},
                                       std::nullopt);
        s.kernel = s.exact = r.find("expr") ? parse_expression(r, "expr", scope) : expr::parse("x", scope);
        if (r.find("formula")) {  // paired with its max, and checked, once every stage is read
            const bool online = r.choice<bool>("formula", {{"classic", false}, {"online", true}}, std::nullopt);
            if (online && s.reduce != reduction::sum)
                r.fail("formula", "\"online\" computes a sum of exp(v - m) in one pass with the max m of v: it is for "
                                  "fn \"sum\", got \"" + std::string(to_string(s.reduce)) + "\"");
            s.formula = online ? "online" : "classic";
        }
        if (r.find("as")) {
            s.as = r.string("as", std::nullopt);
            if (!is_identifier(s.as) || is_reserved(s.as))
                r.fail("as", "expected a C identifier that is not a reserved name, got \"" + s.as + "\"");
            const auto taken = [&](const std::vector<std::string>& list) {
                return std::find(list.begin(), list.end(), s.as) != list.end();
            };
            if (taken(names)) r.fail("as", "\"" + s.as + "\" is an input already; a row value needs its own name");
            if (taken(param_names)) r.fail("as", "\"" + s.as + "\" is a param already; a row value needs its own name");
            if (taken(row_names))
                r.fail("as", "\"" + s.as + "\" names an earlier stage's row value already; a row value needs its own name");
            row_names.push_back(s.as);
        } else if (!last) {
            r.fail("as", "missing; a reduce before the last stage must name its row value (e.g. \"as\": \"m\") for "
                         "later stages to use");
        }
    } else if (!op) {
        s.kernel = s.exact = parse_expression(r, "expr", scope);
    } else {
        const op_formula* formula = &op->formulas.front();
        if (const json* chosen = r.find("formula")) {
            std::vector<std::string> formula_names;
            for (const auto& f : op->formulas) formula_names.push_back(f.name);
            if (formula->name.empty())
                r.fail("formula", "op \"" + op->name + "\" has one form; there is no formula to choose");
            const auto found = std::find_if(op->formulas.begin(), op->formulas.end(),
                                            [&](const op_formula& f) { return *chosen == f.name; });
            if (found == op->formulas.end())
                r.fail("formula", "expected one of " + quoted_list(formula_names) + ", got " + shown(*chosen));
            formula = &*found;
        }
        s.formula = formula->name;
        s.atol = formula->atol;
        s.atol_ulps = formula->atol_ulps;
        std::map<std::string, expr::binding> bindings;
        for (const auto& param : op->params) {
            const json* given = r.find(param.name);
            if (param.is_input) {
                bindings[param.name] = {expr::name_kind::array, input_name(param.name, "")};
            } else if (given && given->is_string()) {
                const std::string name = given->get<std::string>();
                if (std::find(param_names.begin(), param_names.end(), name) == param_names.end())
                    r.fail(param.name, "expected a number" +
                                           (param_names.empty() ? std::string()
                                                                : " or the name of a param (" + quoted_list(param_names) + ")") +
                                           ", got \"" + name + "\"");
                bindings[param.name] = {expr::name_kind::scalar, name};
            } else {
                const double number = r.number(param.name, param.fallback);
                if (param.nonzero && number == 0) r.fail(param.name, "expected a nonzero number, got 0");
                const std::string name = "s" + std::to_string(index) + "_" + param.name;
                p.scalars.push_back({name, number});
                bindings[param.name] = {expr::name_kind::scalar, name};
            }
        }
        s.kernel = expr::rebind(formula->tree, bindings);
        s.exact = expr::rebind(op->exact, bindings);
    }
    expr::used_names used;
    expr::collect_names(s.kernel, used);
    expr::collect_names(s.exact, used);
    if (index == 0 && used.flowing && s.input.empty())
        r.fail("input", "missing; the first stage uses x, so it must name the input x starts from (one of " +
                            quoted_list(names) + ")");
    s.kernel_is_exact = expr::to_text(s.kernel) == expr::to_text(s.exact);
    return s;
}

std::optional<int> read_arch(const object_reader& r) {
    const json* value = r.find("arch");
    if (value == nullptr || (value->is_string() && value->get<std::string>() == "auto"))
        return std::nullopt;
    const std::optional<int> arch = value->is_number_integer() ? parse_arch(value->dump())
                                    : value->is_string()        ? parse_arch(value->get<std::string>())
                                                                : std::nullopt;
    if (!arch) r.fail("arch", "expected \"auto\" or one of " + known_arch_list() + ", got " + shown(*value));
    return arch;
}

}  // namespace

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
                top.key = parsed.get<std::string>();
                if (!top.keys.insert(top.key).second)
                    throw config_error(m_source, path(), "duplicate key (JSON would keep only the last)");
                break;
            }
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                m_frames.pop_back();
                element_done();
                break;
            case json::parse_event_t::value: element_done(); break;
        }
        return true;
    }
    explicit json_path_tracker(const std::string& source) : m_source(source) {}

private:
    static constexpr int k_max_depth = 64;
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
                    {"name", "n", "shape", "dtype", "inputs", "params", "ops", "stages", "fusion", "launch",
                     "compile", "measure", "tolerance", "seed", "sweep", "description"});
    pipeline p;
    p.name = r.string("name", std::nullopt);
    if (!is_identifier(p.name))
        r.fail("name", "expected a C identifier (it names the kernels), got \"" + p.name + "\"");
    (void)r.string("description", std::string());
    if (const json* shape = r.find("shape")) {
        if (r.find("n")) r.fail("n", "give either \"n\" (1-D) or \"shape\": [rows, cols] (2-D), not both");
        if (!shape->is_array() || shape->size() != 2 || !(*shape)[0].is_number_integer() ||
            !(*shape)[1].is_number_integer() || (*shape)[0].get<long long>() < 1 || (*shape)[1].get<long long>() < 1)
            r.fail("shape", "expected [rows, cols], two integers ≥ 1, got " + shown(*shape));
        const row_shape given{(*shape)[0].get<long long>(), (*shape)[1].get<long long>()};
        if (given.rows > (1LL << 40) / given.cols)
            r.fail("shape", "expected at most 2^40 elements in all, got " + shown(*shape));
        p.shape = given;
        p.n = given.rows * given.cols;
    } else {
        p.n = r.integer("n", 1, 1LL << 40, std::nullopt);
    }
    p.type = r.choice<dtype>("dtype",
                             {{"float32", dtype::float32}, {"float64", dtype::float64},
                              {"float16", dtype::float16}, {"bfloat16", dtype::bfloat16}},
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

    if (const json* params = r.find("params")) {
        if (!params->is_object()) r.fail("params", "expected an object of named numbers, got " + shown(*params));
        std::vector<std::string> keys;
        for (const auto& item : params->items()) keys.push_back(item.key());
        object_reader numbers(*params, "params", src, keys);
        for (const std::string& name : keys) {
            if (!is_identifier(name) || is_reserved(name))
                r.fail_at("params." + name, "expected a C identifier that is not a reserved name, got \"" + name + "\"");
            if (find_input(p, name))
                r.fail_at("params." + name, "\"" + name + "\" is an input already; a param needs its own name");
            p.scalars.push_back({name, numbers.number(name, std::nullopt)});
        }
    }
    const std::size_t user_params = p.scalars.size();

    op_library config_ops;
    if (const json* ops = r.find("ops")) config_ops = read_op_library(*ops, src, "ops", builtin_ops());
    config_ops.insert(builtin_ops().begin(), builtin_ops().end());

    const json& stages = r.require("stages", "a list of stages");
    if (!stages.is_array() || stages.empty())
        r.fail("stages", "expected a list with at least one stage, got " + shown(stages));
    std::vector<std::string> row_names;
    for (std::size_t i = 0; i < stages.size(); ++i)
        p.stages.push_back(read_stage(stages[i], i, i + 1 == stages.size(), src, p, user_params, config_ops, row_names));

    p.fuse = r.choice<fusion>("fusion", {{"fused", fusion::fused}, {"separate", fusion::separate}},
                              fusion::fused);

    if (const json* launch = r.find("launch")) {
        if (!launch->is_object()) r.fail("launch", "expected an object, got " + shown(*launch));
        std::vector<std::string> given;  // which keys belong to the family is the family's to say
        for (const auto& item : launch->items()) given.push_back(item.key());
        object_reader l(*launch, "launch", src, given);
        p.launch.given = *launch;
        p.launch.warp_per_row = l.choice<bool>("row_mapping", {{"block", false}, {"warp", true}}, false);
        using cache = launch_spec::row_cache;
        p.launch.cache = l.choice<cache>(
            "row_cache", {{"values", cache::values}, {"inputs", cache::inputs}, {"none", cache::none}, {"shared", cache::shared}},
            cache::values);
        p.launch.streaming = l.boolean("streaming", false);
        if (const json* least = l.find("min_blocks_per_sm"); least && !(least->is_string() && *least == "auto"))
            p.launch.min_blocks_per_sm = static_cast<int>(l.integer("min_blocks_per_sm", 1, 32, std::nullopt));
        if (const json* cluster = l.find("cluster"); cluster && !(cluster->is_string() && *cluster == "auto")) {
            if (!cluster->is_number_integer() || !(*cluster == 1 || *cluster == 2 || *cluster == 4 || *cluster == 8))
                l.fail("cluster", "expected 1, 2, 4, 8 or \"auto\", got " + shown(*cluster));
            p.launch.cluster = cluster->get<int>();
            p.launch.cluster_auto = false;
        }
        if (const json* block = l.find("block"); block && !(block->is_string() && *block == "auto")) {
            p.launch.block = static_cast<int>(l.integer("block", 32, 1024, 256));
            if (p.launch.block % 32 != 0)
                l.fail("block", "expected a multiple of 32 in 32..1024 or \"auto\", got " + std::to_string(p.launch.block));
            p.launch.block_auto = false;
        }
        if (const json* width = l.find("vector_width"); width && !(width->is_string() && *width == "auto")) {
            // At most 32 bytes travel together (two 16-byte loads), and at most 8 elements.
            const int widest = std::min(8, static_cast<int>(32 / element_size(p.type)));
            std::string allowed;
            for (int w = 1; w <= widest; w *= 2) allowed += std::to_string(w) + ", ";
            if (!width->is_number_integer() || *width < 1 || *width > widest || (width->get<int>() & (width->get<int>() - 1)))
                l.fail("vector_width", "expected " + allowed + "or \"auto\" for " + std::string(to_string(p.type)) +
                                           ", got " + shown(*width));
            p.launch.vector_width = width->get<int>();
        }
        if (const json* grid = l.find("grid"); grid && grid->is_string() && *grid == "resident")
            p.launch.grid_resident = true;
        else if (grid && !(grid->is_string() && *grid == "auto")) {
            if (!grid->is_number_integer())
                l.fail("grid", "expected a number of blocks, \"auto\" or \"resident\", got " + shown(*grid));
            p.launch.grid = l.integer("grid", 1, (1LL << 31) - 1, std::nullopt);
        }
    }

    if (const json* compile = r.find("compile")) {
        object_reader c(*compile, "compile", src, {"fast_math", "arch", "options", "method", "effort"});
        p.compile.fast_math = c.boolean("fast_math", false);
        p.compile.path = c.choice<compile_path>("method", {{"nvrtc", compile_path::nvrtc}, {"nvjitlink", compile_path::nvjitlink}},
                                                compile_path::nvrtc);
        p.compile.effort = c.choice<compile_effort>("effort",
                                                    {{"default", compile_effort::full}, {"min", compile_effort::min},
                                                     {"mid", compile_effort::mid}, {"max", compile_effort::max}},
                                                    compile_effort::full);
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
        object_reader m(*measure, "measure", src, {"warmup", "repeat", "noise", "max_ms"});
        p.measure.warmup = static_cast<int>(m.integer("warmup", 0, 10000, 3));
        p.measure.repeat = static_cast<int>(m.integer("repeat", 1, 100000, 50));
        p.measure.noise = m.number("noise", p.measure.noise);
        if (!(p.measure.noise > 0 && p.measure.noise <= 1))
            m.fail("noise", "expected a relative error in (0, 1], e.g. 0.005 for 0.5 %, got " + shown(p.measure.noise));
        p.measure.max_ms = m.number("max_ms", p.measure.max_ms);
        if (!(p.measure.max_ms >= 0 && p.measure.max_ms <= 3.6e6))
            m.fail("max_ms", "expected milliseconds in 0..3600000, got " + shown(p.measure.max_ms));
    }

    if (const json* tol = r.find("tolerance")) {
        object_reader t(*tol, "tolerance", src, {"rtol", "atol", "rounding"});
        tolerance chosen = default_tolerance(p);
        chosen.rtol = t.number("rtol", chosen.rtol);
        chosen.atol = t.number("atol", chosen.atol);
        chosen.rounding = t.number("rounding", chosen.rounding);
        if (chosen.rounding < 0) t.fail("rounding", "expected a number ≥ 0, got " + shown(chosen.rounding));
        if (chosen.rtol < 0) t.fail("rtol", "expected a number ≥ 0, got " + shown(chosen.rtol));
        if (chosen.atol < 0) t.fail("atol", "expected a number ≥ 0, got " + shown(chosen.atol));
        p.tol = chosen;
    }

    p.seed = static_cast<std::uint64_t>(r.integer("seed", 0, std::numeric_limits<long long>::max(), 1));
    if (const input_spec* first = find_input(p, p.stages.front().input); first && first->per_column)
        r.fail_at("stages[0].input", "x starts from an input of one value per element; \"" + p.stages.front().input +
                                         "\" has one per column");
    return p;
}

tolerance default_tolerance(const pipeline& p) {
    // rtol: a few ulps of the storage type, for the result's own rounding (float32 ≈ 32 ulps,
    // float16 ≈ 4, bfloat16 ≈ 4). atol: where a result underflows (below the smallest normal,
    // or float16's smallest subnormal). rounding: twice the compute type's unit roundoff, times
    // each element's error scale: what cancellation inside the expression may cost.
    tolerance tol;
    switch (p.type) {
        case dtype::float32: tol = {4e-6, 0x1p-126, 0}; break;
        case dtype::float64: tol = {1e-13, 0x1p-1022, 0}; break;
        case dtype::float16: tol = {4e-3, 0x1p-24, 0}; break;
        case dtype::bfloat16: tol = {3.2e-2, 0x1p-126, 0}; break;
    }
    const double unit = computes_in_double(p.type) ? 0x1p-53 : 0x1p-24;
    tol.rounding = 2 * unit;
    // A formula's own error beyond rounding, declared in the op file (the seed's tanh cancels
    // near 0; the tanh-approximated GELU is 4.7e-4 from the true one).
    for (const auto& s : p.stages) tol.atol = std::max({tol.atol, s.atol, s.atol_ulps * 2 * unit});
    if (p.compile.fast_math && !computes_in_double(p.type)) {  // tanh.approx.f32: 2^-11 relative
        tol.rtol = std::max(tol.rtol, 2e-3);
        tol.atol = std::max(tol.atol, 1e-6);
    }
    return tol;
}

std::string_view to_string(dtype v) {
    switch (v) {
        case dtype::float32: return "float32";
        case dtype::float64: return "float64";
        case dtype::float16: return "float16";
        case dtype::bfloat16: return "bfloat16";
    }
    return "?";
}
const std::vector<int>& known_archs() {
    // nvrtcGetSupportedArchs of CUDA 13.0 (a test keeps this list equal to it).
    static const std::vector<int> archs{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
    return archs;
}

std::string known_arch_list() {
    std::string text;
    for (int arch : known_archs()) text += (text.empty() ? "sm_" : ", sm_") + std::to_string(arch);
    return text;
}

std::optional<int> parse_arch(std::string_view text) {
    if (text.starts_with("sm_")) text.remove_prefix(3);
    if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    const int arch = std::stoi(std::string(text));
    const auto& archs = known_archs();
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) return std::nullopt;
    return arch;
}

std::string_view to_string(fusion v) { return v == fusion::fused ? "fused" : "separate"; }
std::string_view to_string(compile_effort v) {
    switch (v) {
        case compile_effort::full: return "default";
        case compile_effort::min: return "min";
        case compile_effort::mid: return "mid";
        case compile_effort::max: return "max";
    }
    return "?";
}
std::size_t element_size(dtype v) {
    switch (v) {
        case dtype::float32: return 4;
        case dtype::float64: return 8;
        case dtype::float16:
        case dtype::bfloat16: return 2;
    }
    return 0;
}
bool computes_in_double(dtype v) { return v == dtype::float64; }

std::string describe(const stage& s) {
    if (s.op == "map") return "map(" + expr::to_text(s.kernel) + ")";
    if (s.reduce != reduction::none) {
        const std::string of = expr::to_text(s.kernel);
        return "reduce " + std::string(to_string(s.reduce)) + (of == "x" ? "" : "(" + of + ")") +
               (s.as.empty() ? "" : " as " + s.as) + (s.formula == "online" ? ", online" : "");
    }
    return s.formula.empty() ? s.op : s.op + "=" + s.formula;
}

std::string describe_stages(const pipeline& p) {
    std::string text;
    for (const auto& s : p.stages) text += (text.empty() ? "" : " → ") + describe(s);
    return text;
}

const scalar_param* find_scalar(const pipeline& p, std::string_view name) {
    const auto found =
        std::find_if(p.scalars.begin(), p.scalars.end(), [&](const scalar_param& s) { return s.name == name; });
    return found == p.scalars.end() ? nullptr : &*found;
}

long long elements_of(const pipeline& p, const input_spec& in) { return in.per_column ? p.shape->cols : p.n; }

bool result_per_row(const pipeline& p) { return p.stages.back().reduce != reduction::none; }

long long output_count(const pipeline& p) { return result_per_row(p) ? p.shape->rows : p.n; }

const input_spec* find_input(const pipeline& p, std::string_view name) {
    const auto found = std::find_if(p.inputs.begin(), p.inputs.end(), [&](const input_spec& in) { return in.name == name; });
    return found == p.inputs.end() ? nullptr : &*found;
}

std::string_view to_string(reduction v) {
    switch (v) {
        case reduction::none: return "none";
        case reduction::max: return "max";
        case reduction::min: return "min";
        case reduction::sum: return "sum";
        case reduction::mean: return "mean";
    }
    return "none";
}

std::string_view to_string(launch_spec::row_cache v) {
    switch (v) {
        case launch_spec::row_cache::values: return "values";
        case launch_spec::row_cache::inputs: return "inputs";
        case launch_spec::row_cache::none: return "none";
        case launch_spec::row_cache::shared: return "shared";
    }
    return "values";
}

json_value grid_value(const launch_spec& launch) {
    return launch.grid ? json_value(*launch.grid) : launch.grid_resident ? json_value("resident") : json_value("auto");
}

std::string variant_label(const pipeline& p) {
    std::string label = std::string(to_string(p.fuse)) + " " + std::string(to_string(p.type));
    for (const auto& s : p.stages)
        if (!s.formula.empty()) label += " " + s.op + "=" + s.formula;
    label += " block=" + std::to_string(p.launch.block) +
             " vec=" + std::to_string(p.launch.vector_width);
    if (p.launch.grid) label += " grid=" + std::to_string(*p.launch.grid);
    if (p.launch.grid_resident) label += " grid=resident";
    if (p.launch.cluster > 1) label += " cluster=" + std::to_string(p.launch.cluster);
    if (p.launch.warp_per_row) label += " warp-per-row";
    if (p.launch.cache != launch_spec::row_cache::values) label += " row-cache=" + std::string(to_string(p.launch.cache));
    if (p.launch.min_blocks_per_sm) label += " min-blocks=" + std::to_string(p.launch.min_blocks_per_sm);
    if (p.launch.streaming) label += " streaming";
    // A family's own launch keys (a transpose's tile), as its resolve left them.
    static const std::set<std::string, std::less<>> parsed_here{"block", "vector_width", "grid", "cluster", "row_mapping",
                                                                "row_cache", "streaming", "min_blocks_per_sm"};
    for (const auto& [key, value] : p.launch.given.items())
        if (!parsed_here.count(key)) label += " " + key + "=" + value.dump();
    if (p.compile.fast_math) label += " fast-math";
    if (p.compile.path == compile_path::nvjitlink) label += " via-nvjitlink";
    if (p.compile.effort != compile_effort::full) label += " fast-compile=" + std::string(to_string(p.compile.effort));
    return label;
}

}  // namespace kjit::config
