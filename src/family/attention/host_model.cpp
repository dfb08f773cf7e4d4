// The attention kernels on the host (host_model.hpp).
#include "family/attention/host_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "expr/evaluate.hpp"
#include "family/attention/problem.hpp"
#include "family/attention/separate.hpp"
#include "family/attention/split_keys.hpp"

namespace kjit::family::attention {
namespace {

/// The launch's inputs widened to double, and the three steps of a query row: its scores, their
/// softmax and the weighted sum of the values.
class host_rows {
public:
    host_rows(const config::pipeline& p, const host_launch& launch)
        : m_pipeline(p), m_problem(problem_of(p)), m_launch(launch), m_tokens(p, m_problem) {}

    [[nodiscard]] const problem& sizes() const { return m_problem; }
    [[nodiscard]] long long all_rows() const { return m_problem.batch * m_problem.heads * m_problem.queries; }

    /// Query row `row`'s scores (of all B · H · Sq rows): score(scale · q · k) of each key.
    void score(long long row, double* into) {
        const problem& pr = m_problem;
        const std::vector<double>& q = input(pr.q);
        const std::vector<double>& k = input(pr.k);
        const double* query = q.data() + row * pr.head_dim;
        const long long kv_head = pr.kv_head_of(row / pr.queries);
        std::vector<double> products(static_cast<std::size_t>(pr.keys)), exact(products.size());  // (zeros: the scores are exact)
        for (long long c = 0; c < pr.keys; ++c)
            products[c] = m_launch.scalars.at(k_scale_scalar) *
                          std::inner_product(query, query + pr.head_dim, k.data() + (kv_head * pr.keys + c) * pr.head_dim, 0.0);
        const expr::positions where = score_positions(pr, row);
        m_tokens.read(row, [&](const std::string& name, long long i) { return input(name).at(static_cast<std::size_t>(i)); });
        const expr::chunk in{products.size(), products.data(), exact.data(), &m_tokens.arrays(), &m_launch.scalars, true, nullptr, &where};
        expr::evaluate(m_pipeline.stages.front().kernel, in, into, nullptr);
    }

    /// The softmax of the row's scores, in place: NaN where every key is masked, as the kernels'.
    void softmax(double* scores) const {
        const auto keys = static_cast<std::size_t>(m_problem.keys);
        const double max = *std::max_element(scores, scores + keys);
        for (std::size_t c = 0; c < keys; ++c) scores[c] = std::exp(scores[c] - max);
        const double total = std::accumulate(scores, scores + keys, 0.0);
        for (std::size_t c = 0; c < keys; ++c) scores[c] /= total;
    }

    /// Query row `row`'s output: its `count` probabilities' weighted sum of the values, the values
    /// past the last key zeros (as the kernels copy them: a probability there still multiplies).
    void weigh(long long row, const double* weights, long long count, double* out) {
        const problem& pr = m_problem;
        const std::vector<double>& v = input(pr.v);
        const long long kv_head = pr.kv_head_of(row / pr.queries);
        for (long long d = 0; d < pr.head_dim; ++d) {
            double sum = 0;
            for (long long c = 0; c < count; ++c) sum += weights[c] * (c < pr.keys ? v[(kv_head * pr.keys + c) * pr.head_dim + d] : 0.0);
            out[d] = sum;
        }
    }

