// kjit tune without a GPU: the space a config describes, the strategies on made-up landscapes
// (each point measured once, the budget kept, the best found), and the tuning database's key and
// file.
#include <cmath>
#include <set>

#include "helpers.hpp"
#include "tune/database.hpp"
#include "tune/space.hpp"
#include "tune/strategy.hpp"
#include "tune/summary.hpp"
#include "util/fs.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {

config::document with_tune(const json& block) {
    config::document doc = kjit::testing::default_document();
    doc.json["tune"] = block;
    return doc;
}

/// A landscape with one best point and many near-misses: each axis has a best value, and the
/// time grows with the distance from it on every axis, with a deterministic ripple.
struct landscape {
    std::vector<std::size_t> dims;
    std::vector<std::size_t> best;
    int measured_twice = 0;
    std::set<std::size_t> seen{};

    double time(std::size_t index) const {
        const auto steps = tune::steps_of(dims, index);
        double t = 1;
        for (std::size_t a = 0; a < dims.size(); ++a) {
            const double d = std::fabs(static_cast<double>(steps[a]) - static_cast<double>(best[a]));
            t *= 1 + 0.08 * d + 0.03 * std::sin(3.0 * static_cast<double>(steps[a] * (a + 1)));
        }
        return t;
    }
    tune::problem problem() {
        return {dims, [](std::size_t index) { return index % 7 != 3; },  // a few points refused
                [this](const std::vector<std::size_t>& batch) {
                    std::vector<std::optional<tune::measurement>> results;
                    for (const std::size_t index : batch) {
                        measured_twice += !seen.insert(index).second;
                        results.push_back(tune::measurement{time(index)});
                    }
                    return results;
                }};
    }
    double exhaustive_best() const {
        double found = INFINITY;
        std::size_t size = 1;
        for (auto d : dims) size *= d;
        for (std::size_t i = 0; i < size; ++i)
            if (i % 7 != 3) found = std::min(found, time(i));
        return found;
    }
};

double best_of(const tune::search_result& r) {
    double found = INFINITY;
    for (const auto& e : r.evaluations) found = std::min(found, e.result.ms.value_or(INFINITY));
    return found;
}

}  // namespace

TEST_CASE("tune space: axes, paired axes and constraints from the tune block") {
    const auto sp = tune::parse_space(
        with_tune({{"axes", {{"launch.block", {64, 128, 256}}, {"launch.streaming", {false, true}}}},
                   {"paired", {{{"launch.vector_width", {1, 2}}, {"compile.fast_math", {false, true}}}}},
                   {"constraints", {"block * vector_width <= 256", "!(streaming == 1 && block == 64)"}}}),
        json());
    CHECK(sp.size() == 12);
    CHECK(sp.dims() == std::vector<std::size_t>{3, 2, 2});
    CHECK_FALSE(sp.from_family);
    // The last axis varies fastest; a paired axis sets both paths.
    CHECK(config::point_label(sp.values_of(0)) == "launch.block=64 launch.streaming=false launch.vector_width=1 compile.fast_math=false");
    CHECK(config::point_label(sp.values_of(1)) == "launch.block=64 launch.streaming=false launch.vector_width=2 compile.fast_math=true");
    std::vector<std::string> allowed;
    for (std::size_t i = 0; i < sp.size(); ++i)
        if (sp.allowed(i)) allowed.push_back(config::point_label(sp.values_of(i)));
    CHECK(allowed.size() == 8);  // 256 × 2 is out (2 points), and streaming at block 64 (2 points)
    for (const auto& label : allowed) {
        CHECK(label.find("block=256 launch.streaming=false launch.vector_width=2") == std::string::npos);
        CHECK(label.find("block=64 launch.streaming=true") == std::string::npos);
    }
    CHECK(config::axis_name("stages[2].formula") == "formula");
    CHECK(config::axis_name("stages[1]") == "stages");
}

