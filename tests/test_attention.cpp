// The attention family: its stage and what it refuses, the policy and its auto launch, the masks
// whose whole tiles it skips (found from a tile's corners), the program it plans, and the float64
// reference against a direct softmax(q · kᵀ) · v written here.
#include <cmath>
#include <limits>
#include <numbers>
#include <set>

#include "family/attention/attention.hpp"
#include "family/attention/problem.hpp"
#include "family/attention/reference.hpp"
#include "family/attention/score_folds.hpp"
#include "family/attention/tile_mask.hpp"
#include "helpers.hpp"
#include "run/runner.hpp"

using namespace kjit;
using kjit::testing::error_message;
using json = kjit::config::json_value;

namespace {
/// batch · heads · queries rows of Q, batch · kv_heads · keys rows of K and V.
json attention_config(long long batch, long long heads, long long kv_heads, long long queries, long long keys, long long dim,
                      const std::string& score = "x") {
    const json kv_shape = {batch * kv_heads * keys, dim};
    return {{"name", "a"},
            {"shape", {batch * heads * queries, dim}},
            {"dtype", "bfloat16"},
            {"inputs",
             {{"q", {{"fill", "normal"}}},
              {"k", {{"fill", "normal"}, {"shape", kv_shape}}},
              {"v", {{"fill", "normal"}, {"shape", kv_shape}}}}},
            {"stages", json::array({{{"op", "attention"}, {"input", "q"}, {"keys", "k"}, {"values", "v"}, {"batch", batch},
                                     {"heads", heads}, {"kv_heads", kv_heads}, {"score", score}}})}};
}
config::pipeline parsed(const json& j) { return family::load({j, "a.json"}); }
std::string failure(const json& j) { return error_message([&] { (void)parsed(j); }); }

/// Values spread over [-2, 2], different for each seed: a deterministic stand-in for random data.
reference::typed_array varied_values(config::dtype type, std::size_t count, unsigned seed) {
    reference::typed_array a(type, count);
    for (std::size_t i = 0; i < count; ++i) a.set(i, std::sin(static_cast<double>(i * 7 + seed) * 0.37) * 2);
    return a;
}

/// The config with an output gate after the attention, as Qwen3-Next's gated attention has:
/// O · sigmoid(g), then · alpha (a param the score uses too).
json with_gate(json j) {
    j["inputs"]["g"] = {{"fill", "normal"}};
    j["params"] = {{"alpha", 0.5}};
    j["stages"][0]["score"] = "alpha > 0 ? x : -inf";
    j["stages"].push_back({{"op", "map"}, {"expr", "x * sigmoid(g)"}});
    j["stages"].push_back({{"op", "map"}, {"expr", "x * alpha"}});
    return j;
}

/// The code of a tile test of `score` (masked or plain), whose token input doc ascends where
/// `ascending`.
enum class tile_kind { masked, plain };
std::optional<std::string> tile_test(const std::string& score, bool ascending = false, tile_kind kind = tile_kind::masked) {
    expr::scope names;
    names.has_shape = true;
    names.has_heads = true;
    names.scalars = {"w"};
    names.tokens = {"doc"};
    const auto tree = expr::parse(score, names);
    const expr::cuda_style style{false, false, true, false};
    const std::vector<std::string> sorted = ascending ? std::vector<std::string>{"doc"} : std::vector<std::string>{};
    const auto test = kind == tile_kind::masked ? family::attention::tile_masked(tree, style, sorted)
                                                : family::attention::tile_plain(tree, style, sorted);
    if (test) return test->code;
    return std::nullopt;
}
std::optional<std::string> plain_test(const std::string& score, bool ascending = false) {
    return tile_test(score, ascending, tile_kind::plain);
}
}  // namespace

TEST_CASE("attention: its stage reads Q, K and V as matrices; the result is Q's shape") {
    const auto p = parsed(attention_config(2, 8, 2, 17, 33, 64));
    CHECK(p.family == "attention");
    CHECK(config::output_count(p) == 2 * 8 * 17 * 64);
    const auto pr = family::attention::problem_of(p);
    CHECK(pr.queries == 17);
    CHECK(pr.keys == 33);
    CHECK(pr.group() == 4);
    CHECK(pr.scale == doctest::Approx(0.125));
    CHECK(config::find_scalar(p, family::attention::k_scale_scalar)->value == doctest::Approx(0.125));
    const auto prog = family::plan(p, codegen::template_set::embedded());
    REQUIRE(prog.kernels.size() == 1);
    const auto& k = prog.kernels.front();
    CHECK(k.grid == family::dims{1 * 8 * 2, 1, 1});  // work items: query tiles of 192 of each head of each batch
    CHECK(k.resident == family::resident_rule::at_most);  // at head dim 64, persistent: a block an SM at most
    CHECK(k.block == family::dims{512, 1, 1});  // sm_90 at head dim 64: a producer and three consumers
    CHECK(k.flops == doctest::Approx(4.0 * 2 * 8 * 17 * 33 * 64));  // no mask: every pair
    CHECK(prog.source.find("kjit_group = 4,") != std::string::npos);
    CHECK(prog.only_arch == 90);
    // Q, K and V as tensor maps: one matrix per head, boxes of a tile's rows and 64 columns
    REQUIRE(k.args.at(1).map);
    CHECK(*k.args.at(1).map == family::tensor_map{family::tensor_map::element::bfloat16, 33, 64, 128, 64, 2 * 2});
    CHECK(k.args.at(0).map->planes == 2 * 8);
    CHECK(k.args.at(0).map->box_rows == 192);
}

TEST_CASE("attention: what it refuses, each in one line naming the key") {
    auto j = attention_config(1, 4, 4, 8, 8, 64);
    j["dtype"] = "float32";
    CHECK(failure(j).find("a.json: dtype: attention runs on tensor cores") == 0);
    j = attention_config(1, 4, 4, 8, 8, 72);
    CHECK(failure(j).find("a.json: shape: head_dim (Q's columns) must be a multiple of 16 up to 256, got 72") == 0);
    j = attention_config(1, 4, 3, 8, 8, 64);
    CHECK(failure(j).find("a.json: stages[0].kv_heads: expected a divisor of heads (4)") == 0);
    j = attention_config(1, 4, 4, 8, 8, 64);
    j["shape"][0] = 33;
    CHECK(failure(j).find("a.json: shape: Q's 33 rows must be batch · heads · queries") == 0);
    j = attention_config(1, 4, 4, 8, 8, 64);
    j["inputs"]["v"]["shape"] = {16, 64};
    CHECK(failure(j).find("a.json: stages[0].values: V's shape must be K's") == 0);
    j = attention_config(1, 4, 4, 8, 8, 64, "i > 3 ? -inf : x");
    CHECK(failure(j).find("a.json: stages[0].score: uses 'i'") == 0);
    j = attention_config(1, 4, 4, 8, 8, 64);
    j["stages"][0]["causal"] = true;
    CHECK(failure(j).find("a.json: stages[0].causal: unknown key") == 0);
    j = attention_config(1, 4, 4, 8, 8, 64);
    j["launch"] = {{"block_m", 96}, {"warps", 4}};
    CHECK(failure(j).find("a.json: launch.block_m: a warp takes 1 to 4 pieces of 16 queries") == 0);
    j["launch"] = {{"rung", "wgmma"}, {"warps", 4}};
    CHECK(failure(j).find("a.json: launch.warps: a key of the \"mma\" rung; this one is \"wgmma\"") == 0);
    j["launch"] = {{"rung", "mma"}, {"buffers", 3}};
    CHECK(failure(j).find("a.json: launch.buffers: a key of the \"wgmma\" rung; this one is \"mma\"") == 0);
    j["launch"] = {{"rung", "mma"}, {"schedule", "overlap"}};
    CHECK(failure(j).find("a.json: launch.schedule: a key of the \"wgmma\" rung; this one is \"mma\"") == 0);
    j["launch"] = {{"rung", "wgmma"}, {"block_m", 64}};
    CHECK(failure(j).find("a.json: launch.block_m: the wgmma rung's consumer warp groups take 64 queries each: expected 192") == 0);
    j = attention_config(1, 4, 4, 8, 8, 32);
    j["launch"] = {{"rung", "wgmma"}};
    CHECK(failure(j).find("a.json: launch.rung: the wgmma rung copies slabs of 64 columns: expected head_dim 64 or more, got 32") == 0);
    j = attention_config(1, 4, 4, 64, 64, 256);  // (more queries than decoding's 16: the wgmma rung)
    j["launch"] = {{"block_n", 128}};
    CHECK(failure(j).find("a.json: launch.block_n: a consumer's thread holds block_n / 2 scores and head_dim / 2 output floats") == 0);
    j = attention_config(1, 4, 4, 8, 8, 128);
    j["launch"] = {{"consumers", 3}};
    CHECK(failure(j).find("a.json: launch.block_n: a consumer's thread holds block_n / 2 scores and head_dim / 2 output floats "
                          "(head_dim in slabs of 64): at most 96 together with 3 consumers, got 128") == 0);
    j["launch"] = {{"consumers", 3}, {"block_m", 128}, {"block_n", 64}};
    CHECK(failure(j).find("a.json: launch.block_m: the wgmma rung's consumer warp groups take 64 queries each: expected 192 for 3") == 0);
}

