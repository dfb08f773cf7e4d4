#include "expr/expr.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "expr/functions.hpp"

namespace kjit::expr {
namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
    return text;
}

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Recursive descent over the grammar, loosest binding first:
///   conditional := or ('?' conditional ':' conditional)?
///   or := and ('||' and)*          and := equality ('&&' equality)*
///   equality := relation (('==' | '!=') relation)*
///   relation := sum (('<' | '<=' | '>' | '>=') sum)*
///   sum := product (('+' | '-') product)*      product := unary (('*' | '/') unary)*
///   unary := ('-' | '+' | '!') unary | primary
///   primary := number | name | name '(' conditional (',' conditional)* ')' | '(' conditional ')'
class parser {
public:
    parser(std::string_view text, const scope& names) : m_text(text), m_scope(names) {}

    tree parse_all() {
        if (m_text.size() > k_max_length)
            throw parse_error(1, "expression too long: " + std::to_string(m_text.size()) + " characters, at most " +
                                     std::to_string(k_max_length));
        skip_space();
        if (at_end()) throw parse_error(1, "expected an expression, got nothing");
        tree result = conditional();
        skip_space();
        if (!at_end()) fail_here("expected an operator or the end of the expression");
        require_real(result, "the expression's result");
        return result;
    }

private:
    std::string_view m_text;
    const scope& m_scope;
    std::size_t m_pos = 0;
    std::size_t m_depth = 0;

    [[nodiscard]] bool at_end() const { return m_pos >= m_text.size(); }
    [[nodiscard]] std::size_t column() const { return m_pos + 1; }
    void skip_space() {
        while (!at_end() && (m_text[m_pos] == ' ' || m_text[m_pos] == '\t' || m_text[m_pos] == '\n' || m_text[m_pos] == '\r'))
            ++m_pos;
    }
    [[noreturn]] void fail_here(const std::string& expected) const {
        std::string got = "the end";
        if (!at_end()) {
            const auto c = static_cast<unsigned char>(m_text[m_pos]);
            char text[16];
            if (c >= 0x20 && c < 0x7f) std::snprintf(text, sizeof text, "'%c'", c);
            else std::snprintf(text, sizeof text, "byte 0x%02X", c);
            got = text;
        }
        throw parse_error(column(), expected + ", got " + got);
    }
    /// Consumes `token` (after spaces) if it is next; "<" does not match the start of "<=".
    bool accept(std::string_view token) {
        skip_space();
        if (m_text.substr(m_pos, token.size()) != token) return false;
        const std::size_t after = m_pos + token.size();
        if (after < m_text.size()) {
            const char next = m_text[after];
            if ((token == "<" || token == ">" || token == "!") && next == '=') return false;
            if ((token == "&" || token == "|") && next == token[0]) return false;
        }
        m_pos = after;
        return true;
    }

    static void require_real(const tree& t, const std::string& what) {
        if (t->type != value_type::real)
            throw parse_error(t->column, what + " must be a number, got a true/false value (a comparison)");
    }
    static void require_boolean(const tree& t, const std::string& what) {
        if (t->type != value_type::boolean)
            throw parse_error(t->column, what + " must be true/false (a comparison such as x > 0), got a number");
    }

    /// Every node is made here, so the depth limit holds for any shape of tree.
    tree make(node n) {
        for (const auto& a : n.args) n.depth = std::max(n.depth, a->depth + 1);
        if (n.depth > k_max_depth)
            throw parse_error(n.column, "expression nested too deeply: more than " + std::to_string(k_max_depth) +
                                            " levels");
        return std::make_shared<const node>(std::move(n));
    }
    tree make_binary(binary_op op, tree left, tree right, std::size_t column, value_type type) {
        node n;
        n.kind = node_kind::binary;
        n.op = op;
        n.type = type;
        n.column = column;
        n.args = {std::move(left), std::move(right)};
        return make(std::move(n));
    }

