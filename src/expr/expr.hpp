// Stage expressions: kjit's small language (numbers, names, + - * /, // and % of integers,
// comparisons, && || !, ?:, calls from a fixed table, the constants inf, nan and pi, the element's
// position: i, row, col, rows, cols, n, and in an attention score an input read by token,
// doc[row] or doc[col]), parsed once into a typed tree. The tree is the only way config text
// reaches the generated CUDA (to_cuda) and the float64 reference (evaluate.hpp), so nothing a
// config says is pasted into source. Depends on the standard library only.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::expr {

enum class value_type { real, boolean };
enum class node_kind { number, name, negate, logical_not, binary, call, conditional };
/// floor_div and mod are `//` and `%`: of integers only (positions, whole numbers and integer
/// arithmetic of them), as NumPy's on integers: the quotient rounded down, the remainder with the
/// divisor's sign, and 0 for a divisor of 0.
enum class binary_op { add, sub, mul, div, floor_div, mod, lt, le, gt, ge, eq, ne, logical_and, logical_or };
/// What a name stands for: the value flowing in (`x`), an element of an array, a scalar, a
/// row's value that a reduce stage made (one per row, the same for every element of the row),
/// the element's position (k_position_names: integers, exact in the kernel and the reference), or
/// an input of one value per token read at the query's or the key's token (an attention score's
/// `doc[row]` and `doc[col]`).
enum class name_kind { flowing, array, scalar, row, position, token };

/// The position names: the element's index in the array, its row and column, and the sizes; in
/// an attention score also the head and the batch (scope::has_heads). The kernels pass them from
/// their own loop variables (no loads); row, col, rows and cols need a "shape".
inline constexpr std::string_view k_position_names[] = {"i", "row", "col", "rows", "cols", "n", "head", "batch"};
/// True for a name the language defines: x, a position, a constant (inf, nan, pi).
[[nodiscard]] bool is_language_name(std::string_view name);

struct function_info;

struct node;
/// Trees are immutable and shared: a pipeline copied for every sweep point copies pointers.
using tree = std::shared_ptr<const node>;

struct node {
    node_kind kind = node_kind::number;
    value_type type = value_type::real;
    std::size_t column = 0;  ///< 1-based column in the text it was parsed from
    std::size_t depth = 1;   ///< levels below and including this node
    double number = 0;                        ///< number
    std::string name;                         ///< name
    name_kind binding = name_kind::flowing;   ///< name
    std::string index;                        ///< token: the position its input is read at, "row" or "col"
    binary_op op = binary_op::add;            ///< binary
    const function_info* function = nullptr;  ///< call
    std::vector<tree> args;  ///< operands: 1 (negate, not), 2 (binary), 3 (conditional), arity (call)
};

/// The names an expression may use. `x` is always the flowing value.
struct scope {
    std::vector<std::string> arrays;
    std::vector<std::string> scalars;
    std::vector<std::string> rows{};  ///< names earlier reduce stages gave their row values
    std::string arrays_called = "inputs";   ///< how messages name the arrays
    std::string scalars_called = "params";  ///< … and the scalars
    bool has_shape = false;                 ///< row, col, rows and cols exist
    bool has_heads = false;                 ///< head and batch exist (an attention score)
    /// Inputs of one value per token, read as name[row] (the query's token) or name[col] (the
    /// key's): an attention score's.
    std::vector<std::string> tokens{};
};

/// A problem in an expression, at a 1-based column. The config layer adds file, key and caret.
class parse_error : public std::runtime_error {
public:
    parse_error(std::size_t column, const std::string& what) : std::runtime_error(what), m_column(column) {}
    [[nodiscard]] std::size_t column() const noexcept { return m_column; }

private:
    std::size_t m_column;
};

/// Longest expression text and deepest nesting accepted; beyond them, a parse_error (never a crash).
inline constexpr std::size_t k_max_length = 16384;
inline constexpr std::size_t k_max_depth = 200;

/// True where `n` is an integer the kernel can compute exactly: a position, a whole number (at most
/// 2^53), or +, -, *, //, %, negation and choices of them. `//` and `%` take these alone.
[[nodiscard]] bool is_whole(const node& n);
/// True where `t` uses `op` (`//` or `%`: the generated source then defines its helper).
[[nodiscard]] bool uses(const tree& t, binary_op op);

/// The first number in `t` that a float cannot hold: past its largest finite value (it would be
/// inf), or not 0 but below half its smallest (it would be 0); nullptr where every one fits.
[[nodiscard]] const node* number_outside_float(const tree& t);

