#include "codegen/codegen.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "expr/functions.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::codegen {
namespace {

constexpr std::string_view k_template_folder = "kernel_templates/";
constexpr std::string_view k_template_suffix = ".cu.mustache";
/// The generated source's width, which wrapped lists, fitted expressions and wrapped comments keep
/// to (the golden test holds every line within it).
constexpr std::size_t k_width = 100;

/// The rendered source without the blank lines that mustache leaves where a section renders
/// nothing: none inside a function body (none of the templates' own blank lines is inside
/// braces), one at most between two definitions, and none at the end.
std::string with_tidy_blank_lines(const std::string& source) {
    std::string tidy;
    long depth = 0;
    std::size_t start = 0;
    bool after_blank = false;
    while (start < source.size()) {
        const std::size_t end = std::min(source.find('\n', start), source.size());
        const std::string_view line(source.data() + start, end - start);
        const bool blank = line.find_first_not_of(" \t") == std::string_view::npos;
        if (!(blank && (depth > 0 || after_blank))) tidy.append(line).push_back('\n');
        after_blank = blank;
        depth += std::count(line.begin(), line.end(), '{') - std::count(line.begin(), line.end(), '}');
        start = end + 1;
    }
    while (tidy.ends_with("\n\n")) tidy.pop_back();
    return tidy;
}

}  // namespace

template_set template_set::embedded() {
    template_set set;
    set.origin = "embedded";
    for (const auto& [path, text] : embedded_files())
        if (path.starts_with(k_template_folder) && path.ends_with(k_template_suffix))
            set.files.emplace(path.substr(k_template_folder.size()), std::string(text));
    return set;
}

template_set template_set::from_directory(const std::filesystem::path& dir) {
    template_set set = embedded();
    set.origin = dir.string();
    bool any = false;
    for (auto& [name, text] : set.files) {
        std::error_code ec;
        if (!std::filesystem::exists(dir / name, ec)) continue;
        try {
            text = fs::read_file(dir / name);
        } catch (const error& e) {
            throw error(error_kind::usage, std::string("--templates: ") + e.what());
        }
        any = true;
    }
    if (!any) {
        std::string names;
        for (const auto& [name, text] : set.files) names += (names.empty() ? "" : ", ") + name;
        throw error(error_kind::usage, "--templates: " + dir.string() + " holds none of kjit's templates (" + names + ")");
    }
    return set;
}

const std::string& template_set::text(std::string_view file) const {
    const auto found = files.find(file);
    if (found == files.end()) throw error(error_kind::usage, "no kernel template named " + std::string(file));
    return found->second;
}

std::string render(const template_set& templates, std::string_view file, const mu::data& data,
                   const std::vector<std::string>& kernels) {
    const std::string where = templates.origin + "/" + std::string(file);
    const auto check = [&](const mu::mustache& tmpl) {
        if (!tmpl.is_valid()) throw config_error(where, "", "template error: " + tmpl.error_message());
    };
    mu::mustache tmpl(templates.text(file));
    check(tmpl);
    tmpl.set_custom_escape([](const std::string& s) { return s; });  // C++, not HTML
    mu::data with_partials = data;
    for (const auto& [name, text] : templates.files) {
        const std::string partial = name.substr(0, name.size() - k_template_suffix.size());
        with_partials.set(partial, mu::partial([&text = text] { return text; }));
    }
    with_partials.set("template", std::string(file));
    const std::string source = with_tidy_blank_lines(tmpl.render(with_partials));
    check(tmpl);
    for (const auto& kernel : kernels)
        if (source.find("void " + kernel + "(") == std::string::npos)
            throw config_error(where, "", "template error: the rendered source defines no kernel '" + kernel +
                                              "(' (a mistyped placeholder such as {{kernel} renders as nothing)");
    return source;
}

expr::cuda_style style_of(const config::pipeline& p) {
    // Every position is below n (or is n): int when n fits, for 32-bit masks.
    return {config::computes_in_double(p.type), p.compile.fast_math, p.n <= std::numeric_limits<int>::max(),
            config::approximations_of(p)};
}

