#include "family/gemm/reference.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "family/gemm/policy.hpp"
#include "util/hash.hpp"
#include "util/parallel.hpp"

namespace kjit::family::gemm {
namespace {

/// Adjacent columns compared as one run: what an epilogue is evaluated on at once.
constexpr long long k_run = 8;

/// A run of adjacent elements of one row of the result.
struct run {
    long long row = 0, col = 0, count = 0;
};

/// Sorted by row and column, overlapping runs merged.
void sort_and_merge(std::vector<run>& runs) {
    std::sort(runs.begin(), runs.end(), [](const run& x, const run& y) { return x.row != y.row ? x.row < y.row : x.col < y.col; });
    std::vector<run> merged;
    for (const run& r : runs) {
        if (!merged.empty() && merged.back().row == r.row && r.col <= merged.back().col + merged.back().count) {
            merged.back().count = std::max(merged.back().count, r.col + r.count - merged.back().col);
            continue;
        }
        merged.push_back(r);
    }
    runs.swap(merged);
}

/// The runs to compute: every row whole for a small result; otherwise one run per row and per
/// 8 columns (row t mod M, columns from 8 · (t mod ⌈N / 8⌉)), then hashed ones, until they hold
/// k_sample_elements.
std::vector<run> runs_of(const sizes& s) {
    std::vector<run> runs;
    if (static_cast<std::size_t>(s.m * s.n) <= k_full_elements) {
        for (long long r = 0; r < s.m; ++r) runs.push_back({r, 0, s.n});
        return runs;
    }
    const auto add = [&](long long row, long long col) { runs.push_back({row, col, std::min(k_run, s.n - col)}); };
    const long long col_runs = (s.n + k_run - 1) / k_run;
    for (long long t = 0; t < std::max(s.m, col_runs); ++t) add(t % s.m, t % col_runs * k_run);
    const auto elements = [&] {
        long long total = 0;
        for (const run& r : runs) total += r.count;
        return total;
    };
    std::uint64_t t = 0;
    for (sort_and_merge(runs); elements() < static_cast<long long>(k_sample_elements); sort_and_merge(runs))
        for (int added = 0; added < 1024; ++added, ++t) {
            const std::uint64_t h = splitmix64(t);
            add(static_cast<long long>(h % static_cast<std::uint64_t>(s.m)), static_cast<long long>((h >> 32) % static_cast<std::uint64_t>(s.n)));
        }
    return runs;
}

/// A float32 rounded to TF32 (10 bits of mantissa) as the kernel rounds its operands (cvt.rna:
/// to the nearest, ties away from zero); infinities and NaNs as they are.
double tf32_rounded(double value) {
    const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(value));
    if ((bits & 0x7f800000u) == 0x7f800000u) return value;
    return std::bit_cast<float>((bits + 0x1000u) & 0xffffe000u);  // a carry out of the mantissa steps the exponent
}

/// An operand as the tensor cores multiply it: rounded to TF32 where the policy says so.
double operand(const reference::typed_array& matrix, std::size_t i, bool tf32) {
    return tf32 ? tf32_rounded(matrix.get(i)) : matrix.get(i);
}

/// B's columns as rows of doubles (k × n), widened once: a dot product then reads both operands
/// in order.
std::vector<double> columns_of(const reference::typed_array& b, std::size_t k, std::size_t n, bool tf32) {
    std::vector<double> columns(k * n);
    parallel_ranges(n, [&](std::size_t first, std::size_t last) {
        for (std::size_t c = first; c < last; ++c)
            for (std::size_t d = 0; d < k; ++d) columns[c * k + d] = operand(b, d * n + c, tf32);
    }, 64);
    return columns;
}

/// Where each run's values go in the expected values (offsets[i] to offsets[i + 1]), sized, with
/// the elements they stand for where the runs sample the output.
std::vector<std::size_t> lay_out(const std::vector<run>& runs, const sizes& s, reference::expected_values& out) {
    std::vector<std::size_t> offsets(runs.size() + 1, 0);
    for (std::size_t i = 0; i < runs.size(); ++i) offsets[i + 1] = offsets[i] + static_cast<std::size_t>(runs[i].count);
    out.values.resize(offsets.back());
    out.scales.resize(offsets.back());
    if (offsets.back() < static_cast<std::size_t>(s.m * s.n)) {
        out.sampled.reserve(offsets.back());
        for (const run& r : runs)
            for (long long c = r.col; c < r.col + r.count; ++c) out.sampled.push_back(static_cast<std::size_t>(r.row * s.n + c));
    }
    return offsets;
}

/// A run's products, x[j] = row · column (r.col + j), and their error scales: (k + 1) times the
/// sum of the products' magnitudes.
void products(const std::vector<double>& row, const std::vector<double>& columns, const run& r, std::size_t k,
              std::vector<double>& x, std::vector<double>& scale) {
    for (std::size_t j = 0; j < x.size(); ++j) {
        const double* column = columns.data() + (static_cast<std::size_t>(r.col) + j) * k;
        double sum = 0, magnitude = 0;
        for (std::size_t d = 0; d < k; ++d) {
            sum += row[d] * column[d];
            magnitude += std::fabs(row[d] * column[d]);
        }
        x[j] = sum;
        scale[j] = static_cast<double>(k + 1) * magnitude;
    }
}

}  // namespace

