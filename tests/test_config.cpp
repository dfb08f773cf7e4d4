// Config parsing and validation: every rejected input gives one line naming the source, the key
// path and what was expected.
#include <chrono>

#include "codegen/codegen.hpp"
#include "helpers.hpp"

using namespace kjit;
using kjit::testing::error_message;
using json = kjit::config::json_value;

namespace {
/// The error from validating the default config after `edit`; checks the one-line form.
template <class Edit>
std::string config_error_after(Edit edit) {
    std::string message = error_message([&] { (void)kjit::testing::pipeline_with(edit); });
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.rfind("<embedded configs/hidden_layer.json>: ", 0) == 0);
    return message;
}
}  // namespace

TEST_CASE("the default config is the seed problem") {
    const auto p = family::load(kjit::testing::default_document());
    CHECK(p.name == "hidden_layer");
    CHECK(p.n == 1000000);
    CHECK(p.type == config::dtype::float32);
    CHECK(p.fuse == config::fusion::fused);
    REQUIRE(p.stages.size() == 3);
    CHECK(p.stages[0].input == "greyscales");
    CHECK(p.stages[0].op == "normalize");
    CHECK(expr::to_text(p.stages[0].kernel) == "x / s0_scale");
    CHECK(p.scalars.at(0).name == "s0_scale");
    CHECK(p.scalars.at(0).value == 255);
    CHECK(expr::to_text(p.stages[1].kernel) == "x * weights");
    CHECK(p.stages[2].op == "tanh");
    CHECK(p.stages[2].formula == "builtin");
    CHECK(config::describe_stages(p) == "normalize → weigh → tanh=builtin");
    CHECK(p.launch.vector_width == 4);
    CHECK_FALSE(p.launch.grid.has_value());
}

TEST_CASE("every shipped config is valid") {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(KJIT_SOURCE_DIR) + "/configs")) {
        CAPTURE(entry.path().string());
        const auto doc = config::load_document(entry.path().string());
        CHECK_FALSE(family::expand_sweep(doc).empty());
    }
}

TEST_CASE("unknown key at the top level") {
    const auto m = config_error_after([](json& j) { j["blok"] = 1; });
    CHECK(m.find("blok: unknown key; expected one of") != std::string::npos);
}

TEST_CASE("unknown key in a nested object names its path") {
    const auto m = config_error_after([](json& j) { j["launch"]["blok"] = 128; });
    CHECK(m.find("launch.blok: unknown key; expected one of \"block\", \"vector_width\", \"grid\"") != std::string::npos);
}

TEST_CASE("wrong type") {
    const auto m = config_error_after([](json& j) { j["n"] = "many"; });
    CHECK(m.find("n: expected an integer in 1..") != std::string::npos);
    CHECK(m.find("got \"many\"") != std::string::npos);
}

TEST_CASE("bad enum value lists the allowed values") {
    const auto m = config_error_after([](json& j) { j["dtype"] = "half"; });
    CHECK(m.find("dtype: expected one of \"float32\", \"float64\", \"float16\", \"bfloat16\", got \"half\"") !=
          std::string::npos);
}

TEST_CASE("bad tanh formula names stages[2].formula") {
    const auto m = config_error_after([](json& j) { j["stages"][2]["formula"] = "fast"; });
    CHECK(m.find("stages[2].formula: expected one of \"builtin\", \"exp\", got \"fast\"") != std::string::npos);
}

TEST_CASE("n must be positive") {
    CHECK(config_error_after([](json& j) { j["n"] = 0; }).find("n: expected an integer in 1..") != std::string::npos);
    CHECK(config_error_after([](json& j) { j["n"] = -5; }).find("got -5") != std::string::npos);
}

TEST_CASE("block must be a multiple of 32 in 32..1024") {
    CHECK(config_error_after([](json& j) { j["launch"]["block"] = 100; }).find("launch.block: expected a multiple of 32") !=
          std::string::npos);
    CHECK(config_error_after([](json& j) { j["launch"]["block"] = 2048; }).find("launch.block: expected an integer in 32..1024") !=
          std::string::npos);
    CHECK(config_error_after([](json& j) { j["launch"]["block"] = 16; }).find("launch.block") != std::string::npos);
    CHECK(config_error_after([](json& j) { j["measure"]["noise"] = 0; }).find("measure.noise: expected a relative error") !=
          std::string::npos);
    CHECK(config_error_after([](json& j) { j["measure"]["max_ms"] = -1; }).find("measure.max_ms: expected milliseconds") !=
          std::string::npos);
}

