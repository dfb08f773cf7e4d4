// kjit tune on fake GPUs whose launch time depends on the block: the search measures through a
// session, remembers every point in the tuning database (a second tune spends no GPU time, a
// longer one measures only what is new), and launch "tuned" takes the best. Needs NVRTC.
#include <algorithm>
#include <fstream>

#include "fake_gpu.hpp"
#include "helpers.hpp"
#include "report/files.hpp"
#include "run/session.hpp"
#include "tune/database.hpp"
#include "tune/tuner.hpp"
#include "util/interrupt.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {

config::document softmax_tune() {
    config::document doc = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/softmax.json");
    doc.json["shape"] = {8, 256};
    doc.json["measure"] = {{"warmup", 1}, {"repeat", 3}};
    doc.json["tune"] = {{"axes", {{"launch.block", {64, 128, 256}}, {"launch.streaming", {false, true}}}}};
    return doc;
}

/// Fake GPUs on which a block of 128 threads runs twice as fast as any other; `after` (if set)
/// sees each launch after it ran: a test's tampering.
std::unique_ptr<kjit::testing::fake_provider> block_sensitive_gpus(const config::document& doc,
                                                                   kjit::testing::fake_gpu::launch_callback after = {}) {
    auto gpus = std::make_unique<kjit::testing::fake_provider>();
    gpus->setup = [executor = kjit::testing::plan_executor(std::vector<config::pipeline>{family::load(doc)}),
                   after](kjit::testing::fake_gpu& g) {
        g.on_launch = executor;
        g.after_launch = after;
        g.launch_time = [](const run::kernel_launch& l) { return l.block.x == 128 ? 0.001 : 0.002; };
    };
    return gpus;
}

}  // namespace

TEST_CASE("tune on a session: every point verified and stored; a second tune measures nothing") {
    kjit::testing::temp_dir dir;
    const config::document doc = softmax_tune();
    config::document base = doc;
    base.json.erase("tune");
    auto gpus = block_sensitive_gpus(base);
    auto* provider = gpus.get();
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, std::move(gpus));

    tune::tune_options o;
    o.strategy = "random";
    o.budget = 3;
    const auto first = tune::tune(s, doc, o);
    CHECK(first.points.size() == 3);
    CHECK(first.allowed_points == 6);
    CHECK_FALSE(first.exhaustive_best_ms);  // half the space is unknown yet
    for (const auto& p : first.points) {
        CHECK(p.from == "measured");
        CHECK(p.status == "PASS");
    }

    // Exhaustive after it: the three known points come from the database, three are measured.
    o.strategy = "exhaustive";
    o.budget = 0;
    const auto all = tune::tune(s, doc, o);
    REQUIRE(all.points.size() == 6);
    int measured = 0;
    for (const auto& p : all.points) measured += p.from == "measured";
    CHECK(measured == 3);
    REQUIRE(all.exhaustive_best_ms);
    const auto best = std::min_element(all.points.begin(), all.points.end(),
                                       [](const auto& a, const auto& b) { return *a.result.ms < *b.result.ms; });
    CHECK(best->values["launch.block"] == 128);
    CHECK(*best->result.ms == *all.exhaustive_best_ms);

    // Again: nothing measured, no GPU opened.
    const int opened = provider->opened;
    const auto again = tune::tune(s, doc, o);
    CHECK(again.points.size() == 6);
    for (const auto& p : again.points) CHECK(p.from == "database");
    CHECK(provider->opened == opened);
    CHECK(again.exhaustive_best_ms == all.exhaustive_best_ms);
    CHECK(again.database_warning.empty());

    // launch "tuned": the best point's values, and a note naming the device and the date.
    config::document tuned = base;
    tuned.json["launch"] = "tuned";
    REQUIRE(tune::wants_tuned_launch(tuned));
    std::string note;
    const config::document resolved = tune::with_tuned_launch(s, tuned, 0, note);
    CHECK(resolved.json["launch"]["block"] == 128);
    CHECK(note.find("on Fake GPU") != std::string::npos);
    CHECK(note.find("launch.block=128") != std::string::npos);
    CHECK(family::load(resolved).launch.block == 128);

    // A tune made on another GPU of the same architecture serves where this GPU has none; the
    // note says where it was made.
    config::document other_shape = base;
    other_shape.json["shape"] = {16, 256};
    run::device_info sibling = s.device(0);
    sibling.name = "Fake GPU, its sibling";
    tune::database made_there(s.cache().root(), tune::key_of(other_shape, sibling, s.templates()));
    made_there.add({{{"launch.block", 64}}, 0.5, std::nullopt, "PASS", "", "2026-12-03T00:00:00Z"});
    made_there.save();
    tuned.json["shape"] = {16, 256};
    CHECK(tune::with_tuned_launch(s, tuned, 0, note).json["launch"]["block"] == 64);
    CHECK(note.find("on Fake GPU, its sibling (the same architecture)") != std::string::npos);

    // A damaged database is said, in the result and in the note, and its points measured again.
    std::ofstream(again.database_file) << std::string(100000, '[');
    const auto damaged = tune::tune(s, doc, o);
    CHECK(damaged.database_warning.find("could not be read (") != std::string::npos);
    CHECK(damaged.database_warning.size() < 600);  // the parser's message, bounded
    CHECK(std::count_if(damaged.points.begin(), damaged.points.end(), [](const auto& p) { return p.from == "measured"; }) == 6);

    // One the database has nothing for takes the family's rule, and the note says so.
    tuned.json["shape"] = {32, 256};
    const config::document ruled = tune::with_tuned_launch(s, tuned, 0, note);
    CHECK(ruled.json["launch"] == json::object());
    CHECK(note.find("no tune of this config on Fake GPU or another sm_90 GPU") != std::string::npos);
}

