// The stage model: map expressions, params, the op library (built in and a config's own "ops"),
// activate's fn and formula choices, and the errors a user sees for each.
#include "codegen/codegen.hpp"
#include "config/ops.hpp"
#include "family/family.hpp"
#include "family/rows/geometry.hpp"
#include "family/rows/policy.hpp"
#include "helpers.hpp"

using namespace kjit;
using kjit::testing::error_message;
using json = kjit::config::json_value;

namespace {
/// A small config with three inputs and a param, and the stages given.
json config_with(const json& stages) {
    return {{"name", "t"},
            {"n", 1000},
            {"inputs",
             {{"a", {{"fill", "uniform"}}}, {"w", {{"fill", "normal"}}}, {"b", {{"fill", "constant"}, {"value", 0.5}}}}},
            {"params", {{"alpha", 0.01}}},
            {"stages", stages}};
}
config::pipeline parsed(const json& j) { return family::load({j, "t.json"}); }
std::string failure(const json& j) { return error_message([&] { (void)parsed(j); }); }
/// An elementwise config with `launch`.
json elementwise_with(const json& launch) {
    json j = config_with(json::array({{{"op", "map"}, {"input", "a"}, {"expr", "x * w"}}}));
    j["launch"] = launch;
    return j;
}
/// Whether an elementwise config with `launch` is refused for asking what only row kernels do.
/// The one launch key given is refused as the row family's, naming it.
bool refused_as_row_only(const json& launch) {
    return failure(elementwise_with(launch)).rfind("t.json: launch." + launch.begin().key() +
                                                   ": a launch key of rows pipelines (stages with a reduce); this "
                                                   "pipeline is elementwise, whose keys are \"block\", \"vector_width\", "
                                                   "\"grid\"", 0) == 0;
}
}  // namespace

TEST_CASE("map: any expression over x, any number of inputs, and params") {
    const auto p = parsed(config_with(json::array({{{"op", "map"}, {"input", "a"}, {"expr", "x * w + b"}},
                                                   {{"op", "map"}, {"expr", "x > 0 ? x : alpha * x"}}})));
    REQUIRE(p.stages.size() == 2);
    CHECK(p.stages[0].kernel == p.stages[0].exact);
    CHECK(config::describe_stages(p) == "map(x * w + b) → map(x > 0 ? x : alpha * x)");
    REQUIRE(p.scalars.size() == 1);
    CHECK(p.scalars[0].name == "alpha");
    CHECK(p.scalars[0].value == 0.01);
}

TEST_CASE("a first map stage that does not use x needs no input") {
    const auto p = parsed(config_with(json::array({{{"op", "map"}, {"expr", "a * w + b"}}})));
    CHECK(p.stages[0].input.empty());
    CHECK(failure(config_with(json::array({{{"op", "map"}, {"expr", "x * w"}}})))
              .find("t.json: stages[0].input: missing; the first stage uses x") == 0);
}

TEST_CASE("a bad expression: file, key, message, then the expression with a caret under the column") {
    const auto m = failure(config_with(json::array({{{"op", "map"}, {"input", "a"}, {"expr", "x * wieghts + b"}}})));
    CHECK(m == "t.json: stages[0].expr: unknown name 'wieghts'; x is the value flowing in; i and n are positions; "
               "inf, nan and pi constants; inputs are a, w, b; params are alpha (column 5)\n"
               "    x * wieghts + b\n"
               "        ^");
    const auto arity = failure(config_with(json::array({{{"op", "map"}, {"input", "a"}, {"expr", "exp(x, 2)"}}})));
    CHECK(arity.find("stages[0].expr: exp takes 1 argument, got 2 (column 1)") != std::string::npos);
}

TEST_CASE("a long bad expression is shown as a window around the column") {
    std::string text;
    while (text.size() < 800) text += "x * w + ";
    text += "oops";
    const auto m = failure(config_with(json::array({{{"op", "map"}, {"input", "a"}, {"expr", text}}})));
    const auto lines = m.substr(m.find('\n') + 1);
    CHECK(lines.find("...") == 4);
    CHECK(lines.size() < 200);
    const auto caret = lines.find('^') - lines.find('\n') - 1;
    CHECK(lines.substr(caret, 4) == "oops");
}

TEST_CASE("ops from the library: parameters become bindings, numbers become kernel scalars") {
    const auto p = parsed(config_with(json::array({{{"op", "normalize"}, {"input", "a"}, {"scale", 2}},
                                                   {{"op", "bias"}, {"by", "b"}},
                                                   {{"op", "activate"}, {"fn", "leaky_relu"}, {"alpha", "alpha"}},
                                                   {{"op", "activate"}, {"fn", "elu"}}})));
    CHECK(expr::to_text(p.stages[0].kernel) == "x / s0_scale");
    CHECK(expr::to_text(p.stages[1].kernel) == "x + b");
    CHECK(expr::to_text(p.stages[2].kernel) == "x > 0 ? x : alpha * x");  // bound to the params entry
    CHECK(expr::to_text(p.stages[3].kernel) == "x > 0 ? x : s3_alpha * expm1(x)");
    std::vector<std::string> names;
    for (const auto& s : p.scalars) names.push_back(s.name + "=" + std::to_string(s.value));
    CHECK(names == std::vector<std::string>{"alpha=0.010000", "s0_scale=2.000000", "s3_alpha=1.000000"});
}

TEST_CASE("every activation and formula of the issue is in the op file") {
    const auto& ops = config::builtin_ops();
    const std::vector<std::pair<std::string, std::vector<std::string>>> expected{
        {"tanh", {"builtin", "exp"}}, {"sigmoid", {"exp", "tanh"}}, {"relu", {""}}, {"leaky_relu", {""}},
        {"elu", {""}}, {"gelu", {"erf", "tanh"}}, {"silu", {""}}, {"softplus", {"stable", "naive"}}};
    for (const auto& [op_name, formulas] : expected) {
        const std::string& name = op_name;  // CAPTURE's lambda cannot see a structured binding (clang 14)
        CAPTURE(name);
        REQUIRE(ops.count(name));
        CHECK(ops.at(name).activation);
        std::vector<std::string> got;
        for (const auto& f : ops.at(name).formulas) got.push_back(f.name);
        CHECK(got == formulas);
    }
    for (const char* name : {"normalize", "weigh", "bias", "scale"}) CHECK(ops.count(name));
}

