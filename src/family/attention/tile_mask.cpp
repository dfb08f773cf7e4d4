#include "family/attention/tile_mask.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "codegen/codegen.hpp"
#include "expr/functions.hpp"
#include "util/strings.hpp"

namespace kjit::family::attention {

namespace {

using expr::binary_op;
using expr::node;
using expr::node_kind;

bool uses_row_or_col(const expr::tree& t) {
    expr::used_names used;
    expr::collect_names(t, used);
    return std::any_of(used.positions.begin(), used.positions.end(), [](const std::string& p) { return p == "row" || p == "col"; });
}

/// The same over a whole tile: free of x, row, col and reads by token (numbers, params, the sizes,
/// head and batch).
bool same_over_tile(const expr::tree& t) {
    expr::used_names used;
    expr::collect_names(t, used);
    return !used.flowing && used.tokens.empty() && used.arrays.empty() && used.rows.empty() && !uses_row_or_col(t);
}

/// Numbers, params, the sizes and row and col, with +, −, negation, and × or ÷ by a term free of
/// row and col.
bool is_affine(const node& n) {
    switch (n.kind) {
        case node_kind::number: return true;
        case node_kind::name: return n.binding == expr::name_kind::position || n.binding == expr::name_kind::scalar;
        case node_kind::negate: return is_affine(*n.args[0]);
        case node_kind::binary: {
            const expr::tree &a = n.args[0], &b = n.args[1];
            if (n.op == binary_op::add || n.op == binary_op::sub) return is_affine(*a) && is_affine(*b);
            if (n.op == binary_op::mul) return is_affine(*a) && is_affine(*b) && (!uses_row_or_col(a) || !uses_row_or_col(b));
            if (n.op == binary_op::div) return is_affine(*a) && !uses_row_or_col(b);
            return false;
        }
        default: return false;
    }
}

bool is_positive_number(const expr::tree& t) { return t->kind == node_kind::number && t->number > 0; }

/// "row" or "col" where `t` never falls as that position grows and uses no other position that
/// varies over a tile: the position plus or minus terms the same over the tile, times, divided or
/// floored by a positive number (`row // 512`, a chunk's index); nullopt otherwise.
std::optional<std::string> growing_with(const expr::tree& t) {
    const node& n = *t;
    if (n.kind == node_kind::name && n.binding == expr::name_kind::position && (n.name == "row" || n.name == "col"))
        return n.name;
    if (n.kind != node_kind::binary) return std::nullopt;
    const expr::tree &a = n.args[0], &b = n.args[1];
    switch (n.op) {
        case binary_op::add: return same_over_tile(a) ? growing_with(b) : same_over_tile(b) ? growing_with(a) : std::nullopt;
        case binary_op::sub: return same_over_tile(b) ? growing_with(a) : std::nullopt;
        case binary_op::mul: return is_positive_number(a) ? growing_with(b) : is_positive_number(b) ? growing_with(a) : std::nullopt;
        case binary_op::div:
        case binary_op::floor_div: return is_positive_number(b) ? growing_with(a) : std::nullopt;
        default: return std::nullopt;
    }
}

bool is_order(binary_op op) {
    return op == binary_op::lt || op == binary_op::le || op == binary_op::gt || op == binary_op::ge;
}

/// The comparison that holds where `op` fails.
binary_op opposite(binary_op op) {
    switch (op) {
        case binary_op::lt: return binary_op::ge;
        case binary_op::le: return binary_op::gt;
        case binary_op::gt: return binary_op::le;
        case binary_op::ge: return binary_op::lt;
        case binary_op::eq: return binary_op::ne;
        default: return binary_op::eq;  // ne
    }
}

expr::tree made(node n) {
    for (const auto& a : n.args) n.depth = std::max(n.depth, a->depth + 1);
    return std::make_shared<const node>(std::move(n));
}

expr::tree negated(const expr::tree& t) {
    node n;
    n.kind = node_kind::negate;
    n.column = t->column;
    n.args = {t};
    return made(std::move(n));
}

/// `a op b`: a comparison, or && and || of comparisons.
expr::tree joined_by(const expr::tree& a, binary_op op, const expr::tree& b) {
    node n;
    n.kind = node_kind::binary;
    n.type = expr::value_type::boolean;
    n.op = op;
    n.args = {a, b};
    return made(std::move(n));
}

/// A value the tile test declares itself (bound_loads: kjit_doc_r0), in the compute type.
expr::tree declared(const std::string& name) {
    node n;
    n.kind = node_kind::name;
    n.binding = expr::name_kind::scalar;
    n.name = name;
    return made(std::move(n));
}

/// The least and the greatest value of a term over a tile, and the read by token they load, if
/// any.
struct bounds {
    expr::tree low, high;
    std::optional<expr::token_read> read;
};

/// What is true only where `a op b` holds for every value a and b take within their bounds: the
/// comparisons of which all must hold (`separator` " &&") or one (" ||"). Trees, so that integers
/// (a chunk's index, `row // 512`) compare as integers.
struct comparisons {
    std::vector<expr::tree> parts;
    const char* separator = " &&";
};
comparisons holds_between(const bounds& a, binary_op op, const bounds& b) {
    switch (op) {
        case binary_op::lt:
        case binary_op::le: return {{joined_by(a.high, op, b.low)}};
        case binary_op::gt:
        case binary_op::ge: return {{joined_by(a.low, op, b.high)}};
        case binary_op::ne:
            return {{joined_by(a.high, binary_op::lt, b.low), joined_by(b.high, binary_op::lt, a.low)}, " ||"};
        default:  // eq: each is one value, and the same (a.low ≤ a.high = b.low ≤ b.high = a.low)
            if (a.low == a.high && b.low == b.high) return {{joined_by(a.low, binary_op::eq, b.low)}};
            return {{joined_by(a.low, binary_op::eq, b.high), joined_by(a.high, binary_op::eq, b.low)}};
    }
}

/// The value of `read` at the tile's first (0) or last (1) position, as the tile test's loads
/// name it: kjit_doc_r0 is doc at the tile's first query.
std::string bound_name(const expr::token_read& read, int edge) {
    return "kjit_" + read.name + "_" + (read.index == "row" ? "r" : "c") + std::to_string(edge);
}

/// Two tests joined by `op` (" && " or " || "), loading what both load; on two lines where they
/// are long, the second's parenthesis then followed by its first line (tile_masked and tile_plain
/// indent the lines as clang-format does).
tile_test joined(const tile_test& a, const std::string& op, const tile_test& b) {
    const bool two_lines = a.code.size() + b.code.size() > 60;
    std::string second = b.code;
    if (two_lines && second.starts_with("(\n")) second.erase(1, second.find_first_not_of(" \n", 1) - 1);
    const std::string between = two_lines ? op.substr(0, op.size() - 1) + "\n" : op;
    tile_test both{"(" + a.code + between + second + ")", a.bounded};
    for (const auto& read : b.bounded) add_read(both.bounded, read);
    return both;
}

/// `test` laid out as the template's `return` (indented by 4) holds it.
std::optional<tile_test> in_return(std::optional<tile_test> test) {
    constexpr std::size_t k_indent = 4, k_after_return = 11;  // "    return "
    if (test) test->code = codegen::reindented(test->code, k_after_return, k_indent);
    return test;
}

/// True for <, <=, >, >=, == and !=.
bool is_comparison(binary_op op) { return is_order(op) || op == binary_op::eq || op == binary_op::ne; }

/// `comparison` with its side `side` (0: left, 1: right) replaced by `value`.
expr::tree with_side(const expr::tree& comparison, int side, const expr::tree& value) {
    node n = *comparison;
    n.depth = 1;
    n.args[static_cast<std::size_t>(side)] = value;
    return made(std::move(n));
}

/// A call of abs, max or min: what split_at_extreme splits a comparison at.
bool is_extreme(const node& n) {
    if (n.kind != node_kind::call) return false;
    const std::string_view f = n.function->name;
    return f == "abs" || f == "max" || f == "min";
}

/// The comparisons a side of abs, max and min calls splits into (split_at_extreme): a max or min
/// of two the sum of theirs, abs(E) one more than E's.
std::size_t split_count(const node& n) {
    if (!is_extreme(n)) return 1;
    if (n.function->name == "abs") return split_count(*n.args[0]) + 1;
    return split_count(*n.args[0]) + split_count(*n.args[1]);
}

/// An order comparison with a side that is abs(E), max(A, B) or min(A, B), as the two
/// comparisons it holds by, joined: `max(A, B) < R` is `A < R && B < R`, `min(A, B) < R` is
/// `A < R || B < R`, `R < max(A, B)` is `R < A || R < B`, and abs(E) is max(E, -E). The same
/// truth at every position, so the tile tests of the two are the comparison's: a band written
/// `abs(row - col) < 128` is told at the corners as `row - col < 128 && -(row - col) < 128`.
/// nullptr where neither side is such a call.
expr::tree split_at_extreme(const expr::tree& comparison) {
    // Calls on both sides multiply: past a few dozen comparisons (a score written to be slow to
    // plan), none is split and every tile is computed.
    constexpr std::size_t k_most_comparisons = 64;
    if (split_count(*comparison->args[0]) * split_count(*comparison->args[1]) > k_most_comparisons) return nullptr;
    for (const int side : {0, 1}) {
        const node& call = *comparison->args[static_cast<std::size_t>(side)];
        if (!is_extreme(call)) continue;
        const std::string_view f = call.function->name;
        const expr::tree& first = call.args[0];
        const expr::tree second = f == "abs" ? negated(first) : call.args[1];
        // The call is the lesser side: left of < and <=, or right of > and >=.
        const bool lesser = (side == 0) == (comparison->op == binary_op::lt || comparison->op == binary_op::le);
        const bool greater_of_two = f != "min";
        return joined_by(with_side(comparison, side, first),
                         lesser == greater_of_two ? binary_op::logical_and : binary_op::logical_or,
                         with_side(comparison, side, second));
    }
    return nullptr;
}

class tile_tester {
public:
    tile_tester(const expr::cuda_style& style, const std::vector<std::string>& ascending)
        : m_style(style), m_ascending(ascending) {}