/// Parses and type-checks `text`; the result is real-valued. Throws parse_error.
[[nodiscard]] tree parse(std::string_view text, const scope& names);

/// The expression back as text, with only the parentheses it needs: "x * w + b".
[[nodiscard]] std::string to_text(const tree& t);
/// The same, printing at most `max_nodes` nodes and "…" for the rest: a composed tree shares its
/// subtrees, and its full text can be exponentially longer than the tree.
[[nodiscard]] std::string to_text(const tree& t, std::size_t max_nodes);

/// What a kernel computes with the hardware's approximation without fast math
/// (config::approximations_of): tanh as __tanhf, exp as __expf, a division by a constant as a
/// product by its reciprocal.
struct approximations {
    bool tanh = false;
    bool exp = false;
    /// x / 30 as x * 0.0333333f: one multiply where float's division takes about ten instructions
    /// and a reciprocal on the special-function unit; two roundings instead of one.
    bool division = false;
};

/// True where `n` is a division by a finite, nonzero number whose reciprocal is a normal float:
/// what approximations::division spells as a product.
[[nodiscard]] bool is_division_by_constant(const node& n);

/// How to spell the tree as CUDA: the compute type's functions and literals, fast intrinsics.
/// Positions are parameters named as in the language: integer arithmetic and comparisons of
/// positions stay exact, and a position meets a real value as `(real)row`.
struct cuda_style {
    bool double_precision = false;  ///< compute in double (float64 storage), else float
    bool fast_math = false;         ///< __expf and friends where CUDA has them
    /// Positions are `int` (every one fits): a mask's `col > row` is one 32-bit compare, and
    /// arithmetic on them is widened to long long first (`(long long)row * cols`), so it cannot
    /// overflow. Otherwise they are `long long`.
    bool int_positions = false;
    approximations approximated{};  ///< spelled by their fast forms without fast math
};
/// The CUDA type of positions in `style`: "int" or "long long".
[[nodiscard]] inline const char* position_type(const cuda_style& style) { return style.int_positions ? "int" : "long long"; }
/// A position computed at a call site (`value`, a long long expression of the kernel's loop
/// variables) as an argument of the position type: "(int)(kjit_v * kjit_width + kjit_k)".
[[nodiscard]] std::string position_argument(const std::string& value, const cuda_style& style);
[[nodiscard]] std::string to_cuda(const tree& t, const cuda_style& style);

/// A name's new meaning when an op's expression is instantiated in a stage.
struct binding {
    name_kind kind;
    std::string name;
};
/// A read by token (name_kind::token): the input, and where it is read ("row": the query's token,
/// "col": the key's).
struct token_read {
    std::string name, index;
    /// As written, "doc[row]": the name expr::chunk's arrays give its values under.
    [[nodiscard]] std::string text() const { return name + "[" + index + "]"; }
    /// As spelled in CUDA: the element function's parameter that holds it, "kjit_doc_of_row".
    [[nodiscard]] std::string parameter() const { return "kjit_" + name + "_of_" + index; }
    bool operator==(const token_read&) const = default;
};

/// The tree with its names (other than `x`) replaced as `names` says; names not listed stay.
[[nodiscard]] tree rebind(const tree& t, const std::map<std::string, binding>& names);

/// The tree with every `x` replaced by `value`: a stage composed after the one that made its x.
/// `value` is shared, not copied, so composing stage after stage grows the tree linearly (walk
/// `t`, the later stage, not the composition so far).
[[nodiscard]] tree substitute_flowing(const tree& t, const tree& value);

/// Where `t` does not depend on `x`: a boolean tree over its other names; where it holds, a
/// choice (`c ? a : b`, with `c` free of x) picks a branch whose value ignores x, as `col > row`
/// does for a causal mask `col > row ? -inf : x`. A kernel need not read x there. nullptr where
/// there is no such place: x is used everywhere, or nowhere.
[[nodiscard]] tree flowing_ignored_where(const tree& t);

/// The arrays, scalars and row values a tree uses, each once, in order of first use.
struct used_names {
    std::vector<std::string> arrays;
    std::vector<std::string> scalars;
    std::vector<std::string> rows;
    std::vector<std::string> positions;
    std::vector<token_read> tokens;
    bool flowing = false;
};
void collect_names(const tree& t, used_names& into);

}  // namespace kjit::expr
