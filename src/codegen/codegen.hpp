// What every kernel family renders its CUDA with: the templates in kernel_templates/ (embedded at
// build time, or read from --templates DIR), rendered by kainjow::mustache, with the prologue
// every template shares (storage and compute types, load and store, vectors). Pure host code:
// no CUDA headers, no GPU.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <kainjow/mustache.hpp>

#include "config/config.hpp"
#include "expr/expr.hpp"
#include "util/strings.hpp"

namespace kjit::codegen {

namespace mu = kainjow::mustache;

/// The kernel templates in use and where they came from (for messages and reports).
struct template_set {
    std::map<std::string, std::string, std::less<>> files;  ///< "rows.cu.mustache" → its text
    std::string origin;                                     ///< "embedded" or the directory

    /// Every template compiled into kjit (kernel_templates/*.cu.mustache).
    [[nodiscard]] static template_set embedded();
    /// The embedded set with each file that DIR has read from there instead; a DIR with none of
    /// them is a usage error.
    [[nodiscard]] static template_set from_directory(const std::filesystem::path& dir);
    /// The text of `file`; a name that is not a template is a usage error.
    [[nodiscard]] const std::string& text(std::string_view file) const;
};

/// Renders template `file` with `data` (its partials are the other templates: {{> prologue}}).
/// Throws kjit::error(config) when the template is broken or the result does not define each of
/// `kernels` (a mistyped placeholder renders as nothing, and an empty program must not compile).
[[nodiscard]] std::string render(const template_set& templates, std::string_view file, const mu::data& data,
                                 const std::vector<std::string>& kernels);

/// The placeholders of the reductions' helpers (kernel_templates/collectives.cu.mustache) that
/// spell the compute type's infinity, max, min and exp (exp as the stages spell it, for the
/// online sum's rescaling).
void set_reduction_spelling(const config::pipeline& p, mu::data& data);

/// The placeholders of the shared prologue (kernel_templates/prologue.cu.mustache): the config's
/// name, `label`, the types, load/store, and the vector of `vector_width` elements. Adds the
/// dtype's header to `headers`.
[[nodiscard]] mu::data prologue_data(const config::pipeline& p, const std::string& label, int vector_width,
                                     std::vector<std::string>& headers);

/// The CUDA spelling of expressions for `p`: its compute type and fast-math.
[[nodiscard]] expr::cuda_style style_of(const config::pipeline& p);

/// Stages `indices` of `p` as a template's list of steps: each one's `index`, `what` (as
/// config::describe says it) and `code` (its expression in CUDA).
[[nodiscard]] mu::data stage_steps(const config::pipeline& p, const std::vector<std::size_t>& indices);

[[nodiscard]] inline mu::data flag(bool value) {
    return value ? mu::data::type::bool_true : mu::data::type::bool_false;
}
/// A template's list of texts, each printed by {{.}}.
[[nodiscard]] inline mu::data text_list(const std::vector<std::string>& texts) {
    mu::data list{mu::data::type::list};
    for (const auto& text : texts) list.push_back(mu::data(text));
    return list;
}
/// "a, b, c" from each name passed through `spell`.
template <class Spell>
std::string joined(const std::vector<std::string>& names, Spell spell, const std::string& separator = ", ") {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "" : separator) + spell(name);
    return text;
}
[[nodiscard]] inline std::string joined(const std::vector<std::string>& names) { return join(names, ", "); }
/// `items` with `separator` after each but the last ("," or " |"): on one line when short;
/// otherwise starting on a new line and filling lines of up to 100 columns indented by `indent`,
/// so that a long list reads at the generated source's width. An item of several lines (a call
/// whose arguments were wrapped, see `code`) ends its line. This is the rule that
/// kernel_templates/.clang-format keeps: a wrapped list is 8 columns in from the line it starts
/// on (`indent` is that line's indent + 8).
[[nodiscard]] std::string wrapped(const std::vector<std::string>& items, const std::string& separator, int indent);
/// `code`, whose first line starts at `column` of a statement indented by `indent`, with each
/// further line indented as kernel_templates/.clang-format indents it (its ColumnLimit 0 keeps
/// the line breaks): at the innermost open parenthesis's content, which starts 1 column in from
/// it, or, where the line breaks right after it, 8 columns in from the content of the one around
/// it (from `indent` where none is). Conditions nested at any depth then read as clang-format
/// leaves them.
[[nodiscard]] std::string reindented(const std::string& code, std::size_t column, std::size_t indent);