TEST_CASE("tune space: the family's own when the config has no tune block") {
    const json family_space = {{"axes", {{"launch.block", {128, 256}}}}};
    const auto sp = tune::parse_space(kjit::testing::default_document(), family_space);
    CHECK(sp.from_family);
    CHECK(sp.size() == 2);
}

TEST_CASE("tune space: each mistake is one line at its key path") {
    const auto message = [](const json& block) {
        return kjit::testing::error_message([&] { (void)tune::parse_space(with_tune(block), json()); });
    };
    CHECK(message({{"axes", {{"launch.block", json::array()}}}}).find("tune.axes.launch.block: expected a non-empty list") !=
          std::string::npos);
    CHECK(message({{"paired", {{{"launch.block", {64, 128}}, {"launch.vector_width", {1}}}}}})
              .find("tune.paired[0].launch.vector_width: expected 2 values, as many as launch.block has") != std::string::npos);
    CHECK(message({{"constraints", {"block < 3"}}}).find("tune: expected \"axes\" or \"paired\"") != std::string::npos);
    const std::string unknown = message({{"axes", {{"launch.block", {64}}, {"launch.row_cache", {"none"}}}},
                                         {"constraints", {"row_cache > 1"}}});
    CHECK(unknown.find("tune.constraints[0]: column 1:") != std::string::npos);
    CHECK(unknown.find("row_cache") != std::string::npos);
    const std::string not_a_condition = message({{"axes", {{"launch.block", {64}}}}, {"constraints", {"block * 2"}}});
    CAPTURE(not_a_condition);
    CHECK(not_a_condition.find("tune.constraints[0]: expected a condition such as") != std::string::npos);
    CHECK(message({{"axes", {{"launch.block", {64}}}}, {"constraints", {"block < i"}}})
              .find("names only the numeric axes") != std::string::npos);
    CHECK(message({{"axes", {{"launch.block", {64}}}}, {"extra", 1}}).find("tune.extra: unknown key") != std::string::npos);
}

TEST_CASE("tune strategies: each point measured once, allowed points only, the budget kept") {
    for (const auto& name : tune::strategy_names()) {
        CAPTURE(name);
        landscape l{{6, 4, 4, 2}, {3, 1, 2, 0}};
        const auto r = tune::search(name, l.problem(), {.evaluations = 30}, 7);
        CHECK(l.measured_twice == 0);
        CHECK(r.evaluations.size() <= 30);
        for (const auto& e : r.evaluations) CHECK(e.index % 7 != 3);
        if (name != "exhaustive") CHECK(r.stopped == tune::stop_reason::budget);
    }
    landscape all{{6, 4, 4, 2}, {3, 1, 2, 0}};
    const auto r = tune::search("exhaustive", all.problem(), {}, 1);
    CHECK(r.evaluations.size() == 165);  // every allowed point: 27 of 192 have index % 7 == 3
    CHECK(r.stopped == tune::stop_reason::done);
    CHECK(best_of(r) == all.exhaustive_best());
    CHECK_THROWS_WITH_AS((void)tune::search("bayes", all.problem(), {}, 1),
                         "--strategy: expected one of exhaustive, random, anneal, genetic, local, got \"bayes\"", error);
}

TEST_CASE("tune strategies: the model- and neighbourhood-based ones beat random search at 15 % of the space") {
    for (const char* name : {"anneal", "genetic", "local"}) {
        CAPTURE(name);
        std::vector<double> found, random_found;
        for (std::uint64_t seed = 1; seed <= 5; ++seed) {
            landscape l{{6, 4, 4, 2, 2}, {4, 1, 3, 1, 0}};
            const double best = l.exhaustive_best();
            const std::size_t budget = 384 * 15 / 100;
            found.push_back(best / best_of(tune::search(name, l.problem(), {.evaluations = budget}, seed)));
            landscape r{l.dims, l.best};
            random_found.push_back(best / best_of(tune::search("random", r.problem(), {.evaluations = budget}, seed)));
        }
        std::sort(found.begin(), found.end());
        std::sort(random_found.begin(), random_found.end());
        CHECK(found[2] >= 0.98);
        CHECK(found[2] > random_found[2]);
    }
}