    /// The test that is true only where `t` is `wanted` at every position of the tile.
    std::optional<tile_test> all(const expr::tree& t, bool wanted) const {
        const node& n = *t;
        if (n.kind == node_kind::logical_not) return all(n.args[0], !wanted);
        if (n.kind != node_kind::binary) return std::nullopt;
        if (n.op == binary_op::logical_and || n.op == binary_op::logical_or) {
            const auto a = all(n.args[0], wanted), b = all(n.args[1], wanted);
            // all of (A && B) true: both; all of (A || B) true: either suffices, so a side that
            // nothing tells (a document mask's, where its ids are not sorted) leaves the other.
            // False: the dual.
            const bool both = (n.op == binary_op::logical_and) == wanted;
            if (!a || !b) return both ? std::nullopt : a ? a : b;
            return joined(*a, both ? " && " : " || ", *b);
        }
        if (!is_comparison(n.op)) return std::nullopt;
        if (is_order(n.op)) {
            if (const expr::tree split = split_at_extreme(t)) return all(split, wanted);
            if (is_affine(*n.args[0]) && is_affine(*n.args[1])) return tile_test{at_corners(t, wanted), {}};
        }
        const auto a = bounds_of(n.args[0]), b = bounds_of(n.args[1]);
        if (!a || !b) return std::nullopt;
        const comparisons held = holds_between(*a, wanted ? n.op : opposite(n.op), *b);
        std::vector<std::string> parts;
        for (const auto& part : held.parts) parts.push_back(expr::to_cuda(part, m_style));
        // On the return's line where they fit it (a return indented by 4), else a line each.
        constexpr std::size_t k_one_line = 80;
        std::string code = join(parts, std::string(held.separator) + " ");
        if (code.size() > k_one_line) code = codegen::wrapped(parts, held.separator, 12);
        tile_test between{"(" + code + ")", {}};
        for (const auto* side : {&*a, &*b})
            if (side->read) add_read(between.bounded, *side->read);
        return between;
    }

private:
    /// An affine comparison holds over the tile where it holds at its four corners (two, where
    /// it uses row or col alone).
    std::string at_corners(const expr::tree& t, bool wanted) const {
        std::vector<std::string> corners;
        for (const char* row : {"kjit_r0", "kjit_r1"})
            for (const char* col : {"kjit_c0", "kjit_c1"}) {
                const expr::tree at = expr::rebind(t, {{"row", {expr::name_kind::position, row}},
                                                        {"col", {expr::name_kind::position, col}}});
                const std::string corner = std::string(wanted ? "" : "!") + "(" + expr::to_cuda(at, m_style) + ")";
                if (std::find(corners.begin(), corners.end(), corner) == corners.end()) corners.push_back(corner);
            }
        return "(" + codegen::wrapped(corners, " &&", 12) + ")";  // (in a return indented by 4)
    }