    /// Guards recursion through parentheses, unary operators and ?: (the only ways to nest). The
    /// tree's depth is the limit users meet (make); this one keeps the stack safe (each level is
    /// about fifteen frames: under ASan, 800 levels overflowed 8 MiB) and is just loose enough
    /// that any accepted tree printed by to_text parses again: printing adds at most a pair of
    /// parentheses per tree level, as in -(-x), which is two levels of nesting.
    static constexpr std::size_t k_max_nesting = 2 * k_max_depth + 2;
    struct nesting {
        parser& p;
        explicit nesting(parser& owner) : p(owner) {
            if (++p.m_depth > k_max_nesting)
                throw parse_error(p.column(), "expression nested too deeply: more than " +
                                                  std::to_string(k_max_nesting) + " levels of parentheses");
        }
        ~nesting() { --p.m_depth; }
    };

    tree conditional() {
        nesting guard(*this);
        tree condition = logical_or();
        skip_space();
        const std::size_t at = column();
        if (!accept("?")) return condition;
        require_boolean(condition, "the condition before '?'");
        tree when_true = conditional();
        if (!accept(":")) fail_here("expected ':' of the '?' at column " + std::to_string(at));
        tree when_false = conditional();
        require_real(when_true, "the value after '?'");
        require_real(when_false, "the value after ':'");
        node n;
        n.kind = node_kind::conditional;
        n.column = at;
        n.args = {std::move(condition), std::move(when_true), std::move(when_false)};
        return make(std::move(n));
    }

    /// left-associative `operand (token operand)*` over true/false values.
    tree logical_chain(tree (parser::*operand)(), std::string_view token, binary_op op) {
        tree left = (this->*operand)();
        for (;;) {
            skip_space();
            const std::size_t at = column();
            if (!accept(token)) return left;
            tree right = (this->*operand)();
            const std::string name = "'" + std::string(token) + "'";
            require_boolean(left, "the left side of " + name);
            require_boolean(right, "the right side of " + name);
            left = make_binary(op, left, right, at, value_type::boolean);
        }
    }
    tree logical_or() { return logical_chain(&parser::logical_and, "||", binary_op::logical_or); }
    tree logical_and() { return logical_chain(&parser::equality, "&&", binary_op::logical_and); }