TEST_CASE("vector width: 1 to 8 elements, at most 32 bytes, or auto") {
    const auto m = config_error_after([](json& j) { j["launch"]["vector_width"] = 3; });
    CHECK(m.find("launch.vector_width: expected 1, 2, 4, 8, or \"auto\" for float32, got 3") != std::string::npos);
    CHECK(config_error_after([](json& j) { j["launch"]["vector_width"] = 16; }).find("got 16") != std::string::npos);
    CHECK(config_error_after([](json& j) {
              j["dtype"] = "float64";
              j["launch"]["vector_width"] = 8;
          }).find("expected 1, 2, 4, or \"auto\" for float64, got 8") != std::string::npos);
    const auto half = kjit::testing::pipeline_with([](json& j) {
        j["dtype"] = "float16";
        j["launch"]["vector_width"] = 8;
    });
    CHECK(half.launch.vector_width == 8);
}

TEST_CASE("a stage naming an input that does not exist") {
    const auto m = config_error_after([](json& j) { j["stages"][1]["by"] = "bias"; });
    CHECK(m.find("stages[1].by: expected the name of an input (\"greyscales\", \"weights\")") != std::string::npos);
    CHECK(m.find("got \"bias\"") != std::string::npos);
}

TEST_CASE("the first stage must name its input; later stages may not") {
    CHECK(config_error_after([](json& j) { j["stages"][0].erase("input"); }).find("stages[0].input: missing") !=
          std::string::npos);
    CHECK(config_error_after([](json& j) { j["stages"][2]["input"] = "weights"; })
              .find("stages[2].input: only stages[0] names an input") != std::string::npos);
}

TEST_CASE("keys that belong to another op") {
    const auto m = config_error_after([](json& j) { j["stages"][1]["formula"] = "exp"; });
    CHECK(m.find("stages[1].formula: op \"weigh\" has one form; there is no formula to choose") != std::string::npos);
    CHECK(config_error_after([](json& j) { j["stages"][1]["scale"] = 2; })
              .find("stages[1].scale: unknown key; expected one of \"op\", \"input\", \"formula\", \"by\"") !=
          std::string::npos);
}

TEST_CASE("normalize by zero") {
    CHECK(config_error_after([](json& j) { j["stages"][0]["scale"] = 0; }).find("stages[0].scale: expected a nonzero number") !=
          std::string::npos);
}

TEST_CASE("numbers a float cannot hold are refused in float compute, naming the stage or param; float64 takes them") {
    const auto with_map = [](const std::string& expr, const char* dtype) {
        return [=](json& j) {
            j["dtype"] = dtype;
            j["stages"][1] = {{"op", "map"}, {"expr", expr}};
        };
    };
    const std::string why = " does not fit float, the compute type of bfloat16 data (about 1.4e-45 to 3.4e38 in size): use "
                            "float64, or a number a float holds";
    CHECK(config_error_after(with_map("x * 1e39", "bfloat16")).ends_with(": stages[1]: the number 1e+39" + why));
    CHECK(config_error_after(with_map("x + 5e-324", "bfloat16")).ends_with(": stages[1]: the number 5e-324" + why));
    CHECK(config_error_after([](json& j) {
              j["dtype"] = "bfloat16";
              j["params"] = {{"big", -1e300}};
          }).ends_with(": params.big: the param big = -1e+300" + why));
    // what a float holds, and any number in float64
    for (const char* fits : {"x * 3e38", "x + 1e-45", "x * 0 + inf"}) CHECK_NOTHROW((void)kjit::testing::pipeline_with(with_map(fits, "float32")));
    CHECK_NOTHROW((void)kjit::testing::pipeline_with(with_map("x * 1e300 + 5e-324", "float64")));
}