    /// A term's bounds over a tile: a read by token of an ascending input, or a term that grows
    /// with row or col alone, runs from its value at the tile's first position to the one at its
    /// last; a term the same over the tile is its own.
    std::optional<bounds> bounds_of(const expr::tree& t) const {
        const node& n = *t;
        if (const auto position = growing_with(t)) {
            const bool row = *position == "row";
            const auto at = [&](const char* edge) {
                return expr::rebind(t, {{*position, {expr::name_kind::position, edge}}});
            };
            return bounds{at(row ? "kjit_r0" : "kjit_c0"), at(row ? "kjit_r1" : "kjit_c1"), std::nullopt};
        }
        if (n.kind == node_kind::name && n.binding == expr::name_kind::token &&
            std::find(m_ascending.begin(), m_ascending.end(), n.name) != m_ascending.end()) {
            const expr::token_read read{n.name, n.index};
            return bounds{declared(bound_name(read, 0)), declared(bound_name(read, 1)), read};
        }
        if (!same_over_tile(t)) return std::nullopt;
        return bounds{t, t, std::nullopt};
    }

    expr::cuda_style m_style;
    std::vector<std::string> m_ascending;
};

/// A score `C ? -inf : E` (masked_when true) or `C ? E : -inf` (false): C and E.
struct mask_parts {
    expr::tree condition;
    bool masked_when = true;
    expr::tree rest;
};
std::optional<mask_parts> mask_of(const expr::tree& score) {
    if (score->kind != node_kind::conditional) return std::nullopt;
    const bool masked_when_true = is_minus_inf(*score->args[1]);
    if (!masked_when_true && !is_minus_inf(*score->args[2])) return std::nullopt;
    return mask_parts{score->args[0], masked_when_true, score->args[masked_when_true ? 2 : 1]};
}

}  // namespace

std::optional<tile_test> tile_masked(const expr::tree& score, const expr::cuda_style& style,
                                     const std::vector<std::string>& ascending) {
    const auto mask = mask_of(score);
    if (!mask) return std::nullopt;
    // C ? −inf : E is −inf over the tile where C holds over it, or where E is −inf over it (a
    // mask written as nested conditionals, `col > row ? -inf : doc[row] != doc[col] ? -inf : x`).
    const auto by_condition = tile_tester(style, ascending).all(mask->condition, mask->masked_when);
    const auto by_rest = tile_masked(mask->rest, style, ascending);
    if (!by_condition || !by_rest) return in_return(by_condition ? by_condition : by_rest);
    return in_return(joined(*by_condition, " || ", *by_rest));
}

std::optional<tile_test> tile_plain(const expr::tree& score, const expr::cuda_style& style, const std::vector<std::string>& ascending) {
    if (score->kind == node_kind::name && score->binding == expr::name_kind::flowing) return tile_test{k_every_tile, {}};
    const auto mask = mask_of(score);
    if (!mask) return std::nullopt;
    // C ? −inf : E is x itself over the tile where C fails over it and E is x itself there.
    const auto by_condition = tile_tester(style, ascending).all(mask->condition, !mask->masked_when);
    const auto by_rest = tile_plain(mask->rest, style, ascending);
    if (!by_condition || !by_rest) return std::nullopt;
    return in_return(by_rest->code == k_every_tile ? by_condition : joined(*by_condition, " && ", *by_rest));
}

bool is_minus_inf(const node& n) {
    if (n.kind == node_kind::number) return std::isinf(n.number) && n.number < 0;
    return n.kind == node_kind::negate && n.args[0]->kind == node_kind::number && std::isinf(n.args[0]->number) &&
           n.args[0]->number > 0;
}

void add_read(std::vector<expr::token_read>& reads, const expr::token_read& read) {
    if (std::find(reads.begin(), reads.end(), read) == reads.end()) reads.push_back(read);
}

std::string tokens_parameter(const expr::token_read& read) { return "kjit_" + read.name + "_" + read.index + "_tokens"; }

std::vector<std::string> bound_loads(const tile_test& test) {
    std::vector<std::string> loads;
    for (const auto& read : test.bounded)
        for (const int edge : {0, 1})
            loads.push_back("const real " + bound_name(read, edge) + " = load(" + tokens_parameter(read) + "[kjit_" +
                            (read.index == "row" ? "r" : "c") + std::to_string(edge) + "]);");
    return loads;
}

}  // namespace kjit::family::attention