TEST_CASE("tune on remote workers: they measure every batch (a lost share goes to another), the tuning session alone writes the database") {
    kjit::testing::temp_dir here, there;
    const config::document doc = softmax_tune();
    config::document base = doc;
    base.json.erase("tune");
    // The tuning session has no GPU of its own; two worker sessions (their own caches) have one each.
    auto no_gpu = std::make_unique<kjit::testing::fake_provider>();
    no_gpu->why_not = "no GPU on the tuning process's node";
    run::session tuning({"", here.path().string(), std::nullopt, jit::cache_mode::use}, std::move(no_gpu));
    std::vector<std::unique_ptr<run::session>> workers;
    for (int w = 0; w < 2; ++w)
        workers.push_back(std::make_unique<run::session>(
            run::session_options{"", (there.path() / std::to_string(w)).string(), std::nullopt, jit::cache_mode::use},
            block_sensitive_gpus(base)));
    std::size_t batches = 0, lost = 0;
    tune::tune_options o;
    o.strategy = "exhaustive";
    o.remote = tune::remote_workers{
        tune::device_from_json(tune::to_json(workers[0]->device(0))),
        [&](const std::vector<std::pair<std::size_t, json>>& points) {
            // Half to each worker, as kjit.cluster splits a batch; the first batch's first share is
            // "lost" and measured by the other worker.
            std::vector<report::row> rows;
            const std::size_t half = points.size() / 2;
            const std::vector<std::pair<std::size_t, json>> shares[] = {{points.begin(), points.begin() + half},
                                                                       {points.begin() + half, points.end()}};
            for (std::size_t w = 0; w < 2; ++w) {
                const std::size_t worker = batches == 0 && w == 0 ? (++lost, 1) : w;
                for (auto& row : report::rows_of(tune::measure_points(*workers[worker], doc, shares[w], 0, 1)))
                    rows.push_back(std::move(row));
            }
            ++batches;
            return rows;
        }};
    const auto result = tune::tune(tuning, doc, o);
    REQUIRE(result.points.size() == 6);
    CHECK(batches >= 1);
    CHECK(lost == 1);
    for (const auto& p : result.points) CHECK(p.status == "PASS");
    const auto best = std::min_element(result.points.begin(), result.points.end(),
                                       [](const auto& a, const auto& b) { return *a.result.ms < *b.result.ms; });
    CHECK(best->values["launch.block"] == 128);  // the workers' fake GPUs run 128 fastest
    CHECK(result.device == "Fake GPU");
    // The one writer: the database is in the tuning session's cache, none in a worker's.
    CHECK(tuning.cache().records().size() == 1);
    for (const auto& w : workers) CHECK(w->cache().records().empty());
    // A second tune measures nothing: every point comes from the tuning session's database.
    const auto again = tune::tune(tuning, doc, o);
    for (const auto& p : again.points) CHECK(p.from == "database");
}

