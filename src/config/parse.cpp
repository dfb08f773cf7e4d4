// JSON → validated pipeline. Every check throws one line: "SOURCE: key.path: expected …, got …".
#include <algorithm>
#include <cmath>
#include <limits>

#include "config/config.hpp"
#include "config/ops.hpp"
#include "config/reader.hpp"
#include "util/error.hpp"

namespace kjit::config {

namespace detail {

bool is_identifier(const std::string& name) {
    if (name.empty() || name.size() > k_max_identifier || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
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
using detail::k_max_identifier;
using detail::shown;
using detail::is_reserved;
using detail::read_input;
using detail::read_stage;

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

std::optional<target> read_target(const object_reader& r) {
    const json* value = r.find("target");
    if (value == nullptr || (value->is_string() && value->get<std::string>() == "auto")) return std::nullopt;
    std::optional<target> named = value->is_string() ? named_target(value->get<std::string>()) : std::nullopt;
    if (!named) r.fail("target", "expected \"auto\" or one of " + known_target_list() + ", got " + shown(*value));
    return named;
}

/// A config with neither "n" nor "shape" takes them from its first file input's .npy shape.
void size_from_file(const object_reader& r, pipeline& p) {
    const auto from_file = std::find_if(p.inputs.begin(), p.inputs.end(), [](const input_spec& in) {
        return in.fill == fill_kind::file && !in.per_column && in.dims.empty();
    });
    if (from_file == p.inputs.end()) {
        (void)r.integer("n", 1, k_max_elements, std::nullopt);  // the usual "missing" error
        return;
    }
    const auto& shape = from_file->file.shape;
    if (shape.size() > 2)
        r.fail_at("inputs." + from_file->name + ".path", from_file->path.string() + " has " + std::to_string(shape.size()) +
                                                             " dimensions; give \"n\" or \"shape\" for it");
    // The bounds a size given as "n" or "shape" has, for one taken from a file.
    const long long count = from_file->file.count();
    if (count < 1 || count > k_max_elements || (shape.size() == 2 && (shape[0] < 1 || shape[1] < 1)))
        r.fail_at("inputs." + from_file->name + ".path", from_file->path.string() + " holds " + npy::shape_text(shape) +
                                                             " elements; the size it gives must be 1 to 2^40 elements, none of its "
                                                             "dimensions 0");
    if (shape.size() == 2) p.shape = row_shape{shape[0], shape[1]};
    p.n = count;
}

/// Every file holds as many elements as its input needs: n (or a shape's rows and cols), or cols
/// for one value per column.
void check_file_sizes(const object_reader& r, const pipeline& p) {
    for (const auto& in : p.inputs) {
        if (in.fill != fill_kind::file || (in.per_column && !p.shape)) continue;  // the family refuses the latter
        const long long needed = elements_of(p, in);
        const auto& shape = in.file.shape;
        const std::vector<long long> matrix = !in.dims.empty() ? in.dims
                                              : p.shape && !in.per_column ? std::vector<long long>{p.shape->rows, p.shape->cols}
                                                                          : std::vector<long long>{};
        const bool matrix_differs = !matrix.empty() && shape.size() == 2 && shape != matrix;
        if (in.file.count() == needed && !matrix_differs) continue;
        const std::string wanted = in.per_column      ? std::to_string(needed) + " (one per column)"
                                   : !in.dims.empty() ? npy::shape_text(in.dims) + " (its \"shape\")"
                                   : p.shape          ? npy::shape_text(matrix) + " (the shape)"
                                                      : std::to_string(needed) + " (n)";
        r.fail_at("inputs." + in.name + ".path", in.path.string() + ": holds " + npy::shape_text(shape) + " " +
                                                     std::string(in.file.type->name) + " elements; the pipeline needs " + wanted);
    }
}

/// In float compute (float32, float16, bfloat16 data), every param and every number of a stage's
/// expression must be a float: 1e39 would be inf, 5e-324 0, and NVRTC refuses such literals.
void check_numbers_fit(const object_reader& r, const pipeline& p, std::size_t user_params) {
    if (computes_in_double(p.type)) return;
    const std::string why = " does not fit float, the compute type of " + std::string(to_string(p.type)) +
                            " data (about 1.4e-45 to 3.4e38 in size): use float64, or a number a float holds";
    for (std::size_t k = 0; k < p.scalars.size(); ++k) {
        const auto& [name, value] = p.scalars[k];
        const float held = static_cast<float>(value);
        if (std::isfinite(value) && value != 0 && (std::isinf(held) || held == 0))
            r.fail_at(k < user_params ? "params." + name : "stages", "the param " + name + " = " + shown(json(value)) + why);
    }
    for (std::size_t i = 0; i < p.stages.size(); ++i)
        if (const expr::node* number = expr::number_outside_float(p.stages[i].kernel))
            r.fail_at("stages[" + std::to_string(i) + "]", "the number " + shown(json(number->number)) + why);
}

/// "shape": [rows, cols] (2-D) or "n" (1-D); neither where the first input's file gives them.
void read_size(const object_reader& r, pipeline& p) {
    if (const json* shape = r.find("shape")) {
        if (r.find("n")) r.fail("n", "give either \"n\" (1-D) or \"shape\": [rows, cols] (2-D), not both");
        if (!shape->is_array() || shape->size() != 2 || !(*shape)[0].is_number_integer() ||
            !(*shape)[1].is_number_integer() || (*shape)[0].get<long long>() < 1 || (*shape)[1].get<long long>() < 1)
            r.fail("shape", "expected [rows, cols], two integers ≥ 1, got " + shown(*shape));
        const row_shape given{(*shape)[0].get<long long>(), (*shape)[1].get<long long>()};
        if (given.rows > k_max_elements / given.cols)
            r.fail("shape", "expected at most 2^40 elements in all, got " + shown(*shape));
        p.shape = given;
        p.n = given.rows * given.cols;
    } else if (r.find("n")) {
        p.n = r.integer("n", 1, k_max_elements, std::nullopt);
    }
}

/// "inputs": the arrays, each a name of its own; files are read where the config's folder says.
void read_inputs(const object_reader& r, const std::string& src, const std::filesystem::path& folder, pipeline& p) {
    const json& inputs = r.require("inputs", "an object of input arrays");
    if (!inputs.is_object() || inputs.empty())
        r.fail("inputs", "expected an object with at least one input, got " + shown(inputs));
    for (const auto& [name, spec] : inputs.items()) {
        const std::string path = "inputs." + name;
        if (!is_identifier(name) || is_reserved(name))
            r.fail_at(path, "expected a C identifier that is not a reserved name, got " + shown(name));
        p.inputs.push_back(read_input(name, spec, path, src, folder));
    }
}

/// "stages", with the config's own "ops" beside the built-in ones.
void read_stages(const object_reader& r, const std::string& src, std::size_t user_params, pipeline& p) {
    op_library config_ops;
    if (const json* ops = r.find("ops")) config_ops = read_op_library(*ops, src, "ops", builtin_ops());
    config_ops.insert(builtin_ops().begin(), builtin_ops().end());
    const json& stages = r.require("stages", "a list of stages");
    if (!stages.is_array() || stages.empty())
        r.fail("stages", "expected a list with at least one stage, got " + shown(stages));
    std::vector<std::string> row_names;
    for (std::size_t i = 0; i < stages.size(); ++i)
        p.stages.push_back(read_stage(stages[i], i, i + 1 == stages.size(), src, p, user_params, config_ops, row_names));
}

/// "params": named numbers, each a name of its own.
void read_params(const object_reader& r, const json& params, const std::string& src, pipeline& p) {
    if (!params.is_object()) r.fail("params", "expected an object of named numbers, got " + shown(params));
    std::vector<std::string> keys;
    for (const auto& item : params.items()) keys.push_back(item.key());
    object_reader numbers(params, "params", src, keys);
    for (const std::string& name : keys) {
        if (!is_identifier(name) || is_reserved(name))
            r.fail_at("params." + name, "expected a C identifier that is not a reserved name, got " + shown(name));
        if (find_input(p, name))
            r.fail_at("params." + name, "\"" + name + "\" is an input already; a param needs its own name");
        p.scalars.push_back({name, numbers.number(name, std::nullopt)});
    }
}

/// "launch": the keys every family shares (block, vector_width, grid), read here; the whole object
/// kept as given, for the family to read its own keys.
void read_launch(const object_reader& r, const json& launch, const std::string& src, pipeline& p) {
    if (launch == "tuned")
        r.fail("launch", "\"tuned\" is the best point of a `kjit tune` on the GPU it ran on: `kjit run` looks it up "
                         "there; elsewhere give the launch as an object");
    if (!launch.is_object()) r.fail("launch", "expected an object or \"tuned\", got " + shown(launch));
    std::vector<std::string> given;  // which keys belong to the family is the family's to say
    for (const auto& item : launch.items()) given.push_back(item.key());
    object_reader l(launch, "launch", src, given);
    p.launch.given = launch;
    if (!l.leaves_auto("block")) {
        p.launch.block = static_cast<int>(l.integer("block", 32, 1024, 256));
        if (p.launch.block % 32 != 0)
            l.fail("block", "expected a multiple of 32 in 32..1024 or \"auto\", got " + std::to_string(p.launch.block));
        p.launch.block_auto = false;
    }
    if (const json* width = l.find("vector_width"); !l.leaves_auto("vector_width")) {
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
    else if (!l.leaves_auto("grid")) {
        if (!grid->is_number_integer())
            l.fail("grid", "expected a number of blocks, \"auto\" or \"resident\", got " + shown(*grid));
        p.launch.grid = l.integer("grid", 1, (1LL << 31) - 1, std::nullopt);
    }
}

/// compile.options: NVRTC options, none that names a file.
void read_compile_options(const object_reader& c, const json& options, pipeline& p) {
    if (!options.is_array()) c.fail("options", "expected a list of strings, got " + shown(options));
    for (std::size_t i = 0; i < options.size(); ++i) {
        if (!options[i].is_string())
            c.fail_at("compile.options[" + std::to_string(i) + "]",
                      "expected a string, got " + shown(options[i]));
        const std::string option = options[i].get<std::string>();
        // Options that name a file to read or write: a config must not reach outside
        // the kernel it describes (NVRTC's log would print what -include read).
        static constexpr std::string_view k_file_options[] = {
            "-include", "--pre-include", "-I", "--include-path", "-time", "--time", "-fdevice-time-trace",
            "--fdevice-time-trace", "-pch", "--pch", "-create-pch", "--create-pch", "-use-pch", "--use-pch"};
        for (const std::string_view refused : k_file_options)
            if (option.starts_with(refused))
                c.fail_at("compile.options[" + std::to_string(i) + "]",
                          shown(option) + " names a file for NVRTC to read or write; kjit passes only options "
                                          "that do not (headers come from the CUDA toolkit)");
        p.compile.options.push_back(option);
    }
}

/// "compile": fast math and the instructions it changes, float32 products' precision, the compile
/// path and effort, the architecture or target, NVRTC options.
void read_compile(const json& compile, const std::string& src, pipeline& p) {
    object_reader c(compile, "compile", src,
                    {"fast_math", "fp32_precision", "tanh", "exp", "arch", "target", "options", "method", "fast_compile", "effort"});
    p.compile.fast_math = c.boolean("fast_math", false);
    p.compile.tf32 = c.choice<bool>("fp32_precision", {{"ieee", false}, {"tf32", true}}, false);
    const auto spelled = [&](const char* key, const char* instruction) {
        const spelling s = c.choice<spelling>(
                key, {{"auto", spelling::automatic}, {"approx", spelling::approx}, {"precise", spelling::precise}},
                spelling::automatic);
        if (p.compile.fast_math && s == spelling::precise)
            c.fail(key, std::string("\"precise\" cannot hold under compile.fast_math, which makes every ") + key + " " +
                                instruction + "; drop one of the two");
        return s;
    };
    p.compile.tanh = spelled("tanh", "tanh.approx.f32");
    p.compile.exp = spelled("exp", "ex2.approx.f32");
    p.compile.path = c.choice<compile_path>("method", {{"nvrtc", compile_path::nvrtc}, {"nvjitlink", compile_path::nvjitlink}},
                                            compile_path::nvrtc);
    if (c.find("effort"))  // kjit 0.5's name, whose "max" read as the most optimization
        c.fail("effort", "renamed compile.fast_compile: \"off\" (was \"default\"), \"min\", \"mid\", \"max\" (the fastest "
                         "compile, the least optimized code)");
    p.compile.fast_compile = c.choice<fast_compile>("fast_compile",
                                                    {{"off", fast_compile::off}, {"min", fast_compile::min},
                                                     {"mid", fast_compile::mid}, {"max", fast_compile::max}},
                                                    fast_compile::off);
    p.compile.arch = read_arch(c);
    p.compile.target = read_target(c);
    if (p.compile.target && p.compile.arch && p.compile.target->arch != *p.compile.arch)
        c.fail("target", p.compile.target->name + " is sm_" + std::to_string(p.compile.target->arch) + ", but compile.arch is sm_" +
                             std::to_string(*p.compile.arch) + ": give one of the two");
    if (const json* options = c.find("options")) read_compile_options(c, *options, p);
}

/// "measure": warm-up, repeats, the noise to stop at, the time bound, transfers per call.
void read_measure(const json& measure, const std::string& src, pipeline& p) {
    object_reader m(measure, "measure", src, {"warmup", "repeat", "noise", "max_ms", "transfers"});
    p.measure.per_call_transfers = m.choice<bool>("transfers", {{"once", false}, {"per_call", true}}, false);
    p.measure.warmup = static_cast<int>(m.integer("warmup", 0, 10000, 3));
    p.measure.repeat = static_cast<int>(m.integer("repeat", 1, 100000, 50));
    p.measure.noise = m.number("noise", p.measure.noise);
    if (!(p.measure.noise > 0 && p.measure.noise <= 1))
        m.fail("noise", "expected a relative error in (0, 1], e.g. 0.005 for 0.5 %, got " + shown(p.measure.noise));
    p.measure.max_ms = m.number("max_ms", p.measure.max_ms);
    if (!(p.measure.max_ms >= 0 && p.measure.max_ms <= 3.6e6))
        m.fail("max_ms", "expected milliseconds in 0..3600000, got " + shown(p.measure.max_ms));
}

/// "tolerance": the check's bounds, from the dtype's defaults.
void read_tolerance(const json& tol, const std::string& src, pipeline& p) {
    object_reader t(tol, "tolerance", src, {"rtol", "atol", "rounding"});
    tolerance chosen = default_tolerance(p);
    chosen.rtol = t.number("rtol", chosen.rtol);
    chosen.atol = t.number("atol", chosen.atol);
    chosen.rounding = t.number("rounding", chosen.rounding);
    if (chosen.rounding < 0) t.fail("rounding", "expected a number ≥ 0, got " + shown(chosen.rounding));
    if (chosen.rtol < 0) t.fail("rtol", "expected a number ≥ 0, got " + shown(chosen.rtol));
    if (chosen.atol < 0) t.fail("atol", "expected a number ≥ 0, got " + shown(chosen.atol));
    p.tol = chosen;
}

}  // namespace

pipeline from_json(const document& doc) {
    const std::string& src = doc.source;
    object_reader r(doc.json, "", src,
                    {"name", "n", "shape", "dtype", "inputs", "params", "ops", "stages", "fusion", "launch",
                     "compile", "measure", "tolerance", "seed", "sweep", "tune", "description"});
    pipeline p;
    p.name = r.string("name", std::nullopt);
    if (!is_identifier(p.name))
        r.fail("name", "expected a C identifier of at most " + std::to_string(k_max_identifier) +
                           " characters (it names the kernels), got " + shown(p.name));
    (void)r.string("description", std::string());
    read_size(r, p);
    std::vector<std::pair<std::string, dtype>> dtypes;
    for (const dtype_info& d : dtype_table()) dtypes.emplace_back(d.name, d.type);
    p.type = r.choice<dtype>("dtype", dtypes, dtype::float32);

    read_inputs(r, src, doc.folder, p);
    if (p.n == 0) size_from_file(r, p);
    check_file_sizes(r, p);

    if (const json* params = r.find("params")) read_params(r, *params, src, p);
    const std::size_t user_params = p.scalars.size();

    read_stages(r, src, user_params, p);

    check_numbers_fit(r, p, user_params);

    p.fuse = r.choice<fusion>("fusion", {{"fused", fusion::fused}, {"separate", fusion::separate}},
                              fusion::fused);

    if (const json* launch = r.find("launch")) read_launch(r, *launch, src, p);
    if (const json* compile = r.find("compile")) read_compile(*compile, src, p);
    if (const json* measure = r.find("measure")) read_measure(*measure, src, p);
    if (const json* tol = r.find("tolerance")) read_tolerance(*tol, src, p);

    p.seed = static_cast<std::uint64_t>(r.integer("seed", 0, std::numeric_limits<long long>::max(), 1));
    if (const input_spec* first = find_input(p, p.stages.front().input); first && (first->per_column || !first->dims.empty()))
        r.fail_at("stages[0].input", "x starts from an input of one value per element; \"" + p.stages.front().input +
                                         (first->per_column ? "\" has one per column" : "\" has a shape of its own"));
    return p;
}

}  // namespace kjit::config