TEST_CASE("attention's epilogue: maps of each output element, of inputs of Q's shape and params; what it refuses") {
    auto j = with_gate(attention_config(1, 4, 4, 8, 8, 64));
    const auto p = parsed(j);
    const auto prog = family::plan(p, codegen::template_set::embedded());
    REQUIRE(prog.kernels.size() == 1);
    const auto& k = prog.kernels.front();
    CHECK(k.stages == std::vector<std::size_t>{0, 1, 2});
    std::vector<std::string> args;
    for (const auto& a : k.args) args.push_back(a.name);
    // the gate beside Q, K and V; alpha once, though the score and the epilogue both use it
    CHECK(args == std::vector<std::string>{"q", "k", "v", "out", "s0_scale", "g", "alpha", "rows", "cols"});
    CHECK(k.bytes_read == doctest::Approx(2.0 * 4 * 8 * 64 * 2 + 2.0 * 4 * 8 * 64 * 2));  // Q and the gate; K and V
    CHECK(prog.source.find("real kjit_epilogue(real x, real g, real alpha)") != std::string::npos);
    CHECK(prog.source.find("return kjit_epilogue(x, load(g[kjit_element]), alpha);") != std::string::npos);

    j = with_gate(attention_config(1, 4, 4, 8, 8, 64));
    j["stages"][1] = {{"op", "map"}, {"expr", "x * row"}};
    CHECK(failure(j).find("a.json: stages[1]: uses 'row': positions are not offered in attention's epilogue") == 0);
    j["stages"][1] = {{"op", "map"}, {"expr", "x + k"}};
    CHECK(failure(j).find("a.json: stages[1]: uses \"k\": an epilogue reads inputs of Q's shape") == 0);
    j["stages"][1] = {{"op", "max"}};
    CHECK(failure(j).find("a.json: stages[1]: after the attention come maps of each output element") == 0);
    j = attention_config(1, 4, 4, 8, 8, 64);
    j["stages"][0].erase("input");
    j["stages"].insert(j["stages"].begin(), json::object({{"op", "map"}, {"input", "q"}, {"expr", "x * 2"}}));
    CHECK(failure(j).find("a.json: stages[0]: attention starts the pipeline") == 0);
}

TEST_CASE("attention's reference applies the epilogue to each output element, the gate read at the element's place") {
    const auto plain = parsed(attention_config(2, 2, 1, 5, 7, 16));
    const auto gated = parsed(with_gate(attention_config(2, 2, 1, 5, 7, 16)));
    reference::input_arrays inputs;
    inputs.emplace("q", varied_values(plain.type, 2 * 2 * 5 * 16, 1));
    inputs.emplace("k", varied_values(plain.type, 2 * 7 * 16, 2));
    inputs.emplace("v", varied_values(plain.type, 2 * 7 * 16, 3));
    inputs.emplace("g", varied_values(plain.type, 2 * 2 * 5 * 16, 4));
    const auto before = family::attention::reference(plain, inputs);
    const auto after = family::attention::reference(gated, inputs);
    REQUIRE(after.values.size() == before.values.size());
    for (std::size_t e = 0; e < after.values.size(); ++e) {
        CAPTURE(e);
        const double gate = inputs.at("g").get(e);
        CHECK(after.values[e] == doctest::Approx(before.values[e] / (1 + std::exp(-gate)) * 0.5).epsilon(1e-12));
        CHECK(after.scales[e] > 0);
    }
}

TEST_CASE("attention: auto on sm_90 takes wgmma, 128 keys a tile up to head dim 128 and 64 past it") {
    using family::attention::policy_of;
    const auto small = parsed(attention_config(1, 2, 2, 64, 64, 128));
    CHECK(policy_of(small).columns() == json{{"rung", "wgmma"}, {"block_m", 128}, {"block_n", 128}, {"pack_heads", false},
                                             {"consumers", 2}, {"buffers", 3}, {"schedule", "pingpong"}, {"persistent", false},
                                             {"skips_tiles", false}, {"plain_tiles", true}});
    // the tuner sweeps the rung's own keys (a key of the other would change the rung)
    CHECK(family::attention_family().tune_space(small)["axes"].contains("launch.schedule"));
    CHECK_FALSE(family::attention_family().tune_space(small)["axes"].contains("launch.warps"));
    CHECK(policy_of(parsed(attention_config(1, 2, 2, 64, 64, 192))).block_n == 64);
    CHECK(policy_of(parsed(attention_config(1, 2, 2, 64, 64, 256))).block_n == 64);
    // below head dim 64 the mma rung (the wgmma rung copies slabs of 64 columns)
    CHECK(policy_of(parsed(attention_config(1, 2, 2, 64, 64, 32))).kind == family::attention::rung::mma);
    // a key of the mma rung asks for it
    auto j = attention_config(1, 2, 2, 64, 64, 64);
    j["launch"] = {{"warps", 2}};
    CHECK(policy_of(parsed(j)).kind == family::attention::rung::mma);
    // 96 columns are tiles of two slabs, the second half zeros
    j = attention_config(1, 2, 2, 64, 64, 96);
    const auto prog = family::plan(parsed(j), codegen::template_set::embedded());
    CHECK(prog.kernels.front().shared_bytes == 1024 + 2 * 128 * (128 + 2 * 3 * 128) + 8 * 11);
    CHECK(prog.source.find("m64n128k16") != std::string::npos);  // O's 128 columns, 96 of them stored
}

TEST_CASE("attention: the wgmma rung's consumers, buffers and schedule by head dim, mask and shared memory") {
    using family::attention::policy_of;
    using order = family::attention::policy::schedule;
    // head dim 64: three consumers (192 queries, 512 threads, 160 registers each) and four buffers,
    // ping-pong with a mask or without
    const auto plain = parsed(attention_config(1, 2, 2, 64, 64, 64));
    CHECK(policy_of(plain).consumers == 3);
    CHECK(policy_of(plain).stages == 4);
    CHECK(policy_of(plain).order == order::pingpong);
    CHECK(policy_of(parsed(attention_config(1, 2, 2, 64, 64, 64, "col > row ? -inf : x"))).order == order::pingpong);
    const auto three = family::plan(plain, codegen::template_set::embedded());
    CHECK(three.kernels.front().block.x == 512);
    CHECK(three.kernels.front().grid.x == 2);  // 64 queries in one item of 192, of each of 2 heads
    CHECK(three.source.find("kjit_consumer_registers = 160,") != std::string::npos);
    CHECK(three.source.find("kjit_block_m = 192,") != std::string::npos);
    // head dim 160 (three slabs, tiles of 64 keys): three buffers fit, ping-pong
    const auto wide = parsed(attention_config(1, 2, 2, 64, 64, 160));
    CHECK(policy_of(wide).stages == 3);
    CHECK(policy_of(wide).order == order::pingpong);
    // head dim 256: two buffers are what fit (three take 263,248 bytes), and with two, serial
    const auto widest = parsed(attention_config(1, 2, 2, 64, 64, 256));
    CHECK(policy_of(widest).consumers == 2);
    CHECK(policy_of(widest).stages == 2);
    CHECK(policy_of(widest).order == order::serial);
    // the keys given first: 176 keys a tile leave room for two buffers; two buffers given, serial
    auto j = attention_config(1, 2, 2, 64, 64, 128);
    j["launch"] = {{"block_n", 176}};
    CHECK(policy_of(parsed(j)).stages == 2);
    CHECK(policy_of(parsed(j)).order == order::serial);
    j["launch"] = {{"buffers", 2}};
    CHECK(policy_of(parsed(j)).order == order::serial);
    j["launch"] = {{"schedule", "overlap"}};
    CHECK(policy_of(parsed(j)).stages == 3);
    CHECK(policy_of(parsed(j)).order == order::overlap);
}