TEST_CASE("the exact definition is what the reference sees; the formula is what the GPU runs") {
    const auto p = parsed(config_with(json::array({{{"op", "activate"}, {"input", "a"}, {"fn", "gelu"}, {"formula", "tanh"}}})));
    CHECK(p.stages[0].formula == "tanh");
    CHECK(expr::to_text(p.stages[0].exact) == "0.5 * x * erfc(-x * 0.7071067811865476)");
    CHECK(expr::to_text(p.stages[0].kernel).find("tanh(") != std::string::npos);
    CHECK(p.stages[0].atol == 5e-4);
    CHECK(config::default_tolerance(p).atol == 5e-4);
}

TEST_CASE("unknown op, fn and formula list the choices") {
    const auto op = failure(config_with(json::array({{{"op", "sigmoidd"}, {"input", "a"}}})));
    CHECK(op.find("t.json: stages[0].op: expected one of \"map\", \"reduce\", \"activate\", \"bias\", \"elu\"") == 0);
    CHECK(op.find("got \"sigmoidd\"") != std::string::npos);
    const auto fn = failure(config_with(json::array({{{"op", "activate"}, {"input", "a"}, {"fn", "swish"}}})));
    CHECK(fn.find("stages[0].fn: expected one of \"elu\", \"gelu\", \"leaky_relu\", \"relu\", \"sigmoid\", \"silu\", "
                  "\"softplus\", \"tanh\", got \"swish\"") != std::string::npos);
    const auto formula =
        failure(config_with(json::array({{{"op", "activate"}, {"input", "a"}, {"fn", "softplus"}, {"formula", "fast"}}})));
    CHECK(formula.find("stages[0].formula: expected one of \"stable\", \"naive\", got \"fast\"") != std::string::npos);
}

TEST_CASE("op parameters: inputs must be inputs, numbers numbers or param names") {
    CHECK(failure(config_with(json::array({{{"op", "bias"}, {"input", "a"}, {"by", "c"}}})))
              .find("stages[0].by: expected the name of an input (\"a\", \"w\", \"b\"), got \"c\"") != std::string::npos);
    CHECK(failure(config_with(json::array({{{"op", "scale"}, {"input", "a"}}})))
              .find("stages[0].factor: missing; expected a number") != std::string::npos);
    CHECK(failure(config_with(json::array({{{"op", "scale"}, {"input", "a"}, {"factor", "beta"}}})))
              .find("stages[0].factor: expected a number or the name of a param (\"alpha\"), got \"beta\"") !=
          std::string::npos);
}

TEST_CASE("params: numbers with names that cannot collide") {
    auto j = config_with(json::array({{{"op", "map"}, {"expr", "a"}}}));
    j["params"] = {{"alpha", "big"}};
    CHECK(failure(j).find("params.alpha: expected a finite number") != std::string::npos);
    j["params"] = {{"a", 1}};
    CHECK(failure(j).find("params.a: \"a\" is an input already") != std::string::npos);
    for (const char* reserved : {"class", "threadIdx", "expf", "s0_scale", "tmp3", "kjit_v_a", "out", "__x"}) {
        CAPTURE(reserved);
        j["params"] = {{reserved, 1}};
        CHECK(failure(j).find("expected a C identifier that is not a reserved name") != std::string::npos);
    }
}

TEST_CASE("a config's ops block adds an op in the op file's format") {
    auto j = config_with(json::array({{{"op", "activate"}, {"input", "a"}, {"fn", "hardtanh"}, {"formula", "minmax"}},
                                      {{"op", "shift"}, {"by", "b"}, {"amount", 3}}}));
    j["ops"] = {{"hardtanh",
                 {{"activation", true},
                  {"exact", "clamp(x, -1, 1)"},
                  {"formulas", {{"clamp", {{"expr", "clamp(x, -1, 1)"}}}, {"minmax", {{"expr", "min(max(x, -1), 1)"}}}}}}},
                {"shift", {{"params", {{"by", {{"kind", "input"}}}, {"amount", {{"kind", "number"}}}}}, {"expr", "x + by - amount"}}}};
    const auto p = parsed(j);
    CHECK(p.stages[0].op == "hardtanh");
    CHECK(expr::to_text(p.stages[0].kernel) == "min(max(x, -1), 1)");
    CHECK(expr::to_text(p.stages[0].exact) == "clamp(x, -1, 1)");
    CHECK(expr::to_text(p.stages[1].kernel) == "x + b - s1_amount");
}

TEST_CASE("a config's ops block: errors name the op's key") {
    auto j = config_with(json::array({{{"op", "map"}, {"expr", "a"}}}));
    j["ops"] = {{"tanh", {{"expr", "x"}}}};
    CHECK(failure(j).find("t.json: ops.tanh: op \"tanh\" is built in") == 0);
    j["ops"] = {{"mine", {{"expr", "x + y"}}}};
    CHECK(failure(j).find("t.json: ops.mine.expr: unknown name 'y'; x is the value flowing in; i and n are positions") == 0);
    j["ops"] = {{"mine", {{"params", {{"k", {{"kind", "vector"}}}}}, {"expr", "x"}}}};
    CHECK(failure(j).find("ops.mine.params.k.kind: expected one of \"number\", \"input\"") != std::string::npos);
    j["ops"] = {{"mine", {{"expr", "x"}, {"formulas", {{"f", {{"expr", "x"}}}}}}}};
    CHECK(failure(j).find("ops.mine.formulas: an op has either") != std::string::npos);
}

// ---- reduce stages and 2-D shapes

namespace {
json softmax_config() {
    return {{"name", "t"},
            {"shape", {3, 33}},
            {"inputs", {{"a", {{"fill", "normal"}}}}},
            {"params", {{"eps", 1e-5}}},
            {"stages",
             {{{"op", "reduce"}, {"fn", "max"}, {"as", "m"}, {"input", "a"}},
              {{"op", "map"}, {"expr", "exp(x - m)"}},
              {{"op", "reduce"}, {"fn", "sum"}, {"as", "s"}},
              {{"op", "map"}, {"expr", "x / s"}}}}};
}
}  // namespace

