// The float64 reference, the allclose comparison, ulps, and deterministic inputs.
#include <cmath>
#include <limits>

#include "family/rows/geometry.hpp"
#include "helpers.hpp"
#include "reference/reference.hpp"
#include "run/inputs.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {
/// The reference of `p` as its family computes it.
reference::expected_values reference_of(const config::pipeline& p, const reference::input_arrays& inputs) {
    return family::family_of(p).reference(p, inputs);
}
config::pipeline small(int n = 1000) {
    return kjit::testing::pipeline_with([&](json& j) { j["n"] = n; });
}
/// A reference with no error scale: plain allclose.
template <class Values>
reference::expected_values exact(const Values& values) {
    reference::expected_values ref;
    ref.values.assign(values.begin(), values.end());
    ref.scales.assign(values.size(), 0.0);
    return ref;
}
reference::typed_array as_float32(const std::vector<double>& values) {
    reference::typed_array a(config::dtype::float32, values.size());
    for (std::size_t i = 0; i < values.size(); ++i) a.set(i, values[i]);
    return a;
}
}  // namespace

TEST_CASE("reference computes tanh(greyscale / 255 · weight) in float64") {
    auto p = small(3);
    reference::input_arrays inputs;
    inputs.emplace("greyscales", reference::typed_array(config::dtype::float32, 3));
    inputs.emplace("weights", reference::typed_array(config::dtype::float32, 3));
    const double g[] = {0, 255, 100}, w[] = {0.5, 0.5, -2};
    for (std::size_t i = 0; i < 3; ++i) {
        inputs.at("greyscales").set(i, g[i]);
        inputs.at("weights").set(i, w[i]);
    }
    const auto ref = family::family_of(p).reference(p, inputs).values;
    CHECK(ref[0] == 0.0);
    CHECK(ref[1] == doctest::Approx(std::tanh(0.5)).epsilon(1e-15));
    CHECK(ref[2] == doctest::Approx(std::tanh(100.0 / 255 * -2)).epsilon(1e-15));
}

TEST_CASE("inputs follow the fill rules and are deterministic") {
    const auto p = small(100000);
    const auto a = run::make_inputs(p), b = run::make_inputs(p);
    const auto& g = a.at("greyscales");
    double mean_w = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        CHECK(g.get(i) == std::floor(g.get(i)));
        CHECK((g.get(i) >= 0 && g.get(i) < 255));
        CHECK(g.get(i) == b.at("greyscales").get(i));
        mean_w += a.at("weights").get(i);
    }
    CHECK(mean_w / 100000 == doctest::Approx(0.5).epsilon(0.01));
    const auto other = run::make_inputs(kjit::testing::pipeline_with([](json& j) {
        j["n"] = 100000;
        j["seed"] = 2;
    }));
    CHECK(other.at("weights").get(7) != a.at("weights").get(7));
}

TEST_CASE("a sorted input ascends along each row of its shape, the same values as unsorted") {
    const auto with = [](bool sorted) {
        return run::make_inputs(kjit::testing::pipeline_with([&](json& j) {
            j["shape"] = {3, 1000};
            j.erase("n");
            j["inputs"]["greyscales"]["sorted"] = sorted;
        })).at("greyscales");
    };
    const auto sorted = with(true), drawn = with(false);
    for (std::size_t r = 0; r < 3; ++r) {
        std::vector<double> row, expected;
        for (std::size_t c = 0; c < 1000; ++c) {
            row.push_back(sorted.get(r * 1000 + c));
            expected.push_back(drawn.get(r * 1000 + c));
        }
        CHECK(std::is_sorted(row.begin(), row.end()));
        std::sort(expected.begin(), expected.end());
        CHECK(row == expected);
    }
    CHECK(sorted.get(999) > sorted.get(1000));  // rows are sorted each on its own
}

TEST_CASE("compare: exact output passes, with zero errors") {
    const std::vector<double> ref{0.0, 0.25, -0.5};
    const auto result = reference::compare(as_float32(ref), exact(ref), {1e-6, 0, 0});
    CHECK(result.pass);
    CHECK(result.mismatches == 0);
    CHECK(result.max_abs_error == 0);
}