TEST_CASE("attention: auto elsewhere takes mma, 4 warps of 2 pieces and 128 keys up to head dim 64, 64 up to 128, 8 warps of one and 32 past it") {
    using family::attention::policy_of;
    const auto on_sm80 = [](json j) {
        j["compile"] = {{"arch", 80}};
        return parsed(j);
    };
    const auto small = on_sm80(attention_config(1, 2, 2, 64, 64, 128));
    CHECK(policy_of(small).columns() ==
          json{{"rung", "mma"}, {"block_m", 128}, {"warps", 4}, {"block_n", 64}, {"splits", 1}, {"pack_heads", false}, {"skips_tiles", false},
               {"plain_tiles", true}});
    CHECK(family::attention_family().tune_space(small)["axes"].contains("launch.warps"));
    CHECK(policy_of(on_sm80(attention_config(1, 2, 2, 64, 64, 64))).block_n == 128);
    CHECK(policy_of(on_sm80(attention_config(1, 2, 2, 64, 64, 80))).block_n == 64);
    const auto wide = on_sm80(attention_config(1, 2, 2, 64, 64, 256));
    CHECK(policy_of(wide).warps == 8);
    CHECK(policy_of(wide).block_n == 32);
    auto j = attention_config(1, 2, 2, 64, 64, 64);
    j["launch"] = {{"block_m", 64}};
    const auto p = on_sm80(j);
    CHECK(policy_of(p).warps == 4);  // one piece each
    const auto prog = family::plan(p, codegen::template_set::embedded());
    CHECK(prog.kernels.front().block.x == 128);
    CHECK(prog.min_arch == 80);
}

TEST_CASE("attention: auto fits the mma tile to a target of 99 KiB a block, keys' tile first, then queries'") {
    using family::attention::policy_of;
    const auto on = [](json j, const char* target) {
        j["compile"] = {{"target", target}};
        return parsed(j);
    };
    const auto hd128 = on(attention_config(1, 2, 2, 64, 64, 128), "l4");  // 128 × 64 would take 102 KiB
    CHECK(policy_of(hd128).block_m == 128);
    CHECK(policy_of(hd128).block_n == 32);
    const auto hd256 = on(attention_config(1, 2, 2, 64, 64, 256), "rtx4090");
    CHECK(policy_of(hd256).block_m == 64);
    CHECK(policy_of(hd256).block_n == 32);
    CHECK(policy_of(hd256).warps == 4);  // a piece of 16 queries each
    CHECK(policy_of(hd256).shared_bytes(256, config::dtype::bfloat16) <= 99 * 1024);
    CHECK(policy_of(on(attention_config(1, 2, 2, 64, 64, 128), "a100")).block_n == 64);  // 163 KiB hold it
    // What is given is kept (the queries' tile gives way to the keys'), and refused where it does
    // not fit.
    auto given = attention_config(1, 2, 2, 64, 64, 128);
    given["launch"] = {{"block_n", 64}};
    CHECK(policy_of(on(given, "l4")).block_m == 64);
    given["launch"]["block_m"] = 128;
    given["compile"] = {{"target", "l4"}};
    CHECK(failure(given).find("a.json: launch: block_m 128 and block_n 64 need 104448 bytes") == 0);
}

TEST_CASE("attention: masks of affine comparisons are tested on a tile's corners; others compute every tile") {
    const auto causal = tile_test("col > row ? -inf : x");
    REQUIRE(causal);
    // masked everywhere in the tile only where its nearest key is past its last query
    CHECK(causal->find("(kjit_c0 > kjit_r1)") != std::string::npos);
    CHECK(causal->find("(kjit_c1 > kjit_r0)") != std::string::npos);
    const auto kept_when_true = tile_test("col <= row ? x : -inf");  // the same mask, written the other way
    REQUIRE(kept_when_true);
    CHECK(kept_when_true->find("!(kjit_c0 <= kjit_r1)") != std::string::npos);
    const auto window = tile_test("col > row || row - col >= w ? -inf : x");
    REQUIRE(window);
    CHECK(window->find(" ||\n") != std::string::npos);  // either side masking the whole tile will do
    // … so a side the corners cannot tell leaves the other; both sides are needed under &&
    CHECK(tile_test("col > row || col * row > w ? -inf : x") == tile_test("col > row ? -inf : x"));
    CHECK_FALSE(tile_test("col > row && col * row > w ? -inf : x"));
    CHECK(tile_test("col <= row && col * row <= w ? x : -inf") == kept_when_true);
    CHECK_FALSE(tile_test("30 * tanh(x / 30)"));          // no −inf
    CHECK_FALSE(tile_test("col % 2 == 0 ? -inf : x"));    // not affine, and == is not decided by corners
    CHECK_FALSE(tile_test("col * row > 5 ? -inf : x"));   // a product of positions is not affine
    CHECK_FALSE(tile_test("col > row ? -inf * x : x"));   // the masked value depends on x
    // A head's own window: affine in row and col for the block's head, which the test takes.
    const auto per_head = tile_test("col > row + 64 * head ? -inf : x");
    REQUIRE(per_head);
    CHECK(per_head->find("(kjit_c0 > (long long)kjit_r1 + 64 * (long long)head)") != std::string::npos);
    const auto g = family::plan(parsed(attention_config(2, 2, 2, 256, 256, 64, "col > row + 64 * head ? -inf : x")),
                                codegen::template_set::embedded());
    CHECK(g.source.find("int rows, int cols, int head, int batch)") != std::string::npos);
    CHECK(g.source.find("(int)cols, kjit_head_index, kjit_batch_index);") != std::string::npos);
    const auto p = parsed(attention_config(1, 2, 2, 256, 256, 64, "col > row ? -inf : x"));
    CHECK(family::attention::policy_of(p).skips_tiles());
    // a causal mask keeps about half of the pairs, and its FLOPs are counted on them
    const auto k = family::plan(p, codegen::template_set::embedded()).kernels.front();
    CHECK(k.flops == doctest::Approx(4.0 * 2 * 256 * 256 * 64 * 0.502).epsilon(0.01));
}

TEST_CASE("attention: abs, min and max in a mask are the comparisons they hold by, so a band written with abs skips tiles") {
    // |row − col| < w is row − col < w && −(row − col) < w: masked where either fails over the
    // whole tile (||), plain where both hold over it (&&), each at the four corners.
    const auto band = tile_test("abs(row - col) < w ? x : -inf");
    REQUIRE(band);
    CHECK(band->find("!((real)(kjit_r1 - kjit_c1) < w)) ||\n") != std::string::npos);
    CHECK(band->find("!((real)(-((long long)kjit_r0 - (long long)kjit_c1)) < w)") != std::string::npos);
    const auto inside = plain_test("abs(row - col) < w ? x : -inf");
    REQUIRE(inside);
    CHECK(inside->find("((real)(kjit_r1 - kjit_c1) < w)) &&\n") != std::string::npos);
    CHECK(inside->find("((real)(-((long long)kjit_r0 - (long long)kjit_c1)) < w)") != std::string::npos);
    CHECK(tile_test("w > abs(col - row) ? x : -inf"));  // abs on the right
    // max(A, B) above a bound: both are (&&); min(A, B) below it: either is (||); turned round
    // where the call is the greater side.
    const auto past_max = tile_test("col > max(row, 300) ? -inf : x");
    REQUIRE(past_max);
    CHECK(past_max->find("(kjit_c1 > kjit_r1)) &&\n            ((kjit_c0 > 300)") != std::string::npos);
    CHECK(plain_test("col > max(row, 300) ? -inf : x")->find("!(kjit_c1 > kjit_r1)) ||\n") != std::string::npos);
    CHECK(tile_test("col < min(row - 50, 200) ? -inf : x")->find(" &&\n") != std::string::npos);
    CHECK(tile_test("min(row, col) >= w ? -inf : x")->find(" &&\n") != std::string::npos);
    CHECK(tile_test("max(row, col) >= w ? -inf : x")->find(" ||\n") != std::string::npos);
    // what is inside them must be affine, as anywhere
    CHECK_FALSE(tile_test("abs(col * row) < w ? x : -inf"));
    CHECK_FALSE(tile_test("abs(abs(row - col) - 200) < w ? x : -inf"));
    // calls on both sides multiply the comparisons: past 64, none is split (8 × 8 is split)
    const auto nested = [](const char* f, const char* position, int terms) {
        std::string side = position;
        for (int i = 1; i < terms; ++i) side = std::string(f) + "(" + side + ", " + position + " + " + std::to_string(i) + ")";
        return side;
    };
    CHECK(tile_test(nested("max", "row", 8) + " < " + nested("min", "col", 8) + " ? -inf : x"));
    CHECK_FALSE(tile_test(nested("max", "row", 8) + " < " + nested("min", "col", 9) + " ? -inf : x"));
    // the policy skips the band's tiles and counts its FLOPs on the pairs it keeps (3 in 16 here)
    const auto p = parsed(attention_config(1, 2, 2, 256, 256, 64, "abs(row - col) < 16 ? x : -inf"));
    CHECK(family::attention::policy_of(p).skips_tiles());
    const auto k = family::plan(p, codegen::template_set::embedded()).kernels.front();
    CHECK(k.flops == doctest::Approx(4.0 * 2 * 256 * 256 * 64 * (31.0 * 256 - 16 * 15) / (256.0 * 256)).epsilon(0.01));
}

