// The stage expression language: parsing and its errors, the printed and CUDA forms, the float64
// evaluator and its error scale, and a fuzz run that must never crash.
#include <cmath>
#include <numbers>
#include <random>

#include "expr/evaluate.hpp"
#include "expr/expr.hpp"
#include "expr/functions.hpp"
#include "helpers.hpp"

using namespace kjit;

namespace {
const expr::scope k_names{{"w", "b"}, {"alpha"}};

/// The parse error's column and message for `text` in `names`.
std::pair<std::size_t, std::string> parse_failure(const std::string& text, const expr::scope& names = k_names) {
    try {
        (void)expr::parse(text, names);
    } catch (const expr::parse_error& e) {
        return {e.column(), e.what()};
    }
    FAIL("expected a parse error for: " << text);
    return {};
}

/// The tree's value at x with w = 2, b = 0.5, alpha = 0.1.
double value_at(const std::string& text, double x, double* scale = nullptr, expr::approximations approximated = {}) {
    const std::map<std::string, double> scalars{{"alpha", 0.1}};
    const double w = 2, b = 0.5, zero = 0;
    const std::map<std::string, const double*> arrays{{"w", &w}, {"b", &b}};
    expr::chunk in{1, &x, &zero, &arrays, &scalars, true};
    in.approximated = approximated;
    double value = 0, s = 0;
    expr::evaluate(expr::parse(text, k_names), in, &value, &s);
    if (scale) *scale = s;
    return value;
}
}  // namespace

TEST_CASE("precedence and associativity as in C, printed back with only the parentheses needed") {
    const auto text = [](const std::string& e) { return expr::to_text(expr::parse(e, k_names)); };
    CHECK(text("x*w+b") == "x * w + b");
    CHECK(text("(x*w)+b") == "x * w + b");
    CHECK(text("x*(w+b)") == "x * (w + b)");
    CHECK(text("x - (w - b)") == "x - (w - b)");
    CHECK(text("x - w - b") == "x - w - b");
    CHECK(text("x + (w + b)") == "x + (w + b)");  // not re-associated: the rounding order is the user's
    CHECK(text("-(x + w)") == "-(x + w)");
    CHECK(text("- -x") == "-(-x)");
    CHECK(text("x > 0 && w < 1 || !(b == 2) ? x : alpha * x") == "x > 0 && w < 1 || !(b == 2) ? x : alpha * x");
    CHECK(text("x > 0 ? (w > 0 ? 1 : 2) : 3") == "x > 0 ? (w > 0 ? 1 : 2) : 3");
    CHECK(text("clamp(x, -1, 1e3)") == "clamp(x, -1, 1000)");
    CHECK(text(".5e1 + 2.") == "5 + 2");
}

TEST_CASE("values in float64, checked by hand") {
    CHECK(value_at("x * w + b", 3) == 6.5);
    CHECK(value_at("x > 0 ? x : alpha * x", -2) == doctest::Approx(-0.2));
    CHECK(value_at("x > 0 ? x : alpha * x", 2) == 2);
    CHECK(value_at("1 / (1 + exp(-x))", 0) == 0.5);
    CHECK(value_at("pow(w, 3) + min(x, b) + max(x, b)", 1) == 9.5);
    CHECK(value_at("fma(x, w, b)", 2) == 4.5);
    CHECK(value_at("clamp(x, -1, 1)", 5) == 1);
    CHECK(value_at("round(x) + floor(x) + ceil(x)", 2.5) == 3 + 2 + 3);
    CHECK(value_at("abs(x) + sqrt(4) + rsqrt(4) + cbrt(27)", -1) == 1 + 2 + 0.5 + 3);
    CHECK(value_at("log(exp(x)) + log2(8) + exp2(3) + log1p(0) + expm1(0)", 1.5) == doctest::Approx(1.5 + 3 + 8));
    CHECK(value_at("sin(0) + cos(0) + tan(0) + tanh(0) + sinh(0) + cosh(0) + erf(0) + erfc(0)", 0) == 3);
    CHECK(value_at("x == 1 || x != 1 ? 7 : 8", 1) == 7);
    CHECK(value_at("!(x >= 1) && x <= 1 ? 7 : 8", 1) == 8);
}