TEST_CASE("input fill rules") {
    CHECK(config_error_after([](json& j) { j["inputs"]["greyscales"]["high"] = -1; })
              .find("inputs.greyscales.high: expected a number greater than low") != std::string::npos);
    CHECK(config_error_after([](json& j) { j["inputs"]["greyscales"]["mean"] = 3; })
              .find("inputs.greyscales.mean: only applies to fill") != std::string::npos);
    CHECK(config_error_after([](json& j) { j["inputs"]["weights"]["fill"] = "gaussian"; })
              .find("inputs.weights.fill: expected one of \"uniform\", \"normal\", \"constant\"") != std::string::npos);
    CHECK(config_error_after([](json& j) { j["inputs"]["weights"]["sorted"] = "yes"; })
              .find("inputs.weights.sorted: expected true or false") != std::string::npos);
}

TEST_CASE("input names must be usable as kernel parameters") {
    CHECK(config_error_after([](json& j) { j["inputs"]["out"] = {{"fill", "constant"}, {"value", 1}}; })
              .find("inputs.out: expected a C identifier that is not a reserved name") != std::string::npos);
    CHECK(config_error_after([](json& j) { j["inputs"]["my-input"] = {{"fill", "constant"}, {"value", 1}}; })
              .find("inputs.my-input") != std::string::npos);
}

TEST_CASE("arch") {
    CHECK(config_error_after([](json& j) { j["compile"]["arch"] = "sm_20"; })
              .find("compile.arch: expected \"auto\" or one of sm_75, sm_80, sm_86") != std::string::npos);
    for (const json& bad : {json("sm_77"), json(101), json(4294967386LL), json("sm_90x"), json(-90), json(90.0)}) {
        CAPTURE(bad.dump());
        CHECK(config_error_after([&](json& j) { j["compile"]["arch"] = bad; }).find("compile.arch: expected") !=
              std::string::npos);
    }
    CHECK(kjit::testing::pipeline_with([](json& j) { j["compile"]["arch"] = 120; }).compile.arch == 120);
    CHECK(kjit::testing::pipeline_with([](json& j) { j["compile"]["arch"] = "sm_80"; }).compile.arch == 80);
}

TEST_CASE("missing required keys") {
    CHECK(config_error_after([](json& j) { j.erase("stages"); }).find("stages: missing; expected a list of stages") !=
          std::string::npos);
    CHECK(config_error_after([](json& j) { j["stages"] = json::array(); }).find("stages: expected a list with at least one stage") !=
          std::string::npos);
}

TEST_CASE("tolerance overrides the default per field") {
    const auto p = kjit::testing::pipeline_with([](json& j) { j["tolerance"] = {{"rtol", 0.5}}; });
    REQUIRE(p.tol.has_value());
    CHECK(p.tol->rtol == 0.5);
    CHECK(p.tol->atol == config::default_tolerance(p).atol);
    CHECK(config_error_after([](json& j) { j["tolerance"] = {{"atol", -1}}; }).find("tolerance.atol") != std::string::npos);
}

TEST_CASE("default tolerances: tight for builtin tanh, absolute slack only for the exp formula") {
    const auto builtin = family::load(kjit::testing::default_document());
    const auto exp = kjit::testing::pipeline_with([](json& j) { j["stages"][2]["formula"] = "exp"; });
    CHECK(config::default_tolerance(builtin).atol == 0x1p-126);  // only underflow
    CHECK(config::default_tolerance(exp).atol == doctest::Approx(5 * 0x1p-23));  // atol_ulps 5 in ops.json
    CHECK(config::default_tolerance(exp).rtol == config::default_tolerance(builtin).rtol);
    CHECK(config::default_tolerance(builtin).rounding == 0x1p-23);
}

TEST_CASE("default tolerances follow the storage type") {
    const auto f32 = config::default_tolerance(family::load(kjit::testing::default_document()));
    for (const char* type : {"float16", "bfloat16"}) {
        CAPTURE(type);
        const auto narrow = config::default_tolerance(kjit::testing::pipeline_with([&](json& j) { j["dtype"] = type; }));
        CHECK(narrow.rtol > 100 * f32.rtol);
        CHECK(narrow.rounding == f32.rounding);  // computed in float either way
    }
    const auto f64 = config::default_tolerance(kjit::testing::pipeline_with([](json& j) { j["dtype"] = "float64"; }));
    CHECK(f64.rtol < 1e-12);
    CHECK(f64.rounding == 0x1p-52);
}