TEST_CASE("attention: a term that grows with row or col alone is bounded by its values at the tile's edges, so chunked attention skips tiles") {
    // row // 512 runs from its value at the tile's first query to the one at its last: a chunk
    // mask (LLaMA 4's local layers) skips the tiles whose chunks do not meet, compared as integers.
    const auto chunks = tile_test("row // 512 != col // 512 ? -inf : x");
    REQUIRE(chunks);
    CHECK(chunks->find("kjit_floor_div(kjit_r1, 512) < kjit_floor_div(kjit_c0, 512) ||\n") != std::string::npos);
    CHECK(chunks->find("kjit_floor_div(kjit_c1, 512) < kjit_floor_div(kjit_r0, 512))") != std::string::npos);
    CHECK(chunks->find("(real)") == std::string::npos);
    CHECK(plain_test("row // 512 != col // 512 ? -inf : x")->find("kjit_floor_div(kjit_r0, 512) == kjit_floor_div(kjit_c1, 512) &&") !=
          std::string::npos);
    // block-causal: a block of 64 sees its own and earlier blocks
    CHECK(tile_test("row // 64 < col // 64 ? -inf : x") == "(kjit_floor_div(kjit_r1, 64) < kjit_floor_div(kjit_c0, 64))");
    CHECK(tile_test("(col + 32) // 64 * 2 > row // 64 + w ? -inf : x"));  // plus, times a positive number
    // what may fall as the position grows tells nothing
    CHECK_FALSE(tile_test("row // (head + 1) != col // (head + 1) ? -inf : x"));  // a divisor not a number
    CHECK_FALSE(tile_test("(0 - row) // 64 != col // 64 ? -inf : x"));
    CHECK_FALSE(tile_test("row % 64 != col % 64 ? -inf : x"));
    const auto p = parsed(attention_config(1, 2, 2, 256, 256, 64, "row // 64 != col // 64 ? -inf : x"));
    CHECK(family::attention::policy_of(p).skips_tiles());
    const auto k = family::plan(p, codegen::template_set::embedded()).kernels.front();
    CHECK(k.flops == doctest::Approx(4.0 * 2 * 256 * 256 * 64 / 4).epsilon(0.01));  // 4 chunks: a quarter of the pairs
}

TEST_CASE("attention: the reference is softmax(score(scale · q · k)) · v per head, grouped heads sharing K and V, the score of each head and batch") {
    // A mask and an ALiBi bias that differ by head and batch.
    auto j = attention_config(2, 4, 2, 5, 7, 16, "col > row + 2 + head - batch ? -inf : x - 0.25 * (head + 1) * (row - col)");
    const auto p = parsed(j);
    const auto pr = family::attention::problem_of(p);
    reference::input_arrays inputs;
    inputs.emplace("q", varied_values(p.type, 2 * 4 * 5 * 16, 1));
    inputs.emplace("k", varied_values(p.type, 2 * 2 * 7 * 16, 2));
    inputs.emplace("v", varied_values(p.type, 2 * 2 * 7 * 16, 3));
    const auto ref = family::attention::reference(p, inputs);
    REQUIRE(ref.sampled.empty());  // small: every row
    REQUIRE(ref.values.size() == 2 * 4 * 5 * 16);
    for (long long b = 0; b < 2; ++b)
        for (long long h = 0; h < 4; ++h)
            for (long long r = 0; r < 5; ++r) {
                const long long head = b * 4 + h, kv = b * 2 + h / 2, row = head * 5 + r;
                std::vector<double> weights;
                double total = 0;
                for (long long c = 0; c < 7; ++c) {
                    double dot = 0;
                    for (long long d = 0; d < 16; ++d) dot += inputs.at("q").get(row * 16 + d) * inputs.at("k").get((kv * 7 + c) * 16 + d);
                    weights.push_back(c > r + 2 + h - b ? 0.0 : std::exp(dot * pr.scale - 0.25 * static_cast<double>((h + 1) * (r - c))));
                    total += weights.back();
                }
                for (long long d = 0; d < 16; ++d) {
                    double expected = 0;
                    for (long long c = 0; c < 7; ++c) expected += weights[c] * inputs.at("v").get((kv * 7 + c) * 16 + d);
                    CAPTURE(b); CAPTURE(h); CAPTURE(r); CAPTURE(d);
                    CHECK(ref.values[row * 16 + d] == doctest::Approx(expected / total).epsilon(1e-12));
                    CHECK(ref.scales[row * 16 + d] > 0);
                }
            }
}

TEST_CASE("attention: a large problem's reference samples whole rows: every head's first, middle and last query") {
    const auto p = parsed(attention_config(1, 3, 3, 4096, 4096, 64));
    reference::input_arrays inputs;
    for (const char* name : {"q", "k", "v"}) inputs.emplace(name, varied_values(p.type, 3 * 4096 * 64, 5));
    const auto ref = family::attention::reference(p, inputs);
    REQUIRE_FALSE(ref.sampled.empty());
    std::set<std::size_t> rows;
    for (std::size_t i : ref.sampled) rows.insert(i / 64);
    for (std::size_t head = 0; head < 3; ++head)
        for (std::size_t query : {0, 2048, 4095}) CHECK(rows.count(head * 4096 + query) == 1);
    CHECK(ref.sampled.size() == rows.size() * 64);  // whole rows
    CHECK(std::is_sorted(ref.sampled.begin(), ref.sampled.end()));
}

TEST_CASE("attention: a document mask reads an input of one value per token, [batch, tokens], at the query's and the key's") {
    auto j = attention_config(2, 4, 2, 5, 7, 16, "doc[row] != doc[col] ? -inf : x");
    j["inputs"]["doc"] = {{"fill", "uniform"}, {"low", 0}, {"high", 3}, {"round", "floor"}, {"sorted", true}, {"shape", {2, 7}}};
    CHECK(failure(j).find("a.json: inputs.doc.shape: the score reads doc[row]: one value per query of each batch, expected 2 × 5, got 2 × 7") == 0);
    // Cross-attention: 5 queries and 7 keys, each with its own document ids.
    j["stages"][0]["score"] = "qdoc[row] != doc[col] ? -inf : x";
    j["inputs"]["qdoc"] = {{"fill", "uniform"}, {"low", 0}, {"high", 3}, {"round", "floor"}, {"shape", {2, 5}}};
    const auto p = parsed(j);
    const auto pr = family::attention::problem_of(p);
    const auto prog = family::plan(p, codegen::template_set::embedded());
    std::vector<std::string> args;
    for (const auto& a : prog.kernels.front().args) args.push_back(a.name);
    CHECK(args == std::vector<std::string>{"q", "k", "v", "out", "s0_scale", "qdoc", "doc", "rows", "cols"});
    CHECK(prog.source.find("load(doc[kjit_batch_index * cols + min(kjit_col, (int)cols - 1)])") != std::string::npos);
    CHECK(prog.kernels.front().flops == doctest::Approx(4.0 * 2 * 4 * 5 * 7 * 16));  // not known when planning: every pair

    reference::input_arrays inputs;
    inputs.emplace("q", varied_values(p.type, 2 * 4 * 5 * 16, 1));
    inputs.emplace("k", varied_values(p.type, 2 * 2 * 7 * 16, 2));
    inputs.emplace("v", varied_values(p.type, 2 * 2 * 7 * 16, 3));
    reference::typed_array qdoc(p.type, 2 * 5), doc(p.type, 2 * 7);
    for (std::size_t i = 0; i < 10; ++i) qdoc.set(i, static_cast<double>(i % 5 / 2));  // 0 0 1 1 2 in each batch
    for (std::size_t i = 0; i < 14; ++i) doc.set(i, static_cast<double>(i / 7 + i % 7 / 3));  // by batch: 0 0 0 1 1 1 2, 1 1 1 2 2 2 3
    inputs.emplace("qdoc", qdoc);
    inputs.emplace("doc", doc);
    const auto ref = family::attention::reference(p, inputs);
    for (long long b = 0; b < 2; ++b)
        for (long long h = 0; h < 4; ++h)
            for (long long r = 0; r < 5; ++r) {
                const long long row = (b * 4 + h) * 5 + r, kv = b * 2 + h / 2;
                std::vector<double> weights;
                double total = 0;
                for (long long c = 0; c < 7; ++c) {
                    double dot = 0;
                    for (long long d = 0; d < 16; ++d) dot += inputs.at("q").get(row * 16 + d) * inputs.at("k").get((kv * 7 + c) * 16 + d);
                    const bool same = qdoc.get(b * 5 + r) == doc.get(b * 7 + c);
                    weights.push_back(same ? std::exp(dot * pr.scale) : 0.0);
                    total += weights.back();
                }
                for (long long d = 0; d < 16; ++d) {
                    double expected = 0;
                    for (long long c = 0; c < 7; ++c) expected += weights[c] * inputs.at("v").get((kv * 7 + c) * 16 + d);
                    CAPTURE(b); CAPTURE(h); CAPTURE(r); CAPTURE(d);
                    if (total == 0) CHECK(std::isnan(ref.values[row * 16 + d]));  // a query whose document has no key
                    else CHECK(ref.values[row * 16 + d] == doctest::Approx(expected / total).epsilon(1e-12));
                }
            }
}