mu::data stage_steps(const config::pipeline& p, const std::vector<std::size_t>& indices) {
    mu::data steps{mu::data::type::list};
    for (std::size_t i : indices) {
        mu::data step;
        step.set("index", std::to_string(i));
        step.set("what", config::describe(p.stages[i]));
        step.set("code", expr::to_cuda(p.stages[i].kernel, style_of(p)));
        steps.push_back(step);
    }
    return steps;
}

void set_reduction_spelling(const config::pipeline& p, mu::data& data) {
    const bool f64 = config::computes_in_double(p.type);
    data.set("infinity", f64 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)");
    data.set("fmax", f64 ? "fmax" : "fmaxf");
    data.set("fmin", f64 ? "fmin" : "fminf");
    const expr::function_info& exp = *expr::find_function("exp");
    data.set("exp", std::string(f64 ? exp.cuda_double : config::approximates_exp(p) ? exp.cuda_fast : exp.cuda_float));
}

mu::data prologue_data(const config::pipeline& p, const std::string& label, int vector_width,
                       std::vector<std::string>& headers) {
    const config::dtype_info& spelled = config::info(p.type);
    if (!spelled.cuda_header.empty()) headers.emplace_back(spelled.cuda_header);
    mu::data data;
    data.set("name", p.name);
    data.set("label", label);
    mu::data listed{mu::data::type::list};
    for (const auto& header : headers) listed.push_back(mu::data("header", header));
    data.set("headers", listed);
    data.set("compute", config::computes_in_double(p.type) ? "double" : "float");
    data.set("storage", std::string(spelled.cuda_type));
    data.set("load", std::string(spelled.cuda_load));
    data.set("store", std::string(spelled.cuda_store));
    data.set("width", std::to_string(vector_width));
    data.set("vector_bytes", std::to_string(vector_width * config::element_size(p.type)));
    data.set("vectorized", flag(vector_width > 1));
    const auto used = [&](expr::binary_op op) {
        return std::any_of(p.stages.begin(), p.stages.end(), [op](const config::stage& s) { return s.kernel && expr::uses(s.kernel, op); });
    };
    // a % b is computed from a // b
    data.set("floor_div", flag(used(expr::binary_op::floor_div) || used(expr::binary_op::mod)));
    data.set("floor_mod", flag(used(expr::binary_op::mod)));
    const std::string bytes = std::to_string(vector_width * config::element_size(p.type));
    data.set("vector_note", vector_width == 1 ? "Each element is its own " + bytes + "-byte load or store"
                                              : std::to_string(vector_width) + " elements travel together as one " +
                                                    bytes + "-byte load or store");
    return data;
}

std::string print(const code& c, int indent) {
    if (!c.is_call) return c.text;
    std::vector<std::string> args;
    for (const auto& a : c.args) args.push_back(print(a, indent + 8));
    return c.text + "(" + wrapped(args, ",", indent + 8) + ")";
}

std::string wrapped(const std::vector<std::string>& items, const std::string& separator, int indent) {
    // The last item leaves room for what closes the list on its line (")", "));").
    constexpr std::size_t k_inline = 40, k_closing = 4;
    const std::string inline_list = joined(items, [](const std::string& item) { return item; }, separator + " ");
    if (inline_list.size() <= k_inline && inline_list.find('\n') == std::string::npos) return inline_list;
    const std::string margin(static_cast<std::size_t>(indent), ' ');
    std::string list;
    std::size_t column = 0;  // where the list's last line ends
    bool after_lines = false;  // the last item took several lines: the next starts a new one
    for (std::size_t i = 0; i < items.size(); ++i) {
        const bool last = i + 1 == items.size();
        const std::string item = items[i] + (last ? "" : separator);
        const std::size_t first_line = std::min(item.find('\n'), item.size());
        if (list.empty() || after_lines || column + 1 + first_line + (last ? k_closing : 0) > k_width) {
            list += "\n" + margin + item;
        } else {
            list += " " + item;
        }
        column = list.size() - list.rfind('\n') - 1;
        after_lines = first_line < item.size();
    }
    return list;
}