TEST_CASE("tanh and exp are approximated for 16-bit results and under fast math, or as compile.tanh / exp ask; never in float64") {
    for (const std::string fn : {"tanh", "exp"}) {
        CAPTURE(fn);
        const auto with = [&](const char* type, bool fast, const char* spelled = "auto") {
            const auto p = kjit::testing::pipeline_with([&](json& j) {
                j["dtype"] = type;
                j["compile"]["fast_math"] = fast;
                j["compile"][fn] = spelled;
            });
            // What codegen spells is what the reference charges.
            const expr::approximations approximated = codegen::style_of(p).approximated;
            CHECK(approximated.tanh == config::approximates_tanh(p));
            CHECK(approximated.exp == config::approximates_exp(p));
            CHECK(approximated.division == config::approximates_division(p));
            CHECK(approximated.division == (std::string(type) != "float64" && (fast || std::string(type) != "float32")));
            return fn == "tanh" ? approximated.tanh : approximated.exp;
        };
        CHECK(with("float16", false));
        CHECK(with("bfloat16", false));
        CHECK_FALSE(with("float32", false));
        CHECK(with("float32", true));
        CHECK_FALSE(with("float64", true));
        CHECK_FALSE(with("bfloat16", false, "precise"));
        CHECK(with("float32", false, "approx"));
        CHECK_FALSE(with("float64", false, "approx"));
        const auto m = config_error_after([&](json& j) {
            j["compile"]["fast_math"] = true;
            j["compile"][fn] = "precise";
        });
        CHECK(m.find("compile." + fn + ": \"precise\" cannot hold under compile.fast_math, which makes every " + fn) !=
              std::string::npos);
        CHECK(config_error_after([&](json& j) { j["compile"][fn] = "fast"; })
                      .find("compile." + fn + ": expected one of \"auto\", \"approx\", \"precise\", got \"fast\"") !=
              std::string::npos);
        CHECK(config::variant_label(kjit::testing::pipeline_with([&](json& j) { j["compile"][fn] = "precise"; }))
                      .find(" precise-" + fn) != std::string::npos);
    }
}

TEST_CASE("JSON syntax errors give line and column") {
    const std::string text = "{\n  \"name\": \"x\",\n  \"n\": 10,,\n}";
    const auto m = error_message([&] { (void)config::parse_document(text, "bad.json"); });
    CHECK(m.rfind("bad.json:3:", 0) == 0);
    CHECK(m.find("invalid JSON") != std::string::npos);
}

TEST_CASE("a missing config file is a usage error") {
    const auto m = error_message([] { (void)config::load_document("/nonexistent/x.json"); }, error_kind::usage);
    CHECK(m.find("/nonexistent/x.json") != std::string::npos);
}

TEST_CASE("--set overrides any field, and validation still applies") {
    auto doc = kjit::testing::default_document();
    config::apply_override(doc, "launch.block=128");
    config::apply_override(doc, "stages[2].formula=exp");
    config::apply_override(doc, "dtype=float64");
    config::apply_override(doc, "compile.fast_math=true");
    const auto p = family::load(doc);
    CHECK(p.launch.block == 128);
    CHECK(p.stages[2].formula == "exp");
    CHECK(p.type == config::dtype::float64);
    CHECK(p.compile.fast_math);

    config::apply_override(doc, "launch.block=100");
    CHECK(error_message([&] { (void)family::load(doc); }).find("launch.block: expected a multiple of 32") !=
          std::string::npos);
}

TEST_CASE("--set reaches a sweep's or tune's axis whose name has dots, and keys inside one where none has") {
    auto doc = kjit::testing::default_document();
    doc.json["sweep"] = {{"launch.block", {128, 256}}};
    doc.json["tune"] = {{"axes", {{"launch.block", {64, 128}}}}};
    config::apply_override(doc, "sweep.launch.block=[256]");
    config::apply_override(doc, "tune.axes.launch.block=[32,64]");
    CHECK(doc.json["sweep"] == json({{"launch.block", {256}}}));  // the axis, not sweep.launch.block
    CHECK(doc.json["tune"]["axes"] == json({{"launch.block", {32, 64}}}));
    config::apply_override(doc, "sweep.dtype=[\"float32\"]");  // a new axis, as written
    CHECK(doc.json["sweep"]["dtype"] == json({"float32"}));
    config::apply_override(doc, "launch.block=64");  // no "launch.block" key at the top: launch, then block
    CHECK(doc.json["launch"]["block"] == 64);
}