TEST_CASE("attention: a causal mask around a document mask skips tiles by its positions and counts the pairs they keep") {
    auto j = attention_config(1, 2, 2, 256, 256, 64, "col > row ? -inf : doc[row] != doc[col] ? -inf : x");
    j["inputs"]["doc"] = {{"fill", "uniform"}, {"low", 0}, {"high", 4}, {"round", "floor"}, {"sorted", true}, {"shape", {1, 256}}};
    const auto p = parsed(j);
    CHECK(family::attention::policy_of(p).skips_tiles());
    const auto causal = parsed(attention_config(1, 2, 2, 256, 256, 64, "col > row ? -inf : x"));
    const auto flops = [](const config::pipeline& q) { return family::plan(q, codegen::template_set::embedded()).kernels.front().flops; };
    // The documents are not known when planning: counted as one, the causal pairs.
    CHECK(flops(p) == doctest::Approx(flops(causal)));
    CHECK(flops(p) < 0.6 * 4.0 * 2 * 256 * 256 * 64);
    // where the mask is the documents' alone, the sorted ids tell the tiles to skip; the pairs
    // are counted as one document's, all of them
    auto alone = attention_config(1, 2, 2, 256, 256, 64, "doc[row] != doc[col] ? -inf : x");
    alone["inputs"]["doc"] = j["inputs"]["doc"];
    CHECK(family::attention::policy_of(parsed(alone)).skips_tiles());
    CHECK(flops(parsed(alone)) == doctest::Approx(4.0 * 2 * 256 * 256 * 64));
    // ids in no order tell nothing: every tile is computed
    alone["inputs"]["doc"].erase("sorted");
    CHECK_FALSE(family::attention::policy_of(parsed(alone)).skips_tiles());
}

TEST_CASE("attention: ids sorted along the tokens bound a tile's: a document mask skips the tiles whose ranges do not meet") {
    // Over a tile, doc[row] runs from doc[r0] to doc[r1] (kjit_doc_r0, kjit_doc_r1): != holds
    // everywhere where the query's and the key's ranges do not meet.
    const std::string apart = "(kjit_doc_r1 < kjit_doc_c0 || kjit_doc_c1 < kjit_doc_r0)";
    CHECK(tile_test("doc[row] != doc[col] ? -inf : x", true) == "(" + apart.substr(1));
    CHECK(tile_test("doc[row] == doc[col] ? x : -inf", true) == tile_test("doc[row] != doc[col] ? -inf : x", true));
    CHECK_FALSE(tile_test("doc[row] != doc[col] ? -inf : x"));  // not sorted: nothing tells
    // orders by the ends that decide them, and terms the same over the tile as their own bounds
    CHECK(tile_test("doc[row] < doc[col] ? -inf : x", true) == "(kjit_doc_r1 < kjit_doc_c0)");
    CHECK(tile_test("doc[col] >= w ? x : -inf", true) == "(kjit_doc_c1 < w)");
    CHECK(tile_test("doc[row] == head ? -inf : x", true) ==
          "(kjit_doc_r0 == (real)head && kjit_doc_r1 == (real)head)");
    CHECK_FALSE(tile_test("doc[row] != doc[col] + col ? -inf : x", true));  // col varies over the tile
    CHECK_FALSE(tile_test("x > doc[row] ? -inf : x", true));                // and x does
    // with a causal mask, either side, written with || or as nested conditionals
    const auto both = tile_test("col > row || doc[row] != doc[col] ? -inf : x", true);
    REQUIRE(both);
    CHECK(both->find("(kjit_c0 > kjit_r1)") != std::string::npos);
    CHECK(both->find(" ||\n            " + apart + ")") != std::string::npos);
    CHECK(tile_test("col > row ? -inf : doc[row] != doc[col] ? -inf : x", true) == both);
    CHECK(tile_test("col > row ? -inf : x") == tile_test("col > row ? -inf : doc[row] != doc[col] ? -inf : x"));

    // The kernel's test loads each bound from the batch's tokens, and is passed them.
    auto j = attention_config(2, 2, 2, 256, 256, 64, "doc[row] != doc[col] ? -inf : x");
    j["inputs"]["doc"] = {{"fill", "uniform"}, {"low", 0}, {"high", 4}, {"round", "floor"}, {"sorted", true}, {"shape", {2, 256}}};
    for (const char* rung : {"mma", "wgmma"}) {
        j["launch"] = {{"rung", rung}};
        const auto source = family::plan(parsed(j), codegen::template_set::embedded()).source;
        CAPTURE(rung);
        CHECK(source.find("const real kjit_doc_r1 = load(kjit_doc_row_tokens[kjit_r1]);") != std::string::npos);
        CHECK(source.find("const real kjit_doc_c0 = load(kjit_doc_col_tokens[kjit_c0]);") != std::string::npos);
        CHECK(source.find("const store_t* __restrict__ kjit_doc_col_tokens)") != std::string::npos);
        CHECK(source.find("doc + kjit_batch_index * rows,") != std::string::npos);
        CHECK(source.find("doc + kjit_batch_index * cols);") != std::string::npos);
    }
}

TEST_CASE("attention: a tile no mask reaches into is plain, its scores x itself: told by the same corners and bounds, turned round") {
    CHECK(plain_test("x") == family::attention::k_every_tile);
    // causal: plain where even the tile's last key is at or before its first query
    const auto causal = plain_test("col > row ? -inf : x");
    REQUIRE(causal);
    CHECK(causal->find("!(kjit_c1 > kjit_r0)") != std::string::npos);
    CHECK(plain_test("col <= row ? x : -inf")->find("(kjit_c1 <= kjit_r0)") != std::string::npos);  // written the other way
    // a window: both conditions must fail everywhere (&&); a side nothing tells leaves no test
    const auto window = plain_test("col > row || row - col >= w ? -inf : x");
    REQUIRE(window);
    CHECK(window->find(" &&\n") != std::string::npos);
    CHECK_FALSE(plain_test("col > row || col * row > w ? -inf : x"));
    // documents: plain only where the tile's queries and keys are all of one document
    CHECK(plain_test("doc[row] != doc[col] ? -inf : x", true) ==
          "(kjit_doc_r0 == kjit_doc_c1 && kjit_doc_r1 == kjit_doc_c0)");
    CHECK_FALSE(plain_test("doc[row] != doc[col] ? -inf : x"));
    CHECK(plain_test("col > row ? -inf : doc[row] != doc[col] ? -inf : x", true)->find(" &&\n") != std::string::npos);
    // a score that changes x is never plain
    CHECK_FALSE(plain_test("x + w * (col - row)"));
    CHECK_FALSE(plain_test("col > row ? -inf : 30 * tanh(x / 30)"));
}