TEST_CASE("reduce: a row value named by `as`, used by later stages; x flows on unchanged") {
    const auto p = parsed(softmax_config());
    REQUIRE(p.shape.has_value());
    CHECK(p.shape->rows == 3);
    CHECK(p.shape->cols == 33);
    CHECK(p.n == 99);
    CHECK((p.family == "rows"));
    CHECK(config::output_count(p) == 99);
    CHECK(p.stages[0].reduce == config::reduction::max);
    CHECK(p.stages[0].as == "m");
    CHECK(expr::to_text(p.stages[0].kernel) == "x");
    CHECK(config::describe_stages(p) == "reduce max as m → map(exp(x - m)) → reduce sum as s → map(x / s)");
    expr::used_names used;
    expr::collect_names(p.stages[3].kernel, used);
    CHECK(used.rows == std::vector<std::string>{"s"});
    CHECK(p.launch.vector_width == 4);  // 33 columns: rows start inside 16-byte vectors
}

TEST_CASE("rows of a length the vector does not divide: read in 16-byte vectors with their edges skipped, a per-column input by element") {
    json j = softmax_config();  // 33 float32 columns: a row starts 0 to 3 elements into a vector
    auto p = parsed(j);
    CHECK(family::rows::rows_misaligned(p));
    CHECK(family::rows::row_vectors(p) == 9);  // one that starts at a vector's last element: 1 + 32 elements
    j["shape"] = {3, 36};
    CHECK_FALSE(family::rows::rows_misaligned(parsed(j)));
    CHECK(family::rows::row_vectors(parsed(j)) == 9);
    // A shared row holds the most vectors a row touches: 9 × 16 bytes, not 33 × 4.
    j["shape"] = {3, 33};
    j["launch"] = {{"row_cache", "shared"}};
    CHECK(family::rows::shared_bytes(parsed(j)) == 9 * 16);
    // A per-column input does not change the width: where rows are misaligned each element reads
    // its own column of it (clamped to the row for a neighbour's elements), not a vector.
    j["inputs"]["g"] = {{"fill", "normal"}, {"per", "column"}};
    j["stages"][3]["expr"] = "x / s * g";
    p = parsed(j);
    CHECK(p.launch.vector_width == 4);
    CHECK(family::rows::rows_misaligned(p));
    const std::string source = family::plan(p, codegen::template_set::embedded()).source;
    CHECK(source.find("g[kjit_column(kjit_v, kjit_k, kjit_lead, cols)]") != std::string::npos);
    CHECK(source.find("kjit_v_g") == std::string::npos);
    j["shape"] = {3, 36};  // aligned: g is read a vector at a time, by the row's vectors
    const std::string aligned = family::plan(parsed(j), codegen::template_set::embedded()).source;
    CHECK(aligned.find("kjit_v_g") != std::string::npos);
    CHECK(aligned.find("kjit_column") == std::string::npos);
    // Two per-column inputs cost more by element than the vectors save (layer norm, measured):
    // the width is halved until it divides cols, as a given width is not.
    j["shape"] = {3, 34};
    j["inputs"]["h"] = {{"fill", "normal"}, {"per", "column"}};
    j["stages"][3]["expr"] = "x / s * g + h";
    CHECK(parsed(j).launch.vector_width == 2);
    CHECK_FALSE(family::rows::rows_misaligned(parsed(j)));
    j["launch"]["vector_width"] = 4;
    CHECK(family::rows::rows_misaligned(parsed(j)));
}

TEST_CASE("a final reduce gives one result per row, and may go unnamed; its expr is reduced") {
    json j = softmax_config();
    j["stages"] = json::array({{{"op", "reduce"}, {"fn", "mean"}, {"expr", "x * x + eps"}, {"input", "a"}}});
    const auto p = parsed(j);
    CHECK(config::output_count(p) == 3);
    CHECK(config::describe_stages(p) == "reduce mean(x * x + eps)");
}

TEST_CASE("launch.block \"auto\" for rows: the smallest block of 64 or more whose threads hold the row") {
    json j = softmax_config();
    j["shape"] = {4, 2048};
    CHECK(parsed(j).launch.block == 128);  // float32 × 4 per vector: 512 vectors, 16 elements a thread
    j["shape"] = {4, 32768};
    CHECK(parsed(j).launch.block == 1024);  // 32 elements a thread
    j["launch"] = {{"block", 128}};
    j["shape"] = {4, 1024};
    CHECK(parsed(j).launch.block == 128);  // a block given is kept
}