TEST_CASE("error scale: rounding counted per operation, amplified by cancellation") {
    double scale = 0;
    (void)value_at("x * w", 3, &scale);
    CHECK(scale == 6);  // one rounding of the product
    const double r = value_at("x * w - 2", 1.0000001, &scale);
    CHECK(scale > 1e6 * std::fabs(r));  // the product's rounding survives; the difference is tiny
    (void)value_at("x - 0.1", 1, &scale);
    CHECK(scale == doctest::Approx(0.9 + 0.1));  // 0.1 is not a float: its rounding counts too
}

TEST_CASE("error scale: piecewise functions and choices carry their arguments' scales through the switch") {
    // A pre-activation a rounding below 0: the kernel may compute it a rounding above, and relu
    // then passes that rounding on, |relu(a) − relu(b)| ≤ |a − b|; the scale must say so.
    double pre = 0;
    const double r = value_at("x * w - 2", 0.9999999, &pre);
    REQUIRE(r < 0);
    REQUIRE(pre > 1e6 * std::fabs(r));
    for (const char* piecewise : {"(x * w - 2) > 0 ? (x * w - 2) : 0", "max(x * w - 2, 0)", "min(2 - x * w, 0)",
                                  "clamp(x * w - 2, 0, 1)", "abs(x * w - 2)"}) {
        CAPTURE(piecewise);
        double scale = 0;
        (void)value_at(piecewise, 0.9999999, &scale);
        CHECK(scale >= pre);
    }
}

TEST_CASE("error scale: an approximated tanh is charged its 2^-10.987, through what follows") {
    double precise = 0, approximated = 0;
    const double t = value_at("tanh(x)", 0.5, &precise);
    (void)value_at("tanh(x)", 0.5, &approximated, {.tanh = true});
    CHECK(precise == doctest::Approx(2 * t));
    CHECK(approximated == doctest::Approx(expr::k_tanh_approx_ulps * t));
    CHECK(expr::k_tanh_approx_ulps * 0x1p-24 >= std::exp2(-10.987));
    // GELU's tanh form at x = -5 cancels (1 + tanh ≈ 1e-6): a tanh off by its whole 2^-10.987
    // moves the result by thousands of times its size, and the bound (two roundings per unit of
    // scale, as config::default_tolerance allows) still holds it.
    const std::string gelu = "0.5 * x + 0.5 * x * tanh(x * (0.7978845608028654 + 0.035677408136300125 * x * x))";
    const double x = -5, exact = value_at(gelu, x, &approximated, {.tanh = true});
    const double u = x * (0.7978845608028654 + 0.035677408136300125 * x * x);
    const double off = 0.5 * x + 0.5 * x * (std::tanh(u) * (1 - std::exp2(-10.987)));
    CHECK(std::fabs(off - exact) > 100 * std::fabs(exact));
    CHECK(std::fabs(off - exact) <= 2 * 0x1p-24 * approximated);
    (void)value_at(gelu, x, &precise);
    CHECK(std::fabs(off - exact) > 2 * 0x1p-24 * precise);  // what the precise tanh's bound allows
}

TEST_CASE("error scale: an approximated exp is charged __expf's 2 + 1.173·|x| ulps, and spelled __expf") {
    double precise = 0, approximated = 0;
    const double e = value_at("exp(x)", -20, &precise);
    (void)value_at("exp(x)", -20, &approximated, {.exp = true});
    CHECK(precise == doctest::Approx(2 * e));
    CHECK(approximated == doctest::Approx((2 + 1.173 * 20) * e));
    // tanh is not exp: approximating one leaves the other's charge alone.
    (void)value_at("exp(x)", -20, &approximated, {.tanh = true});
    CHECK(approximated == doctest::Approx(2 * e));
    expr::cuda_style style;
    style.approximated.exp = true;
    CHECK(expr::to_cuda(expr::parse("exp(x) + tanh(x)", k_names), style) == "__expf(x) + tanhf(x)");
}

