#include "reference/reference.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>

#include "expr/evaluate.hpp"
#include "util/bytes.hpp"
#include "util/half.hpp"
#include "util/parallel.hpp"

namespace kjit::reference {
namespace {

/// Precision (significand bits) and smallest normal exponent of each storage type.
struct format {
    int precision;
    int min_exponent;
};
format format_of(config::dtype type) { return {config::info(type).precision, config::info(type).min_exponent}; }

/// ulp_at with the format looked up: read from the bits, as it runs once per element of a check
/// (ilogb and ldexp cost more than the rest of the comparison).
double ulp_in(const format& f, double value) {
    const auto biased = static_cast<int>((std::bit_cast<std::uint64_t>(value) >> 52) & 0x7FF);
    // Zero, subnormals (biased 0), Inf and NaN (0x7FF) take the smallest normal's ulp.
    const int exponent = biased == 0x7FF ? f.min_exponent : std::max(biased - 1023, f.min_exponent);
    const int ulp_exponent = exponent - (f.precision - 1);
    if (ulp_exponent < -1022) return std::ldexp(1.0, ulp_exponent);  // a subnormal double
    return std::bit_cast<double>(static_cast<std::uint64_t>(ulp_exponent + 1023) << 52);
}

constexpr std::size_t k_chunk = 1024;  // elements evaluated together: one tree walk per chunk

}  // namespace

typed_array::typed_array(config::dtype type, std::size_t count)
    : m_type(type), m_bytes(count * config::element_size(type)) {}

namespace {

/// How each storage type's elements are read as double and written from it (rounded to nearest
/// even), in dtype order: adding a type is a row of config::dtype_table and one here.
struct conversion {
    double (*get)(const unsigned char* bytes, std::size_t i);
    void (*set)(unsigned char* bytes, std::size_t i, double value);
};
constexpr conversion k_conversions[] = {
    {[](const unsigned char* b, std::size_t i) -> double { return load_element<float>(b, i); },
     [](unsigned char* b, std::size_t i, double v) { store_element(b, i, static_cast<float>(v)); }},
    {[](const unsigned char* b, std::size_t i) { return load_element<double>(b, i); },
     [](unsigned char* b, std::size_t i, double v) { store_element(b, i, v); }},
    {[](const unsigned char* b, std::size_t i) { return float16_to_double(load_element<std::uint16_t>(b, i)); },
     [](unsigned char* b, std::size_t i, double v) { store_element(b, i, double_to_float16(v)); }},
    {[](const unsigned char* b, std::size_t i) -> double { return bfloat16_to_float(load_element<std::uint16_t>(b, i)); },
     [](unsigned char* b, std::size_t i, double v) { store_element(b, i, float_to_bfloat16(static_cast<float>(v))); }},
};

const conversion& conversion_of(config::dtype type) { return k_conversions[static_cast<std::size_t>(type)]; }

}  // namespace

double get_element(config::dtype type, const void* bytes, std::size_t i) {
    return conversion_of(type).get(static_cast<const unsigned char*>(bytes), i);
}
void set_element(config::dtype type, void* bytes, std::size_t i, double value) {
    conversion_of(type).set(static_cast<unsigned char*>(bytes), i, value);
}

double typed_array::get(std::size_t i) const { return get_element(m_type, m_bytes.data(), i); }
void typed_array::set(std::size_t i, double value) { set_element(m_type, m_bytes.data(), i, value); }

namespace {

/// A reduce stage over one row's `count` values: the row value, and its error scale. A sum's
/// rounding is bounded through the kernels' order of additions (row_sums): each
/// element passes through at most `depth` roundings, each at most u·|a partial sum|.
expr::row_value reduce_row(config::reduction how, const double* values, const double* scales, std::size_t count,
                           long long depth) {
    expr::row_value result;
    double largest_scale = 0, magnitude = 0, carried = 0;
    for (std::size_t i = 0; i < count; ++i) {
        largest_scale = std::max(largest_scale, scales[i]);
        magnitude += std::fabs(values[i]);
        carried += scales[i];
    }
    switch (how) {
        // fmax and fmin, as the kernels': a NaN loses to any number.
        case config::reduction::max:
            result.value = std::accumulate(values, values + count, -HUGE_VAL, [](double a, double b) { return std::fmax(a, b); });
            break;
        case config::reduction::min:
            result.value = std::accumulate(values, values + count, HUGE_VAL, [](double a, double b) { return std::fmin(a, b); });
            break;
        case config::reduction::sum:
        case config::reduction::mean:
            for (std::size_t i = 0; i < count; ++i) result.value += values[i];
            break;
        case config::reduction::none: break;
    }
    // A max or a min selects one element; which one may change by rounding, by at most the
    // largest error of any of them.
    result.scale = largest_scale;
    if (how == config::reduction::sum || how == config::reduction::mean)
        result.scale = carried + static_cast<double>(depth) * magnitude;
    if (how == config::reduction::mean) {
        result.value /= static_cast<double>(count);
        result.scale = result.scale / static_cast<double>(count) + std::fabs(result.value);
    }
    return result;
}

}  // namespace

void evaluate_stage(const config::stage& st, const expr::chunk& in, double* values, double* scales) {
    // Where the kernel runs the exact definition (a builtin formula), one walk gives both.
    expr::evaluate(st.exact, in, values, st.kernel_is_exact ? scales : nullptr);
    if (!st.kernel_is_exact) expr::evaluate(st.kernel, in, nullptr, scales);
}

namespace {

/// The chunk [begin, begin + count) of each array the stages read, as doubles in `elements`, and
/// `arrays` pointing at them. A per-column input has a row's worth of values: a row (a chunk of a
/// row pipeline) starts at its first.
void widen_arrays(const std::vector<std::string>& names, const input_arrays& inputs, std::size_t n, std::size_t begin,
                  std::size_t count, std::map<std::string, std::vector<double>>& elements,
                  std::map<std::string, const double*>& arrays) {
    for (const auto& name : names) {
        auto& values = elements[name];
        values.resize(count);
        const typed_array& array = inputs.at(name);
        const std::size_t start = array.size() == n ? begin : 0;
        for (std::size_t i = 0; i < count; ++i) values[i] = array.get(start + i);
        arrays[name] = values.data();
    }
}

}  // namespace

namespace {

/// One worker's buffers for a chunk: x and its error scale, the next stage's, the arrays the
/// stages read (widened to double), and the row values the reduces have given so far.
struct chunk_buffers {
    std::vector<double> x, x_scale, next, next_scale;
    std::map<std::string, std::vector<double>> elements;
    std::map<std::string, const double*> arrays;
    std::map<std::string, expr::row_value> row_values;
    explicit chunk_buffers(std::size_t size) : x(size), x_scale(size), next(size), next_scale(size) {}
};

/// What every chunk of a pipeline's reference shares: the pipeline and its inputs, and how the
/// kernels compute (in float or double, which functions they approximate, how an intermediate of
/// a separate pipeline is rounded, the depth of a row's sums). A row pipeline is evaluated a row
/// at a time (a reduce needs the whole row); others in chunks of k_chunk elements.
class chunk_evaluator {
public:
    chunk_evaluator(const config::pipeline& p, const input_arrays& inputs, std::optional<row_sums> rows)
        : m_p(p), m_inputs(inputs), m_n(static_cast<std::size_t>(p.n)),
          m_chunk_size(rows ? static_cast<std::size_t>(p.shape->cols) : k_chunk), m_sums(rows.value_or(row_sums{})),
          m_scalars(config::scalar_values(p)), m_float_compute(!config::computes_in_double(p.type)),
          m_approximated(config::approximations_of(p)), m_intermediate_rounding(storage_rounding(p.type)),
          m_first(p.stages.front().input.empty() ? nullptr : &inputs.at(p.stages.front().input)) {
        for (const auto& s : p.stages) {
            expr::collect_names(s.kernel, m_used);
            expr::collect_names(s.exact, m_used);
        }
    }