TEST_CASE("attention: plain tiles take the short softmax, by the policy (launch.plain_tiles), on both rungs") {
    const auto source = [](const std::string& score, const json& launch) {
        auto j = attention_config(1, 2, 2, 256, 256, 64, score);
        j["launch"] = launch;
        const auto p = parsed(j);
        return std::pair{family::attention::policy_of(p).plain_tiles(), family::plan(p, codegen::template_set::embedded()).source};
    };
    for (const char* rung : {"mma", "wgmma"}) {
        CAPTURE(rung);
        // no mask: every tile but the last (keys past the end) is plain, no test needed
        const auto [plain, unmasked] = source("x", {{"rung", rung}});
        CHECK(plain);
        CHECK(unmasked.find("const bool kjit_plain = s0_scale > 0.0f && !kjit_edge;") != std::string::npos);
        CHECK(unmasked.find("kjit_tile_plain") == std::string::npos);
        CHECK(unmasked.find("kjit_exp2(fmaf(kjit_value, kjit_to_base2, -kjit_base2[kjit_h]))") != std::string::npos);
        // causal: the tile test decides, and the scored loop is left for the others
        const auto [causal_plain, causal] = source("col > row ? -inf : x", {{"rung", rung}});
        CHECK(causal_plain);
        CHECK(causal.find("__device__ __forceinline__ bool kjit_tile_plain(") != std::string::npos);
        CHECK(causal.find("&& !kjit_edge && kjit_plain_at(kjit_t);") != std::string::npos);
        CHECK(causal.find("if (kjit_plain) {") != std::string::npos);
        // asked off, or a score that changes x: the one softmax, scaled before the score expression
        for (const auto& [score, launch] : std::vector<std::pair<std::string, json>>{{"x", {{"rung", rung}, {"plain_tiles", false}}},
                                                                                     {"x + 0.5 * (col - row)", {{"rung", rung}}}}) {
            const auto [off, text] = source(score, launch);
            CHECK_FALSE(off);
            CHECK(text.find("kjit_plain") == std::string::npos);
            CHECK(text.find("const float kjit_to_base2 = kjit_log2e;") != std::string::npos);
            CHECK(text.find("kjit_exp2(fmaf(kjit_value, kjit_to_base2, -kjit_base2[kjit_h]))") != std::string::npos);
        }
    }
    auto j = attention_config(1, 4, 4, 8, 8, 64);
    j["launch"] = {{"plain_tiles", "yes"}};
    CHECK(failure(j).find("a.json: launch.plain_tiles: expected true or false, got \"yes\"") == 0);
}

TEST_CASE("attention: a score's constant factors go into the products' scale and the exponents' multiply-add") {
    expr::scope names;
    names.has_shape = true;
    names.has_heads = true;
    const auto folded = [&](const std::string& score, bool division_as_product = true) {
        const auto folds = family::attention::fold_score(expr::parse(score, names), division_as_product);
        return std::tuple{expr::to_text(folds.folded), folds.inner, folds.outer};
    };
    // soft-capping: x / 30 is x scaled by 1/30, and 30 · tanh leaves its 30 to the softmax
    CHECK(folded("30 * tanh(x / 30)") == std::tuple{std::string("tanh(x)"), 1.0 / 30, 30.0});
    CHECK(folded("col > row ? -inf : 30 * tanh(x / 30)") == std::tuple{std::string("col > row ? -inf : tanh(x)"), 1.0 / 30, 30.0});
    CHECK(folded("x / 2 * 3") == std::tuple{std::string("x"), 0.5, 3.0});
    // a division stays where the kernel divides (no approximated division)
    CHECK(folded("30 * tanh(x / 30)", false) == std::tuple{std::string("tanh(x / 30)"), 1.0, 30.0});
    // nothing folds: x also alone, two factors of x, a negative factor (the max would be the
    // min), a branch neither −inf nor the same factor's
    CHECK(folded("x * 2 + x") == std::tuple{std::string("x * 2 + x"), 1.0, 1.0});
    CHECK(folded("tanh(x * 2) + x / 3") == std::tuple{std::string("tanh(x * 2) + x / 3"), 1.0, 1.0});
    CHECK(folded("-2 * tanh(x)") == std::tuple{std::string("-2 * tanh(x)"), 1.0, 1.0});
    CHECK(folded("col > row ? 0 : 2 * tanh(x)") == std::tuple{std::string("col > row ? 0 : 2 * tanh(x)"), 1.0, 1.0});
    CHECK(folded("x + 0.5 * (col - row)") == std::tuple{std::string("x + 0.5 * (col - row)"), 1.0, 1.0});

    // the fused kernel takes them; the separate kernels store the score as the expression says
    auto j = attention_config(1, 2, 2, 256, 256, 64, "col > row ? -inf : 30 * tanh(x / 30)");
    const std::string fused = family::plan(parsed(j), codegen::template_set::embedded()).source;
    CHECK(fused.find("constexpr float kjit_score_inner = 0.03333333333333333f, kjit_score_outer = 30.0f;") != std::string::npos);
    CHECK(fused.find("const real x = kjit_value * (s0_scale * kjit_score_inner);") != std::string::npos);
    CHECK(fused.find("return col > row ? -__int_as_float(0x7f800000) : __tanhf(x);") != std::string::npos);
    CHECK(fused.find("const float kjit_to_base2 = kjit_score_outer * kjit_log2e;") != std::string::npos);
    // where a running max is kept (float16: below), the factor goes into each tile's max too
    j["dtype"] = "float16";
    CHECK(family::plan(parsed(j), codegen::template_set::embedded()).source.find("kjit_tile_max[kjit_h] *= kjit_score_outer;") !=
          std::string::npos);
    j["dtype"] = "bfloat16";
    j["fusion"] = "separate";
    const std::string separate = family::plan(parsed(j), codegen::template_set::embedded()).source;
    CHECK(separate.find("kjit_score_inner") == std::string::npos);
    CHECK(separate.find("30.0f * __tanhf(x * 0.03333333333333333f)") != std::string::npos);
}

TEST_CASE("attention: a score bounded whatever x is takes its exponents from a fixed base, with no running max") {
    expr::scope names;
    names.has_shape = true;
    names.has_heads = true;
    names.scalars = {"cap"};
    using config::dtype;
    const auto base = [&](const std::string& score, dtype storage = dtype::bfloat16) {
        return family::attention::fixed_base_of(expr::parse(score, names), storage);
    };
    const auto bounds = [&](const std::string& score, dtype storage = dtype::bfloat16) {
        const auto b = base(score, storage);
        REQUIRE(b);
        return std::pair{b->low, b->high};
    };
    // soft-capping keeps within ±30: the base is its top, where the lowest weight is e^−60 ≈ 2^−87
    CHECK(base("30 * tanh(x / 30)")->base == 30);
    CHECK(bounds("col > row ? -inf : 30 * tanh(x / 30)") == std::pair{-30.0, 30.0});  // a mask bounds nothing
    // Gemma 2's cap of 50: e^−100 would be 2^−144, so the base sits 100 / log2 e above the bottom
    CHECK(base("50 * tanh(x / 50)")->base == doctest::Approx(-50 + 100 / std::numbers::log2e));
    // sums, products, quotients by constants, negation, and the bounded functions
    CHECK(bounds("2 * sigmoid(x) - tanh(x) / 4") == std::pair{-0.25, 2.25});
    CHECK(bounds("-(3 * erf(x)) + sin(x) * cos(x)") == std::pair{-4.0, 4.0});
    CHECK(bounds("clamp(x, -5, 5)") == std::pair{-5.0, 5.0});
    CHECK(bounds("max(tanh(x), 0.5) + min(sigmoid(x), 0.25)") == std::pair{0.5, 1.25});
    CHECK(bounds("col > row ? -inf : row - col > 8 ? tanh(x) : 2 * tanh(x)") == std::pair{-2.0, 2.0});
    // float16's weights stay within 2^−14 … 2^15: a cap of 30 is too wide there, one of 5 is not
    CHECK_FALSE(base("30 * tanh(x / 30)", dtype::float16));
    CHECK(base("4 * tanh(x / 4)", dtype::float16)->base == 4);
    // no fixed base: x, a position or a param anywhere, −inf inside arithmetic (its negation is
    // +inf), a division by a bounded term, bounds too far apart for the weights, a function whose
    // bounds kjit does not take from its argument's
    for (const char* score : {"x", "col > row ? -inf : x", "tanh(x) + x", "tanh(x) * col", "cap * tanh(x / cap)",
                              "-(col > row ? -inf : tanh(x))", "tanh(x) / sigmoid(x)", "min(x, 3)", "1000 * tanh(x / 1000)",
                              "exp(tanh(x))"})
        CHECK_MESSAGE(!base(score), score);

    // the kernel keeps no max: no tile max, no shuffles for it, no rescale factor but 1
    const auto source = [](const std::string& score, const std::string& type) {
        auto j = attention_config(1, 2, 2, 1000, 1000, 64, score);
        j["dtype"] = type;
        return family::plan(parsed(j), codegen::template_set::embedded()).source;
    };
    const std::string fixed = source("col > row ? -inf : 30 * tanh(x / 30)", "bfloat16");
    CHECK(fixed.find("constexpr float kjit_score_base = 30.0f;") != std::string::npos);
    CHECK(fixed.find("kjit_rescale[kjit_h] = 1.0f;") != std::string::npos);
    CHECK(fixed.find("kjit_tile_max") == std::string::npos);
    const std::string running = source("col > row ? -inf : 30 * tanh(x / 30)", "float16");
    CHECK(running.find("kjit_score_base") == std::string::npos);
    CHECK(running.find("kjit_rescale[kjit_h] = kjit_exp2(kjit_from);") != std::string::npos);
    // (and the mma rung shares the softmax)
    auto j = attention_config(1, 2, 2, 1000, 1000, 64, "30 * tanh(x / 30)");
    j["launch"] = {{"rung", "mma"}};
    CHECK(family::plan(parsed(j), codegen::template_set::embedded()).source.find("kjit_score_base") != std::string::npos);
}

