// Search strategies over a tuning space: which points to measure next, given what the earlier
// ones measured. A strategy sees the space only through `problem` (its shape, which points are
// allowed, and a measure for a batch of points), so the same code searches on the GPU, replays
// recorded measurements on CI (kjit tune --replay), and is tested on made-up landscapes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kjit::tune {

/// Point `index`'s step on each axis of sizes `dims` (the last axis varies fastest), and back.
[[nodiscard]] std::vector<std::size_t> steps_of(const std::vector<std::size_t>& dims, std::size_t index);
[[nodiscard]] std::size_t index_of(const std::vector<std::size_t>& dims, const std::vector<std::size_t>& steps);

/// What measuring a point gave: its time (nullopt: it failed to compile, run or verify), and how
/// near its own roofline it ran (0..1; nullopt when unknown).
struct measurement {
    std::optional<double> ms;
    std::optional<double> roofline = std::nullopt;
};

struct problem {
    std::vector<std::size_t> dims;  ///< the number of values of each axis
    /// False for a point that cannot be run (a constraint or the family refuses it): it is never
    /// measured and costs no evaluation.
    std::function<bool(std::size_t index)> allowed;
    /// Measures the points of a batch (compiled together, run one after another): a result for
    /// each, in order; nullopt for a point not measured because the run was interrupted.
    std::function<std::vector<std::optional<measurement>>(const std::vector<std::size_t>& indices)> measure;
};

struct limits {
    std::size_t evaluations = 0;            ///< at most this many points measured; 0: no limit
    std::optional<double> seconds = std::nullopt;  ///< stop starting batches after this long
    std::optional<double> roofline_target = std::nullopt;  ///< stop once a point runs at this fraction of its roofline
};

/// One measured point, in the order they were measured.
struct evaluation {
    std::size_t index = 0;
    measurement result;
};

/// Why the search ended.
enum class stop_reason { done, budget, time, roofline, interrupted };
[[nodiscard]] const char* to_string(stop_reason r);

struct search_result {
    std::vector<evaluation> evaluations;
    stop_reason stopped = stop_reason::done;
};

/// "exhaustive", "random", "anneal", "genetic", "local".
[[nodiscard]] const std::vector<std::string>& strategy_names();

/// Runs `strategy` on `p` within `l`, random choices from `seed`. Each point is measured at most
/// once. Throws kjit::error(usage) for an unknown strategy name.
[[nodiscard]] search_result search(const std::string& strategy, const problem& p, const limits& l, std::uint64_t seed);

/// The index in `evaluations` of the first point within `fraction` of `best_ms` (time ≤ best /
/// fraction), plus one: how many evaluations it took; nullopt when none was.
[[nodiscard]] std::optional<std::size_t> evaluations_to_reach(const std::vector<evaluation>& evaluations,
                                                              double best_ms, double fraction);

}  // namespace kjit::tune
