// The expression parser: text → a typed tree bound to a scope's names, or a parse_error at a column.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>

#include "expr/expr.hpp"
#include "expr/functions.hpp"
#include "util/strings.hpp"

namespace kjit::expr {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Recursive descent over the grammar, loosest binding first:
///   conditional := or ('?' conditional ':' conditional)?
///   or := and ('||' and)*          and := equality ('&&' equality)*
///   equality := relation (('==' | '!=') relation)*
///   relation := sum (('<' | '<=' | '>' | '>=') sum)*
///   sum := product (('+' | '-') product)*      product := unary (('*' | '//' | '/' | '%') unary)*
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

    tree arithmetic_chain(tree (parser::*operand)(), std::initializer_list<std::pair<std::string_view, binary_op>> ops) {
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
            if (found->second == binary_op::floor_div || found->second == binary_op::mod)
                for (const tree* side : {&left, &right})
                    if (!is_whole(**side))
                        throw parse_error((*side)->column, name + " takes integers: positions (i, row, col, …), whole numbers "
                                                                  "and +, -, *, //, % of them; use / for real division");
            left = make_binary(found->second, left, right, at, value_type::real);
        }
    }
    tree sum() { return arithmetic_chain(&parser::product, {{"+", binary_op::add}, {"-", binary_op::sub}}); }
    tree product() {  // "//" before "/"
        return arithmetic_chain(&parser::unary, {{"*", binary_op::mul}, {"//", binary_op::floor_div}, {"/", binary_op::div},
                                                 {"%", binary_op::mod}});
    }

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
        if (!at_end() && m_text[m_pos] == '[') return token(name, at);
        node n;
        n.kind = node_kind::name;
        n.column = at;
        n.name = name;
        if (const auto constant = constant_value(name)) {
            n.kind = node_kind::number;
            n.number = *constant;
            return make(std::move(n));
        }
        if (std::find(std::begin(k_position_names), std::end(k_position_names), name) != std::end(k_position_names)) {
            if ((name == "head" || name == "batch") && !m_scope.has_heads)
                throw parse_error(at, "'" + name + "' is a position of an attention score only (its query's head and "
                                                   "batch); " + known_names());
            if (!m_scope.has_shape && name != "i" && name != "n")
                throw parse_error(at, "'" + name + "' needs a \"shape\": [rows, cols]; an array of n elements has "
                                                   "positions i and n");
            n.binding = name_kind::position;
            return make(std::move(n));
        }
        if (name == "x") n.binding = name_kind::flowing;
        else if (std::find(m_scope.arrays.begin(), m_scope.arrays.end(), name) != m_scope.arrays.end())
            n.binding = name_kind::array;
        else if (std::find(m_scope.scalars.begin(), m_scope.scalars.end(), name) != m_scope.scalars.end())
            n.binding = name_kind::scalar;
        else if (std::find(m_scope.rows.begin(), m_scope.rows.end(), name) != m_scope.rows.end())
            n.binding = name_kind::row;
        else if (is_token_input(name))
            throw parse_error(at, "'" + name + "' has one value per token: read it as " + name + "[row] (the query's) or " + name +
                                      "[col] (the key's)");
        else if (find_function(name))
            throw parse_error(at, "'" + name + "' is a function: call it as " + name + "(…)");
        else throw parse_error(at, "unknown name '" + name + "'; " + known_names());
        return make(std::move(n));
    }

    [[nodiscard]] bool is_token_input(const std::string& name) const {
        return std::find(m_scope.tokens.begin(), m_scope.tokens.end(), name) != m_scope.tokens.end();
    }

    /// name[row] or name[col]: an input of one value per token at the query's or the key's.
    tree token(const std::string& name, std::size_t at) {
        if (!is_token_input(name))
            throw parse_error(at, m_scope.tokens.empty()
                                      ? "'" + name + "[…]': only an attention score reads inputs by token (name[row], name[col])"
                                      : "'" + name + "' is not an input of one value per token; those are " + join(m_scope.tokens, ", "));
        ++m_pos;
        skip_space();
        const std::size_t index_at = column(), start = m_pos;
        while (!at_end() && is_name_char(m_text[m_pos])) ++m_pos;
        const std::string index(m_text.substr(start, m_pos - start));
        if (index != "row" && index != "col")
            throw parse_error(index_at, "a token input is read at row (the query's token) or col (the key's), got '" + index + "'");
        skip_space();
        if (at_end() || m_text[m_pos] != ']') fail_here("expected ']'");
        ++m_pos;
        node n;
        n.kind = node_kind::name;
        n.column = at;
        n.name = name;
        n.index = index;
        n.binding = name_kind::token;
        return make(std::move(n));
    }

    static std::optional<double> constant_value(const std::string& name) {
        if (name == "inf") return std::numeric_limits<double>::infinity();
        if (name == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (name == "pi") return std::numbers::pi;
        return std::nullopt;
    }

    [[nodiscard]] std::string known_names() const {
        std::string text = "x is the value flowing in; i";
        text += m_scope.has_heads ? ", row, col, rows, cols, n, head and batch are"
                : m_scope.has_shape ? ", row, col, rows, cols and n are"
                                    : " and n are";
        text += " positions; inf, nan and pi constants";
        if (!m_scope.arrays.empty()) text += "; " + m_scope.arrays_called + " are " + join(m_scope.arrays, ", ");
        if (!m_scope.scalars.empty()) text += "; " + m_scope.scalars_called + " are " + join(m_scope.scalars, ", ");
        if (!m_scope.rows.empty()) text += "; row values (from reduce stages) are " + join(m_scope.rows, ", ");
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

}  // namespace

tree parse(std::string_view text, const scope& names) { return parser(text, names).parse_all(); }

}  // namespace kjit::expr