TEST_CASE("reduce errors name the key: no shape, bad names, a row too long, a bad shape") {
    json j = softmax_config();
    j.erase("shape");
    j["n"] = 100;
    CHECK(failure(j).find("t.json: stages[0].op: \"reduce\" combines the elements of each row: the config needs "
                          "\"shape\": [rows, cols]") == 0);

    const auto stage_error = [&](std::size_t index, const json& stage) {
        json k = softmax_config();
        k["stages"][index] = stage;
        return failure(k);
    };
    CHECK(stage_error(0, {{"op", "reduce"}, {"fn", "max"}, {"as", "a"}, {"input", "a"}})
              .find("t.json: stages[0].as: \"a\" is an input already") == 0);
    CHECK(stage_error(0, {{"op", "reduce"}, {"fn", "max"}, {"as", "eps"}, {"input", "a"}})
              .find("t.json: stages[0].as: \"eps\" is a param already") == 0);
    CHECK(stage_error(2, {{"op", "reduce"}, {"fn", "sum"}, {"as", "m"}})
              .find("t.json: stages[2].as: \"m\" names an earlier stage's row value already") == 0);
    CHECK(stage_error(2, {{"op", "reduce"}, {"fn", "sum"}, {"as", "out"}})
              .find("t.json: stages[2].as: expected a C identifier that is not a reserved name") == 0);
    CHECK(stage_error(2, {{"op", "reduce"}, {"fn", "sum"}}).find("t.json: stages[2].as: missing; a reduce before the last stage") == 0);
    CHECK(stage_error(2, {{"op", "reduce"}, {"fn", "median"}, {"as", "q"}})
              .find("t.json: stages[2].fn: expected one of \"max\", \"min\", \"sum\", \"mean\", got \"median\"") == 0);
    // A row value is known only after the stage that makes it.
    CHECK(stage_error(1, {{"op", "map"}, {"expr", "x / s"}}).find("unknown name 's'; x is the value flowing in") != std::string::npos);
    CHECK(stage_error(1, {{"op", "map"}, {"expr", "x / s"}}).find("row values (from reduce stages) are m") != std::string::npos);

    json long_rows = softmax_config();
    long_rows["shape"] = {2, 4097};
    long_rows["launch"] = {{"block", 64}, {"cluster", 1}, {"row_cache", "values"}};
    CHECK(failure(long_rows) == "t.json: shape: a row of 4097 elements is longer than a row kernel holds: 64 threads × 1 "
                                "blocks × 32 elements each; raise launch.block (at most 1024) or launch.cluster (at most 8), or "
                                "read it from memory in each pass with launch.row_cache \"none\"");
    long_rows["launch"].erase("cluster");  // "auto": a cluster of 4 blocks of 64 holds 4097
    CHECK(family::rows::policy_of(parsed(long_rows)).cluster == 4);
    // 4097 columns touch at most 1025 vectors of 4: 5 a thread of 256.
    CHECK(family::rows::row_items_per_thread(parsed(long_rows)) == 20);
    long_rows["n"] = 10;
    CHECK(failure(long_rows).find("t.json: n: give either \"n\" (1-D) or \"shape\": [rows, cols] (2-D), not both") == 0);
    for (const json& bad : {json::array({0, 3}), json::array({3}), json("3x3"), json::array({1.5, 2})}) {
        json k = softmax_config();
        k["shape"] = bad;
        CHECK(failure(k).find("t.json: shape: expected [rows, cols], two integers ≥ 1, got ") == 0);
    }
}

TEST_CASE("launch.row_cache \"none\": a row of any length, read from memory in each pass") {
    json j = softmax_config();
    j["shape"] = {2, 1 << 20};
    j["launch"] = {{"row_cache", "none"}};
    const auto p = parsed(j);
    CHECK(p.launch.block == 1024);  // "auto": the largest block, no cluster, when no block holds the row
    CHECK(family::rows::policy_of(p).cluster == 1);
    CHECK(family::rows::row_items_per_thread(p) == 1024);  // 2^20 / 1024 threads
    CHECK(config::variant_label(p).find(" row-cache=none") != std::string::npos);
    j["shape"] = {2, 1024};
    CHECK(parsed(j).launch.block == 64);  // as for registers where a block would hold the row
    j["shape"] = {2, 65536};
    CHECK(family::rows::policy_of(parsed(j)).cluster == 1);  // registers would take a cluster of 2
}

TEST_CASE("launch.row_cache \"shared\": the row in one block's shared memory, or its share in each block of a cluster, up to what a block may have") {
    json j = softmax_config();
    j["shape"] = {2, 40000};
    j["launch"] = {{"row_cache", "shared"}};
    const auto p = parsed(j);
    CHECK(family::rows::policy_of(p).cluster == 1);  // registers would take a cluster of 2
    CHECK(p.launch.block == 1024);
    CHECK(config::variant_label(p).find(" row-cache=shared") != std::string::npos);
    j["shape"] = {2, 60000};  // 240000 bytes of float32
    CHECK(failure(j) == "t.json: shape: a row of 240000 bytes is more than launch.row_cache \"shared\" holds (231424 bytes "
                        "of a block's shared memory); use \"none\", or spread the row over a launch.cluster");
    // A cluster of 2 blocks of 1024: each holds 8 vectors of 4 floats a thread (15000 vectors, 7.3 per thread).
    j["launch"]["cluster"] = 2;
    const auto clustered = parsed(j);
    CHECK(family::rows::row_bytes_per_block(clustered) == 8 * 1024 * 16);
    j["shape"] = {2, 140000};
    CHECK(failure(j) == "t.json: shape: a block's share (294912 bytes) of a row is more than launch.row_cache \"shared\" "
                        "holds (231424 bytes of a block's shared memory); use \"none\", or spread the row over a launch.cluster");
    j["launch"]["grid"] = "resident";
    j["shape"] = {2, 4096};
    CHECK(failure(j) == "t.json: launch.grid: \"resident\" counts blocks, not the clusters of 2 this launch takes; give a "
                        "number of blocks (whole clusters are launched), or launch.cluster 1");
    // A number of blocks: each cluster loops over its rows, holding its blocks' shares of two.
    j["launch"]["grid"] = 3;
    const auto looping = parsed(j);
    CHECK(family::rows::policy_of(looping).cluster == 2);
    CHECK(family::rows::shared_bytes(looping) == 2 * static_cast<std::size_t>(family::rows::row_bytes_per_block(looping)));
    const auto program = family::plan(looping, codegen::template_set::embedded());
    CHECK(program.kernels.front().grid.x == 2);  // whole clusters: 3 blocks are one cluster of 2
    CHECK(program.source.find("kjit_step = gridDim.x / kjit_cluster") != std::string::npos);
    j["launch"].erase("grid");
    j["launch"].erase("cluster");
    j["compile"] = {{"arch", "sm_75"}};
    CHECK(failure(j).find("t.json: compile: launch.row_cache \"shared\" copies the row with cp.async: sm_80 or newer") == 0);
}

