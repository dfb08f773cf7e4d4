#include "tune/strategy.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_map>

#include "util/error.hpp"
#include "util/interrupt.hpp"

namespace kjit::tune {
namespace {

/// Points measured together: the compiles of a batch run in parallel ahead of the GPU.
constexpr std::size_t k_exhaustive_batch = 64, k_random_batch = 16;
/// Neighbours an annealing step measures, and the population of the genetic search.
constexpr std::size_t k_anneal_proposals = 4, k_population = 8;

/// What every strategy shares: the points measured so far (each at most once), the limits, the
/// random source, and moves in the space.
class searcher {
public:
    searcher(const problem& p, const limits& l, std::uint64_t seed)
        : m_problem(p), m_limits(l), m_random(seed), m_start(std::chrono::steady_clock::now()) {
        m_size = std::accumulate(p.dims.begin(), p.dims.end(), std::size_t{1}, std::multiplies<>());
    }

    [[nodiscard]] bool stopped() const { return m_result.stopped != stop_reason::done || m_exhausted; }
    [[nodiscard]] search_result result() && { return std::move(m_result); }
    std::mt19937_64& random() { return m_random; }
    [[nodiscard]] std::size_t size() const { return m_size; }
    [[nodiscard]] const std::vector<std::size_t>& dims() const { return m_problem.dims; }

    bool allowed(std::size_t index) {
        const auto it = m_allowed.find(index);
        if (it != m_allowed.end()) return it->second;
        return m_allowed[index] = m_problem.allowed(index);
    }
    [[nodiscard]] bool measured(std::size_t index) const { return m_time.contains(index); }
    /// A measured point's time; +inf for one that failed.
    [[nodiscard]] double time(std::size_t index) const { return m_time.at(index); }

    /// Measures the points of `batch` that are allowed and new, as many as the budget leaves.
    void measure(const std::vector<std::size_t>& batch) {
        if (stopped()) return;
        if (interrupted()) return stop(stop_reason::interrupted);
        if (m_limits.seconds && seconds() >= *m_limits.seconds) return stop(stop_reason::time);
        std::vector<std::size_t> fresh;
        for (const std::size_t index : batch)
            if (allowed(index) && !measured(index) && std::find(fresh.begin(), fresh.end(), index) == fresh.end())
                fresh.push_back(index);
        if (m_limits.evaluations > 0)
            fresh.resize(std::min(fresh.size(), m_limits.evaluations - m_result.evaluations.size()));
        if (fresh.empty()) return;
        const std::vector<std::optional<measurement>> results = m_problem.measure(fresh);
        for (std::size_t k = 0; k < fresh.size(); ++k) {
            if (k >= results.size() || !results[k]) {  // the measure was cut short
                stop(stop_reason::interrupted);
                continue;
            }
            const measurement& m = *results[k];
            m_time[fresh[k]] = m.ms.value_or(INFINITY);
            m_result.evaluations.push_back({fresh[k], m});
            if (m_limits.roofline_target && m.ms && m.roofline && *m.roofline >= *m_limits.roofline_target)
                stop(stop_reason::roofline);
        }
        if (m_limits.evaluations > 0 && m_result.evaluations.size() >= m_limits.evaluations) stop(stop_reason::budget);
    }

    /// The best point measured so far.
    [[nodiscard]] std::optional<std::size_t> best() const {
        std::optional<std::size_t> found;
        for (const auto& e : m_result.evaluations)
            if (e.result.ms && (!found || *e.result.ms < time(*found))) found = e.index;
        return found;
    }

    /// A random allowed point not measured yet; nullopt when none is left (the search is then over).
    std::optional<std::size_t> fresh_point() {
        std::uniform_int_distribution<std::size_t> any(0, m_size - 1);
        for (int tries = 0; tries < 256; ++tries) {
            const std::size_t index = any(m_random);
            if (!measured(index) && allowed(index)) return index;
        }
        const std::size_t from = any(m_random);  // few are left: look at each in turn
        for (std::size_t k = 0; k < m_size; ++k) {
            const std::size_t index = (from + k) % m_size;
            if (!measured(index) && allowed(index)) return index;
        }
        m_exhausted = true;
        return std::nullopt;
    }

    /// `index` with one axis moved: to an adjacent value half the time, else to any other.
    std::size_t neighbour(std::size_t index) {
        auto steps = steps_of(index);
        std::vector<std::size_t> movable;
        for (std::size_t a = 0; a < steps.size(); ++a)
            if (dims()[a] > 1) movable.push_back(a);
        if (movable.empty()) return index;
        const std::size_t a = movable[std::uniform_int_distribution<std::size_t>(0, movable.size() - 1)(m_random)];
        if (std::bernoulli_distribution(0.5)(m_random)) {
            const bool up = steps[a] == 0 || (steps[a] + 1 < dims()[a] && std::bernoulli_distribution(0.5)(m_random));
            steps[a] = up ? steps[a] + 1 : steps[a] - 1;
        } else {
            const std::size_t other = std::uniform_int_distribution<std::size_t>(0, dims()[a] - 2)(m_random);
            steps[a] = other >= steps[a] ? other + 1 : other;
        }
        return index_of(steps);
    }