    [[nodiscard]] std::size_t chunk_size() const { return m_chunk_size; }
    [[nodiscard]] std::size_t chunks() const { return (m_n + m_chunk_size - 1) / m_chunk_size; }

    /// Chunk `chunk` through every stage, its result (an element each, or the row's value) into
    /// `out`.
    void evaluate(std::size_t chunk, chunk_buffers& b, expected_values& out) const {
        const std::size_t begin = chunk * m_chunk_size, count = std::min(m_chunk_size, m_n - begin);
        const expr::positions where{static_cast<long long>(begin), m_p.shape ? m_p.shape->rows : 0,
                                    m_p.shape ? m_p.shape->cols : 0, m_p.n};
        widen_arrays(m_used.arrays, m_inputs, m_n, begin, count, b.elements, b.arrays);
        for (std::size_t i = 0; i < count; ++i) {
            b.x[i] = m_first ? m_first->get(begin + i) : 0.0;
            b.x_scale[i] = 0;
        }
        for (std::size_t s = 0; s < m_p.stages.size(); ++s) {
            const config::stage& st = m_p.stages[s];
            const expr::chunk in{count, b.x.data(), b.x_scale.data(), &b.arrays, &m_scalars, m_float_compute, &b.row_values,
                                 &where, m_approximated};
            evaluate_stage(st, in, b.next.data(), b.next_scale.data());
            if (st.reduce != config::reduction::none) {  // x flows on unchanged
                const long long depth = st.online_with ? m_sums.online_depth : m_sums.depth;
                const expr::row_value row = reduce_row(st.reduce, b.next.data(), b.next_scale.data(), count, depth);
                if (s + 1 == m_p.stages.size()) {
                    out.values[chunk] = row.value;
                    out.scales[chunk] = row.scale;
                }
                b.row_values[st.as] = row;
                continue;
            }
            if (m_p.fuse == config::fusion::separate && s + 1 < m_p.stages.size())
                add_storage_rounding(b.next_scale.data(), b.next.data(), count, m_intermediate_rounding);
            std::swap(b.x, b.next);
            std::swap(b.x_scale, b.next_scale);
        }
        if (config::result_per_row(m_p)) return;
        std::copy_n(b.x.begin(), count, out.values.begin() + static_cast<std::ptrdiff_t>(begin));
        std::copy_n(b.x_scale.begin(), count, out.scales.begin() + static_cast<std::ptrdiff_t>(begin));
    }

private:
    const config::pipeline& m_p;
    const input_arrays& m_inputs;
    std::size_t m_n, m_chunk_size;
    row_sums m_sums;
    std::map<std::string, double> m_scalars;
    expr::used_names m_used;
    bool m_float_compute;
    expr::approximations m_approximated;
    /// An intermediate array of a separate pipeline rounds x to the storage type: in units of the
    /// compute type's rounding, that is this many.
    double m_intermediate_rounding;
    const typed_array* m_first;
};

}  // namespace

expected_values compute(const config::pipeline& p, const input_arrays& inputs, std::optional<row_sums> rows) {
    const chunk_evaluator evaluator(p, inputs, rows);
    expected_values out;  // not zeroed: each worker's chunks are the first touch of their pages
    out.values.resize(static_cast<std::size_t>(config::output_count(p)));
    out.scales.resize(out.values.size());
    parallel_ranges(evaluator.chunks(), [&](std::size_t first_chunk, std::size_t last_chunk) {
        chunk_buffers buffers(evaluator.chunk_size());
        for (std::size_t chunk = first_chunk; chunk < last_chunk; ++chunk) evaluator.evaluate(chunk, buffers, out);
    }, rows ? std::max<std::size_t>(1, 16384 / evaluator.chunk_size()) : 16);
    return out;
}

double ulp_at(double value, config::dtype type) { return ulp_in(format_of(type), value); }

double allowed_error(const config::tolerance& tol, double ref, double scale) {
    return tol.atol + tol.rtol * std::fabs(ref) + tol.rounding * scale;
}

namespace {

/// Adds a part of the elements' comparison (counted by one thread) to the whole; the first bad
/// element is the lowest.
void absorb(comparison& whole, const comparison& part) {
    whole.mismatches += part.mismatches;
    whole.unwritten += part.unwritten;
    whole.nan_count += part.nan_count;
    whole.inf_count += part.inf_count;
    whole.nonfinite_as_reference += part.nonfinite_as_reference;
    whole.max_abs_error = std::max(whole.max_abs_error, part.max_abs_error);
    whole.max_rel_error = std::max(whole.max_rel_error, part.max_rel_error);
    whole.max_ulp_error = std::max(whole.max_ulp_error, part.max_ulp_error);
    if (part.first_bad && (!whole.first_bad || *part.first_bad < *whole.first_bad)) {
        whole.first_bad = part.first_bad;
        whole.first_bad_entry = part.first_bad_entry;
    }
}

/// Element i of the output (the reference's entry `entry`) against its expected value, its
/// error scale and the tolerance, counted into `part`.
void compare_element(comparison& part, double value, double expected, double scale, const config::tolerance& tol,
                     format f, std::size_t i, std::size_t entry) {
    bool bad = false;
    if (!std::isfinite(value) || !std::isfinite(expected)) {
        // A masked row's NaN, a -inf that flowed through: right where the reference agrees.
        bad = std::isnan(value) ? !std::isnan(expected) : value != expected;
        if (!bad) ++part.nonfinite_as_reference;
        else if (std::isnan(value)) ++part.nan_count;
        else if (std::isinf(value)) ++part.inf_count;
    } else {
        const double abs_error = std::fabs(value - expected);
        part.max_abs_error = std::max(part.max_abs_error, abs_error);
        if (expected != 0) part.max_rel_error = std::max(part.max_rel_error, abs_error / std::fabs(expected));
        part.max_ulp_error = std::max(part.max_ulp_error, abs_error / ulp_in(f, expected));
        bad = !(abs_error <= allowed_error(tol, expected, scale));
    }
    if (bad) {
        ++part.mismatches;
        if (!part.first_bad) {
            part.first_bad = i;
            part.first_bad_entry = entry;
        }
    }
}

/// The elements outside a sampled reference: written, and, where the sample's reference has no
/// NaN or ±Inf (so none is expected anywhere), finite.
void check_unsampled(const typed_array& out, const expected_values& ref, comparison& result) {
    const bool all_finite = std::all_of(ref.values.begin(), ref.values.end(), [](double v) { return std::isfinite(v); });
    std::mutex merge;
    parallel_ranges(out.size(), [&](std::size_t begin, std::size_t end) {
        comparison part;
        for (std::size_t i = begin; i < end; ++i) {
            const bool poison = holds_poison(out, i);
            const double value = out.get(i);
            if ((!poison && (std::isfinite(value) || !all_finite)) || std::binary_search(ref.sampled.begin(), ref.sampled.end(), i))
                continue;
            ++part.mismatches;
            if (poison) ++part.unwritten;
            if (std::isnan(value)) ++part.nan_count;
            else ++part.inf_count;
            if (!part.first_bad) part.first_bad = i;
        }
        const std::lock_guard lock(merge);
        absorb(result, part);
    });
}

}  // namespace

comparison compare(const typed_array& out, const expected_values& ref, config::tolerance tol) {
    comparison result;
    result.count = out.size();
    result.tol = tol;
    const format f = format_of(out.type());
    const std::size_t entries = ref.values.size();
    const bool sampled = !ref.sampled.empty();
    const auto element_of = [&](std::size_t entry) { return sampled ? ref.sampled[entry] : entry; };
    if (entries > 0 && element_of(entries - 1) >= out.size()) return result;  // not this output's reference
    std::mutex merge;
    parallel_ranges(entries, [&](std::size_t begin, std::size_t end) {
        comparison part;
        for (std::size_t entry = begin; entry < end; ++entry) {
            const std::size_t i = element_of(entry);
            compare_element(part, out.get(i), ref.values[entry], ref.scales[entry], tol, f, i, entry);
        }
        const std::lock_guard lock(merge);
        absorb(result, part);
    });
    if (sampled) check_unsampled(out, ref, result);
    result.pass = result.mismatches == 0 && (sampled || entries == out.size());
    return result;
}

bool holds_poison(const typed_array& out, std::size_t i) {
    const std::size_t size = config::element_size(out.type());
    const auto* bytes = static_cast<const unsigned char*>(out.data()) + i * size;
    return std::all_of(bytes, bytes + size, [](unsigned char b) { return b == k_poison_byte; });
}

void add_storage_rounding(double* scales, const double* values, std::size_t count, double rounding) {
    for (std::size_t i = 0; i < count; ++i)
        if (std::isfinite(values[i])) scales[i] += rounding * std::fabs(values[i]);
}

double storage_rounding(config::dtype type) {
    return std::ldexp(1.0, (config::computes_in_double(type) ? 53 : 24) - format_of(type).precision);
}

}  // namespace kjit::reference