TEST_CASE("CUDA spelling follows the compute type and fast math") {
    const auto tree = expr::parse("exp(x) / 2 + tanh(x * alpha) + clamp(x, 0, 1)", k_names);
    CHECK(expr::to_cuda(tree, {false, false}) == "expf(x) / 2.0f + tanhf(x * alpha) + fminf(fmaxf(x, 0.0f), 1.0f)");
    CHECK(expr::to_cuda(tree, {true, false}) == "exp(x) / 2.0 + tanh(x * alpha) + fmin(fmax(x, 0.0), 1.0)");
    CHECK(expr::to_cuda(tree, {false, true}) == "__expf(x) / 2.0f + __tanhf(x * alpha) + fminf(fmaxf(x, 0.0f), 1.0f)");
    // tanh alone approximated (16-bit results): the other functions stay precise
    CHECK(expr::to_cuda(tree, {false, false, false, true}) ==
          "expf(x) / 2.0f + __tanhf(x * alpha) + fminf(fmaxf(x, 0.0f), 1.0f)");
    CHECK(expr::to_cuda(expr::parse("0.1 + 1e-30", k_names), {false, false}) == "0.1f + 1e-30f");
}

TEST_CASE("a division by a constant, approximated, is a product by its reciprocal, charged a second rounding") {
    expr::scope matrix = k_names;
    matrix.has_shape = true;
    expr::cuda_style style;
    style.approximated.division = true;
    const auto cuda = [&](const std::string& e) { return expr::to_cuda(expr::parse(e, matrix), style); };
    CHECK(cuda("30 * tanh(x / 30)") == "30.0f * tanhf(x * 0.03333333333333333f)");
    CHECK(cuda("(x + w) / 4") == "(x + w) * 0.25f");
    CHECK(cuda("(col - row) / 16") == "(real)(col - row) * 0.0625f");
    CHECK(cuda("x / w") == "x / w");  // not a constant
    CHECK(cuda("x / 0") == "x / 0.0f");  // no finite reciprocal
    CHECK(cuda("x / 1e-300") == "x / 1e-300f");  // a reciprocal past float's range
    CHECK(cuda("row // 2 + x") == "(real)kjit_floor_div(row, 2) + x");  // integer division stays exact
    style.approximated.division = false;
    CHECK(cuda("30 * tanh(x / 30)") == "30.0f * tanhf(x / 30.0f)");
    double precise = 0, approximated = 0;
    const double q = value_at("x / 30", 3, &precise);
    (void)value_at("x / 30", 3, &approximated, {.division = true});
    CHECK(q == doctest::Approx(0.1));
    CHECK(precise == doctest::Approx(q));  // 30 is exact in float: the quotient's one rounding
    CHECK(approximated == doctest::Approx(2 * q));  // and the reciprocal's
}

TEST_CASE("positions and constants: exact integers in CUDA, real where they meet a real value") {
    expr::scope matrix = k_names;
    matrix.has_shape = true;
    const auto cuda = [&](const std::string& e, bool f64 = false) { return expr::to_cuda(expr::parse(e, matrix), {f64, false}); };
    CHECK(cuda("col > row ? -inf : x * 0.5") == "col > row ? -__int_as_float(0x7f800000) : x * 0.5f");
    CHECK(cuda("col > row ? -inf : x", true) == "col > row ? -__longlong_as_double(0x7ff0000000000000LL) : x");
    CHECK(cuda("nan + pi") == "__int_as_float(0x7fffffff) + 3.141592653589793f");
    CHECK(cuda("1 / row") == "1.0f / (real)row");      // never an integer division
    CHECK(cuda("row / col") == "(real)row / (real)col");
    CHECK(cuda("row * cols + col") == "(real)(row * cols + col)");  // exact, then one conversion
    CHECK(cuda("row - col < 2 ? x : 0") == "row - col < 2 ? x : 0.0f");  // whole numbers meet positions exactly
    CHECK(cuda("i == n ? x : -i") == "i == n ? x : (real)(-i)");
    CHECK(cuda("i == n - 1 ? x : 0") == "i == n - 1 ? x : 0.0f");
    CHECK(cuda("i < 0.5 ? x : 0") == "(real)i < 0.5f ? x : 0.0f");  // 0.5 is not whole
    CHECK(cuda("x * 2 + (row > 1 ? 1 : 2)") == "x * 2.0f + (row > 1 ? 1.0f : 2.0f)");  // numbers alone stay real
    CHECK(cuda("exp(-col)") == "expf((real)(-col))");
    CHECK(cuda("sigmoid(x)") == "1.0f / (1.0f + expf(-x))");
    CHECK(cuda("sigmoid(x * w)") == "1.0f / (1.0f + expf(-(x * w)))");
    CHECK(cuda("sigmoid(-x)") == "1.0f / (1.0f + expf(-(-x)))");  // never --x
    CHECK(expr::to_text(expr::parse("col > row ? -inf : x", matrix)) == "col > row ? -inf : x");
    // int positions: compared as they are, widened before arithmetic (row * cols may pass 2^31).
    const auto narrow = [&](const std::string& e) { return expr::to_cuda(expr::parse(e, matrix), {false, false, true}); };
    CHECK(narrow("col > row ? -inf : x") == "col > row ? -__int_as_float(0x7f800000) : x");
    CHECK(narrow("row * cols + col == i ? x : 0") == "(long long)row * (long long)cols + (long long)col == i ? x : 0.0f");
    CHECK(narrow("x * row") == "x * (real)row");
    // The difference of two positions, in [0, 2^31) each, fits an int: converted as it is.
    CHECK(narrow("x + 0.5 * (col - row)") == "x + 0.5f * (real)(col - row)");
    CHECK(narrow("x + 0.5 * (col - row + 1)") == "x + 0.5f * (real)((long long)col - (long long)row + 1)");
    CHECK(narrow("x + 0.5 * (col + row)") == "x + 0.5f * (real)((long long)col + (long long)row)");
}