TEST_CASE("formula \"online\": a sum of exp(v - m) paired with the max m of v; anything else is refused") {
    json j = softmax_config();
    j["stages"][2]["formula"] = "online";
    auto p = parsed(j);
    REQUIRE(p.stages[2].online_with.has_value());
    CHECK(*p.stages[2].online_with == 0);
    CHECK(config::describe(p.stages[2]) == "reduce sum as s, online");
    CHECK(family::rows::sum_depths(p).online_depth == 5 * family::rows::sum_depths(p).depth);
    j["stages"][2]["formula"] = "classic";
    CHECK_FALSE(parsed(j).stages[2].online_with.has_value());

    // The log-softmax's form: the sum's own expr, with no map between.
    json log_softmax = softmax_config();
    log_softmax["stages"][1] = {{"op", "reduce"}, {"fn", "sum"}, {"as", "s"}, {"expr", "exp(x - m)"}, {"formula", "online"}};
    log_softmax["stages"][2] = {{"op", "map"}, {"expr", "x - m - log(s)"}};
    log_softmax["stages"].erase(3);
    CHECK(*parsed(log_softmax).stages[1].online_with == 0);
    // The max of an expression: the summand must use the same one.
    json scaled = softmax_config();
    scaled["stages"][0]["expr"] = "x * eps";
    scaled["stages"][1]["expr"] = "exp(x * eps - m)";
    scaled["stages"][2]["formula"] = "online";
    CHECK(parsed(scaled).stages[2].online_with.has_value());
    scaled["stages"][1]["expr"] = "exp(x - m)";
    CHECK(failure(scaled) == "t.json: stages[2].formula: \"online\" needs a sum of exp(v - m) where m is the max of v = "
                             "x * eps; this sum is of exp(x - m)");

    // Maps composed before the sum: the check is linear in them, and quotes the summand in part
    // (24 maps of x + x once took 2 GB: the summand's text doubles with each).
    json doubling = softmax_config();
    doubling["stages"][2]["formula"] = "online";
    const json doubled = {{"op", "map"}, {"expr", "x + x"}};
    for (int k = 0; k < 40; ++k) doubling["stages"].insert(doubling["stages"].begin() + 1, doubled);
    const std::string refused = failure(doubling);
    INFO(refused);
    CHECK(refused.find("t.json: stages[42].formula: \"online\" needs a sum of exp(v - m)") == 0);
    CHECK(refused.size() < 1000);
    CHECK(refused.find("…") != std::string::npos);

    json not_sum = softmax_config();
    not_sum["stages"][0]["formula"] = "online";
    CHECK(failure(not_sum).find("t.json: stages[0].formula: \"online\" computes a sum of exp(v - m) in one pass with the "
                                "max m of v: it is for fn \"sum\", got \"max\"") == 0);
    json bad_name = softmax_config();
    bad_name["stages"][2]["formula"] = "fast";
    CHECK(failure(bad_name) == "t.json: stages[2].formula: expected one of \"auto\", \"classic\", \"online\", got \"fast\"");
    json after_min = softmax_config();
    after_min["stages"][0]["fn"] = "min";
    after_min["stages"][2]["formula"] = "online";
    CHECK(failure(after_min).find("t.json: stages[2].formula: \"online\" computes this sum in one pass with a max") == 0);
    json last = softmax_config();
    last["stages"].erase(3);
    last["stages"][2]["formula"] = "online";
    CHECK(parsed(last).stages[2].online_with.has_value());
    last["fusion"] = "separate";
    CHECK(failure(last).find("t.json: stages[2].formula: \"online\" with fusion \"separate\"") == 0);
}

TEST_CASE("a config's own op may not be called reduce") {
    json j = softmax_config();
    j["ops"] = {{"reduce", {{"expr", "x"}}}};
    CHECK(failure(j).find("t.json: ops.reduce: expected an op name that is an identifier other than map, reduce and activate") == 0);
}

TEST_CASE("launch.grid on a row pipeline: a number of blocks or \"resident\" makes the blocks loop over the rows") {
    json j = softmax_config();
    j["shape"] = {2, 4096};
    CHECK_FALSE(family::rows::rows_loop(parsed(j)));  // "auto": a block per row
    j["launch"] = {{"grid", "resident"}};
    auto p = parsed(j);
    CHECK(p.launch.grid_resident);
    CHECK(family::rows::rows_loop(p));
    CHECK(config::variant_label(p).find(" grid=resident") != std::string::npos);
    j["launch"] = {{"grid", 7}};
    CHECK(family::rows::rows_loop(parsed(j)));
    j["launch"] = {{"grid", "all"}};
    CHECK(failure(j) == "t.json: launch.grid: expected a number of blocks, \"auto\" or \"resident\", got \"all\"");
    // A row in registers that takes a cluster cannot loop; in shared memory, two rows must fit.
    j["shape"] = {2, 65536};
    j["launch"] = {{"grid", "resident"}, {"row_cache", "values"}};
    CHECK(failure(j) == "t.json: launch.grid: \"resident\" counts blocks, not the clusters of 2 this launch takes; give a "
                        "number of blocks (whole clusters are launched), or launch.cluster 1");
    j["launch"]["grid"] = 4;
    CHECK(failure(j) == "t.json: launch.grid: clusters of 2 blocks loop over the rows with row_cache \"shared\" alone (each "
                        "block holding its share of two rows), and this one is \"values\"; use launch.grid \"auto\", "
                        "row_cache \"shared\", or launch.cluster 1");
    j["launch"]["grid"] = "resident";
    j["launch"]["row_cache"] = "none";
    CHECK(family::rows::policy_of(parsed(j)).cluster == 1);
    j["shape"] = {2, 32768};  // 128 KiB a row of float32: one fits, two do not
    j["launch"]["row_cache"] = "shared";
    CHECK(failure(j) == "t.json: shape: two rows (this one and the next, as a block that loops over rows holds them) of "
                        "131072 bytes are more than launch.row_cache \"shared\" holds (231424 bytes of a block's shared "
                        "memory); use \"none\" or launch.grid \"auto\"");
    j["dtype"] = "bfloat16";
    CHECK(family::rows::rows_loop(parsed(j)));
    // An elementwise pipeline takes "resident" too: the grid-stride loop over n.
    const json elementwise = elementwise_with({{"grid", "resident"}});
    CHECK(parsed(elementwise).launch.grid_resident);
    CHECK(parsed(elementwise).family == "elementwise");
}

