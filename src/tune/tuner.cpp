#include "tune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "family/family.hpp"
#include "report/files.hpp"
#include "tune/database.hpp"
#include "util/error.hpp"
#include "util/units.hpp"

namespace kjit::run {
// Every field, by its own name: a worker's device crosses to the tuning process whole.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(device_info, index, name, arch, sm_count, memory_bytes, l2_bytes, clock_mhz,
                                   memory_clock_mhz, memory_bus_bits, max_threads_per_sm, shared_per_block, shared_per_sm,
                                   registers_per_sm, driver_version)
}  // namespace kjit::run

namespace kjit::tune {
namespace {

using config::json_value;

/// The config a tune varies: without its own block and any sweep.
config::document base_of(const config::document& doc) {
    config::document base = doc;
    if (base.json.is_object()) {
        base.json.erase("tune");
        base.json.erase("sweep");
    }
    return base;
}

/// The space of `doc`: its block, else its family's (for `gpu`, as load).
space space_of(const config::document& base, const config::document& doc, const std::optional<config::target>& gpu) {
    const config::pipeline p = family::load(base, gpu);  // a mistake outside the space is reported once, plainly
    return parse_space(doc, family::family_of(p).tune_space(p));
}

/// `base` with a point's values set, validated by its family; nullopt when refused, with the
/// family's reason in `refusal` where given.
std::optional<config::sweep_point> point_of(const config::document& base, const json_value& values, std::size_t index,
                                            const config::target& gpu, std::string* refusal = nullptr) {
    config::document variant = with_values(base, values);
    variant.source = base.source + ": tune point (" + config::point_label(values) + ")";
    try {
        return config::sweep_point{index, config::point_label(values), values, family::load(variant, gpu)};
    } catch (const error& e) {
        if (e.kind() != error_kind::config) throw;
        if (refusal) *refusal = e.what();
        return std::nullopt;
    }
}

/// Refuses a space of which no point can be measured, saying why: none meets the constraints, or
/// the family refuses every one (the first one's reason). A space with a point to measure passes.
void require_a_point(const config::document& base, const space& sp, const config::target& gpu) {
    std::string first_refusal;
    bool constrained_out = true;
    for (std::size_t index = 0; index < sp.size(); ++index) {
        if (!sp.allowed(index)) continue;
        constrained_out = false;
        std::string refusal;
        if (point_of(base, sp.values_of(index), index, gpu, &refusal)) return;
        if (first_refusal.empty()) first_refusal = refusal;
    }
    throw config_error(base.source, "tune", constrained_out ? "no point of the space meets its constraints"
                                                            : "the family refuses every point of the space; the first: " + first_refusal);
}

/// The search with the bookkeeping both tune and replay do: allowed points counted, each point
/// reported as measured, the exhaustive best where every allowed point is known.
tune_result search_space(const space& sp, const tune_options& o, const std::function<bool(std::size_t)>& allowed,
                         const std::function<std::vector<std::optional<tuned_point>>(const std::vector<std::size_t>&)>& measure,
                         const std::function<std::optional<double>(std::size_t)>& known_ms) {
    tune_result r;
    r.space_points = sp.size();
    std::vector<std::size_t> allowed_points;
    for (std::size_t index = 0; index < sp.size(); ++index)
        if (allowed(index)) allowed_points.push_back(index);
    r.allowed_points = allowed_points.size();
    std::tie(r.strategy, r.budget) = strategy_for(o, r.allowed_points);

    const auto start = std::chrono::steady_clock::now();
    problem p{sp.dims(), [&](std::size_t index) { return std::binary_search(allowed_points.begin(), allowed_points.end(), index); },
              [&](const std::vector<std::size_t>& batch) {
                  std::vector<std::optional<measurement>> results;
                  for (auto& point : measure(batch)) {
                      if (!point) {
                          results.emplace_back();
                          continue;
                      }
                      results.push_back(point->result);
                      point->evaluation = r.points.size() + 1;
                      r.points.push_back(std::move(*point));
                  }
                  return results;
              }};
    r.stopped = search(r.strategy, p, {r.budget, o.seconds, o.roofline_target}, o.seed).stopped;
    r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    std::optional<double> best = INFINITY;
    for (const std::size_t index : allowed_points) {
        const auto ms = known_ms(index);
        if (!ms) {  // a point not measured yet: no exhaustive best
            best.reset();
            break;
        }
        best = std::min(*best, *ms);
    }
    if (best && std::isfinite(*best)) r.exhaustive_best_ms = best;
    return r;
}

/// What measuring a point gave, from its row as kjit sweep writes it (made here or by a cluster's
/// worker): its cold median where it passed its check, and how near its roofline it ran.
measurement measurement_of(const report::row& row) {
    const auto number = [&](const char* key) -> std::optional<double> {
        const auto it = row.find(key);
        return it != row.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
    };
    if (row.value("status", "") != report::to_string(report::outcome::pass)) return {};
    const auto percent = number("percent_of_roof");
    return {number("kernel_cold_median_ms"), percent ? std::optional<double>(*percent / 100) : std::nullopt};
}

/// The records of `points`, run on the session's device `device`, compiled on `jobs` threads,
/// with the hardware counters of `counter_set`.
std::vector<report::record> run_on(run::session& s, const std::vector<config::sweep_point>& points,
                                   const std::string& source, int device, int jobs, const std::string& counter_set) {
    run::sweep_request request;
    request.devices = std::to_string(device);
    request.jobs = jobs;
    request.counter_set = counter_set;
    return s.sweep(points, source, request).records;
}

/// A row's hardware counters: its metric_* columns.
report::row counters_of(const report::row& row) {
    report::row counters = report::row::object();
    for (const auto& [column, value] : row.items())
        if (column.starts_with("metric_")) counters[column] = value;
    return counters;
}

/// The rows of `to_run`, measured on the session's device `o.device`, or by `o.remote`.
std::vector<report::row> measure_rows(run::session& s, const std::vector<config::sweep_point>& to_run,
                                      const std::string& source, const tune_options& o) {
    if (!o.remote) return report::rows_of(run_on(s, to_run, source, o.device, o.jobs, o.counter_set));
    std::vector<std::pair<std::size_t, json_value>> asked;
    for (const auto& point : to_run) asked.emplace_back(point.index, point.values);
    return o.remote->measure(asked);
}

}  // namespace

std::pair<std::string, std::size_t> strategy_for(const tune_options& o, std::size_t allowed) {
    constexpr std::size_t k_small_space = 64;
    std::string strategy = o.strategy;
    if (strategy == "auto") strategy = allowed <= k_small_space ? "exhaustive" : "anneal";
    std::size_t budget = o.budget;
    if (budget == 0 && strategy != "exhaustive") budget = std::min(allowed, std::max<std::size_t>(16, allowed * 15 / 100));
    return {strategy, budget};
}

tune_result tune(run::session& s, const config::document& doc, const tune_options& o,
                 const std::function<void(const tuned_point&)>& step) {
    const config::document base = base_of(doc);
    // A config error first, then "no GPU".
    const space sp = space_of(base, doc, o.remote ? std::optional(run::target_of(o.remote->device)) : s.target_if_any(o.device));
    const run::device_info device = o.remote ? o.remote->device : s.device(o.device);
    const config::target gpu = run::target_of(device);
    database db(s.cache().root(), key_of(base, device, s.templates()));
    require_a_point(base, sp, gpu);

    std::map<std::size_t, std::optional<config::sweep_point>> points;  // each point loaded once
    const auto point_at = [&](std::size_t index) -> const std::optional<config::sweep_point>& {
        auto it = points.find(index);
        if (it == points.end()) it = points.emplace(index, point_of(base, sp.values_of(index), index, gpu)).first;
        return it->second;
    };
    // With counters asked for, no point is taken from the database: it keeps times, not counters.
    const auto stored = [&](std::size_t index) { return o.counter_set.empty() ? db.find(sp.values_of(index)) : nullptr; };

    tune_result r = search_space(
        sp, o, [&](std::size_t index) { return sp.allowed(index) && point_at(index).has_value(); },
        [&](const std::vector<std::size_t>& batch) {
            std::vector<tuned_point> measured(batch.size());
            std::vector<config::sweep_point> to_run;
            std::map<std::size_t, std::size_t> slot;  // a point's index in the space → its place in `measured`
            for (std::size_t k = 0; k < batch.size(); ++k) {
                measured[k].values = sp.values_of(batch[k]);
                if (const stored_point* known = stored(batch[k])) {
                    measured[k].result = {known->ms, known->roofline};
                    measured[k].status = known->status;
                    measured[k].message = known->message;
                    measured[k].from = "database";
                } else {
                    to_run.push_back(*point_at(batch[k]));
                    slot[batch[k]] = k;
                }
            }
            if (!to_run.empty()) {
                for (const report::row& row : measure_rows(s, to_run, base.source, o)) {  // interrupted: only the points that finished
                    const auto asked = slot.find(row.value("sweep_index", std::size_t{0}));
                    if (asked == slot.end()) continue;  // a worker's row of a point not asked for
                    tuned_point& point = measured[asked->second];
                    point.result = measurement_of(row);
                    point.status = row.value("status", "");
                    point.message = row.value("error", "");
                    point.from = "measured";
                    point.counters = counters_of(row);
                    db.add({point.values, point.result.ms, point.result.roofline, point.status, point.message, utc_now()});
                }
                db.save();
            }
            // Interrupted: a point that did not finish goes back as nullopt (the search then stops).
            std::vector<std::optional<tuned_point>> done;
            for (const auto& point : measured) {
                if (point.from.empty()) {
                    done.emplace_back();
                    continue;
                }
                if (step) step(point);
                done.push_back(point);
            }
            return done;
        },
        [&](std::size_t index) -> std::optional<double> {
            const stored_point* known = db.find(sp.values_of(index));
            if (!known) return std::nullopt;
            return known->ms.value_or(INFINITY);
        });
    r.database_file = db.file().string();
    r.database_warning = db.warning();
    r.device = device.name;
    return r;
}

tune_result replay(const config::document& doc, const std::vector<report::row>& recorded, const tune_options& o) {
    const config::document base = base_of(doc);
    const space sp = space_of(base, doc, std::nullopt);
    require_a_point(base, sp, config::default_target());  // (then a point the recording lacks is its fault)
    std::map<std::string, measurement> times;  // the point's values as JSON text → what it took
    for (const auto& row : recorded) {
        if (!row.contains("values") || !row.contains("ms")) continue;
        const json_value& ms = row["ms"];
        times[row["values"].dump()] = {ms.is_number() ? std::optional<double>(ms.get<double>()) : std::nullopt,
                                       row.contains("roofline") && row["roofline"].is_number()
                                           ? std::optional<double>(row["roofline"].get<double>())
                                           : std::nullopt};
    }
    const auto find = [&](std::size_t index) {
        const auto it = times.find(sp.values_of(index).dump());
        return it == times.end() ? nullptr : &it->second;
    };
    // The points a tune on the GPU could measure (the constraints and the family allow them), of
    // which the recording lacks some: "auto" and the budget are chosen for all of them.
    std::size_t measurable = 0, unrecorded = 0;
    for (std::size_t index = 0; index < sp.size(); ++index)
        if (sp.allowed(index) && point_of(base, sp.values_of(index), index, config::default_target())) {
            ++measurable;
            unrecorded += find(index) == nullptr;
        }
    tune_options chosen = o;
    std::tie(chosen.strategy, chosen.budget) = strategy_for(o, measurable);
    tune_result r = search_space(
        sp, chosen, [&](std::size_t index) { return sp.allowed(index) && find(index) != nullptr; },
        [&](const std::vector<std::size_t>& batch) {
            std::vector<std::optional<tuned_point>> measured;
            for (const std::size_t index : batch) {
                const measurement* m = find(index);
                measured.push_back(tuned_point{0, sp.values_of(index), *m, m->ms ? "PASS" : "FAIL", "", "replay"});
            }
            return measured;
        },
        [&](std::size_t index) -> std::optional<double> { return find(index)->ms.value_or(INFINITY); });
    r.device = "replay";
    r.unrecorded_points = unrecorded;
    return r;
}

dry_run_result dry_run(run::session& s, const config::document& doc, const tune_options& o,
                       const run::compile_progress& progress) {
    const config::document base = base_of(doc);
    dry_run_result r;
    r.target = family::configured_target(family::load(base).compile);
    const space sp = space_of(base, doc, r.target);
    require_a_point(base, sp, r.target);
    std::vector<config::sweep_point> allowed;
    for (std::size_t index = 0; index < sp.size(); ++index)
        if (sp.allowed(index))
            if (auto point = point_of(base, sp.values_of(index), index, r.target)) allowed.push_back(std::move(*point));
    r.space_points = sp.size();
    r.allowed_points = allowed.size();
    std::tie(r.strategy, r.budget) = strategy_for(o, r.allowed_points);
    r.compiled = s.sweep(allowed, base.source, {.compile_only = true, .jobs = o.jobs, .compiled = progress}).compiled;
    return r;
}

std::vector<report::record> measure_points(run::session& s, const config::document& doc,
                                           const std::vector<std::pair<std::size_t, json_value>>& points, int device,
                                           int jobs, const std::string& counter_set) {
    const config::document base = base_of(doc);
    const config::target gpu = run::target_of(s.device(device));
    std::vector<config::sweep_point> to_run;
    for (const auto& [index, values] : points)
        if (auto point = point_of(base, values, index, gpu)) to_run.push_back(std::move(*point));
    return run_on(s, to_run, base.source, device, jobs, counter_set);
}

json_value to_json(const run::device_info& d) { return json_value(nlohmann::json(d)); }

run::device_info device_from_json(const json_value& j) { return nlohmann::json(j).get<run::device_info>(); }

std::vector<report::row> rows_of(const tune_result& r) {
    std::vector<report::row> rows;
    std::optional<double> best;
    for (const auto& p : r.points) {
        if (p.result.ms && (!best || *p.result.ms < *best)) best = p.result.ms;
        const auto number = [](const std::optional<double>& v) { return v ? report::row(*v) : report::row(nullptr); };
        rows.push_back({{"evaluation", p.evaluation},
                        {"point", config::point_label(p.values)},
                        {"values", p.values},
                        {"ms", number(p.result.ms)},
                        {"roofline", number(p.result.roofline)},
                        {"status", p.status},
                        {"message", p.message},
                        {"from", p.from},
                        {"best_ms", number(best)},
                        {"exhaustive_best_ms", number(r.exhaustive_best_ms)},
                        {"strategy", r.strategy},
                        {"device", r.device}});
        rows.back().update(p.counters);
    }
    return rows;
}

bool wants_tuned_launch(const config::document& doc) {
    return doc.json.is_object() && doc.json.contains("launch") && doc.json["launch"] == "tuned";
}

config::document with_tuned_launch(run::session& s, const config::document& doc, int device, std::string& note) {
    const run::device_info info = s.device(device);
    const json_value key = key_of(doc, info, s.templates());
    std::optional<database> db(std::in_place, s.cache().root(), key);
    if (db->best() == nullptr) {  // a tune on another GPU of the same architecture, else none
        const auto other = key_on_same_arch(s.cache().root(), key);
        db = other ? std::optional<database>(std::in_place, s.cache().root(), *other) : std::nullopt;
    }
    config::document tuned = doc;
    tuned.json["launch"] = json_value::object();
    const stored_point* best = db ? db->best() : nullptr;
    const std::string warning = db && !db->warning().empty() ? " (" + db->warning() + ")" : "";
    if (best == nullptr) {
        note = "no tune of this config on " + info.name + " or another sm_" + std::to_string(info.arch) +
               " GPU in the tuning database: the family's rule (every key \"auto\"); `kjit tune` makes one" + warning;
        return tuned;
    }
    tuned = with_values(tuned, best->values);
    const std::string tuned_on = db->key().at("device").get<std::string>();
    note = "launch tuned " + best->measured + " on " + tuned_on + (tuned_on == info.name ? "" : " (the same architecture)") + " (" +
           units::duration_ms(*best->ms) + " then; " + config::point_label(best->values) + ")";
    return tuned;
}

config::document with_values(const config::document& doc, const json_value& values) {
    config::document result = doc;
    for (const auto& [path, value] : values.items()) config::set_path(result.json, path, value, doc.source + ": tune." + path);
    return result;
}

}  // namespace kjit::tune