    /// Input `name` of the launch, widened once.
    const std::vector<double>& input(const std::string& name) {
        auto found = m_inputs.find(name);
        if (found == m_inputs.end()) found = m_inputs.emplace(name, host_values(m_pipeline.type, *m_launch.buffers.at(name))).first;
        return found->second;
    }

private:
    const config::pipeline& m_pipeline;
    problem m_problem;
    const host_launch& m_launch;
    token_reads m_tokens;
    std::map<std::string, std::vector<double>> m_inputs;
};

/// Where keys are split: each query's partial softmax of each split's keys, split s taking the
/// tiles of keys from s · share to (s + 1) · share, as the kernel does, each partial the output row
/// not yet divided, the max and the sum (−inf and 0 where every key of the share is masked, or
/// where the share is empty: 7 splits of 16 tiles take 3 each, and the last none).
host_matrix partial_softmaxes(const config::pipeline& p, host_rows& rows) {
    const problem& pr = rows.sizes();
    const policy& t = policy_of(p);
    const long long stride = partial_stride(pr), all = rows.all_rows();
    const long long share = split_share((pr.keys + t.block_n - 1) / t.block_n, t.splits);
    constexpr double none = -std::numeric_limits<double>::infinity();
    host_matrix out{all * t.splits, stride, std::vector<double>(static_cast<std::size_t>(all * t.splits * stride))};
    std::vector<double> scores(static_cast<std::size_t>(pr.keys)), weights(scores.size());
    for (long long row = 0; row < all; ++row) {
        rows.score(row, scores.data());
        for (int s = 0; s < t.splits; ++s) {
            const long long begin = std::min(pr.keys, s * share * t.block_n), end = std::min(pr.keys, (s + 1) * share * t.block_n);
            const double max = begin < end ? *std::max_element(scores.begin() + begin, scores.begin() + end) : none;
            std::fill(weights.begin(), weights.end(), 0.0);
            for (long long c = begin; c < end; ++c) weights[c] = max == none ? 0.0 : std::exp(scores[c] - max);
            double* partial = out.values.data() + (row * t.splits + s) * stride;
            rows.weigh(row, weights.data(), pr.keys, partial);
            partial[pr.head_dim] = max;
            partial[pr.head_dim + 1] = std::accumulate(weights.begin(), weights.end(), 0.0);
        }
    }
    return out;
}

/// The output joined from the partials (in float): each split's row and sum weighed by
/// e^(its max − the largest), added, the row divided by the sum.
host_matrix joined_partials(const config::pipeline& p, const host_launch& launch, const host_rows& rows) {
    const problem& pr = rows.sizes();
    const policy& t = policy_of(p);
    const long long stride = partial_stride(pr), all = rows.all_rows();
    constexpr double none = -std::numeric_limits<double>::infinity();
    const std::vector<double> partials = host_values(config::dtype::float32, *launch.buffers.at(k_partials_buffer));
    host_matrix out{all, pr.head_dim, std::vector<double>(static_cast<std::size_t>(all * pr.head_dim), 0.0)};
    for (long long row = 0; row < all; ++row) {
        const double* first = partials.data() + row * t.splits * stride;
        double max = none, total = 0;
        for (int s = 0; s < t.splits; ++s) max = std::max(max, first[s * stride + pr.head_dim]);
        double* joined = out.values.data() + row * pr.head_dim;
        for (int s = 0; s < t.splits; ++s) {
            const double* partial = first + s * stride;
            const double weight = max == none ? 0.0 : std::exp(partial[pr.head_dim] - max);
            total += weight * partial[pr.head_dim + 1];
            for (long long d = 0; d < pr.head_dim; ++d) joined[d] += weight * partial[d];
        }
        for (long long d = 0; d < pr.head_dim; ++d) joined[d] /= total;
    }
    return out;
}

}  // namespace

host_matrix host_fused(const config::pipeline& p, const host_launch& launch) {
    host_rows rows(p, launch);
    const problem& pr = rows.sizes();
    host_matrix out{rows.all_rows(), pr.head_dim, std::vector<double>(static_cast<std::size_t>(rows.all_rows() * pr.head_dim))};
    std::vector<double> weights(static_cast<std::size_t>(pr.keys));
    for (long long row = 0; row < out.rows; ++row) {
        rows.score(row, weights.data());
        rows.softmax(weights.data());
        rows.weigh(row, weights.data(), pr.keys, out.values.data() + row * pr.head_dim);
    }
    return out;
}

host_matrix host_split(const config::pipeline& p, const host_launch& launch) {
    host_rows rows(p, launch);
    return launch.k.name == p.name + k_combine_kernel ? joined_partials(p, launch, rows) : partial_softmaxes(p, rows);
}

host_matrix host_separate(const config::pipeline& p, const host_launch& launch) {
    host_rows rows(p, launch);
    const problem& pr = rows.sizes();
    const long long stride = launch.sizes.at("score_stride");
    const std::string& kernel = launch.k.name;
    if (kernel == p.name + k_values_kernel) {
        const std::vector<double>& weights = rows.input(k_scores_buffer);
        host_matrix out{rows.all_rows(), pr.head_dim, std::vector<double>(static_cast<std::size_t>(rows.all_rows() * pr.head_dim))};
        for (long long row = 0; row < out.rows; ++row)
            rows.weigh(row, weights.data() + row * stride, stride, out.values.data() + row * pr.head_dim);
        return out;
    }
    const bool scores = kernel == p.name + k_scores_kernel;
    host_matrix out{rows.all_rows(), stride, scores ? std::vector<double>{} : rows.input(k_scores_buffer)};
    out.values.resize(static_cast<std::size_t>(out.rows * stride));
    for (long long row = 0; row < out.rows; ++row) {
        double* at = out.values.data() + row * stride;
        if (scores) rows.score(row, at);
        else rows.softmax(at);
        std::fill(at + pr.keys, at + stride, scores ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    }
    return out;
}

}  // namespace kjit::family::attention