TEST_CASE("launch.cluster: rows longer than a block holds use a cluster; only row kernels, only sm_90 and newer") {
    json j = softmax_config();
    j["shape"] = {2, 131072};
    j["launch"] = {{"row_cache", "values"}};  // "auto" would put this row in shared memory
    const auto p = parsed(j);
    CHECK(p.launch.block == 1024);
    CHECK(family::rows::policy_of(p).cluster == 4);  // float32 × 4 per vector: 32 elements a thread
    CHECK(family::rows::sum_depths(p).depth == 32 + 10 + 3);
    CHECK(config::variant_label(p).find(" cluster=4") != std::string::npos);
    j["launch"] = {{"cluster", 3}};
    CHECK(failure(j) == "t.json: launch.cluster: expected 1, 2, 4, 8 or \"auto\", got 3");
    j["launch"] = {{"cluster", 8}};
    j["compile"] = {{"arch", "sm_80"}};
    CHECK(failure(j) == "t.json: compile: launch.cluster 8 needs thread-block clusters: sm_90 or newer, and compile.arch is sm_80");
    CHECK(refused_as_row_only({{"cluster", 2}}));
    CHECK(refused_as_row_only({{"row_mapping", "warp"}}));
    CHECK(refused_as_row_only({{"row_cache", "shared"}}));
}

TEST_CASE("launch.min_blocks_per_sm: 1..32 blocks whose threads an SM holds, for row kernels only; in the variant's label") {
    json j = softmax_config();
    CHECK(family::rows::policy_of(parsed(j)).min_blocks_per_sm == 0);
    j["launch"] = {{"block", 512}, {"row_cache", "shared"}, {"min_blocks_per_sm", 3}};
    const auto p = parsed(j);
    CHECK(family::rows::policy_of(p).min_blocks_per_sm == 3);
    CHECK(config::variant_label(p).find(" min-blocks=3") != std::string::npos);
    j["launch"]["min_blocks_per_sm"] = "auto";
    CHECK(family::rows::policy_of(parsed(j)).min_blocks_per_sm == 0);
    j["launch"]["min_blocks_per_sm"] = 0;
    CHECK(failure(j) == "t.json: launch.min_blocks_per_sm: expected an integer in 1..32, got 0");
    j["launch"]["min_blocks_per_sm"] = 5;
    CHECK(failure(j) == "t.json: launch.min_blocks_per_sm: 5 blocks of 512 threads are more than the 2048 threads an SM holds");
    CHECK(refused_as_row_only({{"min_blocks_per_sm", 2}}));
}

TEST_CASE("a sum that leaves its formula is online where the row is read in each pass, in a fused pipeline; classic in registers") {
    json j = softmax_config();
    CHECK_FALSE(parsed(j).stages[2].online_with.has_value());  // 33 columns: the row stays in registers
    for (const char* cache : {"shared", "none"}) {
        j["launch"] = {{"row_cache", cache}};
        const auto p = parsed(j);
        REQUIRE(p.stages[2].online_with.has_value());
        CHECK(*p.stages[2].online_with == 0);
        CHECK(config::variant_label(p).find(" reduce=online") != std::string::npos);
    }
    j["stages"][2]["formula"] = "auto";
    CHECK(parsed(j).stages[2].online_with.has_value());
    j["stages"][2]["formula"] = "classic";
    CHECK_FALSE(parsed(j).stages[2].online_with.has_value());
    j["stages"][2].erase("formula");
    j["fusion"] = "separate";
    CHECK_FALSE(parsed(j).stages[2].online_with.has_value());
    // A sum that is not of exp(v - m) stays classic, where "online" would be refused.
    j["fusion"] = "fused";
    j["stages"][1]["expr"] = "x - m";
    CHECK_FALSE(parsed(j).stages[2].online_with.has_value());
    j["stages"][2]["formula"] = "online";
    CHECK(failure(j).find("t.json: stages[2].formula: \"online\" needs a sum of exp(v - m)") == 0);
}

TEST_CASE("launch.copy_groups: a row in shared memory on a block or cluster per row lands in groups; auto by the passes over it") {
    json j = softmax_config();
    j["dtype"] = "bfloat16";
    j["shape"] = {1024, 128256};  // a cluster of 8 blocks of 256, 8 vectors a thread
    const auto p = parsed(j);
    CHECK(family::rows::policy_of(p).cluster == 8);
    CHECK(family::rows::policy_of(p).copy_groups == 8);  // one pass (the online sum's) before the store
    CHECK(family::rows::copy_group_vectors(p) == 1);
    CHECK(config::variant_label(p).find(" copy-groups=8") != std::string::npos);
    j["stages"][2]["formula"] = "classic";  // two passes: max, then sum
    CHECK(family::rows::policy_of(parsed(j)).copy_groups == 1);
    j["stages"][2].erase("formula");
    j["shape"] = {1024, 4096};  // 2 vectors a thread in shared memory
    j["launch"] = {{"row_cache", "shared"}, {"block", 256}};
    CHECK(family::rows::policy_of(parsed(j)).copy_groups == 2);
    j["launch"]["copy_groups"] = 5;
    CHECK(family::rows::policy_of(parsed(j)).copy_groups == 5);
    CHECK(family::rows::copy_group_vectors(parsed(j)) == 1);
    // Copied through a register (2-byte vectors), a row is one group.
    j["launch"] = {{"row_cache", "shared"}, {"block", 256}, {"vector_width", 1}};
    CHECK(family::rows::policy_of(parsed(j)).copy_groups == 1);
    j["launch"] = {{"row_cache", "shared"}, {"copy_groups", 17}};
    CHECK(failure(j) == "t.json: launch.copy_groups: expected an integer in 1..16, got 17");
    j["launch"] = {{"grid", 64}, {"row_cache", "shared"}, {"copy_groups", 2}};
    CHECK(failure(j).find("t.json: launch.copy_groups: groups of copies are for a row in shared memory") == 0);
    j["launch"] = {{"copy_groups", 2}};
    CHECK(failure(j).find("t.json: launch.copy_groups: groups of copies are for a row in shared memory") == 0);
    j["launch"]["copy_groups"] = 1;
    CHECK(family::rows::policy_of(parsed(j)).copy_groups == 1);
    CHECK(refused_as_row_only({{"copy_groups", 2}}));
}