TEST_CASE("attention (wgmma): no thread waits on a barrier it can fall two phases behind on") {
    // A thread that waits on a barrier but arrives nowhere the barrier's next phases wait for can
    // fall two phases behind and wait for one gone by; a persistent launch whose items past query
    // 1000 take no tile hung so on H100s (2026-12-06, 2026-12-07). The producer's other lanes test
    // tiles (a ballot each 32) but arrive nowhere: each wait of the producer's loop comes after the
    // test that sends them on. A consumer's warps wait for the queries, and an item that takes no
    // tile issues no wgmma that gathers them before the leader would free the queries: every
    // consumer thread arrives at q_free.
    for (const bool persistent : {false, true}) {
        CAPTURE(persistent);
        auto j = attention_config(2, 4, 2, 4097, 4097, 64, "row >= 1000 ? -inf : x");
        j["launch"] = {{"rung", "wgmma"}, {"persistent", persistent}};
        const std::string source = family::plan(parsed(j), codegen::template_set::embedded()).source;
        const auto producer = source.find("if (threadIdx.x >= 32) return;");
        const auto consumers = source.find("setmaxnreg.inc.sync.aligned");
        REQUIRE(producer != std::string::npos);
        REQUIRE(consumers > producer);
        const std::string loop = source.substr(producer, consumers - producer);
        const auto queries_wait = loop.find("kjit_wait(kjit_q_free");
        const auto buffer_wait = loop.find("kjit_wait(kjit_free");
        REQUIRE(queries_wait != std::string::npos);
        REQUIRE(buffer_wait != std::string::npos);
        CHECK(loop.rfind("if (kjit_issuer) {", queries_wait) != std::string::npos);
        CHECK(loop.rfind("if (kjit_issuer) {", queries_wait) > loop.rfind("kjit_start_item", queries_wait));
        CHECK(loop.rfind("if (!kjit_issuer) continue;", buffer_wait) != std::string::npos);
        CHECK(loop.rfind("if (!kjit_issuer) continue;", buffer_wait) > loop.rfind("for (int kjit_t = kjit_needed_from(0)", buffer_wait));
        CHECK(loop.find("kjit_wait(", buffer_wait + 1) == std::string::npos);  // no other wait
        CHECK(source.find("kjit_barrier_init(kjit_q_free, 128 * kjit_consumers);") != std::string::npos);
        CHECK(source.find("kjit_leader) kjit_arrive(kjit_q_free") == std::string::npos);
        CHECK(source.find("kjit_arrive(kjit_q_free);") != std::string::npos);
    }
}

TEST_CASE("attention: persistent blocks (launch.persistent) take work items as many as are resident, each item its own") {
    using family::attention::policy_of;
    auto j = attention_config(2, 4, 2, 1000, 1000, 128, "col > row ? -inf : x");
    const auto flat = family::plan(parsed(j), codegen::template_set::embedded()).kernels.front();
    j["launch"] = {{"persistent", true}};
    const auto p = parsed(j);
    CHECK(policy_of(p).kind == family::attention::rung::wgmma);
    CHECK(policy_of(p).columns().at("persistent") == true);
    CHECK(policy_of(p).label().find(" persistent") != std::string::npos);
    const auto prog = family::plan(p, codegen::template_set::embedded());
    const auto& k = prog.kernels.front();
    // the same items, 8 tiles of 128 queries of each of 2 · 4 heads; the device caps the grid at
    // the blocks it holds at once (one an SM), where a block an item launches them all
    CHECK(k.grid == family::dims{8 * 2 * 4, 1, 1});
    CHECK(flat.grid == k.grid);
    CHECK(k.resident == family::resident_rule::at_most);
    CHECK(flat.resident == family::resident_rule::none);
    CHECK(run::grid_on_device(k, 132).x == 64);  // (fewer items than the SMs' blocks: a block each)
    CHECK(run::grid_on_device(k, 16).x == 16);   // (more: a block takes 4)
    CHECK(prog.source.find("kjit_persistent = 1,") != std::string::npos);  // the loops over items go on
    CHECK(family::plan(parsed(attention_config(2, 4, 2, 1000, 1000, 128)), codegen::template_set::embedded())
              .source.find("kjit_persistent = 0,") != std::string::npos);  // they run once
    CHECK(prog.source.find("kjit_wait(kjit_q_free, (kjit_i - 1) % 2);") != std::string::npos);  // the next queries wait for the last scores
    CHECK(prog.source.find("kjit_prefetch_box_of(q_map, 64 * kjit_slab, kjit_next_q0,") != std::string::npos);  // the next queries into L2
    // "auto": persistent at head dim 64 (three consumers) up to 8,192 keys where no mask skips tiles
    const auto persistent = [](long long keys, const std::string& score) {
        return policy_of(parsed(attention_config(1, 2, 2, keys, keys, 64, score))).persistent;
    };
    CHECK(persistent(1024, "x"));
    CHECK(persistent(8192, "x"));
    CHECK_FALSE(persistent(16384, "x"));
    CHECK_FALSE(persistent(1024, "col > row ? -inf : x"));
    CHECK_FALSE(policy_of(parsed(attention_config(1, 2, 2, 1024, 1024, 128))).persistent);
    j = attention_config(1, 2, 2, 1024, 1024, 64);
    j["launch"] = {{"persistent", false}};
    CHECK_FALSE(policy_of(parsed(j)).persistent);  // as given
    // a key of the wgmma rung alone, true or false
    j = attention_config(2, 4, 2, 1000, 1000, 128, "col > row ? -inf : x");
    j["launch"] = {{"rung", "mma"}, {"persistent", true}};
    CHECK(failure(j).find("a.json: launch.persistent: a key of the \"wgmma\" rung; this one is \"mma\"") == 0);
    j["launch"] = {{"persistent", 1}};
    CHECK(failure(j).find("a.json: launch.persistent: expected true or false, got 1") == 0);
    // items are counted in an int (with the heads apart: packed, 65,535 heads' queries would take
    // 4096 items a batch)
    j = attention_config(65535, 65535, 1, 1, 1, 64);
    j["launch"] = {{"pack_heads", false}};
    CHECK(failure(j).find("a.json: shape: the kernel's work items") == 0);
}

