#include "reference/reference.hpp"

#include <cmath>
#include <limits>
#include <mutex>

#include "util/parallel.hpp"

namespace kjit::reference {

typed_array::typed_array(config::dtype type, std::size_t count) : m_type(type) {
    if (type == config::dtype::float32) m_f32.resize(count);
    else m_f64.resize(count);
}

std::vector<double> compute(const config::pipeline& p, const input_arrays& inputs) {
    const auto n = static_cast<std::size_t>(p.n);
    std::vector<double> out(n);
    const typed_array& first = inputs.at(p.stages.front().input);
    std::vector<const typed_array*> by(p.stages.size(), nullptr);
    for (std::size_t s = 0; s < p.stages.size(); ++s)
        if (p.stages[s].op == config::op_kind::weigh) by[s] = &inputs.at(p.stages[s].by);
    parallel_ranges(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            double x = first.get(i);
            for (std::size_t s = 0; s < p.stages.size(); ++s) {
                switch (p.stages[s].op) {
                    case config::op_kind::normalize: x /= p.stages[s].scale; break;
                    case config::op_kind::weigh: x *= by[s]->get(i); break;
                    // Both formulas compute tanh; the reference is the true value of it.
                    case config::op_kind::activate: x = std::tanh(x); break;
                }
            }
            out[i] = x;
        }
    });
    return out;
}

double ulp_at(double value, config::dtype type) {
    if (type == config::dtype::float32) {
        const float v = std::fabs(static_cast<float>(value));
        return static_cast<double>(std::nextafter(v, std::numeric_limits<float>::infinity()) - v);
    }
    const double v = std::fabs(value);
    return std::nextafter(v, std::numeric_limits<double>::infinity()) - v;
}

comparison compare(const typed_array& out, const std::vector<double>& ref, config::tolerance tol) {
    comparison result;
    result.count = out.size();
    result.tol = tol;
    std::mutex merge;
    parallel_ranges(out.size(), [&](std::size_t begin, std::size_t end) {
        comparison part;
        for (std::size_t i = begin; i < end; ++i) {
            const double value = out.get(i);
            bool bad = false;
            if (std::isnan(value)) {
                ++part.nan_count;
                bad = true;
            } else if (std::isinf(value)) {
                ++part.inf_count;
                bad = true;
            } else {
                const double abs_error = std::fabs(value - ref[i]);
                part.max_abs_error = std::max(part.max_abs_error, abs_error);
                if (ref[i] != 0) part.max_rel_error = std::max(part.max_rel_error, abs_error / std::fabs(ref[i]));
                part.max_ulp_error = std::max(part.max_ulp_error, abs_error / ulp_at(ref[i], out.type()));
                bad = abs_error > tol.atol + tol.rtol * std::fabs(ref[i]);
            }
            if (bad) {
                ++part.mismatches;
                if (!part.first_bad) part.first_bad = i;
            }
        }
        const std::lock_guard lock(merge);
        result.mismatches += part.mismatches;
        result.nan_count += part.nan_count;
        result.inf_count += part.inf_count;
        result.max_abs_error = std::max(result.max_abs_error, part.max_abs_error);
        result.max_rel_error = std::max(result.max_rel_error, part.max_rel_error);
        result.max_ulp_error = std::max(result.max_ulp_error, part.max_ulp_error);
        if (part.first_bad && (!result.first_bad || *part.first_bad < *result.first_bad))
            result.first_bad = part.first_bad;
    });
    result.pass = result.mismatches == 0 && result.count == ref.size();
    return result;
}

}  // namespace kjit::reference
