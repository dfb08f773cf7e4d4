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

/// One thread's share of the reference, a query row at a time: its scores (scaled products, with
/// their error scales), the score expression over them, and the softmax-weighted sum of the
/// values with the error scale of each output element. The kv head's keys and values, widened to
/// double, are kept while consecutive rows share them.
class query_rows {
public:
    query_rows(const config::pipeline& p, const problem& pr, const reference::input_arrays& inputs,
               const std::map<std::string, double>& scalars)
        : m_pipeline(p), m_problem(pr), m_inputs(inputs), m_scalars(scalars), m_tokens(p, pr),
          m_dims(static_cast<std::size_t>(pr.head_dim)), m_keys(static_cast<std::size_t>(pr.keys)),
          m_float_compute(!config::computes_in_double(p.type)), m_approximated(config::approximations_of(p)),
          m_p_rounding(reference::storage_rounding(p.type)),
          m_score_rounding(p.fuse == config::fusion::separate ? m_p_rounding : 0), m_query(m_dims), m_score(m_keys), m_score_scale(m_keys),
          m_modified(m_keys), m_modified_scale(m_keys), m_weight(m_keys) {}

    /// Query row `row` (of all B · H · Sq): its head_dim values and their error scales.
    void compute(long long row, double* values, double* scales) {
        const problem& pr = m_problem;
        const long long h = row / pr.queries;
        take_head(pr.kv_head_of(h));
        score(row);
        const double max = *std::max_element(m_modified.begin(), m_modified.end());
        double total = 0;
        for (std::size_t j = 0; j < m_keys; ++j) total += m_weight[j] = std::exp(m_modified[j] - max);  // NaN where every key is masked
        for (std::size_t d = 0; d < m_dims; ++d) weigh_values(d, total, values[d], scales[d]);
    }

private:
    void take_head(long long kv_head) {
        if (kv_head == m_kv_head) return;
        m_kv_head = kv_head;
        const reference::typed_array& k = m_inputs.at(m_problem.k);
        const reference::typed_array& v = m_inputs.at(m_problem.v);
        m_k.resize(m_keys * m_dims);
        m_v.resize(m_keys * m_dims);
        const auto base = static_cast<std::size_t>(kv_head) * m_keys * m_dims;
        for (std::size_t e = 0; e < m_keys * m_dims; ++e) {
            m_k[e] = k.get(base + e);
            m_v[e] = v.get(base + e);
        }
    }

    /// The row's scaled products, then the score expression over them: row is the query, col the key.
    void score(long long row) {
        const reference::typed_array& q = m_inputs.at(m_problem.q);
        for (std::size_t d = 0; d < m_dims; ++d) m_query[d] = q.get(static_cast<std::size_t>(row) * m_dims + d);
        for (std::size_t j = 0; j < m_keys; ++j) {
            double sum = 0, magnitude = 0;
            for (std::size_t d = 0; d < m_dims; ++d) {
                sum += m_query[d] * m_k[j * m_dims + d];
                magnitude += std::fabs(m_query[d] * m_k[j * m_dims + d]);
            }
            m_score[j] = m_problem.scale * sum;
            m_score_scale[j] = static_cast<double>(m_dims + 2) * std::fabs(m_problem.scale) * magnitude;
        }
        const expr::positions where = score_positions(m_problem, row);
        m_tokens.read(row, [&](const std::string& name, long long e) { return m_inputs.at(name).get(static_cast<std::size_t>(e)); });
        const expr::chunk in{m_keys, m_score.data(), m_score_scale.data(), &m_tokens.arrays(), &m_scalars, m_float_compute,
                             nullptr, &where, m_approximated};
        expr::evaluate(m_pipeline.stages.front().kernel, in, m_modified.data(), m_modified_scale.data());
    }

    /// Output element d: the weights' sum of the values' column d over their total, and its scale.
    void weigh_values(std::size_t d, double total, double& value, double& scale) const {
        double sum = 0;
        for (std::size_t j = 0; j < m_keys; ++j) sum += m_weight[j] * m_v[j * m_dims + d];
        value = sum / total;
        double spread = 0;
        for (std::size_t j = 0; j < m_keys; ++j) {
            if (m_weight[j] == 0) continue;
            const double vj = m_v[j * m_dims + d];
            // A score's error moves its weight relatively (separate: the score rounded to the
            // storage type too, in memory between the kernels); rounding P to the storage type
            // before it multiplies V and summing over every key move each term (and the sum of
            // weights, the quotient).
            const double score_error = m_modified_scale[j] + std::fabs(m_modified[j]) * (1 + m_score_rounding) + 4;
            spread += m_weight[j] * (std::fabs(vj - value) * score_error +
                                     std::fabs(vj) * (m_p_rounding + static_cast<double>(m_keys) + 2));
        }
        scale = std::isfinite(spread / total) ? spread / total : 0;
    }

    const config::pipeline& m_pipeline;
    const problem& m_problem;
    const reference::input_arrays& m_inputs;
    const std::map<std::string, double>& m_scalars;
    token_reads m_tokens;
    std::size_t m_dims, m_keys;
    bool m_float_compute;
    expr::approximations m_approximated;
    double m_p_rounding;
    double m_score_rounding;  ///< separate: the scores stored between the kernels
    long long m_kv_head = -1;
    std::vector<double> m_k, m_v;  ///< the kv head's, keys × head_dim
    std::vector<double> m_query, m_score, m_score_scale, m_modified, m_modified_scale, m_weight;
};

}  // namespace

reference::expected_values reference(const config::pipeline& p, const reference::input_arrays& inputs) {
    const problem pr = problem_of(p);
    const std::vector<long long> rows = rows_of(pr);
    const auto d_count = static_cast<std::size_t>(pr.head_dim);
    const std::map<std::string, double> scalars = config::scalar_values(p);
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
        query_rows worker(p, pr, inputs, scalars);
        for (std::size_t i = first; i < last; ++i) {
            worker.compute(rows[i], out.values.data() + i * d_count, out.scales.data() + i * d_count);
            // (the whole row first: the epilogue evaluates it as one chunk)
            epilogue.apply(rows[i], out.values.data() + i * d_count, out.scales.data() + i * d_count);
        }
    }, 1);
    return out;
}

}  // namespace kjit::family::attention