TEST_CASE("attention: decoding takes the mma rung, a warp of 16 queries, packs grouped heads and splits the keys among as many blocks as fill the GPU") {
    using family::attention::policy_of;
    using family::attention::rung;
    // one query a head, 32 heads over 8 of K and V, head dim 128: a block takes 74 KiB, 3 an SM,
    // 396 at once on an H200
    const auto decode = [](long long batch, long long queries, long long keys, long long kv_heads = 8) {
        return policy_of(parsed(attention_config(batch, 32, kv_heads, queries, keys, 128)));
    };
    const auto& eight = decode(8, 1, 8192);
    CHECK(eight.kind == rung::mma);  // (on sm_90, where more queries take wgmma)
    CHECK(eight.block_m == 16);
    CHECK(eight.warps == 1);
    CHECK(eight.block_n == 64);
    CHECK(eight.packs_heads);  // 4 query heads' queries a tile of K and V: 8 · 8 items
    CHECK(eight.splits == 6);  // 396 / 64, one wave of blocks
    CHECK(eight.label().find(" block_n=64 splits=6 pack_heads") != std::string::npos);
    CHECK(eight.columns().at("pack_heads") == true);
    const auto& apart = decode(8, 1, 8192, 32);  // a head of K and V a query head: 256 items fill the GPU
    CHECK_FALSE(apart.packs_heads);
    CHECK(apart.splits == 1);
    CHECK(apart.columns().at("splits") == 1);
    CHECK(apart.label().find("splits") == std::string::npos);
    CHECK(decode(1, 1, 8192).splits == 32);   // 8 items: 50 blocks an item, but no fewer than 4 of the 128 tiles a split
    CHECK(decode(1, 16, 8192).splits == 12);  // 4 · 16 queries a head of K and V, 4 tiles of them: 32 items
    CHECK(decode(1, 17, 8192).kind == rung::wgmma);
    CHECK(decode(1, 1, 1024).splits == 4);    // 16 tiles
    CHECK(decode(1, 1, 200).splits == 1);     // 4 tiles
    // 13 heads apart: 396 / 13 = 30 splits of 121 tiles would take 5 each and leave the last 5
    // blocks none: 25
    CHECK(policy_of(parsed(attention_config(1, 13, 13, 1, 121 * 64, 128))).splits == 25);
    // the tuner sweeps the tile of keys, the splits and packing
    const auto axes = family::attention_family().tune_space(parsed(attention_config(1, 32, 8, 1, 8192, 128)))["axes"];
    CHECK(axes.contains("launch.splits"));
    CHECK(axes.contains("launch.pack_heads"));
    CHECK_FALSE(axes.contains("launch.warps"));
    // the kernels see 8 heads of the group's queries; the join's kernel follows, and the epilogue
    // moves to it
    auto j = attention_config(1, 32, 8, 1, 8192, 128);
    j["stages"].push_back({{"op", "map"}, {"expr", "x * 2"}});
    const auto prog = family::plan(parsed(j), codegen::template_set::embedded());
    REQUIRE(prog.kernels.size() == 2);
    CHECK(prog.kernels[0].grid == family::dims{8 * 32, 1, 1});
    CHECK(prog.kernels[0].stages == std::vector<std::size_t>{0});
    CHECK(prog.kernels[1].stages == std::vector<std::size_t>{0, 1});
    CHECK(prog.kernels[1].grid == family::dims{32 * 32 / 128, 1, 1});  // a warp a query
    CHECK(prog.output_row_parts.at(1) == std::pair<std::string, long long>{"head", 32});  // (a wrong element named as asked)
    for (const char* constant : {"kjit_heads = 8,", "kjit_group = 1,", "kjit_splits = 32,", "kjit_partial_stride = 130,"}) {
        CAPTURE(constant);
        CHECK(prog.source.find(constant) != std::string::npos);
    }
    // packing, as given: not where the score reads a query's place
    j = attention_config(1, 32, 8, 1, 8192, 128, "col > 100 && batch == 0 ? -inf : x");
    CHECK(policy_of(parsed(j)).packs_heads);
    for (const char* score : {"col > row ? -inf : x", "head > 3 ? -inf : x"}) {
        j = attention_config(1, 32, 8, 1, 8192, 128, score);
        CHECK_FALSE(policy_of(parsed(j)).packs_heads);
        j["launch"] = {{"pack_heads", true}};
        CHECK(failure(j).find("a.json: launch.pack_heads: the score reads a query's place") == 0);
    }
    j = attention_config(1, 32, 8, 1, 8192, 128);
    j["launch"] = {{"pack_heads", false}};
    CHECK(policy_of(parsed(j)).splits == 12);  // 32 items
    // splits as given: up to the item's tiles, on the mma rung's fused kernel alone
    j = attention_config(1, 32, 8, 1, 1000, 128);
    j["launch"] = {{"splits", 16}};
    CHECK(policy_of(parsed(j)).splits == 16);
    j["launch"] = {{"splits", 17}};
    CHECK(failure(j).find("a.json: launch.splits: each split takes a tile of 64 keys or more: at most 16 for 1000 keys, got 17") == 0);
    j["launch"] = {{"splits", 2}, {"rung", "wgmma"}};
    CHECK(failure(j).find("a.json: launch.splits: a key of the \"mma\" rung; this one is \"wgmma\"") == 0);
    for (const char* key : {"splits", "pack_heads"}) {
        j["launch"] = {{key, key == std::string("splits") ? json(2) : json(true)}};
        j["fusion"] = "separate";
        CHECK(failure(j).find("a.json: launch." + std::string(key) + ": a key of the fused kernels") == 0);
    }
    j = attention_config(1, 32, 8, 1000, 1000, 128);
    j["launch"] = {{"splits", 2}};
    CHECK(policy_of(parsed(j)).kind == rung::mma);  // the rung whose key is given
}

TEST_CASE("attention, separate: the mma rung's warps in three kernels, every tile computed; what it refuses") {
    using family::attention::policy_of;
    auto j = attention_config(2, 4, 2, 1000, 23, 128, "col > row ? -inf : x");
    j["fusion"] = "separate";
    const auto p = parsed(j);  // sm_90 by default, where fused "auto" takes wgmma
    const auto& t = policy_of(p);
    CHECK(t.separate);
    CHECK(t.kind == family::attention::rung::mma);
    CHECK_FALSE(t.skips_tiles());  // as eager frameworks: every score computed, the mask's −inf stored
    CHECK_FALSE(t.plain_tiles());
    CHECK(t.softmax_threads == 32);  // 23 keys in 3 chunks of 16 bytes: one warp
    CHECK(t.columns().at("softmax_threads") == 32);  // (a record's column)
    j["inputs"]["k"]["shape"] = j["inputs"]["v"]["shape"] = {2 * 2 * 8192, 128};
    CHECK(policy_of(parsed(j)).softmax_threads == 256);  // 1,024 chunks: at most 256 threads
    const auto prog = family::plan(p, codegen::template_set::embedded());
    REQUIRE(prog.kernels.size() == 3);
    // Q · Kᵀ: tiles of 128 queries × 64 keys of each head; the softmax a row a block; P · V tiles
    // of 128 queries of each head
    CHECK(prog.kernels[0].grid == family::dims{1, 8, 8});
    CHECK(prog.kernels[1].grid == family::dims{8000, 1, 1});
    CHECK(prog.kernels[2].grid == family::dims{8, 8, 1});
    CHECK(prog.kernels[0].shared_bytes == (128 + 64) * (128 * 2 + 16));
    CHECK(prog.kernels[2].shared_bytes == 2 * (128 * (64 * 2 + 16) + 64 * (128 * 2 + 16)));
    CHECK(prog.kernels[0].flops == 2.0 * 8 * 1000 * 23 * 128);  // every pair, the masked ones too
    CHECK(prog.source.find("kjit_plan_values_shared_bytes = " + std::to_string(prog.kernels[2].shared_bytes) + ",") != std::string::npos);
    CHECK(prog.source.find("kjit_tile_masked") == std::string::npos);
    // the fused kernels' keys and rung
    j["launch"] = {{"rung", "wgmma"}};
    CHECK(failure(j).find("a.json: launch.rung: the separate kernels multiply with mma.sync: expected \"mma\" or \"auto\" with fusion "
                          "\"separate\"") == 0);
    j["launch"] = {{"plain_tiles", false}};
    CHECK(failure(j).find("a.json: launch.plain_tiles: a key of the fused kernels") == 0);
    j["launch"] = {{"consumers", 2}};
    CHECK(failure(j).find("a.json: launch.") == 0);
    // the products' grids hold up to 65,535 heads
    j = attention_config(300, 300, 1, 1, 1, 64);
    j["fusion"] = "separate";
    CHECK(failure(j).find("a.json: shape: the separate kernels' grids take batch · heads (90000)") == 0);
}

TEST_CASE("attention, separate: the reference charges the scores' rounding to the storage type between the kernels") {
    auto j = attention_config(1, 2, 2, 5, 7, 16);
    const auto fused = parsed(j);
    j["fusion"] = "separate";
    const auto separate = parsed(j);
    reference::input_arrays inputs;
    inputs.emplace("q", varied_values(fused.type, 2 * 5 * 16, 1));
    inputs.emplace("k", varied_values(fused.type, 2 * 7 * 16, 2));
    inputs.emplace("v", varied_values(fused.type, 2 * 7 * 16, 3));
    const auto a = family::attention::reference(fused, inputs), b = family::attention::reference(separate, inputs);
    CHECK(a.values == b.values);
    for (std::size_t i = 0; i < a.scales.size(); ++i) {
        CAPTURE(i);
        CHECK(b.scales[i] > a.scales[i]);
    }
}
