#include "expr/expr.hpp"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "expr/functions.hpp"
#include "util/strings.hpp"

namespace kjit::expr {
namespace {

/// Binding strength for printing: higher binds tighter.
int precedence(const node& n) {
    switch (n.kind) {
        case node_kind::conditional: return 1;
        case node_kind::binary:
            switch (n.op) {
                case binary_op::logical_or: return 2;
                case binary_op::logical_and: return 3;
                case binary_op::eq:
                case binary_op::ne: return 4;
                case binary_op::lt:
                case binary_op::le:
                case binary_op::gt:
                case binary_op::ge: return 5;
                case binary_op::add:
                case binary_op::sub: return 6;
                case binary_op::mul:
                case binary_op::div:
                case binary_op::floor_div:
                case binary_op::mod: return 7;
            }
            return 0;
        case node_kind::negate:
        case node_kind::logical_not: return 8;
        default: return 9;
    }
}

const char* symbol(binary_op op) {
    switch (op) {
        case binary_op::add: return "+";
        case binary_op::sub: return "-";
        case binary_op::mul: return "*";
        case binary_op::div: return "/";
        case binary_op::floor_div: return "//";
        case binary_op::mod: return "%";
        case binary_op::lt: return "<";
        case binary_op::le: return "<=";
        case binary_op::gt: return ">";
        case binary_op::ge: return ">=";
        case binary_op::eq: return "==";
        case binary_op::ne: return "!=";
        case binary_op::logical_and: return "&&";
        case binary_op::logical_or: return "||";
    }
    return "?";
}

bool is_integer_division(binary_op op) { return op == binary_op::floor_div || op == binary_op::mod; }

/// A whole number the kernel may write as an integer literal: exact in double, and in long long.
bool is_whole_number(double v) { return std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= 0x1p53; }

/// True where a whole subtree holds numbers alone (no position, no // or %): `2 * 3`.
bool numbers_only(const node& n) {
    if (n.kind == node_kind::number) return true;
    if (n.kind == node_kind::negate) return numbers_only(*n.args[0]);
    if (n.kind == node_kind::binary) return !is_integer_division(n.op) && numbers_only(*n.args[0]) && numbers_only(*n.args[1]);
    if (n.kind == node_kind::conditional) return numbers_only(*n.args[1]) && numbers_only(*n.args[2]);
    return false;
}

/// True where the kernel computes a subtree in integers: a whole subtree with a position or a //
/// or % in it (exact in long long, as in the reference's doubles). Numbers alone stay real
/// literals: x * 2 multiplies by 2.0f.
bool is_integer(const node& n) { return is_whole(n) && !numbers_only(n); }

/// True for `a - b` of two positions: int positions are in [0, 2^31), so their difference is in
/// (−2^31, 2^31) and needs no widening (ALiBi's col − row, converted to real for each score).
bool is_difference_of_positions(const node& n) {
    const auto position = [](const tree& t) { return t->kind == node_kind::name && t->binding == name_kind::position; };
    return n.kind == node_kind::binary && n.op == binary_op::sub && position(n.args[0]) && position(n.args[1]);
}

}  // namespace

bool is_division_by_constant(const node& n) {
    if (n.kind != node_kind::binary || n.op != binary_op::div || n.args[1]->kind != node_kind::number) return false;
    const double reciprocal = std::fabs(1.0 / n.args[1]->number);  // (inf for 0: false below)
    return reciprocal >= FLT_MIN && reciprocal <= FLT_MAX;
}

namespace {

bool is_arithmetic(binary_op op) {
    return op == binary_op::add || op == binary_op::sub || op == binary_op::mul || op == binary_op::div;
}

/// Prints a tree with the parentheses its shape needs and no others. An operand of equal binding
/// strength on the right keeps its parentheses, so a + (b + c) is not re-associated: the CUDA
/// must round in exactly the order the user wrote.
class printer {
public:
    explicit printer(const cuda_style* style, std::size_t max_nodes = SIZE_MAX) : m_style(style), m_budget(max_nodes) {}