TEST_CASE("--set errors name the assignment") {
    auto doc = kjit::testing::default_document();
    CHECK(error_message([&] { config::apply_override(doc, "launch.block"); }, error_kind::usage).find("expected KEY=VALUE") !=
          std::string::npos);
    const auto m = error_message([&] { config::apply_override(doc, "stages[7].formula=exp"); });
    CHECK(m.find("--set stages[7].formula=exp: stages[7]: no such element (the list has 3)") != std::string::npos);
    CHECK(error_message([&] { config::apply_override(doc, "launch..block=1"); }).find("expected a key path") !=
          std::string::npos);
}

TEST_CASE("sweep: cartesian product, last axis fastest, every point validated") {
    auto doc = kjit::testing::default_document();
    doc.json["sweep"] = {{"dtype", {"float32", "float64"}}, {"launch.block", {128, 256, 512}}};
    const auto points = family::expand_sweep(doc);
    REQUIRE(points.size() == 6);
    // Axes nest in the order they are written: dtype outer, launch.block inner.
    CHECK(points[0].label == "dtype=float32 launch.block=128");
    CHECK(points[1].pipeline.launch.block == 256);
    CHECK(points[3].pipeline.type == config::dtype::float64);
    CHECK(points[5].label == "dtype=float64 launch.block=512");
    CHECK(points[4].values["launch.block"] == 256);
}

TEST_CASE("sweep: a bad point is named with its index and values before anything runs") {
    auto doc = kjit::testing::default_document();
    doc.json["sweep"] = {{"launch.block", {128, 100}}};
    const auto m = error_message([&] { (void)family::expand_sweep(doc); });
    CHECK(m.find("sweep point 1 (launch.block=100): launch.block: expected a multiple of 32") != std::string::npos);
    CHECK(m.ends_with("(a \"constraints\" list in the sweep block skips such points)"));
}

TEST_CASE("sweep: the point count is bounded, with no overflow; a shard makes only its own points") {
    auto doc = kjit::testing::default_document();
    json axes = json::object();
    for (int i = 0; i < 64; ++i) axes["params.p" + std::to_string(i)] = {1, 2};  // 2^64 points would wrap to 0
    doc.json["sweep"] = axes;
    CHECK(error_message([&] { (void)family::expand_sweep(doc); }).find("sweep: more than 1000000 points") != std::string::npos);
    // 10^6 points (the bound), of which one is asked for: fast, because the rest are never made.
    doc.json["sweep"] = {{"seed", json::array()}, {"launch.block", json::array()}};
    for (int i = 0; i < 1000; ++i) doc.json["sweep"]["seed"].push_back(i);
    for (int i = 0; i < 1000; ++i) doc.json["sweep"]["launch.block"].push_back(32 * (1 + i % 32));
    const auto start = std::chrono::steady_clock::now();
    const auto one = family::expand_sweep(doc, std::nullopt, std::vector<std::size_t>{123456});
    REQUIRE(one.size() == 1);
    CHECK(one[0].index == 123456);
    CHECK(one[0].pipeline.seed == 123);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    CHECK(config::sweep_size(doc) == 1000000);
    CHECK(error_message([&] { (void)family::expand_sweep(doc, std::nullopt, std::vector<std::size_t>{1000000}); })
              .find("sweep: has 1000000 points; there is no point 1000000") != std::string::npos);
}