TEST_CASE("// and % of integers: as NumPy's (rounded down, the divisor's sign, 0 for a divisor of 0), exact") {
    expr::scope matrix = k_names;
    matrix.has_shape = true;
    const auto text = [&](const std::string& e) { return expr::to_text(expr::parse(e, matrix)); };
    CHECK(text("(i // 3) % 5") == "i // 3 % 5");
    CHECK(text("i // (3 % 5)") == "i // (3 % 5)");
    CHECK(text("i%2*3") == "i % 2 * 3");
    const auto narrow = [&](const std::string& e) { return expr::to_cuda(expr::parse(e, matrix), {false, false, true}); };
    CHECK(narrow("col > row % cols ? -inf : x") == "col > kjit_floor_mod(row, cols) ? -__int_as_float(0x7f800000) : x");
    CHECK(narrow("x + (row - 40) // -7") == "x + (real)kjit_floor_div((long long)row - 40, -7)");
    CHECK(narrow("x * (i % 2 == 0 ? 1 : -1)") == "x * (kjit_floor_mod(i, 2) == 0 ? 1.0f : -1.0f)");
    CHECK(narrow("x + (row + 1) * 2 % 3") == "x + (real)kjit_floor_mod(((long long)row + 1) * 2, 3)");
    CHECK(expr::uses(expr::parse("x + (i > 2 ? i % 2 : 0)", matrix), expr::binary_op::mod));
    CHECK_FALSE(expr::uses(expr::parse("x + (i > 2 ? i % 2 : 0)", matrix), expr::binary_op::floor_div));
    CHECK_FALSE(expr::uses(expr::parse("x / 2 + i", matrix), expr::binary_op::mod));

    const std::vector<double> x(4, 0.0), zero(4, 0.0);
    const expr::positions where{7, 3, 5, 15};  // elements 7..10: (1, 2) (1, 3) (1, 4) (2, 0)
    const expr::chunk in{4, x.data(), zero.data(), nullptr, nullptr, true, nullptr, &where};
    const auto values = [&](const std::string& e) {
        std::vector<double> out(4), scales(4);
        expr::evaluate(expr::parse(e, matrix), in, out.data(), scales.data());
        CHECK(scales == std::vector<double>(4, 0.0));  // exact: no rounding to charge
        return out;
    };
    CHECK(values("i // 2") == std::vector<double>{3, 4, 4, 5});
    CHECK(values("i % 4") == std::vector<double>{3, 0, 1, 2});
    CHECK(values("(col - 3) // 2") == std::vector<double>{-1, 0, 0, -2});  // -1 // 2 is -1, not 0
    CHECK(values("(col - 3) % 2") == std::vector<double>{1, 0, 1, 1});     // -1 % 2 is 1
    CHECK(values("i % -3") == std::vector<double>{-2, -1, 0, -2});        // the divisor's sign
    CHECK(values("i // -3") == std::vector<double>{-3, -3, -3, -4});
    CHECK(values("i % (row - 1)") == std::vector<double>{0, 0, 0, 0});     // row 1: a divisor of 0 gives 0
    CHECK(values("i // (col - 2)") == std::vector<double>{0, 8, 4, -5});
    // Past 64-bit integers, where the kernel's integers wrap: the real floor division, not an
    // undefined conversion (the fuzzer's finding, fuzz/corpus/fuzz_expr/beyond_64_bits).
    const std::vector<double> beyond = values("(i + 1) * 4444944505 * 444444944505 * 9 // 7");
    for (std::size_t k = 0; k < 4; ++k)
        CHECK(beyond[k] == std::floor((7.0 + static_cast<double>(k) + 1) * 4444944505.0 * 444444944505.0 * 9 / 7));

    // A sample of elements, every stride-th: 7, 10, 13, 16 are (1, 2) (2, 0) (2, 3) (3, 1).
    const expr::positions sampled{7, 4, 5, 20, 3};
    const expr::chunk every_third{4, x.data(), zero.data(), nullptr, nullptr, true, nullptr, &sampled};
    std::vector<double> rows_at(4), cols_at(4);
    expr::evaluate(expr::parse("row", matrix), every_third, rows_at.data(), nullptr);
    expr::evaluate(expr::parse("col", matrix), every_third, cols_at.data(), nullptr);
    CHECK(rows_at == std::vector<double>{1, 2, 2, 3});
    CHECK(cols_at == std::vector<double>{2, 0, 3, 1});

    const auto failure = [&](const std::string& e) { return parse_failure(e, matrix); };
    CHECK(failure("x % 2") == std::make_pair(std::size_t{1}, std::string("'%' takes integers: positions (i, row, col, …), whole "
                                                                          "numbers and +, -, *, //, % of them; use / for real division")));
    CHECK(failure("i // (row + 0.5)").first == 11);  // at the + that makes it real
    CHECK(failure("i % 1e300").first == 5);  // whole, but past 2^53
    CHECK(failure("i % (i / 2)").second.rfind("'%' takes integers", 0) == 0);
}

