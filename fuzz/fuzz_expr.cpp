// libFuzzer target: the stage expression parser. Any text either parses, prints back to text that
// parses to the same text, spells as CUDA and evaluates in float64 — or is a parse_error at a
// column inside it. Anything else (another exception, a sanitizer report) is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "expr/evaluate.hpp"
#include "expr/expr.hpp"

using namespace kjit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    static const expr::scope names{{"w", "b"}, {"alpha"}, {"m"}, "inputs", "params", true};  // with a shape
    expr::tree tree;
    try {
        tree = expr::parse(text, names);
    } catch (const expr::parse_error& e) {
        if (e.column() < 1 || e.column() > size + 1) std::abort();
        return 0;
    }
    const std::string printed = expr::to_text(tree);
    if (expr::to_text(expr::parse(printed, names)) != printed) std::abort();
    for (const bool dbl : {false, true})
        for (const bool fast : {false, true})
            for (const bool int_positions : {false, true}) (void)expr::to_cuda(tree, {dbl, fast, int_positions});

    constexpr std::size_t count = 4;
    const double x[count] = {0.0, -1.5, 3e38, NAN}, zero[count] = {};
    const double w[count] = {2.0, -0.0, 1e-310, INFINITY}, b[count] = {1.0, 7.0, -3.0, 0.5};
    const std::map<std::string, const double*> arrays{{"w", w}, {"b", b}};
    const std::map<std::string, double> scalars{{"alpha", 0.01}};
    const std::map<std::string, expr::row_value> rows{{"m", {2.5, 1.0}}};
    const expr::positions where{5, 3, 3, 9};  // elements 5..8 of a 3 × 3 matrix
    double values[count], scales[count];
    expr::evaluate(tree, {count, x, zero, &arrays, &scalars, true, &rows, &where}, values, scales);
    return 0;
}