    /// `n`, where `integers` says its context computes in integers (whole numbers then print as
    /// integer literals).
    std::string print(const node& n, bool integers = false) const {
        if (m_budget == 0) return "…";
        --m_budget;
        switch (n.kind) {
            case node_kind::number: return integers && m_style ? integer_literal(n.number) : literal(n.number);
            case node_kind::name:
                if (n.binding != name_kind::token) return n.name;
                return m_style ? token_read{n.name, n.index}.parameter() : token_read{n.name, n.index}.text();
            case node_kind::negate:
            case node_kind::logical_not: {
                const node& operand = *n.args[0];
                const bool wrap = precedence(operand) < 8 || operand.kind == node_kind::negate;
                return (n.kind == node_kind::negate ? "-" : "!") + wrapped(operand, wrap, integers || is_integer(n));
            }
            case node_kind::binary: {
                if (m_style && m_style->approximated.division && !integers && is_division_by_constant(n))
                    return operand(*n.args[0], precedence(*n.args[0]) < precedence(n), false) + " * " +
                           literal(1.0 / n.args[1]->number);
                if (m_style && is_integer_division(n.op))
                    return std::string(n.op == binary_op::mod ? "kjit_floor_mod" : "kjit_floor_div") + "(" +
                           print(*n.args[0], true) + ", " + print(*n.args[1], true) + ")";
                const int mine = precedence(n);
                // Integers stay integers only among themselves: 1 / row is real, row < col and
                // row + 1 exact.
                const bool exact = is_arithmetic(n.op) ? integers || is_integer(n)
                                                       : is_whole(*n.args[0]) && is_whole(*n.args[1]) &&
                                                                 (is_integer(*n.args[0]) || is_integer(*n.args[1]));
                const bool widen = is_arithmetic(n.op) && exact;
                return operand(*n.args[0], precedence(*n.args[0]) < mine, exact, widen) + " " + symbol(n.op) + " " +
                       operand(*n.args[1], precedence(*n.args[1]) <= mine, exact, widen);
            }
            case node_kind::conditional: {
                const bool exact = integers || is_integer(n);
                return wrapped(*n.args[0], precedence(*n.args[0]) <= 1) + " ? " +
                       operand(*n.args[1], precedence(*n.args[1]) <= 1, exact) + " : " +
                       operand(*n.args[2], precedence(*n.args[2]) <= 1, exact);
            }
            case node_kind::call: return call(n);
        }
        return {};
    }

    /// `n` as a value of the compute type.
    std::string real_value(const node& n) const { return operand(n, false, false); }

private:
    const cuda_style* m_style;  // nullptr: kjit's own text form
    mutable std::size_t m_budget;  // nodes still to print

    std::string wrapped(const node& n, bool parenthesize, bool integers = false) const {
        return parenthesize ? "(" + print(n, integers) + ")" : print(n, integers);
    }

    /// An operand: in integers where `exact` (an int position widened first with `widen`, for
    /// arithmetic that may pass 2^31), else in the compute type, an integer converted.
    std::string operand(const node& n, bool parenthesize, bool exact, bool widen = false) const {
        if (!m_style) return wrapped(n, parenthesize);
        if (exact) {
            if (widen && m_style->int_positions && n.kind == node_kind::name) return "(long long)" + n.name;
            return wrapped(n, parenthesize, true);
        }
        if (m_style->int_positions && is_difference_of_positions(n))  // fits an int: no 64-bit conversion
            return "(real)(" + n.args[0]->name + " - " + n.args[1]->name + ")";
        if (is_integer(n)) {  // kjit_floor_mod(…) needs no parentheses
            const bool call = n.kind == node_kind::binary && is_integer_division(n.op);
            return "(real)" + wrapped(n, precedence(n) < 9 && !call);
        }
        return wrapped(n, parenthesize);
    }