TEST_CASE("positions in float64 by hand: a chunk that starts inside a row of a 3 × 5 matrix") {
    expr::scope matrix = k_names;
    matrix.has_shape = true;
    const std::vector<double> x(4, 0.0), zero(4, 0.0);
    const expr::positions where{7, 3, 5, 15};  // elements 7..10: (1, 2) (1, 3) (1, 4) (2, 0)
    const expr::chunk in{4, x.data(), zero.data(), nullptr, nullptr, true, nullptr, &where};
    const auto values = [&](const std::string& e) {
        std::vector<double> out(4);
        expr::evaluate(expr::parse(e, matrix), in, out.data(), nullptr);
        return out;
    };
    CHECK(values("i") == std::vector<double>{7, 8, 9, 10});
    CHECK(values("row * 10 + col") == std::vector<double>{12, 13, 14, 20});
    CHECK(values("rows * 100 + cols * 10 + n") == std::vector<double>(4, 365));
    CHECK(values("col > row ? -inf : row - col") == std::vector<double>{-HUGE_VAL, -HUGE_VAL, -HUGE_VAL, 2});
    CHECK(std::isnan(values("nan")[0]));
    CHECK(values("pi")[0] == std::numbers::pi);
    CHECK(values("sigmoid(0) + clamp(col, 3, 4)") == std::vector<double>{3.5, 3.5, 4.5, 3.5});
    // An attention score's query head and batch: the same for the whole chunk.
    matrix.has_heads = true;
    const expr::positions in_head{.first = 7, .rows = 3, .cols = 5, .n = 15, .head = 6, .batch = 2};
    const expr::chunk scored{4, x.data(), zero.data(), nullptr, nullptr, true, nullptr, &in_head};
    std::vector<double> out(4);
    expr::evaluate(expr::parse("head * 10 + batch + col", matrix), scored, out.data(), nullptr);
    CHECK(out == std::vector<double>{64, 65, 66, 62});
}