TEST_CASE("launch.streaming: true or false, for row kernels only; in the variant's label") {
    json j = softmax_config();
    CHECK_FALSE(family::rows::policy_of(parsed(j)).streaming);
    j["launch"] = {{"streaming", true}};
    const auto p = parsed(j);
    CHECK(family::rows::policy_of(p).streaming);
    CHECK(config::variant_label(p).find(" streaming") != std::string::npos);
    j["launch"] = {{"streaming", "yes"}};
    CHECK(failure(j) == "t.json: launch.streaming: expected true or false, got \"yes\"");
    CHECK(refused_as_row_only({{"streaming", true}}));
}

TEST_CASE("launch.row_mapping \"warp\": a row per warp, for short rows") {
    json j = softmax_config();
    j["shape"] = {100, 1024};
    j["launch"] = {{"row_mapping", "warp"}};
    const auto p = parsed(j);
    CHECK(p.launch.block == family::rows::k_warp_rows_block);
    CHECK(family::rows::policy_of(p).cluster == 1);
    CHECK(family::rows::row_items_per_thread(p) == 32);
    j["shape"] = {100, 1025};  // longer than a warp holds: in shared memory, or where given, refused
    CHECK(family::rows::policy_of(parsed(j)).cache == family::rows::row_cache::shared);
    j["launch"]["row_cache"] = "values";
    CHECK(failure(j) == "t.json: shape: a row of 1025 elements is longer than a warp holds (32 threads × 32 elements "
                        "each); use launch.row_mapping \"block\"");
    // A larger block holds a row a warp: 4 rows a block of 128, a thread's vectors 32 apart.
    j["shape"] = {100, 1024};
    j["launch"]["block"] = 128;
    const auto four = parsed(j);
    CHECK(family::rows::rows_per_block(four) == 4);
    CHECK(family::rows::row_threads(four) == 32);
    CHECK(family::rows::row_items_per_thread(four) == 32);
    // One butterfly, not the block's two, in the reference's bound for the sums.
    CHECK(family::rows::sum_depths(four).depth == 32 + family::rows::k_warp_levels);
    const family::program prog = family::plan(four, codegen::template_set::embedded());
    CHECK(prog.kernels.front().grid.x == 25);  // 100 rows, 4 a block
    CHECK(prog.kernels.front().block.x == 128);
    j["launch"]["row_cache"] = "shared";  // a row a warp in shared memory: the block's four rows
    CHECK(family::rows::shared_bytes(parsed(j)) == 4 * 1024 * 4);
    j["launch"]["block"] = 1024;
    j["shape"] = {100, 4096};
    CHECK(failure(j) == "t.json: shape: the rows of a block of 1024 threads (one a warp) take 524288 bytes, more than "
                        "launch.row_cache \"shared\" holds (231424); use a smaller launch.block or \"none\"");
    j["launch"] = {{"row_mapping", "warp"}, {"cluster", 2}};
    CHECK(failure(j) == "t.json: launch.cluster: row_mapping \"warp\" runs each row on one warp: cluster is 1, got 2");
    j["launch"] = {{"row_mapping", "thread"}};
    CHECK(failure(j) == "t.json: launch.row_mapping: expected one of \"auto\", \"block\", \"warp\", got \"thread\"");
}

TEST_CASE("an input \"per\": \"column\" has a row's worth of values; only row pipelines, never x's start") {
    json j = softmax_config();
    j["inputs"]["g"] = {{"fill", "constant"}, {"value", 2}, {"per", "column"}};
    j["stages"][3] = {{"op", "map"}, {"expr", "x / s * g"}};
    const auto p = parsed(j);
    REQUIRE(p.inputs.size() == 2);
    CHECK(p.inputs[1].per_column);
    CHECK(config::elements_of(p, p.inputs[1]) == 33);
    CHECK(config::elements_of(p, p.inputs[0]) == 99);
    j["stages"][0]["input"] = "g";
    CHECK(failure(j).find("t.json: stages[0].input: x starts from an input of one value per element; \"g\" has one per column") == 0);
    j["inputs"]["g"]["per"] = "row";
    CHECK(failure(j) == "t.json: inputs.g.per: expected one of \"element\", \"column\", got \"row\"");
    json elementwise = config_with(json::array({{{"op", "map"}, {"input", "a"}, {"expr", "x * w"}}}));
    elementwise["inputs"]["w"]["per"] = "column";
    CHECK(failure(elementwise).find("t.json: inputs.w.per: \"column\" is for row pipelines") == 0);
}