TEST_CASE("compare: NaN and Inf always fail and are counted") {
    const std::vector<double> ref{0.1, 0.2, 0.3};
    auto out = as_float32(ref);
    out.set(1, std::numeric_limits<double>::quiet_NaN());
    out.set(2, std::numeric_limits<double>::infinity());
    const auto result = reference::compare(out, exact(ref), {1, 1, 0});
    CHECK_FALSE(result.pass);
    CHECK(result.nan_count == 1);
    CHECK(result.inf_count == 1);
    CHECK(result.mismatches == 2);
    REQUIRE(result.first_bad.has_value());
    CHECK(*result.first_bad == 1);
}

TEST_CASE("compare: NaN and ±Inf pass only where the reference has the same value") {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    const std::vector<double> ref{nan, -inf, inf, 0.5, nan};
    auto out = as_float32({nan, -inf, inf, 0.5, nan});
    auto result = reference::compare(out, exact(ref), {1e-6, 0, 0});
    CHECK(result.pass);
    CHECK(result.nonfinite_as_reference == 4);
    CHECK(result.nan_count == 0);
    out.set(1, inf);  // the wrong infinity
    out.set(3, nan);  // NaN where the reference is finite
    out.set(4, 0.0);  // finite where the reference is NaN
    result = reference::compare(out, exact(ref), {1, 1, 0});
    CHECK_FALSE(result.pass);
    CHECK(result.mismatches == 3);
    CHECK(result.inf_count == 1);
    CHECK(result.nan_count == 1);
    CHECK(*result.first_bad == 1);
}

TEST_CASE("compare: allclose bounds, max errors and ulps") {
    const std::vector<double> ref{1.0, 1e-3};
    auto out = as_float32({1.0 + 4 * 0x1p-23, 1e-3});  // 4 ulp at 1.0 (float32 ulp above 1 is 2^-23)
    auto result = reference::compare(out, exact(ref), {5e-7, 0, 0});  // 4 ulp = 4.77e-7 ≤ 5e-7 · 1
    CHECK(result.pass);
    CHECK(result.max_ulp_error == doctest::Approx(4));
    CHECK(result.max_abs_error == doctest::Approx(4 * 0x1p-23));
    result = reference::compare(out, exact(ref), {1e-7, 0, 0});
    CHECK_FALSE(result.pass);
    CHECK(*result.first_bad == 0);
    CHECK(reference::compare(out, exact(ref), {0, 1e-6, 0}).pass);  // atol alone covers it
}

TEST_CASE("ulp_at per dtype") {
    CHECK(reference::ulp_at(1.0, config::dtype::float32) == 0x1p-23);
    CHECK(reference::ulp_at(1.0, config::dtype::float64) == 0x1p-52);
    CHECK(reference::ulp_at(-1.0, config::dtype::float32) == 0x1p-23);
    CHECK(reference::ulp_at(0.0, config::dtype::float32) == 0x1p-149);
    CHECK(reference::ulp_at(0.0, config::dtype::float64) == 0x1p-1074);  // a subnormal double
    CHECK(reference::ulp_at(std::numeric_limits<double>::infinity(), config::dtype::float32) == 0x1p-149);
    // Read from the bits, it agrees with the definition (ilogb, floored at the smallest normal).
    for (const auto type : {config::dtype::float32, config::dtype::float64, config::dtype::float16,
                            config::dtype::bfloat16}) {
        const int precision = type == config::dtype::float64 ? 53 : type == config::dtype::float32 ? 24
                              : type == config::dtype::float16 ? 11 : 8;
        const int min_exponent = type == config::dtype::float64 ? -1022 : type == config::dtype::float16 ? -14 : -126;
        for (const double value : {3.0, -0.7, 1e-300, 5e-324, 1e-40, 6e-8, 65504.0, 1e300, -0x1.fffffp+20}) {
            CAPTURE(value);
            const double expected = std::ldexp(1.0, std::max(std::ilogb(value), min_exponent) - (precision - 1));
            CHECK(reference::ulp_at(value, type) == expected);
        }
    }
}