std::string reindented(const std::string& code, std::size_t column, std::size_t indent) {
    constexpr std::size_t k_continuation = 8;
    std::vector<std::size_t> contents;  // where the content of each open parenthesis starts
    std::string text;
    std::size_t at = column;  // the column of the next character
    for (std::size_t i = 0; i < code.size(); ++i) {
        const char c = code[i];
        if (c != '\n') {
            if (c == '(') contents.push_back(at + 1);
            if (c == ')' && !contents.empty()) contents.pop_back();
            text += c;
            ++at;
            continue;
        }
        if (!contents.empty() && code[i - 1] == '(')  // broken right after it
            contents.back() = (contents.size() > 1 ? contents[contents.size() - 2] : indent) + k_continuation;
        at = contents.empty() ? indent + k_continuation : contents.back();
        while (i + 1 < code.size() && code[i + 1] == ' ') ++i;
        text += "\n" + std::string(at, ' ');
    }
    return text;
}

namespace {

/// A place `fitted` may break a line: right after a binary operator, in the parenthesis that
/// opens at `group` (code.npos: none).
struct line_break {
    std::size_t at;  ///< the space after the operator, which the break replaces
    std::size_t group;
    std::size_t depth;
    int precedence;  ///< C's, lowest first: || 0, && 1, then |, ^, &, equality, order, shifts, +, *
};

/// The binary operators, as to_cuda writes them (a space either side), with their precedence.
int precedence_of(std::string_view op) {
    static const std::pair<std::string_view, int> k_ops[] = {
            {"||", 0}, {"&&", 1}, {"|", 2},  {"^", 3},  {"&", 4},  {"==", 5}, {"!=", 5}, {"<", 6},  {"<=", 6}, {">", 6},
            {">=", 6}, {"<<", 7}, {">>", 7}, {"+", 8},  {"-", 8},  {"*", 9},  {"/", 9},  {"%", 9}};
    for (const auto& [name, precedence] : k_ops)
        if (name == op) return precedence;
    return -1;  // not a binary operator
}

/// The places `code` may break: after the operators of each parenthesis's lowest precedence.
std::vector<line_break> line_breaks(const std::string& code) {
    std::vector<line_break> all;
    std::vector<std::size_t> open;  // the positions of the open parentheses
    for (std::size_t i = 0; i < code.size(); ++i) {
        if (code[i] == '(') open.push_back(i);
        if (code[i] == ')' && !open.empty()) open.pop_back();
        if (code[i] != ' ' || i + 2 >= code.size()) continue;
        const std::size_t end = code.find(' ', i + 1);
        if (end == std::string::npos) continue;
        const int precedence = precedence_of(std::string_view(code).substr(i + 1, end - i - 1));
        if (precedence >= 0) all.push_back({end, open.empty() ? std::string::npos : open.back(), open.size(), precedence});
    }
    std::vector<line_break> kept;
    for (const line_break& b : all) {
        int lowest = std::numeric_limits<int>::max();
        for (const line_break& other : all)
            if (other.group == b.group) lowest = std::min(lowest, other.precedence);
        if (b.precedence == lowest) kept.push_back(b);
    }
    return kept;
}

}  // namespace

std::string fitted(const std::string& code, std::size_t column) {
    constexpr std::size_t k_none = std::string::npos;
    if (code.find(" ? ") != k_none) return code;
    const std::vector<line_break> breaks = line_breaks(code);
    std::vector<std::pair<std::size_t, std::size_t>> lines{{0, column}};  // each line's first position, its column
    const auto column_of = [&](std::size_t at) {
        const auto line = std::prev(std::upper_bound(lines.begin(), lines.end(), std::pair{at, k_none}));
        return line->second + (at - line->first);
    };
    std::string text;
    while (lines.back().second + code.size() - lines.back().first > k_width) {
        const auto [start, start_column] = lines.back();
        const std::size_t room = k_width > start_column ? k_width - start_column : 0;
        const line_break* chosen = nullptr;
        for (const line_break& b : breaks) {  // the fewest parentheses in, then the furthest
            if (b.at <= start || b.at - start > room) continue;
            if (!chosen || b.depth < chosen->depth || (b.depth == chosen->depth && b.at > chosen->at)) chosen = &b;
        }
        if (!chosen) break;  // (the rest stays on its line)
        const std::size_t next_column = chosen->group == k_none ? column : column_of(chosen->group) + 1;
        text += code.substr(start, chosen->at - start) + "\n" + std::string(next_column, ' ');
        lines.emplace_back(chosen->at + 1, next_column);
    }
    return text + code.substr(lines.back().first);
}