TEST_CASE("errors name the column and what was expected") {
    auto [column, what] = parse_failure("x * wieghts + b");
    CHECK(column == 5);
    CHECK(what == "unknown name 'wieghts'; x is the value flowing in; i and n are positions; inf, nan and pi "
                  "constants; inputs are w, b; params are alpha");
    std::tie(column, what) = parse_failure("exp(x, 2)");
    CHECK(column == 1);
    CHECK(what == "exp takes 1 argument, got 2");
    CHECK(parse_failure("clamp(x)").second == "clamp takes 3 arguments, got 1");
    CHECK(parse_failure("sigmoidd(x)").second.rfind("unknown function 'sigmoidd'; functions are exp exp2", 0) == 0);
    CHECK(parse_failure("x * col").second == "'col' needs a \"shape\": [rows, cols]; an array of n elements has positions i and n");
    CHECK(parse_failure("x * head").second.rfind("'head' is a position of an attention score only (its query's head and batch); x is", 0) == 0);
    CHECK(parse_failure("x +").second == "expected a number, a name or '(', got the end");
    CHECK(parse_failure("x + $").first == 5);
    CHECK(parse_failure("(x + 1").second == "expected ')' to close the '(' at column 1, got the end");
    CHECK(parse_failure("x ? 1 : 2").second.find("must be true/false") != std::string::npos);
    CHECK(parse_failure("x > 0").second.find("the expression's result must be a number") != std::string::npos);
    CHECK(parse_failure("(x > 0) + 1").second.find("the left side of '+' must be a number") != std::string::npos);
    CHECK(parse_failure("x x").second == "expected an operator or the end of the expression, got 'x'");
    CHECK(parse_failure("1e400").second == "number out of range: 1e400");
    CHECK(parse_failure("2abc").second.find("expected an operator after the number") == 0);
    CHECK(parse_failure("exp").second == "'exp' is a function: call it as exp(…)");
    CHECK(parse_failure("x = 1").second.find("got '='") != std::string::npos);
    CHECK(parse_failure("x \xC3\xA9").second.find("byte 0xC3") != std::string::npos);
    CHECK(parse_failure("").second == "expected an expression, got nothing");
}

TEST_CASE("limits: 64 levels and 4,096 characters work; beyond the limits, an error, not a crash") {
    std::string nested = "x";
    for (int i = 0; i < 64; ++i) nested = "tanh(" + nested + ")";
    CHECK(expr::parse(nested, k_names)->depth > 64);
    std::string sum = "x";
    while (sum.size() < 4096) sum += " + (x * w - b) / (1 + x * x)";
    CHECK(sum.size() > 4096);
    CHECK_NOTHROW((void)expr::parse(sum, k_names));
    const std::string deep = std::string(100000, '(') + "x" + std::string(100000, ')');
    CHECK(parse_failure(deep).second.find("expression too long") == 0);
    const std::string too_deep = std::string(1000, '(') + "x" + std::string(1000, ')');
    CHECK(parse_failure(too_deep).second.find("expression nested too deeply") == 0);
    std::string chain = "x";
    for (int i = 0; i < 1000; ++i) chain += "+x";
    CHECK(parse_failure(chain).second.find("expression nested too deeply") == 0);
    CHECK(parse_failure(std::string(5000, '-') + "x").second.find("expression nested too deeply") == 0);
    // Found by fuzz_expr: 150 unary minuses parse, and print as -(-(…)), which must parse again.
    std::string minuses = "x";
    for (int i = 0; i < 150; ++i) minuses = "- " + minuses;
    const std::string printed = expr::to_text(expr::parse(minuses, k_names));
    CHECK(printed.find("(-") != std::string::npos);
    CHECK(expr::to_text(expr::parse(printed, k_names)) == printed);
}

TEST_CASE("rebind renames an op's parameters; collect_names lists what a tree uses") {
    const auto op = expr::parse("x > 0 ? x : alpha * x + w", k_names);
    const auto bound = expr::rebind(op, {{"alpha", {expr::name_kind::scalar, "s2_alpha"}},
                                         {"w", {expr::name_kind::array, "weights"}}});
    CHECK(expr::to_text(bound) == "x > 0 ? x : s2_alpha * x + weights");
    expr::used_names used;
    expr::collect_names(bound, used);
    CHECK(used.flowing);
    CHECK(used.arrays == std::vector<std::string>{"weights"});
    CHECK(used.scalars == std::vector<std::string>{"s2_alpha"});
}

TEST_CASE("flowing_ignored_where: where a choice of positions picks a branch without x") {
    expr::scope names = k_names;
    names.has_shape = true;
    const auto where = [&](const std::string& text) {
        const expr::tree found = expr::flowing_ignored_where(expr::parse(text, names));
        return found ? expr::to_text(found) : std::string("nowhere");
    };
    CHECK(where("col > row ? -inf : x * alpha") == "col > row");
    CHECK(where("col <= row ? x * alpha : -inf") == "!(col <= row)");
    CHECK(where("(col > row ? 0 : x) + (row > 10 ? w : x)") == "col > row && row > 10");
    CHECK(where("col > row ? -inf : i < 4 ? b : x") == "col > row || !(col > row) && i < 4");
    CHECK(where("col > row ? x : x * 2") == "nowhere");  // both branches read x
    CHECK(where("x > 0 ? 0 : alpha") == "nowhere");      // the choice itself reads x
    CHECK(where("tanh(x) * alpha") == "nowhere");
    CHECK(where("alpha * w") == "nowhere");  // no x to skip
}