    std::string call(const node& n) const {
        std::vector<std::string> args;
        for (const auto& a : n.args) args.push_back(m_style ? real_value(*a) : print(*a));
        const function_info& f = *n.function;
        if (!m_style) return std::string(f.name) + "(" + join(args, ", ") + ")";
        const bool f64 = m_style->double_precision;
        // clamp and sigmoid have no CUDA function of their own.
        if (f.name == "clamp") {
            const std::string lo = f64 ? "fmax" : "fmaxf", hi = f64 ? "fmin" : "fminf";
            return hi + "(" + lo + "(" + args[0] + ", " + args[1] + "), " + args[2] + ")";
        }
        if (f.name == "sigmoid") {
            const bool simple = precedence(*n.args[0]) == 9 && !is_integer(*n.args[0]);
            return literal(1) + " / (" + literal(1) + " + " + spelling(*find_function("exp")) + "(-" +
                   (simple ? args[0] : "(" + args[0] + ")") + "))";
        }
        return spelling(f) + "(" + join(args, ", ") + ")";
    }

    std::string spelling(const function_info& f) const {
        if (m_style->double_precision) return std::string(f.cuda_double);
        const bool fast = m_style->fast_math || is_approximated(f, m_style->approximated);
        return std::string(fast && !f.cuda_fast.empty() ? f.cuda_fast : f.cuda_float);
    }

    /// A whole number as C++ writes an integer (a long long past 2^31).
    static std::string integer_literal(double value) { return std::to_string(static_cast<long long>(value)); }