    /// Every point one axis away from `index`.
    [[nodiscard]] std::vector<std::size_t> all_neighbours(std::size_t index) const {
        std::vector<std::size_t> around;
        const auto steps = steps_of(index);
        for (std::size_t a = 0; a < steps.size(); ++a)
            for (std::size_t v = 0; v < dims()[a]; ++v)
                if (v != steps[a]) {
                    auto moved = steps;
                    moved[a] = v;
                    around.push_back(index_of(moved));
                }
        return around;
    }

    [[nodiscard]] std::vector<std::size_t> steps_of(std::size_t index) const { return tune::steps_of(dims(), index); }
    [[nodiscard]] std::size_t index_of(const std::vector<std::size_t>& steps) const {
        return tune::index_of(dims(), steps);
    }

private:
    [[nodiscard]] double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    }
    void stop(stop_reason why) {
        if (m_result.stopped == stop_reason::done) m_result.stopped = why;
    }

    const problem& m_problem;
    const limits& m_limits;
    std::mt19937_64 m_random;
    std::chrono::steady_clock::time_point m_start;
    std::size_t m_size = 1;
    bool m_exhausted = false;
    std::unordered_map<std::size_t, bool> m_allowed;
    std::unordered_map<std::size_t, double> m_time;
    search_result m_result;
};

/// Every allowed point, in index order.
void exhaustive(searcher& s) {
    std::vector<std::size_t> batch;
    for (std::size_t index = 0; index < s.size() && !s.stopped(); ++index) {
        if (s.allowed(index)) batch.push_back(index);
        if (batch.size() == k_exhaustive_batch || index + 1 == s.size()) {
            s.measure(batch);
            batch.clear();
        }
    }
}

/// Allowed points in a random order: the baseline every other strategy must beat.
void random_order(searcher& s) {
    std::vector<std::size_t> order(s.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), s.random());
    std::vector<std::size_t> batch;
    for (std::size_t k = 0; k < order.size() && !s.stopped(); ++k) {
        if (s.allowed(order[k])) batch.push_back(order[k]);
        if (batch.size() == k_random_batch || k + 1 == order.size()) {
            s.measure(batch);
            batch.clear();
        }
    }
}

/// Simulated annealing: from the current point, measure a few random neighbours and move to the
/// best of them if it is faster, or slower with a probability that shrinks as the temperature
/// (a relative slowdown) cools. Where every neighbour is known, restart from the best point or a
/// fresh one.
void anneal(searcher& s) {
    std::vector<std::size_t> starts;
    for (std::size_t k = 0; k < k_anneal_proposals; ++k)
        if (const auto p = s.fresh_point()) starts.push_back(*p);
    s.measure(starts);
    std::optional<std::size_t> current = s.best();
    double temperature = 0.05;
    std::uniform_real_distribution<double> uniform(0, 1);
    while (!s.stopped()) {
        std::vector<std::size_t> proposals;
        if (current)
            for (int tries = 0; tries < 64 && proposals.size() < k_anneal_proposals; ++tries) {
                const std::size_t next = s.neighbour(*current);
                if (!s.measured(next) && s.allowed(next) &&
                    std::find(proposals.begin(), proposals.end(), next) == proposals.end())
                    proposals.push_back(next);
            }
        if (proposals.empty()) {  // stuck: jump to the best point or a fresh one
            const auto fresh = s.fresh_point();
            if (!fresh) return;
            s.measure({*fresh});
            current = (uniform(s.random()) < 0.5 && s.best()) ? s.best() : fresh;
            continue;
        }
        s.measure(proposals);
        const auto better = std::min_element(proposals.begin(), proposals.end(), [&](std::size_t a, std::size_t b) {
            return (s.measured(a) ? s.time(a) : INFINITY) < (s.measured(b) ? s.time(b) : INFINITY);
        });
        if (!s.measured(*better) || !std::isfinite(s.time(*better))) continue;
        const double slower = std::log(s.time(*better) / s.time(*current));
        if (slower < 0 || uniform(s.random()) < std::exp(-slower / temperature)) current = *better;
        temperature *= 0.9;
    }
}