std::string comment_wrapped(std::string line, const std::string& words) {
    std::string text;
    std::size_t start = 0;
    while (start < words.size()) {
        const std::size_t end = std::min(words.find(' ', start), words.size());
        const std::string word = words.substr(start, end - start);
        if (line.size() + 1 + word.size() > k_width && line.size() > 3) {
            text += line + "\n";
            line = "//";
        }
        line += " " + word;
        start = end + 1;
    }
    return text + line;
}

std::string heading(const std::string& kernel, const std::string& what) { return comment_wrapped("// ---- " + kernel + ":", what); }

std::string copy_probe_source(const template_set& templates) {
    return render(templates, "copy.cu.mustache", mu::data{}, {k_copy_probe_kernel});
}

std::string fma_probe_source(const template_set& templates) {
    mu::data data;
    data.set("chains", std::to_string(k_fma_probe_chains));
    return render(templates, "fma.cu.mustache", data, {k_fma_probe_kernel});
}

namespace {
/// The tensor probe's wgmma: 64 × 256 × 16, the widest Hopper has; its mma.sync: 16 × 8 × 16
/// in kjit_chains chains a warp.
constexpr int k_probe_wgmma_n = 256;
constexpr int k_probe_depth_steps = 4;  // wgmmas a loop iteration: depth 64, a 128-byte swizzled row
constexpr int k_probe_mma_chains = 4;
}  // namespace

std::string tensor_probe_source(const template_set& templates, int arch) {
    mu::data data;
    data.set("threads", std::to_string(k_tensor_probe_threads));
    data.set("mma_type", "bf16");
    data.set("wgmma", flag(tensor_probe_uses_wgmma(arch)));
    data.set("tile_n", std::to_string(k_probe_wgmma_n));
    data.set("depth_steps", std::to_string(k_probe_depth_steps));
    data.set("chains", std::to_string(k_probe_mma_chains));
    set_wgmma_operands(data, k_probe_wgmma_n);
    return render(templates, "tensor.cu.mustache", data, {k_tensor_probe_kernel});
}

double tensor_probe_block_flops(int arch) {
    if (tensor_probe_uses_wgmma(arch))
        return k_tensor_probe_threads / 128 * k_probe_depth_steps * 2.0 * 64 * k_probe_wgmma_n * 16;
    return k_tensor_probe_threads / 32 * k_probe_mma_chains * 2.0 * 16 * 8 * 16;
}

mu::data wgmma_operands(int tile_n, int a_registers) {
    const int count = tile_n / 2;  // accumulators a thread: 4 for each of its tile_n / 8 pieces
    mu::data outputs{mu::data::type::list}, constraints{mu::data::type::list};
    for (int first = 0; first < count; first += 8) {  // "{%0, …, %k}," in lines of 8
        std::string line = first == 0 ? "{" : "";
        for (int i = first; i < first + 8; ++i) line += "%" + std::to_string(i) + (i + 1 < count ? (i + 1 < first + 8 ? ", " : ",") : "},");
        outputs.push_back(mu::data(line));
    }
    for (int piece = 0; piece < tile_n / 8; ++piece) {  // a line of 4 constraints per piece
        std::string line = piece == 0 ? ": " : "  ";
        for (int h = 0; h < 4; ++h)
            line += "\"+f\"(d[" + std::to_string(piece) + "][" + std::to_string(h) + "])" + (h < 3 ? ", " : piece + 1 < tile_n / 8 ? "," : "");
        constraints.push_back(mu::data(line));
    }
    std::string a = "%" + std::to_string(count);
    if (a_registers > 0) {
        a = "{";
        for (int r = 0; r < a_registers; ++r) a += "%" + std::to_string(count + r) + (r + 1 < a_registers ? ", " : "}");
    }
    const int after_a = count + std::max(a_registers, 1);
    mu::data operands;
    operands.set("outputs", outputs);
    operands.set("operands", constraints);
    operands.set("a", a);
    operands.set("b", "%" + std::to_string(after_a));
    operands.set("first", "%" + std::to_string(after_a + 1));
    return operands;
}

void set_wgmma_operands(mu::data& data, int tile_n) {
    const mu::data operands = wgmma_operands(tile_n);
    for (const char* key : {"outputs", "operands", "a", "b", "first"}) data.set(std::string("wgmma_") + key, *operands.get(key));
}

}  // namespace kjit::codegen
