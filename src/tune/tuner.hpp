// kjit tune: a strategy (strategy.hpp) searching a config's space (space.hpp) on a GPU through a
// session, every point verified, what each point took kept in the tuning database
// (database.hpp); the same search replayed from recorded results with no GPU; and the database's
// best point applied to a config (launch: "tuned", --write-best).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "report/record.hpp"
#include "run/session.hpp"
#include "tune/space.hpp"
#include "tune/strategy.hpp"

namespace kjit::tune {

/// Where a tune's points are measured when not on the session's GPU: a cluster's workers
/// (Python's kjit.tune(ray=...)), all with GPUs of one model. The search, the tuning database and
/// the summary stay in the tuning process: the database's one writer.
struct remote_workers {
    run::device_info device;  ///< the workers' GPU: the database's key, the target points resolve for
    /// Measures points (index in the space, values) as measure_points does, and gives their rows
    /// (kjit sweep's); a point with no row (its worker lost, Ctrl-C) stops the search there.
    std::function<std::vector<report::row>(const std::vector<std::pair<std::size_t, config::json_value>>&)> measure;
};

struct tune_options {
    std::string strategy = "auto";  ///< auto: exhaustive for a small space, else anneal
    std::size_t budget = 0;         ///< evaluations; 0: all for exhaustive, else 15 % of the space (at least 16)
    std::optional<double> seconds;
    std::optional<double> roofline_target;  ///< 0..1
    std::uint64_t seed = 1;
    int device = 0;
    int jobs = 0;
    std::optional<remote_workers> remote = std::nullopt;  ///< measure elsewhere, not on `device`
    /// --metrics: each point's hardware counters, read after its timed loops (run_options). The
    /// database keeps times, not counters, so every point is measured again.
    std::string counter_set = {};
};

/// The strategy and budget `o` asks for on a space of `allowed` points: "auto" and budget 0 made
/// concrete.
[[nodiscard]] std::pair<std::string, std::size_t> strategy_for(const tune_options& o, std::size_t allowed);

/// One measured point.
struct tuned_point {
    std::size_t evaluation = 0;  ///< 1, 2, … in the order measured
    config::json_value values;
    measurement result;
    std::string status;   ///< PASS, FAIL, error
    std::string message;  ///< why it failed
    std::string from;     ///< "measured", "database" (measured by an earlier tune), "replay"
    report::row counters = report::row::object();  ///< --metrics: the point's metric_* columns
};

struct tune_result {
    std::string strategy;
    std::size_t budget = 0;
    std::size_t space_points = 0;  ///< constraints aside
    std::size_t allowed_points = 0;
    std::vector<tuned_point> points;  ///< in the order measured
    stop_reason stopped = stop_reason::done;
    double wall_ms = 0;
    /// The best of every allowed point, where all were measured (by this tune, an earlier one or
    /// the recording replayed): how near each evaluation came is measured against it.
    std::optional<double> exhaustive_best_ms;
    std::string database_file;  ///< empty for a replay
    std::string database_warning;  ///< why the database's file could not be read (its points are measured again)
    std::string device;
    /// A replay: points the constraints allow that the recording lacks. The search, and its
    /// "exhaustive best", cover only the recorded points (allowed_points).
    std::size_t unrecorded_points = 0;
};

/// Tunes `doc` on the session's GPU. `step` sees each point as it is measured.
[[nodiscard]] tune_result tune(run::session& s, const config::document& doc, const tune_options& o,
                               const std::function<void(const tuned_point&)>& step = {});

/// A cluster worker's part of a remote tune: the points (index in the space, values) of `doc`,
/// resolved for and run on the session's device `device`, compiled on `jobs` threads, with the
/// hardware counters of `counter_set` (none where empty): their records.
[[nodiscard]] std::vector<report::record> measure_points(run::session& s, const config::document& doc,
                                                         const std::vector<std::pair<std::size_t, config::json_value>>& points,
                                                         int device, int jobs, const std::string& counter_set = {});

/// A device as JSON and back: how a cluster's worker tells the tuning process its GPU.
[[nodiscard]] config::json_value to_json(const run::device_info& d);
[[nodiscard]] run::device_info device_from_json(const config::json_value& j);

/// What a tune of a space would take, found with no GPU (kjit tune --dry-run).
struct dry_run_result {
    config::target target;         ///< what the points were resolved for: the config's compile.target
    std::size_t space_points = 0;  ///< constraints aside
    std::size_t allowed_points = 0;
    std::string strategy;  ///< what a tune with these options would run
    std::size_t budget = 0;
    run::compile_summary compiled;  ///< every allowed point's distinct sources, through the cache
};

/// Sizes `doc`'s tune space for its configured target, applies the constraints and the family's
/// refusals, and compiles every allowed point's distinct source into the session's cache, so that
/// the tune on the GPU compiles nothing. `progress` sees each distinct source compiled.
[[nodiscard]] dry_run_result dry_run(run::session& s, const config::document& doc, const tune_options& o,
                                     const run::compile_progress& progress = {});

/// The same search on recorded results (kjit tune --json rows): no GPU, no compile. A point the
/// recording lacks counts as not allowed (r.unrecorded_points); "auto" and a budget of 0 are
/// chosen for the whole space, as a tune on the GPU would choose them.
[[nodiscard]] tune_result replay(const config::document& doc, const std::vector<report::row>& recorded, const tune_options& o);

/// The rows kjit tune --json writes: one per measured point, with the best time so far.
[[nodiscard]] std::vector<report::row> rows_of(const tune_result& r);

/// True when `doc` says launch: "tuned".
[[nodiscard]] bool wants_tuned_launch(const config::document& doc);
/// `doc` with its launch replaced by the best stored point's values for the session's device
/// `device`, else for another GPU of its architecture, else by the family's rule (an empty launch
/// block: every key "auto"); `note` says which ("tuned 2026-12-02T10:11:12Z on NVIDIA H200: 38.0 µs").
[[nodiscard]] config::document with_tuned_launch(run::session& s, const config::document& doc, int device, std::string& note);
/// `doc` with the values of `best` applied (kjit tune --write-best): the launch block as found.
[[nodiscard]] config::document with_values(const config::document& doc, const config::json_value& values);

}  // namespace kjit::tune