// The exp formula evaluated in float32 on the host: its error near zero is absolute, hundreds of
// ulps (thousands with the GPU's expf). The reference's error scale, taken from the formula's own
// tree, sees the cancellation; plain allclose with the builtin's rtol does not admit it.
TEST_CASE("the seed's exp formula in float32: hundreds of ulps, inside the error scale and its atol only") {
    const auto p = kjit::testing::pipeline_with([](json& j) {
        j["n"] = 200000;
        j["stages"][2]["formula"] = "exp";
    });
    const auto inputs = run::make_inputs(p);
    const auto ref = family::family_of(p).reference(p, inputs);
    reference::typed_array out(config::dtype::float32, ref.values.size());
    for (std::size_t i = 0; i < ref.values.size(); ++i) {
        const float x = static_cast<float>(inputs.at("greyscales").get(i)) / 255.0f *
                        static_cast<float>(inputs.at("weights").get(i));
        const float ep = std::exp(x), em = std::exp(-x);
        out.set(i, (ep - em) / (ep + em));
    }
    const auto with_default = reference::compare(out, ref, config::default_tolerance(p));
    CHECK(with_default.pass);
    CHECK(with_default.max_ulp_error > 100);
    const auto builtin = config::default_tolerance(family::load(kjit::testing::default_document()));
    CHECK_FALSE(reference::compare(out, exact(ref.values), builtin).pass);
}

TEST_CASE("error scale: about |value| for the builtin, large where the exp formula cancels") {
    auto p = kjit::testing::pipeline_with([](json& j) { j["n"] = 1; });
    reference::input_arrays inputs;
    inputs.emplace("greyscales", reference::typed_array(config::dtype::float32, 1));
    inputs.emplace("weights", reference::typed_array(config::dtype::float32, 1));
    inputs.at("greyscales").set(0, 1);
    inputs.at("weights").set(0, 0.01);  // x ≈ 4e-5: e^x − e^−x cancels
    const auto builtin = family::family_of(p).reference(p, inputs);
    CHECK(builtin.scales[0] > std::fabs(builtin.values[0]));
    CHECK(builtin.scales[0] < 10 * std::fabs(builtin.values[0]));
    p = kjit::testing::pipeline_with([](json& j) {
        j["n"] = 1;
        j["stages"][2]["formula"] = "exp";
    });
    const auto exp = family::family_of(p).reference(p, inputs);
    CHECK(exp.values[0] == builtin.values[0]);  // the same exact definition
    CHECK(exp.scales[0] > 1000 * builtin.scales[0]);
}

TEST_CASE("half and bfloat16 storage round to nearest even") {
    reference::typed_array half(config::dtype::float16, 3), brain(config::dtype::bfloat16, 3);
    half.set(0, 1 + 0x1p-11);  // halfway between 1 and 1 + 2^-10: ties to even (1)
    half.set(1, 1 + 3 * 0x1p-11);
    half.set(2, 70000);  // above float16's 65504
    CHECK(half.get(0) == 1.0);
    CHECK(half.get(1) == 1 + 0x1p-9);
    CHECK(std::isinf(half.get(2)));
    brain.set(0, 1 + 0x1p-8);
    brain.set(1, 1 + 3 * 0x1p-8);
    brain.set(2, std::numeric_limits<double>::quiet_NaN());
    CHECK(brain.get(0) == 1.0);
    CHECK(brain.get(1) == 1 + 0x1p-6);
    CHECK(std::isnan(brain.get(2)));
    CHECK(half.bytes() == 6);
    CHECK(reference::ulp_at(1.0, config::dtype::float16) == 0x1p-10);
    CHECK(reference::ulp_at(1.0, config::dtype::bfloat16) == 0x1p-7);
    CHECK(reference::ulp_at(0.0, config::dtype::float16) == 0x1p-24);
}

// ---- row reductions, evaluated a row at a time

namespace {
/// A pipeline over `shape` with one input "a" and the stages given.
config::pipeline rows_of(long long rows, long long cols, const json& stages) {
    json j = {{"name", "t"},
              {"shape", {rows, cols}},
              {"inputs", {{"a", {{"fill", "uniform"}}}}},
              {"params", {{"eps", 0.0}}},
              {"stages", stages}};
    return family::load({j, "t.json"});
}
reference::input_arrays input_a(const std::vector<double>& values) {
    reference::input_arrays inputs;
    inputs.emplace("a", as_float32(values));
    return inputs;
}
const json softmax_stages = {{{"op", "reduce"}, {"fn", "max"}, {"as", "m"}, {"input", "a"}},
                             {{"op", "map"}, {"expr", "exp(x - m)"}},
                             {{"op", "reduce"}, {"fn", "sum"}, {"as", "s"}},
                             {{"op", "map"}, {"expr", "x / s"}}};
}  // namespace