reference::expected_values reference(const config::pipeline& p, const reference::input_arrays& inputs) {
    const sizes s = sizes_of(p);
    const reference::typed_array& a = inputs.at(p.stages.front().input);
    const std::vector<run> runs = runs_of(s);
    const auto k = static_cast<std::size_t>(s.k), n = static_cast<std::size_t>(s.n);
    // The products of TF32 operands are exact in float: what the kernel adds differs from these
    // by float's roundings alone.
    const bool tf32 = policy_of(p).tf32;
    const std::vector<double> columns = columns_of(inputs.at(multiplier(p)), k, n, tf32);
    // The per-column inputs an epilogue reads, widened once.
    std::map<std::string, std::vector<double>> per_column;
    for (const auto& in : p.inputs) {
        if (!in.per_column) continue;
        auto& values = per_column[in.name];
        for (std::size_t c = 0; c < n; ++c) values.push_back(inputs.at(in.name).get(c));
    }
    const std::map<std::string, double> scalars = config::scalar_values(p);
    const bool float_compute = !config::computes_in_double(p.type);
    const expr::approximations approximated = config::approximations_of(p);
    const bool separate = p.fuse == config::fusion::separate;
    const double intermediate = reference::storage_rounding(p.type);
    reference::expected_values out;
    const std::vector<std::size_t> offsets = lay_out(runs, s, out);

    parallel_ranges(runs.size(), [&](std::size_t first, std::size_t last) {
        std::vector<double> row(k), x, scale, next, next_scale;
        long long row_read = -1;
        std::map<std::string, const double*> arrays;
        for (std::size_t i = first; i < last; ++i) {
            const run& r = runs[i];
            if (r.row != row_read) {
                for (std::size_t d = 0; d < k; ++d) row[d] = operand(a, static_cast<std::size_t>(r.row) * k + d, tf32);
                row_read = r.row;
            }
            const auto count = static_cast<std::size_t>(r.count);
            x.assign(count, 0.0);
            scale.assign(count, 0.0);
            next.resize(count);
            next_scale.resize(count);
            products(row, columns, r, k, x, scale);
            for (const auto& [name, values] : per_column) arrays[name] = values.data() + r.col;
            for (std::size_t st = 1; st < p.stages.size(); ++st) {
                if (separate)  // the array the previous kernel wrote rounds x to the storage type
                    reference::add_storage_rounding(scale.data(), x.data(), count, intermediate);
                const expr::chunk in{count, x.data(), scale.data(), &arrays, &scalars, float_compute, nullptr, nullptr,
                                     approximated};
                reference::evaluate_stage(p.stages[st], in, next.data(), next_scale.data());
                x.swap(next);
                scale.swap(next_scale);
            }
            std::copy(x.begin(), x.end(), out.values.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
            std::copy(scale.begin(), scale.end(), out.scales.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
        }
    }, 16);
    return out;
}

}  // namespace kjit::family::gemm
