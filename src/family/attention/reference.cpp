#include "family/attention/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "family/attention/problem.hpp"
#include "util/hash.hpp"
#include "util/parallel.hpp"

namespace kjit::family::attention {
namespace {

/// Multiply-adds the reference may spend on every query row; past it, rows are sampled.
constexpr double k_full_work = 1 << 27;

/// The query rows (of all B · H · Sq) to compute: all of them for a small problem; otherwise, of
/// every batch and head, its first, middle and last query and a hashed one.
std::vector<long long> rows_of(const problem& pr) {
    const long long heads = pr.batch * pr.heads;
    std::vector<long long> rows;
    if (static_cast<double>(heads * pr.queries) * static_cast<double>(pr.keys * pr.head_dim) <= k_full_work) {
        for (long long r = 0; r < heads * pr.queries; ++r) rows.push_back(r);
        return rows;
    }
    for (long long h = 0; h < heads; ++h) {
        const long long first = h * pr.queries;
        const auto hashed = static_cast<long long>(splitmix64(static_cast<std::uint64_t>(h)) % static_cast<std::uint64_t>(pr.queries));
        for (const long long q : {0LL, pr.queries / 2, pr.queries - 1, hashed}) rows.push_back(first + q);
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

/// The epilogue (the stages after the attention) on one query's output row, in place: its
/// values and their error scales, with the arrays of Q's shape read at the row's elements.
class epilogue_rows {
public:
    epilogue_rows(const config::pipeline& p, const reference::input_arrays& inputs, const std::map<std::string, double>& scalars)
        : m_pipeline(p), m_inputs(inputs), m_scalars(scalars), m_float_compute(!config::computes_in_double(p.type)),
          m_approximated(config::approximations_of(p)) {
        expr::used_names used;
        for (std::size_t st = 1; st < p.stages.size(); ++st) expr::collect_names(p.stages[st].kernel, used);
        m_arrays = used.arrays;
    }

    void apply(long long row, double* values, double* scales) const {
        const config::pipeline& p = m_pipeline;
        if (p.stages.size() < 2) return;
        const auto count = static_cast<std::size_t>(p.shape->cols), first = static_cast<std::size_t>(row) * count;
        std::map<std::string, std::vector<double>> read;
        std::map<std::string, const double*> arrays;
        for (const auto& name : m_arrays) {
            auto& row_values = read[name];
            for (std::size_t e = 0; e < count; ++e) row_values.push_back(m_inputs.at(name).get(first + e));
            arrays[name] = row_values.data();
        }
        std::vector<double> next(count), next_scale(count);
        for (std::size_t st = 1; st < p.stages.size(); ++st) {
            const expr::chunk in{count, values, scales, &arrays, &m_scalars, m_float_compute, nullptr, nullptr, m_approximated};
            reference::evaluate_stage(p.stages[st], in, next.data(), next_scale.data());
            std::copy(next.begin(), next.end(), values);
            std::copy(next_scale.begin(), next_scale.end(), scales);
        }
    }

private:
    const config::pipeline& m_pipeline;
    const reference::input_arrays& m_inputs;
    const std::map<std::string, double>& m_scalars;
    bool m_float_compute;
    expr::approximations m_approximated;
    std::vector<std::string> m_arrays;  ///< the inputs the epilogue reads
};

/// One head's keys and values (of its kv head), widened to double.
struct head_inputs {
    long long kv_head = -1;
    std::vector<double> k, v;
};

}  // namespace

reference::expected_values reference(const config::pipeline& p, const reference::input_arrays& inputs) {
    const problem pr = problem_of(p);
    const std::vector<long long> rows = rows_of(pr);
    const auto d_count = static_cast<std::size_t>(pr.head_dim), keys = static_cast<std::size_t>(pr.keys);
    const reference::typed_array& q = inputs.at(pr.q);
    const reference::typed_array& k = inputs.at(pr.k);
    const reference::typed_array& v = inputs.at(pr.v);
    const std::map<std::string, double> scalars = config::scalar_values(p);
    const bool float_compute = !config::computes_in_double(p.type);
    const expr::approximations approximated = config::approximations_of(p);
    // P is rounded to the storage type before it multiplies V; each sum runs over every key.
    const double p_rounding = reference::storage_rounding(p.type);
    const epilogue_rows epilogue(p, inputs, scalars);

    reference::expected_values out;
    out.values.resize(rows.size() * d_count);
    out.scales.resize(rows.size() * d_count);
    if (rows.size() < static_cast<std::size_t>(p.shape->rows)) {
        out.sampled.reserve(rows.size() * d_count);
        for (const long long r : rows)
            for (std::size_t d = 0; d < d_count; ++d) out.sampled.push_back(static_cast<std::size_t>(r) * d_count + d);
    }
    parallel_ranges(rows.size(), [&](std::size_t first, std::size_t last) {
        head_inputs head;
        token_reads tokens(p, pr);
        std::vector<double> query(d_count), score(keys), score_scale(keys), modified(keys), modified_scale(keys), weight(keys);
        for (std::size_t i = first; i < last; ++i) {
            const long long row = rows[i], h = row / pr.queries;
            const long long kv_head = h / pr.heads * pr.kv_heads + h % pr.heads / pr.group();
            if (kv_head != head.kv_head) {
                head.kv_head = kv_head;
                head.k.resize(keys * d_count);
                head.v.resize(keys * d_count);
                const auto base = static_cast<std::size_t>(kv_head) * keys * d_count;
                for (std::size_t e = 0; e < keys * d_count; ++e) {
                    head.k[e] = k.get(base + e);
                    head.v[e] = v.get(base + e);
                }
            }
            for (std::size_t d = 0; d < d_count; ++d) query[d] = q.get(static_cast<std::size_t>(row) * d_count + d);
            for (std::size_t j = 0; j < keys; ++j) {
                double sum = 0, magnitude = 0;
                for (std::size_t d = 0; d < d_count; ++d) {
                    sum += query[d] * head.k[j * d_count + d];
                    magnitude += std::fabs(query[d] * head.k[j * d_count + d]);
                }
                score[j] = pr.scale * sum;
                score_scale[j] = static_cast<double>(d_count + 2) * std::fabs(pr.scale) * magnitude;
            }
            // The score expression over this query's row of scores: row is the query, col the key.
            const expr::positions where = score_positions(pr, row);
            tokens.read(row, [&](const std::string& name, long long e) { return inputs.at(name).get(static_cast<std::size_t>(e)); });
            const expr::chunk in{keys, score.data(), score_scale.data(), &tokens.arrays(), &scalars, float_compute, nullptr, &where,
                                 approximated};
            expr::evaluate(p.stages.front().kernel, in, modified.data(), modified_scale.data());
            const double max = *std::max_element(modified.begin(), modified.end());
            double total = 0;
            for (std::size_t j = 0; j < keys; ++j) total += weight[j] = std::exp(modified[j] - max);  // NaN where every key is masked
            for (std::size_t d = 0; d < d_count; ++d) {
                double sum = 0;
                for (std::size_t j = 0; j < keys; ++j) sum += weight[j] * head.v[j * d_count + d];
                const double value = sum / total;
                double scale = 0;
                for (std::size_t j = 0; j < keys; ++j) {
                    if (weight[j] == 0) continue;
                    const double vj = head.v[j * d_count + d];
                    // A score's error moves its weight relatively; rounding P and summing over
                    // the keys move each term (and the sum of weights, the quotient).
                    scale += weight[j] * (std::fabs(vj - value) * (modified_scale[j] + std::fabs(modified[j]) + 4) +
                                          std::fabs(vj) * (p_rounding + static_cast<double>(keys) + 2));
                }
                out.values[i * d_count + d] = value;
                out.scales[i * d_count + d] = std::isfinite(scale / total) ? scale / total : 0;
            }
            // (the whole row first: the epilogue evaluates it as one chunk)
            epilogue.apply(row, out.values.data() + i * d_count, out.scales.data() + i * d_count);
        }
    }, 1);
    return out;
}

}  // namespace kjit::family::attention