    tree comparison_chain(tree (parser::*operand)(), std::initializer_list<std::pair<std::string_view, binary_op>> ops) {
        tree left = (this->*operand)();
        for (;;) {
            skip_space();
            const std::size_t at = column();
            const auto found = std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return accept(op.first); });
            if (found == ops.end()) return left;
            tree right = (this->*operand)();
            const std::string name = "'" + std::string(found->first) + "'";
            require_real(left, "the left side of " + name);
            require_real(right, "the right side of " + name);
            left = make_binary(found->second, left, right, at, value_type::boolean);
        }
    }
    tree equality() { return comparison_chain(&parser::relation, {{"==", binary_op::eq}, {"!=", binary_op::ne}}); }
    tree relation() {
        return comparison_chain(&parser::sum, {{"<=", binary_op::le}, {">=", binary_op::ge}, {"<", binary_op::lt},
                                               {">", binary_op::gt}});
    }

    tree arithmetic_chain(tree (parser::*operand)(), std::initializer_list<std::pair<char, binary_op>> ops) {
        tree left = (this->*operand)();
        for (;;) {
            skip_space();
            if (at_end()) return left;
            const auto found =
                std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return m_text[m_pos] == op.first; });
            if (found == ops.end()) return left;
            const std::size_t at = column();
            ++m_pos;
            tree right = (this->*operand)();
            const std::string name = std::string("'") + found->first + "'";
            require_real(left, "the left side of " + name);
            require_real(right, "the right side of " + name);
            left = make_binary(found->second, left, right, at, value_type::real);
        }
    }
    tree sum() { return arithmetic_chain(&parser::product, {{'+', binary_op::add}, {'-', binary_op::sub}}); }
    tree product() { return arithmetic_chain(&parser::unary, {{'*', binary_op::mul}, {'/', binary_op::div}}); }

    tree unary() {
        skip_space();
        const std::size_t at = column();
        if (accept("+")) {
            nesting guard(*this);
            tree operand = unary();
            require_real(operand, "the operand of '+'");
            return operand;
        }
        const bool negate = accept("-");
        if (negate || accept("!")) {
            nesting guard(*this);
            tree operand = unary();
            if (negate) require_real(operand, "the operand of '-'");
            else require_boolean(operand, "the operand of '!'");
            node n;
            n.kind = negate ? node_kind::negate : node_kind::logical_not;
            n.type = negate ? value_type::real : value_type::boolean;
            n.column = at;
            n.args = {std::move(operand)};
            return make(std::move(n));
        }
        return primary();
    }

    tree primary() {
        skip_space();
        if (at_end()) fail_here("expected a number, a name or '('");
        const std::size_t at = column();
        const char c = m_text[m_pos];
        if (c == '(') {
            ++m_pos;
            tree inner = conditional();
            if (!accept(")")) fail_here("expected ')' to close the '(' at column " + std::to_string(at));
            return inner;
        }
        if (is_digit(c) || (c == '.' && m_pos + 1 < m_text.size() && is_digit(m_text[m_pos + 1]))) return number();
        if (is_name_start(c)) return name_or_call();
        fail_here("expected a number, a name or '('");
    }

    tree number() {
        const std::size_t start = m_pos, at = column();
        while (!at_end() && is_digit(m_text[m_pos])) ++m_pos;
        if (!at_end() && m_text[m_pos] == '.') {
            ++m_pos;
            while (!at_end() && is_digit(m_text[m_pos])) ++m_pos;
        }
        if (!at_end() && (m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) {
            ++m_pos;
            if (!at_end() && (m_text[m_pos] == '+' || m_text[m_pos] == '-')) ++m_pos;
            if (at_end() || !is_digit(m_text[m_pos])) fail_here("expected the exponent's digits");
            while (!at_end() && is_digit(m_text[m_pos])) ++m_pos;
        }
        if (!at_end() && is_name_char(m_text[m_pos])) fail_here("expected an operator after the number");
        node n;
        n.kind = node_kind::number;
        n.column = at;
        const std::string_view digits = m_text.substr(start, m_pos - start);
        const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), n.number);
        if (result.ec != std::errc() || !std::isfinite(n.number))
            throw parse_error(at, "number out of range: " + std::string(digits));
        return make(std::move(n));
    }

    tree name_or_call() {
        const std::size_t start = m_pos, at = column();
        while (!at_end() && is_name_char(m_text[m_pos])) ++m_pos;
        const std::string name(m_text.substr(start, m_pos - start));
        skip_space();
        if (!at_end() && m_text[m_pos] == '(') return call(name, at);
        node n;
        n.kind = node_kind::name;
        n.column = at;
        n.name = name;
        if (name == "x") n.binding = name_kind::flowing;
        else if (std::find(m_scope.arrays.begin(), m_scope.arrays.end(), name) != m_scope.arrays.end())
            n.binding = name_kind::array;
        else if (std::find(m_scope.scalars.begin(), m_scope.scalars.end(), name) != m_scope.scalars.end())
            n.binding = name_kind::scalar;
        else if (std::find(m_scope.rows.begin(), m_scope.rows.end(), name) != m_scope.rows.end())
            n.binding = name_kind::row;
        else if (find_function(name))
            throw parse_error(at, "'" + name + "' is a function: call it as " + name + "(…)");
        else throw parse_error(at, "unknown name '" + name + "'; " + known_names());
        return make(std::move(n));
    }

    [[nodiscard]] std::string known_names() const {
        std::string text = "x is the value flowing in";
        if (!m_scope.arrays.empty()) text += "; " + m_scope.arrays_called + " are " + joined(m_scope.arrays);
        if (!m_scope.scalars.empty()) text += "; " + m_scope.scalars_called + " are " + joined(m_scope.scalars);
        if (!m_scope.rows.empty()) text += "; row values (from reduce stages) are " + joined(m_scope.rows);
        return text;
    }

    tree call(const std::string& name, std::size_t at) {
        const function_info* function = find_function(name);
        if (!function) throw parse_error(at, "unknown function '" + name + "'; functions are " + function_names());
        nesting guard(*this);
        ++m_pos;  // '('
        node n;
        n.kind = node_kind::call;
        n.column = at;
        n.function = function;
        skip_space();
        if (!accept(")")) {
            do {
                tree argument = conditional();
                require_real(argument, name + "'s argument " + std::to_string(n.args.size() + 1));
                n.args.push_back(std::move(argument));
            } while (accept(","));
            if (!accept(")")) fail_here("expected ',' or ')' in the call of " + name);
        }
        if (static_cast<int>(n.args.size()) != function->arity)
            throw parse_error(at, name + " takes " + std::to_string(function->arity) + " argument" +
                                      (function->arity == 1 ? "" : "s") + ", got " + std::to_string(n.args.size()));
        return make(std::move(n));
    }
};

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
                case binary_op::div: return 7;
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