/// A genetic search: a population of the fastest points found; children take each axis from one
/// of two parents (each picked as the faster of two at random) and sometimes a random value.
void genetic(searcher& s) {
    std::vector<std::size_t> population;
    for (std::size_t k = 0; k < k_population; ++k)
        if (const auto p = s.fresh_point()) population.push_back(*p);
    s.measure(population);
    const auto faster = [&](std::size_t a, std::size_t b) { return s.time(a) < s.time(b); };
    std::uniform_int_distribution<std::size_t> pick(0, population.empty() ? 0 : population.size() - 1);
    const auto tournament = [&] {
        const std::size_t a = population[pick(s.random())], b = population[pick(s.random())];
        return faster(a, b) ? a : b;
    };
    const double mutation = 1.0 / static_cast<double>(std::max<std::size_t>(1, s.dims().size()));
    std::uniform_real_distribution<double> uniform(0, 1);
    while (!s.stopped() && !population.empty()) {
        std::vector<std::size_t> children;
        for (int tries = 0; tries < 256 && children.size() < k_population; ++tries) {
            auto steps = s.steps_of(tournament());
            const auto other = s.steps_of(tournament());
            for (std::size_t a = 0; a < steps.size(); ++a) {
                if (uniform(s.random()) < 0.5) steps[a] = other[a];
                if (uniform(s.random()) < mutation)
                    steps[a] = std::uniform_int_distribution<std::size_t>(0, s.dims()[a] - 1)(s.random());
            }
            const std::size_t child = s.index_of(steps);
            if (!s.measured(child) && s.allowed(child) && std::find(children.begin(), children.end(), child) == children.end())
                children.push_back(child);
        }
        if (children.empty()) {
            const auto fresh = s.fresh_point();
            if (!fresh) return;
            children.push_back(*fresh);
        }
        s.measure(children);
        for (const std::size_t child : children)
            if (s.measured(child)) population.push_back(child);
        std::sort(population.begin(), population.end(), faster);
        population.resize(std::min(population.size(), k_population));
    }
}

/// Greedy local search: measure every neighbour of the best point (one batch) and move to the
/// best; at a local optimum, restart from a fresh point.
void local(searcher& s) {
    std::optional<std::size_t> current = s.fresh_point();
    if (current) s.measure({*current});
    while (!s.stopped() && current) {
        s.measure(s.all_neighbours(*current));
        std::optional<std::size_t> next;
        for (const std::size_t n : s.all_neighbours(*current))
            if (s.measured(n) && s.time(n) < s.time(next.value_or(*current))) next = n;
        if (!next) {  // a local optimum: start again elsewhere
            current = s.fresh_point();
            if (current) s.measure({*current});
        } else {
            current = next;
        }
    }
}

}  // namespace

std::vector<std::size_t> steps_of(const std::vector<std::size_t>& dims, std::size_t index) {
    std::vector<std::size_t> steps(dims.size());
    for (std::size_t a = dims.size(); a-- > 0;) {
        steps[a] = index % dims[a];
        index /= dims[a];
    }
    return steps;
}

std::size_t index_of(const std::vector<std::size_t>& dims, const std::vector<std::size_t>& steps) {
    std::size_t index = 0;
    for (std::size_t a = 0; a < dims.size(); ++a) index = index * dims[a] + steps[a];
    return index;
}

const char* to_string(stop_reason r) {
    switch (r) {
        case stop_reason::done: return "every allowed point measured";
        case stop_reason::budget: return "the budget of evaluations spent";
        case stop_reason::time: return "the time budget spent";
        case stop_reason::roofline: return "a point reached the roofline target";
        case stop_reason::interrupted: return "interrupted";
    }
    return "?";
}

const std::vector<std::string>& strategy_names() {
    static const std::vector<std::string> names{"exhaustive", "random", "anneal", "genetic", "local"};
    return names;
}

search_result search(const std::string& strategy, const problem& p, const limits& l, std::uint64_t seed) {
    using step = void (*)(searcher&);
    static const std::vector<std::pair<std::string, step>> steps{
        {"exhaustive", exhaustive}, {"random", random_order}, {"anneal", anneal}, {"genetic", genetic}, {"local", local}};
    const auto found = std::find_if(steps.begin(), steps.end(), [&](const auto& s) { return s.first == strategy; });
    if (found == steps.end()) {
        std::string names;
        for (const auto& name : strategy_names()) names += (names.empty() ? "" : ", ") + name;
        throw error(error_kind::usage, "--strategy: expected one of " + names + ", got \"" + strategy + "\"");
    }
    searcher s(p, l, seed);
    found->second(s);
    return std::move(s).result();
}

std::optional<std::size_t> evaluations_to_reach(const std::vector<evaluation>& evaluations, double best_ms, double fraction) {
    for (std::size_t k = 0; k < evaluations.size(); ++k)
        if (evaluations[k].result.ms && *evaluations[k].result.ms * fraction <= best_ms) return k + 1;
    return std::nullopt;
}

}  // namespace kjit::tune