TEST_CASE("softmax by rows: hand-computed rows, a row of one element, each row on its own") {
    // Rows of 3: [1, 2, 3] and [0, 0, 0] (a row's max and sum do not leak into the next).
    const auto ref = reference_of(rows_of(2, 3, softmax_stages), input_a({1, 2, 3, 0, 0, 0}));
    const double total = std::exp(-2.0) + std::exp(-1.0) + 1;
    CHECK(ref.values[0] == doctest::Approx(std::exp(-2.0) / total).epsilon(1e-15));
    CHECK(ref.values[2] == doctest::Approx(1 / total).epsilon(1e-15));
    for (std::size_t i = 3; i < 6; ++i) CHECK(ref.values[i] == doctest::Approx(1.0 / 3).epsilon(1e-15));
    const auto single = reference_of(rows_of(3, 1, softmax_stages), input_a({-5, 0, 7}));
    for (std::size_t i = 0; i < 3; ++i) CHECK(single.values[i] == 1.0);
    // 33 equal elements: a row length that is no multiple of a vector width or a block.
    const auto odd = reference_of(rows_of(1, 33, softmax_stages), input_a(std::vector<double>(33, 2.5)));
    for (std::size_t i = 0; i < 33; ++i) CHECK(odd.values[i] == doctest::Approx(1.0 / 33).epsilon(1e-15));
}

TEST_CASE("a causal mask: masked entries get 0, a fully masked row NaN (as torch.softmax of all -inf)") {
    json stages = softmax_stages;
    stages[0].erase("input");
    const json mask = {{"op", "map"}, {"input", "a"}, {"expr", "col > row || row == 2 ? -inf : x"}};
    stages.insert(stages.begin(), mask);
    const auto ref = reference_of(rows_of(3, 3, stages), input_a({1, 2, 3, 4, 5, 6, 7, 8, 9}));
    CHECK(ref.values[0] == 1.0);  // row 0 sees only column 0
    CHECK(ref.values[1] == 0.0);
    CHECK(ref.values[2] == 0.0);
    CHECK(ref.values[3] == doctest::Approx(std::exp(-1.0) / (1 + std::exp(-1.0))).epsilon(1e-15));
    CHECK(ref.values[4] == doctest::Approx(1 / (1 + std::exp(-1.0))).epsilon(1e-15));
    CHECK(ref.values[5] == 0.0);
    for (std::size_t i = 6; i < 9; ++i) CHECK(std::isnan(ref.values[i]));  // row 2: every entry masked
}

TEST_CASE("separate, a masked -inf stored between kernels adds no rounding: every error scale stays finite") {
    json stages = softmax_stages;
    stages[0].erase("input");
    const json mask = {{"op", "map"}, {"input", "a"}, {"expr", "col > row ? -inf : x"}};
    stages.insert(stages.begin(), mask);
    json j = {{"name", "t"}, {"shape", {3, 3}}, {"inputs", {{"a", {{"fill", "uniform"}}}}}, {"stages", stages}, {"fusion", "separate"}};
    const auto p = family::load({j, "t.json"});
    const auto ref = reference_of(p, input_a({1, 2, 3, 4, 5, 6, 7, 8, 9}));
    for (std::size_t i = 0; i < 9; ++i) {
        CAPTURE(i);
        CHECK(std::isfinite(ref.scales[i]));
        CHECK(std::isfinite(reference::allowed_error(config::default_tolerance(p), ref.values[i], ref.scales[i])));
    }
    CHECK(ref.scales[1] == 0.0);  // row 0, column 1: masked, exactly 0
}

TEST_CASE("layer norm by rows: the mean, the variance by a reduce of an expression, then the map") {
    const json stages = {{{"op", "reduce"}, {"fn", "mean"}, {"as", "mu"}, {"input", "a"}},
                         {{"op", "reduce"}, {"fn", "mean"}, {"expr", "(x - mu) * (x - mu)"}, {"as", "var"}},
                         {{"op", "map"}, {"expr", "(x - mu) / sqrt(var + eps)"}}};
    const auto ref = reference_of(rows_of(1, 4, stages), input_a({1, 2, 3, 4}));
    const double sd = std::sqrt(1.25);  // mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4
    CHECK(ref.values[0] == doctest::Approx(-1.5 / sd).epsilon(1e-15));
    CHECK(ref.values[3] == doctest::Approx(1.5 / sd).epsilon(1e-15));
}