TEST_CASE("row_cache \"auto\": the rule measured on the H200 (docs/tuning.md) for every row length") {
    const auto policy = [](long long cols, const char* dtype, json launch = json::object()) {
        json j = softmax_config();
        j["shape"] = {3, cols};
        j["dtype"] = dtype;
        j["launch"] = launch;
        const auto p = parsed(j);
        return std::string(family::rows::to_string(family::rows::policy_of(p).cache)) + " " + std::to_string(p.launch.block) +
               (family::rows::policy_of(p).streaming ? " streaming" : "") + (family::rows::policy_of(p).cluster > 1 ? " cluster" : "") +
               (family::rows::policy_of(p).warp_per_row ? " warp" : "");
    };
    // Rows of at most 4 KiB on a warp each, 4 a block of 128: in registers where a warp holds
    // them at 32 elements a thread, else in shared memory.
    CHECK(policy(8, "float32") == "values 128 warp");
    CHECK(policy(1024, "float32") == "values 128 warp");
    CHECK(policy(2048, "bfloat16") == "shared 128 warp");
    CHECK(policy(1024, "float64") == "values 64");  // 8 KiB: a block per row
    // In registers at 16 elements a thread, in the smallest block that holds the row so.
    CHECK(policy(1025, "float32") == "values 128");
    CHECK(policy(3001, "float32") == "values 256");
    CHECK(policy(4096, "bfloat16") == "values 256");
    CHECK(policy(16384, "float32") == "values 1024");
    // Longer: in shared memory, 128 bytes of it a thread, streamed.
    CHECK(policy(32768, "bfloat16") == "shared 512 streaming");
    CHECK(policy(32768, "float32") == "shared 1024 streaming");
    // At most 512 threads where an SM's shared memory holds two rows (two blocks of 1024 would
    // not fit its registers): 100,514 bytes would take 786 threads.
    CHECK(policy(50257, "bfloat16") == "shared 512 streaming");
    CHECK(policy(25129, "float32") == "shared 512 streaming");
    CHECK(policy(30000, "float32") == "shared 1024 streaming");  // two of 120,000 bytes do not fit
    // Longer than a block's shared memory: an eighth of it in each of a cluster of 8 blocks, not
    // streamed, the block the power of two nearest a thread per 128 bytes of its eighth (32,064
    // bytes: 250 threads; 37,984: 297; 64,000 and 64,128: 500).
    CHECK(policy(128256, "bfloat16") == "shared 256 cluster");
    CHECK(policy(151936, "bfloat16") == "shared 256 cluster");
    CHECK(policy(256000, "bfloat16") == "shared 512 cluster");
    CHECK(policy(128256, "float32") == "shared 512 cluster");
    CHECK(policy(65537, "float32") == "shared 256 cluster");  // 32,768.5 bytes: 256 threads
    // Longer than a cluster's shared memory holds: read again in each pass, any length, by a
    // cluster of 8 blocks of 1024.
    CHECK(policy(1 << 20, "float32") == "none 1024 streaming cluster");
    CHECK(policy(3000001, "bfloat16") == "none 1024 streaming cluster");
    // What the launch block gives is kept; the rest still follows the rule.
    CHECK(policy(32768, "bfloat16", {{"streaming", false}}) == "shared 512");
    CHECK(policy(32768, "bfloat16", {{"row_cache", "auto"}, {"streaming", "auto"}}) == "shared 512 streaming");
    CHECK(policy(32768, "bfloat16", {{"block", 256}}) == "shared 256 streaming");
    CHECK(policy(4096, "float32", {{"block", 128}}) == "values 128");
    CHECK(policy(65536, "bfloat16", {{"row_cache", "values"}}) == "values 1024 cluster");
    CHECK(policy(32768, "float32", {{"grid", "resident"}}) == "none 1024 streaming");  // two rows do not fit
    CHECK(policy(128256, "bfloat16", {{"cluster", 4}}) == "none 1024 streaming cluster");  // a cluster given: as it was
    // Clusters are sm_90's: on an A100 a row longer than shared memory is read again in each pass.
    const auto on_a100 = [&](long long cols) {
        json j = softmax_config();
        j["shape"] = {3, cols};
        j["dtype"] = "bfloat16";
        j["compile"] = {{"target", "a100"}};
        const auto p = parsed(j);
        return std::string(family::rows::to_string(family::rows::policy_of(p).cache)) + " " + std::to_string(family::rows::policy_of(p).cluster);
    };
    CHECK(on_a100(128256) == "none 1");
    CHECK(on_a100(32768) == "shared 1");
}

TEST_CASE("row_cache \"auto\" on a warp per row: the row as loaded where every map follows the reduces, else its values") {
    const auto cache_of = [](const json& stages, const char* dtype) {
        json j = softmax_config();
        j["shape"] = {4096, 768};
        j["dtype"] = dtype;
        j["stages"] = stages;
        const auto p = parsed(j);
        REQUIRE(family::rows::policy_of(p).warp_per_row);
        return std::string(family::rows::to_string(family::rows::policy_of(p).cache));
    };
    const json rms_norm = {{{"op", "reduce"}, {"fn", "mean"}, {"expr", "x * x"}, {"as", "ms"}, {"input", "a"}},
                           {{"op", "map"}, {"expr", "x * rsqrt(ms + eps)"}}};
    CHECK(cache_of(rms_norm, "bfloat16") == "inputs");  // no pass applies a map again
    CHECK(cache_of(rms_norm, "float32") == "inputs");
    CHECK(cache_of(softmax_config()["stages"], "bfloat16") == "values");  // the sum's pass would apply exp again
    json scaled = rms_norm;
    scaled.insert(scaled.begin(), json::object({{"op", "map"}, {"input", "a"}, {"expr", "x * 2"}}));
    scaled[1].erase("input");
    CHECK(cache_of(scaled, "bfloat16") == "values");  // a map before the reduce
}

TEST_CASE("\"auto\" for a pipeline that computes from positions: 32 elements a thread, a warp per row where it holds one") {
    const auto policy = [](long long cols, const char* dtype, json launch = json::object()) {
        json j = softmax_config();
        const json mask = {{"op", "map"}, {"input", "a"}, {"expr", "col > row ? -inf : x"}};
        j["stages"].insert(j["stages"].begin(), mask);
        j["stages"][1].erase("input");
        j["shape"] = {3, cols};
        j["dtype"] = dtype;
        j["launch"] = launch;
        const auto p = parsed(j);
        return std::string(family::rows::policy_of(p).warp_per_row ? "warp " : "") + std::string(family::rows::to_string(family::rows::policy_of(p).cache)) + " " +
               std::to_string(p.launch.block) + (family::rows::policy_of(p).streaming ? " streaming" : "");
    };
    CHECK(policy(1024, "bfloat16") == "warp values 128");  // (a short row, as unmasked)
    CHECK(policy(1024, "float64") == "warp values 128");  // 8 KiB: unmasked, 16 a thread in blocks of 64
    CHECK(policy(4096, "bfloat16") == "values 128");  // a warp would take 128 a thread; unmasked: blocks of 256
    CHECK(policy(4096, "float32") == "values 128");
    CHECK(policy(32768, "bfloat16") == "shared 512 streaming");  // not in registers: as unmasked
    // A launch that names the mapping, the block or the cluster keeps it.
    CHECK(policy(1024, "bfloat16", {{"row_mapping", "block"}}) == "values 64");  // no block is smaller
    CHECK(policy(1024, "bfloat16", {{"row_mapping", "auto"}}) == "warp values 128");
    CHECK(policy(1024, "bfloat16", {{"block", 64}}) == "values 64");
}
