// The stages and inputs of a config: each stage resolved into expression trees (a library op, a
// map, a reduce, or a family's own op), each input's fill rule, and which names a user may give.
#include <algorithm>
#include <set>

#include "config/config.hpp"
#include "config/ops.hpp"
#include "config/reader.hpp"
#include "expr/functions.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::config::detail {

// Input and param names become kernel parameters beside the kernels' own parameters and types, CUDA's
// built-ins and the math functions the expressions call: none of those may be shadowed. Every other
// name the templates use starts with kjit (their locals too), which no user name may.
bool is_reserved(const std::string& name) {
    static const std::set<std::string, std::less<>> reserved{
        // the kernels' vocabulary: their types, load and store, the output (the expression
        // language's own names are below)
        "real", "store_t", "vec", "load", "store", "out",
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
    if (reserved.count(name) || expr::is_language_name(name) || expr::is_cuda_function_name(name) ||
        name.starts_with("__") || name.starts_with("kjit"))
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

namespace {

/// fill "file": the file's path, resolved against the config's folder (absolute, so records name
/// the file that was read), and its header (or raw layout) checked now, so that emit and compile
/// report a bad file too.
void read_file_input(const object_reader& r, const std::filesystem::path& folder, input_spec& in) {
    for (const char* key : {"low", "high", "mean", "std", "value", "round"})
        if (r.find(key)) r.fail(key, "does not apply to fill \"file\": the file holds the values");
    const std::filesystem::path given = r.string("path", std::nullopt);
    if (given.empty()) r.fail("path", "expected the path of an .npy or raw file, got \"\"");
    in.path = input_path(folder, given);
    fs::note_read(in.path);
    const npy::element_type* raw = nullptr;
    if (r.find("format")) {
        const std::string format = r.string("format", std::nullopt);
        raw = npy::find_type(format);
        if (!raw) r.fail("format", "expected the raw file's element type, one of " + npy::type_names() + ", got " + shown(format));
    }
    try {
        in.file = raw ? npy::raw_layout(in.path, *raw) : npy::read_header(in.path);
    } catch (const error& e) {
        r.fail("path", e.what());
    }
}

}  // namespace

input_spec read_input(const std::string& name, const json& value, const std::string& path,
                      const std::string& source, const std::filesystem::path& folder) {
    object_reader r(value, path, source,
                    {"fill", "low", "high", "round", "sorted", "mean", "std", "value", "per", "shape", "path", "format"});
    input_spec in;
    in.name = name;
    in.fill = r.choice<fill_kind>("fill", {{"uniform", fill_kind::uniform},
                                           {"normal", fill_kind::normal},
                                           {"constant", fill_kind::constant},
                                           {"file", fill_kind::file}},
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
        case fill_kind::file: read_file_input(r, folder, in); break;
    }
    if (in.fill != fill_kind::file) only_for({"path", "format"}, "file");
    in.round = r.choice<rounding>(
        "round", {{"none", rounding::none}, {"floor", rounding::floor}, {"nearest", rounding::nearest}},
        rounding::none);
    in.sorted = r.boolean("sorted", false);
    in.per_column = r.choice<bool>("per", {{"element", false}, {"column", true}}, false);
    if (const json* shape = r.find("shape")) {
        const auto positive = [](const json& v) { return v.is_number_integer() && v.get<long long>() >= 1; };
        if (!shape->is_array() || shape->size() != 2 || !std::all_of(shape->begin(), shape->end(), positive))
            r.fail("shape", "expected [rows, cols], two integers ≥ 1, got " + shown(*shape));
        in.dims = {(*shape)[0].get<long long>(), (*shape)[1].get<long long>()};
        if (in.dims[0] > k_max_elements / in.dims[1]) r.fail("shape", "expected at most 2^40 elements in all, got " + shown(*shape));
        if (in.per_column) r.fail("shape", "an input has a shape of its own or one value per column, not both");
    }
    return in;
}

namespace {

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

/// The stage's "op", a string naming one of `ops` or map, reduce or activate (or a family's own,
/// which its family checks).
std::string read_op_name(const json& value, const std::string& path, const std::string& source, const op_library& ops) {
    const auto op = value.find("op");
    if (op != value.end() && op->is_string()) return op->get<std::string>();
    throw config_error(source, path + ".op",
                       (op == value.end() ? std::string("missing; expected") : "expected") + " one of " +
                           quoted_list(op_names(ops, false)) + (op == value.end() ? "" : ", got " + shown(*op)));
}

/// The op file's definition of `name`, or of the activation an "activate" stage names in "fn"
/// (tanh if none); nullptr where the file has no such op.
const op_definition* library_op(const std::string& name, const json& value, const std::string& path,
                                const std::string& source, const op_library& ops) {
    if (name != "activate") {
        const auto found = ops.find(name);
        return found == ops.end() ? nullptr : &found->second;
    }
    const auto fn = value.find("fn");
    const std::string chosen = fn == value.end() ? "tanh" : fn->is_string() ? fn->get<std::string>() : "";
    const auto found = ops.find(chosen);
    if (found == ops.end() || !found->second.activation)
        throw config_error(source, path + ".fn", "expected one of " + quoted_list(op_names(ops, true)) + ", got " +
                                                   shown(fn == value.end() ? json() : *fn));
    return &found->second;
}

/// The keys a stage of `op` may have (`library`: its definition, for an op of the op file).
std::vector<std::string> stage_keys(const std::string& op, const op_definition* library) {
    std::vector<std::string> keys{"op", "input"};
    if (op == "map") keys.push_back("expr");
    if (op == "reduce") keys.insert(keys.end(), {"fn", "as", "expr", "formula"});
    if (op == "activate") keys.push_back("fn");
    if (library) {
        keys.push_back("formula");
        for (const auto& param : library->params) keys.push_back(param.name);
    }
    return keys;
}

/// One stage's keys being read, and the names in scope there: the inputs, the config's own
/// params and the row values of earlier stages (which a reduce's "as" adds to).
struct stage_reader {
    const object_reader& r;
    pipeline& p;
    std::size_t index;
    std::vector<std::string> inputs, params;
    std::vector<std::string>& row_names;

    /// The input `key` names.
    [[nodiscard]] std::string input_name(const std::string& key, const std::string& why) const {
        const std::string name = r.string(key, std::nullopt);
        if (std::find(inputs.begin(), inputs.end(), name) == inputs.end())
            r.fail(key, "expected the name of an input (" + quoted_list(inputs) + ")" + why + ", got " + shown(name));
        return name;
    }
    [[nodiscard]] expr::scope scope() const {
        expr::scope in{inputs, params, row_names};
        in.has_shape = p.shape.has_value();
        return in;
    }
};

/// A reduce's "as": the name later stages read its row value by, which no input, param or earlier
/// row value has.
void read_row_value_name(const stage_reader& c, stage& s) {
    s.as = c.r.string("as", std::nullopt);
    if (!is_identifier(s.as) || is_reserved(s.as))
        c.r.fail("as", "expected a C identifier that is not a reserved name, got " + shown(s.as));
    const auto taken = [&](const std::vector<std::string>& list) {
        return std::find(list.begin(), list.end(), s.as) != list.end();
    };
    if (taken(c.inputs)) c.r.fail("as", "\"" + s.as + "\" is an input already; a row value needs its own name");
    if (taken(c.params)) c.r.fail("as", "\"" + s.as + "\" is a param already; a row value needs its own name");
    if (taken(c.row_names))
        c.r.fail("as", "\"" + s.as + "\" names an earlier stage's row value already; a row value needs its own name");
    c.row_names.push_back(s.as);
}

void read_reduce(const stage_reader& c, stage& s, bool last) {
    const object_reader& r = c.r;
    if (!c.p.shape)
        r.fail("op", "\"reduce\" combines the elements of each row: the config needs \"shape\": [rows, cols] "
                     "instead of \"n\"");
    s.reduce = r.choice<reduction>(
        "fn", {{"max", reduction::max}, {"min", reduction::min}, {"sum", reduction::sum}, {"mean", reduction::mean}},
        std::nullopt);
    s.kernel = s.exact = r.find("expr") ? parse_expression(r, "expr", c.scope()) : expr::parse("x", c.scope());
    if (r.find("formula")) {  // paired with its max, and checked, by the family's policy ("auto" is left to it)
        s.formula = r.choice<std::string>("formula", {{"auto", ""}, {"classic", "classic"}, {"online", "online"}}, std::nullopt);
        if (s.formula == "online" && s.reduce != reduction::sum)
            r.fail("formula", "\"online\" computes a sum of exp(v - m) in one pass with the max m of v: it is for "
                              "fn \"sum\", got \"" + std::string(to_string(s.reduce)) + "\"");
    }
    if (r.find("as")) {
        read_row_value_name(c, s);
    } else if (!last) {
        r.fail("as", "missing; a reduce before the last stage must name its row value (e.g. \"as\": \"m\") for "
                     "later stages to use");
    }
}

/// The formula of `op` the stage chooses, its first where it names none.
const op_formula& chosen_formula(const object_reader& r, const op_definition& op) {
    const json* chosen = r.find("formula");
    if (!chosen) return op.formulas.front();
    if (op.formulas.front().name.empty()) r.fail("formula", "op \"" + op.name + "\" has one form; there is no formula to choose");
    const auto found = std::find_if(op.formulas.begin(), op.formulas.end(), [&](const op_formula& f) { return *chosen == f.name; });
    if (found == op.formulas.end()) {
        std::vector<std::string> formula_names;
        for (const auto& f : op.formulas) formula_names.push_back(f.name);
        r.fail("formula", "expected one of " + quoted_list(formula_names) + ", got " + shown(*chosen));
    }
    return *found;
}

/// What a param of an op stands for in its trees: an input, a param of the config named by a
/// string, or a number, which becomes a scalar of its own (s<stage>_<param>).
expr::binding bind_param(const stage_reader& c, const op_param& param) {
    if (param.is_input) return {expr::name_kind::array, c.input_name(param.name, "")};
    const json* given = c.r.find(param.name);
    if (given && given->is_string()) {
        const std::string name = given->get<std::string>();
        if (std::find(c.params.begin(), c.params.end(), name) == c.params.end())
            c.r.fail(param.name, "expected a number" +
                                     (c.params.empty() ? std::string() : " or the name of a param (" + quoted_list(c.params) + ")") +
                                     ", got " + shown(name));
        return {expr::name_kind::scalar, name};
    }
    const double number = c.r.number(param.name, param.fallback);
    if (param.nonzero && number == 0) c.r.fail(param.name, "expected a nonzero number, got 0");
    const std::string name = "s" + std::to_string(c.index) + "_" + param.name;
    c.p.scalars.push_back({name, number});
    return {expr::name_kind::scalar, name};
}

/// A stage of the op file's `op`: its formula's tree and its exact one, with its params bound.
void read_library_op(const stage_reader& c, stage& s, const op_definition& op) {
    const op_formula& formula = chosen_formula(c.r, op);
    s.op = op.name;
    s.formula = formula.name;
    s.atol = formula.atol;
    s.atol_ulps = formula.atol_ulps;
    std::map<std::string, expr::binding> bindings;
    for (const auto& param : op.params) bindings[param.name] = bind_param(c, param);
    s.kernel = expr::rebind(formula.tree, bindings);
    s.exact = expr::rebind(op.exact, bindings);
}

}  // namespace

stage read_stage(const json& value, std::size_t index, bool last, const std::string& source, pipeline& p,
                 std::size_t user_params, const op_library& ops, std::vector<std::string>& row_names) {
    const std::string path = "stages[" + std::to_string(index) + "]";
    if (!value.is_object()) throw config_error(source, path, "expected an object, got " + shown(value));
    stage s;
    s.op = read_op_name(value, path, source, ops);
    const bool own_syntax = s.op == "map" || s.op == "reduce";
    const op_definition* op = own_syntax ? nullptr : library_op(s.op, value, path, source, ops);
    if (!own_syntax && !op) return read_family_op(value, index, source, p);

    const object_reader r(value, path, source, stage_keys(s.op, op));
    stage_reader c{r, p, index, input_names(p.inputs), {}, row_names};
    for (std::size_t i = 0; i < user_params; ++i) c.params.push_back(p.scalars[i].name);
    if (index == 0 && r.find("input")) {
        s.input = c.input_name("input", " for the first stage to read");
    } else if (index > 0 && r.find("input")) {
        r.fail("input", "only stages[0] names an input; later stages read the previous result");
    }
    if (s.op == "reduce") read_reduce(c, s, last);
    else if (op) read_library_op(c, s, *op);
    else s.kernel = s.exact = parse_expression(r, "expr", c.scope());

    expr::used_names used;
    expr::collect_names(s.kernel, used);
    expr::collect_names(s.exact, used);
    if (index == 0 && used.flowing && s.input.empty())
        r.fail("input", "missing; the first stage uses x, so it must name the input x starts from (one of " +
                            quoted_list(c.inputs) + ")");
    s.kernel_is_exact = expr::to_text(s.kernel) == expr::to_text(s.exact);
    return s;
}

}  // namespace kjit::config::detail