TEST_CASE("tune strategies: the roofline target and a cut-short measure stop the search") {
    landscape l{{6, 4}, {2, 2}};
    tune::problem p = l.problem();
    const auto measure = p.measure;
    p.measure = [&](const std::vector<std::size_t>& batch) {
        auto results = measure(batch);
        for (auto& m : results) m->roofline = l.exhaustive_best() / m->ms.value();
        return results;
    };
    const auto r = tune::search("random", p, {.roofline_target = 0.999}, 1);
    CHECK(r.stopped == tune::stop_reason::roofline);
    CHECK(r.evaluations.size() < 20);  // of 21 allowed: it stopped at the batch with the best point

    // A measure that leaves points out (Ctrl-C in a sweep) ends the search there, keeping the rest.
    tune::problem cut = l.problem();
    std::vector<std::size_t> asked;
    cut.measure = [&](const std::vector<std::size_t>& batch) {
        asked = batch;
        std::vector<std::optional<tune::measurement>> results(batch.size());
        for (std::size_t k = 0; k < batch.size(); k += 2) results[k] = tune::measurement{1.0};
        return results;
    };
    const auto short_run = tune::search("random", cut, {}, 1);
    CHECK(short_run.stopped == tune::stop_reason::interrupted);
    REQUIRE(asked.size() > 2);
    REQUIRE(short_run.evaluations.size() == (asked.size() + 1) / 2);
    CHECK(short_run.evaluations[1].index == asked[2]);
}

TEST_CASE("tune evaluations_to_reach: the first within the fraction") {
    const std::vector<tune::evaluation> e{{0, {2.0}}, {1, {std::nullopt}}, {2, {1.04}}, {3, {1.0}}};
    CHECK(tune::evaluations_to_reach(e, 1.0, 0.95) == 3);
    CHECK(tune::evaluations_to_reach(e, 1.0, 0.99) == 4);
    CHECK_FALSE(tune::evaluations_to_reach(e, 0.5, 0.99));
}

TEST_CASE("tune database: keyed by what decides the answer, written atomically, damaged files replaced") {
    run::device_info device;
    device.name = "NVIDIA H200";
    device.arch = 90;
    device.driver_version = 13000;
    const auto templates = codegen::template_set::embedded();
    config::document doc = kjit::testing::default_document();
    const json key = tune::key_of(doc, device, templates);
    // Not part of the key: the launch, the measuring, the names, a sweep or tune block.
    config::document relaunched = doc;
    relaunched.json["launch"] = {{"block", 1024}};
    relaunched.json["measure"] = {{"repeat", 3}};
    relaunched.json["name"] = "other";
    relaunched.json["tune"] = {{"axes", {{"launch.block", {64}}}}};
    relaunched.json["inputs"]["greyscales"] = {{"fill", "constant"}, {"value", 3}};  // other values, same kernels
    CHECK(tune::key_of(relaunched, device, templates) == key);
    // Part of it: the dtype, the size, the device, its driver, the kernels.
    config::document wider = doc;
    wider.json["dtype"] = "float64";
    CHECK(tune::key_of(wider, device, templates) != key);
    config::document per_column = doc;
    per_column.json["inputs"]["weights"]["per"] = "column";
    CHECK(tune::key_of(per_column, device, templates) != key);
    config::document longer = doc;
    longer.json["n"] = 2000000;
    CHECK(tune::key_of(longer, device, templates) != key);
    run::device_info other = device;
    other.name = "NVIDIA H100";
    CHECK(tune::key_of(doc, other, templates) != key);
    other = device;
    other.driver_version = 12080;
    CHECK(tune::key_of(doc, other, templates) != key);
    auto edited = templates;
    edited.files.begin()->second += "\n";
    CHECK(tune::key_of(doc, device, edited) != key);

    kjit::testing::temp_dir dir;
    const json fast = {{"launch.block", 128}}, slow = {{"launch.block", 512}}, broken = {{"launch.block", 64}};
    {
        tune::database db(dir.path(), key);
        CHECK(db.points().empty());
        CHECK(db.best() == nullptr);
        db.add({slow, 2.0, 0.5, "PASS", "", "2026-12-02T10:00:00Z"});
        db.add({fast, 1.0, 0.9, "PASS", "", "2026-12-02T10:00:01Z"});
        db.add({broken, std::nullopt, std::nullopt, "FAIL", "3 of 1000 elements outside tolerance", "2026-12-02T10:00:02Z"});
        db.save();
    }
    tune::database again(dir.path(), key);
    REQUIRE(again.points().size() == 3);
    CHECK(again.warning().empty());
    REQUIRE(again.best() != nullptr);
    CHECK(again.best()->values == fast);
    CHECK(again.best()->measured == "2026-12-02T10:00:01Z");
    REQUIRE(again.find(broken) != nullptr);
    CHECK_FALSE(again.find(broken)->ms);
    CHECK(again.find(json{{"launch.block", 256}}) == nullptr);
    CHECK(again.file().parent_path() == dir.path() / "tune");

    kjit::fs::write_file_atomic(again.file(), "{ not json");
    tune::database damaged(dir.path(), key);
    CHECK(damaged.points().empty());
    CHECK(damaged.warning().find("could not be read") != std::string::npos);
}