TEST_CASE("sweep: constraints skip the points they refuse, which keep their numbers") {
    auto doc = kjit::testing::default_document();
    doc.json["sweep"] = {{"launch.block", {128, 256, 512, 1024}},
                         {"launch.vector_width", {1, 2, 4}},
                         {"constraints", {"block * vector_width <= 1024", "vector_width > 1 || block >= 256"}}};
    CHECK(config::sweep_size(doc) == 12);
    // Refused: 128 × 1 (the second), 512 × 4, 1024 × 2 and 1024 × 4 (the first).
    const std::vector<std::size_t> allowed{1, 2, 3, 4, 5, 6, 7, 9};
    CHECK(config::allowed_sweep_points(doc) == allowed);
    const auto points = family::expand_sweep(doc);
    REQUIRE(points.size() == allowed.size());
    for (std::size_t k = 0; k < points.size(); ++k) CHECK(points[k].index == allowed[k]);
    CHECK(points.back().label == "launch.block=1024 launch.vector_width=1");
    // A shard's indices: those the constraints refuse are skipped, not refused.
    const auto shard = family::expand_sweep(doc, std::nullopt, std::vector<std::size_t>{0, 8, 9});
    REQUIRE(shard.size() == 1);
    CHECK(shard[0].index == 9);
    // Bad constraints: one line naming the constraint's key path.
    doc.json["sweep"]["constraints"] = {"block <"};
    CHECK(error_message([&] { (void)config::sweep_size(doc); }).find("sweep.constraints[0]: column") != std::string::npos);
    doc.json["sweep"]["constraints"] = {"blocks > 1"};
    CHECK(error_message([&] { (void)family::expand_sweep(doc); }).find("sweep.constraints[0]: column 1:") != std::string::npos);
    doc.json["sweep"]["constraints"] = "block > 1";
    CHECK(error_message([&] { (void)family::expand_sweep(doc); }).find("sweep.constraints: expected a list of conditions") !=
          std::string::npos);
}

TEST_CASE("sweep: malformed axes") {
    auto doc = kjit::testing::default_document();
    doc.json["sweep"] = {{"dtype", json::array()}};
    CHECK(error_message([&] { (void)family::expand_sweep(doc); }).find("sweep.dtype: expected a non-empty list") !=
          std::string::npos);
}

TEST_CASE("variant labels say what was chosen") {
    const auto p = kjit::testing::pipeline_with([](json& j) {
        j["fusion"] = "separate";
        j["dtype"] = "float64";
        j["stages"][2]["formula"] = "exp";
    });
    CHECK(config::variant_label(p) == "separate float64 tanh=exp block=256 vec=2");
}

TEST_CASE("duplicate keys are rejected, naming the key path") {
    const auto m = error_message([] {
        (void)config::parse_document(R"({"name": "a", "inputs": {"w": {"fill": "uniform", "low": 1, "low": 2}}})", "d.json");
    });
    CHECK(m == "d.json: inputs.w.low: duplicate key (JSON would keep only the last)");
    CHECK(error_message([] { (void)config::parse_document(R"({"stages": [{}, {"op": 1, "op": 2}]})", "d.json"); }) ==
          "d.json: stages[1].op: duplicate key (JSON would keep only the last)");
}

TEST_CASE("comments are allowed; the README's config example parses as written") {
    const auto doc = config::parse_document("{\n  // a note\n  \"n\": 3 /* inline */\n}", "c.json");
    CHECK(doc.json["n"] == 3);
    const std::string readme = fs::read_file(std::string(KJIT_SOURCE_DIR) + "/README.md");
    const auto section = readme.find("## Config reference");
    const auto start = readme.find("```json\n", section) + 8;
    const auto example = readme.substr(start, readme.find("```", start) - start);
    const auto parsed = config::parse_document(example, "README.md");
    CHECK(family::expand_sweep(parsed).size() == 4);
}

TEST_CASE("hostile JSON: deep nesting, huge numbers, huge indices, invalid UTF-8, a directory") {
    const std::string deep = "{\"name\": " + std::string(70000, '[') + std::string(70000, ']') + "}";
    CHECK(error_message([&] { (void)config::parse_document(deep, "deep.json"); }).find("nested deeper than 64 levels") !=
          std::string::npos);
    CHECK(error_message([] { (void)config::parse_document(R"({"n": 1e400})", "big.json"); }) ==
          "big.json: invalid JSON: number overflow parsing '1e400'");
    auto doc = kjit::testing::default_document();
    CHECK(error_message([&] { config::apply_override(doc, "stages[99999999999999999999]=1"); })
              .find("list index 99999999999999999999 is too large") != std::string::npos);
    config::apply_override(doc, "stages[0].scale=1e400");
    CHECK(error_message([&] { (void)family::load(doc); }).find("stages[0].scale: expected a number, got \"1e400\"") !=
          std::string::npos);
    doc = kjit::testing::default_document();
    config::apply_override(doc, "name=\xff\xfe");
    CHECK(error_message([&] { (void)family::load(doc); }).find("name: expected a C identifier") != std::string::npos);
    doc = kjit::testing::default_document();
    config::apply_override(doc, "stages[0].input=\xff");
    CHECK(error_message([&] { (void)family::load(doc); }).find("stages[0].input: expected the name of an input") !=
          std::string::npos);
    CHECK(error_message([] { (void)config::load_document(KJIT_SOURCE_DIR); }, error_kind::usage).find("is a directory") !=
          std::string::npos);
}