    std::string literal(double value) const {
        if (m_style && !std::isfinite(value)) {  // inf and nan by their bits: CUDA has no literal for them
            const bool f64 = m_style->double_precision;
            const std::string bits = std::isnan(value) ? (f64 ? "0x7fffffffffffffffLL" : "0x7fffffff")
                                                       : (f64 ? "0x7ff0000000000000LL" : "0x7f800000");
            return std::string(value < 0 ? "-" : "") + (f64 ? "__longlong_as_double(" : "__int_as_float(") + bits + ")";
        }
        char text[40];
        const auto end = std::to_chars(text, text + sizeof text, value).ptr;  // shortest round trip
        std::string digits(text, end);
        if (!m_style) return digits;
        if (digits.find_first_of(".e") == std::string::npos) digits += ".0";
        return m_style->double_precision ? digits : digits + "f";
    }
};

bool uses_flowing(const node& n) {
    if (n.kind == node_kind::name) return n.binding == name_kind::flowing;
    return std::any_of(n.args.begin(), n.args.end(), [](const tree& a) { return uses_flowing(*a); });
}

/// Where a value ignores x: everywhere, nowhere, or where `when` holds.
struct ignored {
    enum { everywhere, nowhere, where } extent = nowhere;
    tree when{};
};

/// A new boolean node: `a && b`, `a || b` (binary, with `op`), or `!a` (logical_not).
tree boolean(node_kind kind, std::vector<tree> args, binary_op op = binary_op::logical_and) {
    node n;
    n.kind = kind;
    n.type = value_type::boolean;
    n.op = op;
    for (const auto& a : args) n.depth = std::max(n.depth, a->depth + 1);
    n.args = std::move(args);
    return std::make_shared<const node>(std::move(n));
}

ignored both(const ignored& a, const ignored& b) {
    if (a.extent == ignored::nowhere || b.extent == ignored::nowhere) return {};
    if (a.extent == ignored::everywhere) return b;
    if (b.extent == ignored::everywhere) return a;
    return {ignored::where, boolean(node_kind::binary, {a.when, b.when}, binary_op::logical_and)};
}

ignored either(const ignored& a, const ignored& b) {
    if (a.extent == ignored::everywhere || b.extent == ignored::everywhere) return {ignored::everywhere};
    if (a.extent == ignored::nowhere) return b;
    if (b.extent == ignored::nowhere) return a;
    return {ignored::where, boolean(node_kind::binary, {a.when, b.when}, binary_op::logical_or)};
}

ignored ignored_where(const tree& t) {
    if (!uses_flowing(*t)) return {ignored::everywhere};
    if (t->args.empty()) return {};  // x itself
    if (t->kind == node_kind::conditional && !uses_flowing(*t->args[0])) {
        const tree& choice = t->args[0];
        const ignored picked{ignored::where, choice};
        const ignored not_picked{ignored::where, boolean(node_kind::logical_not, {choice})};
        return either(both(picked, ignored_where(t->args[1])), both(not_picked, ignored_where(t->args[2])));
    }
    // Any other node needs every operand that uses x.
    ignored all{ignored::everywhere};
    for (const auto& a : t->args) all = both(all, ignored_where(a));
    return all;
}

}  // namespace

std::string position_argument(const std::string& value, const cuda_style& style) {
    if (!style.int_positions) return value;
    return value.find(' ') == std::string::npos ? "(int)" + value : "(int)(" + value + ")";
}

bool is_whole(const node& n) {
    switch (n.kind) {
        case node_kind::number: return is_whole_number(n.number);
        case node_kind::name: return n.binding == name_kind::position;
        case node_kind::negate: return is_whole(*n.args[0]);
        case node_kind::binary:
            if (is_integer_division(n.op)) return true;  // the parser admits whole operands alone
            return (n.op == binary_op::add || n.op == binary_op::sub || n.op == binary_op::mul) && is_whole(*n.args[0]) &&
                   is_whole(*n.args[1]);
        case node_kind::conditional: return is_whole(*n.args[1]) && is_whole(*n.args[2]);
        default: return false;
    }
}

const node* number_outside_float(const tree& t) {
    if (t->kind == node_kind::number) {
        const double v = std::fabs(t->number);
        const bool fits = !std::isfinite(v) || v == 0 ||
                          (v <= std::numeric_limits<float>::max() && v > static_cast<double>(std::numeric_limits<float>::denorm_min()) / 2);  // half the least rounds to 0
        return fits ? nullptr : t.get();
    }
    for (const auto& a : t->args)
        if (const node* found = number_outside_float(a)) return found;
    return nullptr;
}

bool uses(const tree& t, binary_op op) {
    if (t->kind == node_kind::binary && t->op == op) return true;
    return std::any_of(t->args.begin(), t->args.end(), [op](const tree& a) { return uses(a, op); });
}

bool is_language_name(std::string_view name) {
    for (const auto position : k_position_names)
        if (name == position) return true;
    return name == "x" || name == "inf" || name == "nan" || name == "pi";
}

std::string to_text(const tree& t) { return printer(nullptr).print(*t); }

std::string to_text(const tree& t, std::size_t max_nodes) { return printer(nullptr, max_nodes).print(*t); }

std::string to_cuda(const tree& t, const cuda_style& style) { return printer(&style).real_value(*t); }

tree rebind(const tree& t, const std::map<std::string, binding>& names) {
    if (t->kind == node_kind::name) {
        const auto found = names.find(t->name);
        if (t->binding == name_kind::flowing || found == names.end()) return t;
        node renamed = *t;
        renamed.name = found->second.name;
        renamed.binding = found->second.kind;
        return std::make_shared<const node>(std::move(renamed));
    }
    if (t->args.empty()) return t;
    node copy = *t;
    for (auto& a : copy.args) a = rebind(a, names);
    return std::make_shared<const node>(std::move(copy));
}

tree substitute_flowing(const tree& t, const tree& value) {
    if (t->kind == node_kind::name && t->binding == name_kind::flowing) return value;
    if (t->args.empty()) return t;
    node copy = *t;
    copy.depth = 1;
    for (auto& a : copy.args) {
        a = substitute_flowing(a, value);
        copy.depth = std::max(copy.depth, a->depth + 1);
    }
    return std::make_shared<const node>(std::move(copy));
}

tree flowing_ignored_where(const tree& t) {
    const ignored found = ignored_where(t);
    return found.extent == ignored::where ? found.when : nullptr;
}

void collect_names(const tree& t, used_names& into) {
    if (t->kind == node_kind::name) {
        auto add = [&](std::vector<std::string>& list) {
            if (std::find(list.begin(), list.end(), t->name) == list.end()) list.push_back(t->name);
        };
        switch (t->binding) {
            case name_kind::flowing: into.flowing = true; break;
            case name_kind::array: add(into.arrays); break;
            case name_kind::scalar: add(into.scalars); break;
            case name_kind::row: add(into.rows); break;
            case name_kind::position: add(into.positions); break;
            case name_kind::token:
                if (const token_read read{t->name, t->index}; std::find(into.tokens.begin(), into.tokens.end(), read) == into.tokens.end())
                    into.tokens.push_back(read);
                break;
        }
    }
    for (const auto& a : t->args) collect_names(a, into);
}

}  // namespace kjit::expr