/// Prints a tree with the parentheses its shape needs and no others. An operand of equal binding
/// strength on the right keeps its parentheses, so a + (b + c) is not re-associated: the CUDA
/// must round in exactly the order the user wrote.
class printer {
public:
    printer(const cuda_style* style) : m_style(style) {}

    std::string print(const node& n) const {
        switch (n.kind) {
            case node_kind::number: return literal(n.number);
            case node_kind::name: return n.name;
            case node_kind::negate:
            case node_kind::logical_not: {
                const node& operand = *n.args[0];
                const bool wrap = precedence(operand) < 8 || operand.kind == node_kind::negate;
                return (n.kind == node_kind::negate ? "-" : "!") + wrapped(operand, wrap);
            }
            case node_kind::binary: {
                const int mine = precedence(n);
                return wrapped(*n.args[0], precedence(*n.args[0]) < mine) + " " + symbol(n.op) + " " +
                       wrapped(*n.args[1], precedence(*n.args[1]) <= mine);
            }
            case node_kind::conditional:
                return wrapped(*n.args[0], precedence(*n.args[0]) <= 1) + " ? " +
                       wrapped(*n.args[1], precedence(*n.args[1]) <= 1) + " : " +
                       wrapped(*n.args[2], precedence(*n.args[2]) <= 1);
            case node_kind::call: return call(n);
        }
        return {};
    }

private:
    const cuda_style* m_style;  // nullptr: kjit's own text form

    std::string wrapped(const node& n, bool parenthesize) const {
        return parenthesize ? "(" + print(n) + ")" : print(n);
    }

    std::string call(const node& n) const {
        std::vector<std::string> args;
        for (const auto& a : n.args) args.push_back(print(*a));
        const function_info& f = *n.function;
        if (!m_style) return std::string(f.name) + "(" + joined(args) + ")";
        const bool f64 = m_style->double_precision;
        if (f.name == "clamp") {
            const std::string lo = f64 ? "fmax" : "fmaxf", hi = f64 ? "fmin" : "fminf";
            return hi + "(" + lo + "(" + args[0] + ", " + args[1] + "), " + args[2] + ")";
        }
        std::string_view spelled = f64 ? f.cuda_double : f.cuda_float;
        if (!f64 && m_style->fast_math && !f.cuda_fast.empty()) spelled = f.cuda_fast;
        return std::string(spelled) + "(" + joined(args) + ")";
    }

    std::string literal(double value) const {
        char text[40];
        const auto end = std::to_chars(text, text + sizeof text, value).ptr;  // shortest round trip
        std::string digits(text, end);
        if (!m_style) return digits;
        if (digits.find_first_of(".e") == std::string::npos) digits += ".0";
        return m_style->double_precision ? digits : digits + "f";
    }
};

}  // namespace

tree parse(std::string_view text, const scope& names) { return parser(text, names).parse_all(); }

std::string to_text(const tree& t) { return printer(nullptr).print(*t); }

std::string to_cuda(const tree& t, const cuda_style& style) { return printer(&style).print(*t); }

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
        }
    }
    for (const auto& a : t->args) collect_names(a, into);
}

}  // namespace kjit::expr