namespace {
/// The rows of an exhaustive tune recorded on the H200 (bench/results/2026-12-02-h200-tune).
std::vector<report::row> recorded(const std::string& name) {
    const auto rows = report::row::parse(kjit::fs::read_file(std::string(KJIT_SOURCE_DIR) +
                                                             "/bench/results/2026-12-02-h200-tune/" + name + ".exhaustive.json"));
    return {rows.begin(), rows.end()};
}
}  // namespace

TEST_CASE("tune replay: a space with no point to measure says why, not that the recording lacks points") {
    auto doc = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/tune_softmax.json");
    const auto rows = recorded("tune_softmax");
    const auto refused = [&](const json& block) {
        doc.json["tune"] = block;
        return kjit::testing::error_message([&] { (void)tune::replay(doc, rows, {}); });
    };
    CHECK(refused({{"axes", {{"launch.block", {33, 65}}}}}) ==
          doc.source + ": tune: the family refuses every point of the space; the first: " + doc.source +
                  ": tune point (launch.block=33): launch.block: expected a multiple of 32 in 32..1024 or \"auto\", got 33");
    CHECK(refused({{"axes", {{"launch.block", {64, 128}}}}, {"constraints", {"block > 1000"}}}) ==
          doc.source + ": tune: no point of the space meets its constraints");
    const auto shipped = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/tune_softmax.json");
    CHECK(tune::replay(shipped, rows, {}).allowed_points > 0);  // allowed, and recorded
}

TEST_CASE("tune replay of the H200's exhaustive tunes: each search reaches 98 % of the best in 15 % of the points, "
          "and beats random search") {
    for (const char* name : {"tune_softmax", "tune_layernorm"}) {
        const auto doc = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/" + name + ".json");
        const auto rows = recorded(name);
        for (const char* strategy : {"anneal", "genetic", "local"}) {
            CAPTURE(name);
            CAPTURE(strategy);
            std::vector<double> found, random_found;
            for (std::uint64_t seed = 1; seed <= 5; ++seed) {
                tune::tune_options o;
                o.strategy = strategy;
                o.seed = seed;
                const auto r = tune::replay(doc, rows, o);
                CHECK(r.points.size() * 100 <= r.allowed_points * 15 + 100);  // the default budget: 15 %
                found.push_back(tune::nearness_of(r)->best_fraction);
                o.strategy = "random";
                random_found.push_back(tune::nearness_of(tune::replay(doc, rows, o))->best_fraction);
            }
            std::sort(found.begin(), found.end());
            std::sort(random_found.begin(), random_found.end());
            CHECK(found[2] >= 0.98);
            CHECK(found[2] > random_found[2]);
        }
    }
}