TEST_CASE("kjit tune --dry-run: the space sized and compiled with no GPU; the tune after it compiles nothing") {
    kjit::testing::temp_dir dir;
    config::document doc = softmax_tune();
    doc.json["tune"]["constraints"] = {"block >= 128"};  // 4 of the 6 points
    const std::string config = (dir.path() / "tune.json").string(), cache = (dir.path() / "cache").string();
    std::ofstream(config) << doc.json.dump();
    const auto first = kjit::testing::kjit_cli({"tune", config, "--dry-run", "--cache-dir", cache, "--target", "h200"});
    REQUIRE(first.status == exit_status::ok);
    CHECK(first.out.find("for h200 (sm_90") != std::string::npos);
    CHECK(first.out.find("6 points, 4 allowed (the constraints") != std::string::npos);
    CHECK(first.out.find("4 distinct sources of the allowed points, 4 compiled") != std::string::npos);
    CHECK(first.out.find("exhaustive, every allowed point") != std::string::npos);
    const auto again = kjit::testing::kjit_cli({"tune", config, "--dry-run", "--cache-dir", cache, "--target", "h200"});
    CHECK(again.out.find("4 distinct sources of the allowed points, 0 compiled") != std::string::npos);
    CHECK(kjit::testing::kjit_cli({"tune", config, "--dry-run", "--write-best", (dir.path() / "best.json").string()}).status ==
          exit_status::usage);
}

TEST_CASE("tuning key: every input's own shape and the GPU decide it, the inputs' values do not") {
    kjit::testing::temp_dir dir;
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, block_sensitive_gpus(softmax_tune()));
    config::document matmul = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/mlp_layer.json");
    const run::device_info gpu = s.device(0);
    const json key = tune::key_of(matmul, gpu, s.templates());
    config::document other_fill = matmul;
    other_fill.json["inputs"]["W"]["std"] = 0.5;
    CHECK(tune::key_of(other_fill, gpu, s.templates()) == key);
    config::document wider = matmul;  // the same M and K, another N: another tune
    wider.json["inputs"]["W"]["shape"] = {4096, 11008};
    CHECK(tune::key_of(wider, gpu, s.templates()) != key);
    run::device_info older = gpu;
    older.arch = 80;
    CHECK(tune::key_of(matmul, older, s.templates()) != key);
}

TEST_CASE("tune replay: the same search on recorded rows, with no GPU") {
    kjit::testing::temp_dir dir;
    const config::document doc = softmax_tune();
    config::document base = doc;
    base.json.erase("tune");
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, block_sensitive_gpus(base));
    tune::tune_options o;
    o.strategy = "exhaustive";
    const auto recorded = tune::rows_of(tune::tune(s, doc, o));
    REQUIRE(recorded.size() == 6);
    CHECK(recorded.back()["best_ms"] == recorded.back()["exhaustive_best_ms"]);

    o.strategy = "local";
    const auto replayed = tune::replay(doc, recorded, o);
    CHECK(replayed.allowed_points == 6);
    CHECK(replayed.exhaustive_best_ms);
    for (const auto& p : replayed.points) CHECK(p.from == "replay");
    // A recording without some points: those are not allowed.
    auto fewer = recorded;
    fewer.erase(fewer.begin());
    CHECK(tune::replay(doc, fewer, o).allowed_points == 5);
}