TEST_CASE("a final reduce: one value per row, a sum's error scale from the kernels' order of additions") {
    const auto p = rows_of(2, 4, json::array({{{"op", "reduce"}, {"fn", "sum"}, {"expr", "x * x"}, {"input", "a"}}}));
    const auto ref = family::family_of(p).reference(p, input_a({1, -2, 3, 0.5, 0, 0, 0, 4}));
    REQUIRE(ref.values.size() == 2);
    CHECK(ref.values[0] == 14.25);
    CHECK(ref.values[1] == 16);
    // Each square is rounded once (its scale is |x²|), then the sum: depth × Σ|x²| on top.
    const double depth = static_cast<double>(family::rows::sum_depths(p).depth);
    CHECK(depth == 4 + 5);  // one vector of 4 per thread, then its warp's tree (a short row: a warp each)
    CHECK(ref.scales[0] == doctest::Approx(14.25 + depth * 14.25));
    CHECK(ref.scales[1] == doctest::Approx(16 + depth * 16));
}

TEST_CASE("an online sum: the same value, and the rescales' roundings in its error scale") {
    const json stages = {{{"op", "reduce"}, {"fn", "max"}, {"as", "m"}, {"input", "a"}},
                         {{"op", "reduce"}, {"fn", "sum"}, {"expr", "exp(x - m)"}, {"formula", "online"}}};
    const auto online = rows_of(1, 4, stages);
    json classic_stages = stages;
    classic_stages[1]["formula"] = "classic";
    const auto classic = rows_of(1, 4, classic_stages);
    const auto a = input_a({0, 1, 2, 3});
    const auto with_online = family::family_of(online).reference(online, a), with_classic = family::family_of(classic).reference(classic, a);
    const double sum = 1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0);
    CHECK(with_online.values[0] == doctest::Approx(sum).epsilon(1e-15));
    CHECK(with_online.values[0] == with_classic.values[0]);
    // Both carry each exp's own error; the online sum's chain of roundings is 5 times as long.
    const double chain = static_cast<double>(family::rows::sum_depths(online).depth);
    CHECK(with_online.scales[0] - with_classic.scales[0] == doctest::Approx(4 * chain * sum));
}

TEST_CASE("a max passes on the largest error of the row's values; min and mean by hand") {
    const auto max_of = [](const std::string& expr, const std::string& fn) {
        const auto p = rows_of(1, 3, json::array({{{"op", "reduce"}, {"fn", fn}, {"expr", expr}, {"input", "a"}}}));
        return family::family_of(p).reference(p, input_a({1, 4, 2}));
    };
    const auto exact_max = max_of("x", "max");
    CHECK(exact_max.values[0] == 4);
    CHECK(exact_max.scales[0] == 0);  // inputs are exact
    const auto rounded_max = max_of("x / 3", "max");
    CHECK(rounded_max.values[0] == doctest::Approx(4.0 / 3));
    CHECK(rounded_max.scales[0] == doctest::Approx(4.0 / 3));  // the division's own rounding
    CHECK(max_of("x", "min").values[0] == 1);
    CHECK(max_of("x < 2 ? 0 / 0 : x", "max").values[0] == 4);  // a NaN loses, as in the kernels' fmaxf
    CHECK(max_of("x > 2 ? 0 / 0 : x", "min").values[0] == 1);
    CHECK(max_of("x", "mean").values[0] == doctest::Approx(7.0 / 3));
}

TEST_CASE("a per-column input: the same values for every row") {
    json j = {{"name", "t"},
              {"shape", {2, 3}},
              {"inputs", {{"a", {{"fill", "uniform"}}}, {"g", {{"fill", "uniform"}, {"per", "column"}}}}},
              {"stages",
               {{{"op", "reduce"}, {"fn", "sum"}, {"as", "s"}, {"input", "a"}}, {{"op", "map"}, {"expr", "x / s * g"}}}}};
    const auto p = family::load({j, "t.json"});
    reference::input_arrays inputs;
    inputs.emplace("a", as_float32({1, 1, 2, 3, 3, 2}));
    inputs.emplace("g", as_float32({10, 20, 30}));
    const auto ref = family::family_of(p).reference(p, inputs);
    CHECK(ref.values[0] == doctest::Approx(1.0 / 4 * 10));
    CHECK(ref.values[2] == doctest::Approx(2.0 / 4 * 30));
    CHECK(ref.values[3] == doctest::Approx(3.0 / 8 * 10));  // the second row starts at g's first value
    CHECK(ref.values[5] == doctest::Approx(2.0 / 8 * 30));
}