// Random and mutated expressions: every one either parses (and then prints to text that parses to
// the same text) or fails with a parse_error at a column inside the text. Nothing else may escape.
TEST_CASE("fuzz: 30,000 random and mutated expressions never crash and always answer") {
    const std::vector<std::string> seeds{"x * w + b", "x > 0 ? x : alpha * x", "0.5 * x * (1 + tanh(0.79 * (x + 0.04 * x * x * x)))",
                                         "clamp(x, -1, 1) + pow(w, 2) / (1e-3 + abs(b))", "!(x < 1) && w >= 2 || b != 3 ? -x : x", "x + (i // 3) % -2 * (n - i)"};
    const std::string alphabet = "xwbin alpha01.5e+-*/%()<>=!&|?:,tanhexpclamp \t$\xff";
    std::mt19937 rng(12345);
    int parsed = 0, rejected = 0;
    for (int i = 0; i < 30000; ++i) {
        std::string text = seeds[rng() % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 6);
        for (int e = 0; e < edits; ++e) {
            const std::size_t at = text.empty() ? 0 : rng() % text.size();
            switch (rng() % 4) {
                case 0: if (!text.empty()) text.erase(at, 1 + rng() % 3); break;
                case 1: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
                case 2: if (!text.empty()) text[at] = alphabet[rng() % alphabet.size()]; break;
                default: text.insert(at, text.substr(rng() % (text.size() + 1))); break;  // duplicate a tail
            }
        }
        try {
            const auto tree = expr::parse(text, k_names);
            const std::string printed = expr::to_text(tree);
            REQUIRE(expr::to_text(expr::parse(printed, k_names)) == printed);
            ++parsed;
        } catch (const expr::parse_error& e) {
            REQUIRE(e.column() >= 1);
            REQUIRE(e.column() <= text.size() + 1);
            ++rejected;
        }
    }
    CHECK(parsed > 1000);
    CHECK(rejected > 1000);
}

TEST_CASE("token reads: an attention score's input of one value per token, at the query's or the key's token") {
    expr::scope score;
    score.has_shape = true;
    score.has_heads = true;
    score.arrays = {"g"};
    score.tokens = {"doc"};
    const expr::tree t = expr::parse("doc[row] != doc[ col ] ? -inf : x", score);
    CHECK(expr::to_text(t) == "doc[row] != doc[col] ? -inf : x");
    CHECK(expr::to_cuda(t, {}) == "kjit_doc_of_row != kjit_doc_of_col ? -__int_as_float(0x7f800000) : x");
    expr::used_names used;
    expr::collect_names(t, used);
    CHECK(used.tokens == std::vector<expr::token_read>{{"doc", "row"}, {"doc", "col"}});
    CHECK(used.arrays.empty());
    // Evaluated from the values at each element, given under the reads' text.
    const double x[3] = {1, 2, 3}, zero[3] = {}, query[3] = {7, 7, 7}, key[3] = {7, 8, 7};
    const std::map<std::string, const double*> reads{{"doc[row]", query}, {"doc[col]", key}};
    double out[3];
    expr::evaluate(t, {3, x, zero, &reads, nullptr, true}, out, nullptr);
    CHECK(out[0] == 1);
    CHECK(std::isinf(out[1]));
    CHECK(out[2] == 3);

    CHECK(parse_failure("doc + x", score).second == "'doc' has one value per token: read it as doc[row] (the query's) or doc[col] (the key's)");
    CHECK(parse_failure("doc[i] + x", score) == std::pair<std::size_t, std::string>{5, "a token input is read at row (the query's token) or col (the key's), got 'i'"});
    CHECK(parse_failure("doc[row + x", score).second.find("expected ']'") != std::string::npos);
    CHECK(parse_failure("g[row] + x", score).second == "'g' is not an input of one value per token; those are doc");
    CHECK(parse_failure("w[row] + x").second == "'w[…]': only an attention score reads inputs by token (name[row], name[col])");
}