TEST_CASE("tune interrupted: the points that finished are kept, and the same tune resumes from them") {
    kjit::testing::temp_dir dir;
    const config::document doc = softmax_tune();
    config::document base = doc;
    base.json.erase("tune");
    // Ctrl-C as the first launch runs: the point in flight finishes, no other starts.
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use},
                   block_sensitive_gpus(base, [](const std::string&, const auto&, const run::kernel_launch&) {
                       kjit::set_interrupted(true);
                   }));
    tune::tune_options o;
    o.strategy = "exhaustive";
    const auto cut = tune::tune(s, doc, o);
    kjit::set_interrupted(false);
    CHECK(cut.stopped == tune::stop_reason::interrupted);
    REQUIRE_FALSE(cut.points.empty());  // the point in flight finished
    CHECK(cut.points.size() < 6);
    CHECK_FALSE(cut.exhaustive_best_ms);

    run::session again({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, block_sensitive_gpus(base));
    const auto resumed = tune::tune(again, doc, o);
    CHECK(resumed.stopped == tune::stop_reason::done);
    REQUIRE(resumed.points.size() == 6);
    std::size_t from_database = 0;
    for (const auto& p : resumed.points) from_database += p.from == "database";
    CHECK(from_database == cut.points.size());
    CHECK(resumed.exhaustive_best_ms);
}

TEST_CASE("tune: a point that fails its check is recorded and skipped, never the best") {
    kjit::testing::temp_dir dir;
    const config::document doc = softmax_tune();
    config::document base = doc;
    base.json.erase("tune");
    // Blocks of 128, the fastest, write a wrong result: their points FAIL.
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use},
                   block_sensitive_gpus(base, [](const std::string&, const std::vector<std::vector<unsigned char>*>& buffers,
                                                 const run::kernel_launch& l) {
                       if (l.block.x == 128)
                           std::fill(buffers.back()->begin(), buffers.back()->end(), static_cast<unsigned char>(0x7f));
                   }));
    tune::tune_options o;
    o.strategy = "exhaustive";
    const auto r = tune::tune(s, doc, o);
    REQUIRE(r.points.size() == 6);
    int failed = 0;
    for (const auto& p : r.points) {
        CAPTURE(config::point_label(p.values));
        const bool wrong = p.values["launch.block"] == 128;
        CHECK(p.status == (wrong ? "FAIL" : "PASS"));
        CHECK(p.result.ms.has_value() == !wrong);
        failed += wrong;
    }
    CHECK(failed == 2);
    // The best is a point that passed: a block of 64 or 256 (each 2 µs a launch).
    const auto rows = tune::rows_of(r);
    CHECK(rows.back()["best_ms"] == rows.back()["exhaustive_best_ms"]);
    config::document tuned = base;
    tuned.json["launch"] = "tuned";
    std::string note;
    CHECK(tune::with_tuned_launch(s, tuned, 0, note).json["launch"]["block"] != 128);
}

TEST_CASE("tune --metrics: every point's hardware counters in its row, measured again though the database knows its time") {
    kjit::testing::temp_dir dir;
    const config::document doc = softmax_tune();
    config::document base = doc;
    base.json.erase("tune");
    run::session s({"", dir.path().string(), std::nullopt, jit::cache_mode::use}, block_sensitive_gpus(base));
    tune::tune_options o;
    o.strategy = "exhaustive";
    const auto plain = tune::tune(s, doc, o);
    for (const auto& row : tune::rows_of(plain)) CHECK_FALSE(row.contains("metric_duration_ns"));

    o.counter_set = "memory";
    const auto counted = tune::tune(s, doc, o);
    REQUIRE(counted.points.size() == 6);
    CHECK(counted.exhaustive_best_ms == plain.exhaustive_best_ms);  // the database still knows every point
    for (const auto& row : tune::rows_of(counted)) {
        CAPTURE(row["point"]);
        CHECK(row["from"] == "measured");
        // The fake counts 1000 ns for each launch of a one-kernel chain.
        CHECK(row["metric_duration_ns"] == 1000.0);
        CHECK(row.contains("metric_dram_read_bytes"));
    }
}