/// `code`, an expression on one line that starts at `column`, broken into lines of at most 100
/// columns where it is longer, as kernel_templates/.clang-format keeps them: after a binary
/// operator of the lowest precedence among those of its parentheses (or of none), each further
/// line aligned with the first operand of the operation it continues (the content of the
/// innermost open parenthesis, or `column`). Each line takes as much as fits, broken in the
/// fewest parentheses; where no break fits, the rest stays on its line. An expression that holds
/// a conditional (`c ? a : b`, as a mask's score does) stays on one line: clang-format lays those
/// out by rules of their own.
[[nodiscard]] std::string fitted(const std::string& code, std::size_t column);

/// Code whose indent is known only where it is put: text, or a call whose arguments (code too)
/// are wrapped as `wrapped` does, 8 columns in from the line the call starts on.
struct code {
    std::string text;          ///< the text, or the called function's name
    std::vector<code> args{};  ///< a call's arguments
    bool is_call = false;
};
/// `c` as it reads starting on a line indented by `indent`.
[[nodiscard]] std::string print(const code& c, int indent);
/// `line`, a comment's line so far ("// …"), with `words` after it, a space before each: the
/// words go on in further "//" lines wherever one would pass 100 columns.
[[nodiscard]] std::string comment_wrapped(std::string line, const std::string& words);
/// A kernel's heading comment, "// ---- NAME: WHAT", its words wrapped at 100 columns.
[[nodiscard]] std::string heading(const std::string& kernel, const std::string& what);
/// A parameter or argument list to put between parentheses: wrapped(items, ",", indent).
[[nodiscard]] inline std::string parameter_list(const std::vector<std::string>& items, int indent = 8) {
    return wrapped(items, ",", indent);
}

/// The copy kernel used to measure the device's bandwidth ceiling.
[[nodiscard]] std::string copy_probe_source(const template_set& templates);
inline constexpr const char* k_copy_probe_kernel = "kjit_copy_probe";
/// The FMA kernel used to measure the device's FMA ceiling: k_fma_probe_chains chains a thread.
[[nodiscard]] std::string fma_probe_source(const template_set& templates);
inline constexpr const char* k_fma_probe_kernel = "kjit_fma_probe";
inline constexpr int k_fma_probe_chains = 8;
/// The tensor-core kernel used to measure the device's own tensor ceiling: bfloat16 products
/// on operands already on chip (wgmma on sm_90, mma.sync on sm_80 and later), no memory traffic;
/// blocks of k_tensor_probe_threads, each doing tensor_probe_block_flops a loop iteration.
[[nodiscard]] std::string tensor_probe_source(const template_set& templates, int arch);
inline constexpr const char* k_tensor_probe_kernel = "kjit_tensor_probe";
inline constexpr int k_tensor_probe_threads = 256;
[[nodiscard]] double tensor_probe_block_flops(int arch);
/// True where the tensor probe runs: sm_80 and later (mma.sync of bfloat16).
[[nodiscard]] inline bool has_tensor_probe(int arch) { return arch >= 80; }
/// True where it runs wgmma, which only sm_90a has: compile it for the architecture alone.
[[nodiscard]] inline bool tensor_probe_uses_wgmma(int arch) { return arch == 90; }

/// A wgmma's asm operands for a 64 × tile_n piece of C held in `float d[tile_n / 8][4]`: the
/// accumulators' output list (outputs), their constraints (operands), then A's operand (a: its
/// descriptor's number, or where A is in registers, the list of a_registers numbers), B's (b) and
/// the one that says whether to start the sum (first).
[[nodiscard]] mu::data wgmma_operands(int tile_n, int a_registers = 0);
/// The wgmma_ops partial's: wgmma_operands(tile_n) as wgmma_outputs, wgmma_operands, wgmma_a, …
void set_wgmma_operands(mu::data& data, int tile_n);

}  // namespace kjit::codegen