TEST_CASE("every string, key and name has a bound, checked where it enters, with a message that stays a line") {
    // Names become CUDA identifiers: at most 64 characters (a 100,000-character one once reached NVRTC).
    for (const char* where : {"name", "inputs", "params"}) {
        CAPTURE(where);
        const std::string long_name(200, 'a');  // a key may have 256 characters
        const auto message = error_message([&] {
            (void)kjit::testing::pipeline_with([&](json& j) {
                if (std::string(where) == "name") j["name"] = long_name;
                else if (std::string(where) == "inputs") j["inputs"][long_name] = {{"fill", "uniform"}};
                else j["params"][long_name] = 1.0;
            });
        });
        CHECK(message.find("expected a C identifier") != std::string::npos);
        CHECK(message.size() < 400);
    }
    CHECK_NOTHROW((void)kjit::testing::pipeline_with([](json& j) { j["name"] = std::string(64, 'a'); }));
    // A key or string too long for any config is refused as the document is read.
    const std::string key = "{\"" + std::string(300, 'k') + "\": 1}";
    CHECK(error_message([&] { (void)config::parse_document(key, "k.json"); }) == "k.json: a key of 300 characters: at most 256");
    const std::string text = "{\"name\": \"" + std::string(20000, 'v') + "\"}";
    CHECK(error_message([&] { (void)config::parse_document(text, "s.json"); }) == "s.json: name: a string of 20000 characters: at most 16384");
    // A --set key path of 40,000 characters (a std::regex over it once overflowed the stack).
    auto doc = kjit::testing::default_document();
    const auto set = error_message([&] { config::apply_override(doc, std::string(40000, 'a') + "=1"); });
    CHECK(set.find("a key path of 40000 characters: at most 256") != std::string::npos);
    CHECK(set.size() < 200);
    // An op name is quoted in part.
    const auto op = error_message([&] {
        (void)kjit::testing::pipeline_with([](json& j) { j["stages"][2] = {{"op", std::string(100000, 'b')}}; });
    });
    CHECK(op.find("stages[2].op: expected one of") != std::string::npos);
    CHECK(op.size() < 1000);
}

TEST_CASE("the dtype table: one row per type, found by its type, its name what configs write") {
    REQUIRE(config::dtype_table().size() == 4);
    for (const auto& row : config::dtype_table()) {
        CAPTURE(std::string(row.name));
        CHECK(&config::info(row.type) == &row);  // rows in the enum's order
        CHECK(config::to_string(row.type) == row.name);
        const auto p = kjit::testing::pipeline_with([&](json& j) { j["dtype"] = std::string(row.name); });
        CHECK(p.type == row.type);
        CHECK(config::default_tolerance(p).rtol == row.rtol);
    }
    CHECK(config::info(config::dtype::float64).double_compute);
    CHECK(config::element_size(config::dtype::bfloat16) == 2);
}

TEST_CASE("compile.options: NVRTC options that read or write a file are refused, the others passed on") {
    for (const char* option : {"-include", "-include/etc/passwd", "--pre-include=x.h", "-I/tmp", "--time=/tmp/t.csv",
                               "--fdevice-time-trace=/tmp/t.json", "--create-pch=p"}) {
        CAPTURE(option);
        const auto message = error_message([&] {
            (void)kjit::testing::pipeline_with([&](json& j) { j["compile"]["options"] = {"-lineinfo", option}; });
        });
        CHECK(message.find("compile.options[1]: ") != std::string::npos);
        CHECK(message.find("names a file for NVRTC to read or write") != std::string::npos);
    }
    const auto p = kjit::testing::pipeline_with([](json& j) { j["compile"]["options"] = {"-lineinfo", "-DKJIT_X=1"}; });
    CHECK(p.compile.options == std::vector<std::string>{"-lineinfo", "-DKJIT_X=1"});
}
