#include "expr/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "expr/functions.hpp"
#include "util/uninitialized.hpp"

namespace kjit::expr {
namespace {

/// A node's values and error scales for the chunk's elements; not zeroed (every case writes both).
struct column {
    uninitialized_vector<double> value, scale;
    explicit column(std::size_t count) : value(count), scale(count) {}
};

/// The rounding a constant costs when the kernel holds it in float.
double constant_scale(double v, bool float_compute) {
    return float_compute && std::isfinite(v) && static_cast<double>(static_cast<float>(v)) != v ? std::fabs(v) : 0.0;
}

/// A position name, looked up once per chunk rather than once per element.
enum class position_name { i, row, col, rows, cols, n, head, batch };
position_name position_of(const std::string& name) {
    if (name == "i") return position_name::i;
    if (name == "row") return position_name::row;
    if (name == "col") return position_name::col;
    if (name == "rows") return position_name::rows;
    if (name == "head") return position_name::head;
    if (name == "batch") return position_name::batch;
    return name == "cols" ? position_name::cols : position_name::n;
}

/// Position `which` of element `index` (counted from the array's start).
double position(position_name which, long long index, const positions& at) {
    switch (which) {
        case position_name::i: return static_cast<double>(index);
        case position_name::row: return static_cast<double>(index / at.cols);
        case position_name::col: return static_cast<double>(index % at.cols);
        case position_name::rows: return static_cast<double>(at.rows);
        case position_name::cols: return static_cast<double>(at.cols);
        case position_name::head: return static_cast<double>(at.head);
        case position_name::batch: return static_cast<double>(at.batch);
        case position_name::n: break;
    }
    return static_cast<double>(at.n);
}

/// `//` and `%` of two whole numbers, as NumPy's on integers (0 for a divisor of 0), computed in
/// integers: exact, as the kernel's, where a double's division may round. The result is exact, so
/// its error scale is 0: the kernel's operands are the same integers.
struct quotient_remainder {
    double quotient, remainder;
};
quotient_remainder floor_division(double x, double y) {
    if (y == 0) return {0, 0};
    // Operands past 64-bit integers (a product of large whole numbers): the kernel's integers
    // wrap there, which a double cannot follow, so the real floor division stands in, and the
    // check finds the kernel's result far from it rather than reading an undefined conversion.
    if (!(std::fabs(x) < 0x1p63 && std::fabs(y) < 0x1p63)) {
        const double q = std::floor(x / y);
        return {q, x - q * y};
    }
    const auto a = static_cast<long long>(x), b = static_cast<long long>(y);
    long long q = a / b;
    if (q * b != a && (a < 0) != (b < 0)) --q;
    return {static_cast<double>(q), static_cast<double>(a - q * b)};
}

column eval(const node& n, const chunk& in, bool with_scale);

/// A name's values: the flowing value, an input's (or a token read's) elements, a position, a
/// row's value or a param.
column eval_name(const node& n, const chunk& in) {
    const std::size_t count = in.count;
    column out(count);
    if (n.binding == name_kind::flowing) {
        std::copy_n(in.flowing, count, out.value.begin());
        std::copy_n(in.flowing_scale, count, out.scale.begin());
    } else if (n.binding == name_kind::array || n.binding == name_kind::token) {
        // (a token read is given as an array of its own, under its text: "doc[col]")
        std::copy_n(in.arrays->at(n.binding == name_kind::token ? token_read{n.name, n.index}.text() : n.name), count, out.value.begin());
        std::fill_n(out.scale.begin(), count, 0.0);  // inputs are exact: stored values are the data
    } else if (n.binding == name_kind::position) {
        // Exact integers; one rounding where the kernel converts one to float.
        const position_name which = position_of(n.name);
        for (std::size_t i = 0; i < count; ++i) {
            out.value[i] = position(which, in.at->first + static_cast<long long>(i) * in.at->stride, *in.at);
            out.scale[i] = constant_scale(out.value[i], in.float_compute);
        }
    } else if (n.binding == name_kind::row) {
        const row_value& v = in.rows->at(n.name);
        std::fill_n(out.value.begin(), count, v.value);
        std::fill_n(out.scale.begin(), count, v.scale);
    } else {
        const double v = in.scalars->at(n.name);
        std::fill_n(out.value.begin(), count, v);
        std::fill_n(out.scale.begin(), count, constant_scale(v, in.float_compute));
    }
    return out;
}

column eval_conditional(const node& n, const chunk& in, bool with_scale) {
    const column c = eval(*n.args[0], in, with_scale), t = eval(*n.args[1], in, with_scale), f = eval(*n.args[2], in, with_scale);
    column out(in.count);
    for (std::size_t i = 0; i < in.count; ++i) {
        const column& chosen = c.value[i] != 0 ? t : f;
        out.value[i] = chosen.value[i];
        // Where the condition sits a rounding from flipping, the kernel may take the other
        // branch; for a choice continuous at its switch (x > 0 ? x : 0, a clamp) the error
        // is then at most that branch's: either branch's scale carries through.
        out.scale[i] = std::max(t.scale[i], f.scale[i]);
    }
    return out;
}

column eval_binary(const node& n, const chunk& in, bool with_scale) {
    const column a = eval(*n.args[0], in, with_scale), b = eval(*n.args[1], in, with_scale);
    column out(in.count);
    // One loop per operator: a switch inside the loop would run per element.
    const auto each = [&](auto op) {
        for (std::size_t i = 0; i < in.count; ++i) op(a.value[i], b.value[i], a.scale[i], b.scale[i], out.value[i], out.scale[i]);
    };
    using sink = double&;
    switch (n.op) {
        case binary_op::add: each([](double x, double y, double sx, double sy, sink r, sink s) { r = x + y; s = sx + sy + std::fabs(r); }); break;
        case binary_op::sub: each([](double x, double y, double sx, double sy, sink r, sink s) { r = x - y; s = sx + sy + std::fabs(r); }); break;
        case binary_op::mul:
            each([](double x, double y, double sx, double sy, sink r, sink s) {
                r = x * y;
                s = std::fabs(y) * sx + std::fabs(x) * sy + std::fabs(r);
            });
            break;
        case binary_op::div:
            each([](double x, double y, double sx, double sy, sink r, sink s) {
                r = x / y;
                s = sx / std::fabs(y) + std::fabs(r / y) * sy + std::fabs(r);
            });
            if (in.approximated.division && is_division_by_constant(n))  // the reciprocal's rounding
                for (std::size_t i = 0; i < in.count; ++i) out.scale[i] += std::fabs(out.value[i]);
            break;
        case binary_op::floor_div:
            each([](double x, double y, double, double, sink r, sink s) { r = floor_division(x, y).quotient; s = 0; });
            break;
        case binary_op::mod:
            each([](double x, double y, double, double, sink r, sink s) { r = floor_division(x, y).remainder; s = 0; });
            break;
        case binary_op::lt: each([](double x, double y, double, double, sink r, sink s) { r = x < y; s = 0; }); break;
        case binary_op::le: each([](double x, double y, double, double, sink r, sink s) { r = x <= y; s = 0; }); break;
        case binary_op::gt: each([](double x, double y, double, double, sink r, sink s) { r = x > y; s = 0; }); break;
        case binary_op::ge: each([](double x, double y, double, double, sink r, sink s) { r = x >= y; s = 0; }); break;
        case binary_op::eq: each([](double x, double y, double, double, sink r, sink s) { r = x == y; s = 0; }); break;
        case binary_op::ne: each([](double x, double y, double, double, sink r, sink s) { r = x != y; s = 0; }); break;
        case binary_op::logical_and: each([](double x, double y, double, double, sink r, sink s) { r = x != 0 && y != 0; s = 0; }); break;
        case binary_op::logical_or: each([](double x, double y, double, double, sink r, sink s) { r = x != 0 || y != 0; s = 0; }); break;
    }
    return out;
}

column eval_call(const node& n, const chunk& in, bool with_scale) {
    std::vector<column> args;
    for (const auto& a : n.args) args.push_back(eval(*a, in, with_scale));
    const function_info& f = *n.function;
    column out(in.count);
    double point[3] = {0, 0, 0};
    for (std::size_t i = 0; i < in.count; ++i) {
        for (std::size_t k = 0; k < args.size(); ++k) point[k] = args[k].value[i];
        const double r = f.value(point);
        out.value[i] = r;
        out.scale[i] = 0;
        if (!with_scale) continue;  // the partials cost as much as the value again
        double s = error_ulps(f, in.approximated, point[0]) * std::fabs(r);
        for (std::size_t k = 0; k < args.size(); ++k)
            if (args[k].scale[i] != 0) s += std::fabs(f.partial(point, r, static_cast<int>(k))) * args[k].scale[i];
        out.scale[i] = std::isnan(s) ? 0.0 : s;
    }
    return out;
}

// The error scale s of a result r, in units of one rounding u: |computed − exact| ≲ u·s. Each
// operation adds its own rounding (|r| times its ulps) to the scales of its operands carried
// through its partial derivatives; a condition, a min or a step passes on what it selects.
column eval(const node& n, const chunk& in, bool with_scale) {
    switch (n.kind) {
        case node_kind::number: {
            column out(in.count);
            std::fill_n(out.value.begin(), in.count, n.number);
            std::fill_n(out.scale.begin(), in.count, constant_scale(n.number, in.float_compute));
            return out;
        }
        case node_kind::name: return eval_name(n, in);
        case node_kind::negate: {
            column a = eval(*n.args[0], in, with_scale);
            for (double& v : a.value) v = -v;
            return a;
        }
        case node_kind::logical_not: {
            column a = eval(*n.args[0], in, with_scale);
            for (double& v : a.value) v = v != 0 ? 0 : 1;
            return a;
        }
        case node_kind::conditional: return eval_conditional(n, in, with_scale);
        case node_kind::binary: return eval_binary(n, in, with_scale);
        case node_kind::call: return eval_call(n, in, with_scale);
    }
    return column(in.count);
}

}  // namespace

void evaluate(const tree& t, const chunk& in, double* values, double* scales) {
    const column result = eval(*t, in, scales != nullptr);
    if (values) std::copy_n(result.value.begin(), in.count, values);
    if (scales) std::copy_n(result.scale.begin(), in.count, scales);
}

}  // namespace kjit::expr
