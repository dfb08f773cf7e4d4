// Codegen: what each variant's source contains, the template override, and the host-side model of
// the generated kernels' index arithmetic (every element written exactly once, for any n).
#include <fstream>

#include "codegen/codegen.hpp"
#include "helpers.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {
codegen::generated_source generate(const config::pipeline& p) {
    return codegen::generate(p, codegen::template_set::embedded());
}
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("fused: one kernel reading both inputs, no intermediates, no headers") {
    const auto g = generate(config::from_json(kjit::testing::default_document()));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].name == "hidden_layer_fused");
    CHECK(g.kernels[0].reads == std::vector<std::string>{"greyscales", "weights"});
    CHECK(g.kernels[0].writes == "out");
    CHECK(g.temporaries.empty());
    CHECK(contains(g.source, "extern \"C\" __global__ void hidden_layer_fused("));
    CHECK(contains(g.source, "tanhf(x)"));
    CHECK_FALSE(contains(g.source, "\n#include"));
    CHECK_FALSE(contains(g.source, "op_tanh_exp"));
    CHECK_FALSE(contains(g.source, "{{"));
}

TEST_CASE("separate: one kernel per stage, chained through intermediate arrays") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["fusion"] = "separate"; }));
    REQUIRE(g.kernels.size() == 3);
    CHECK(g.kernels[0].reads == std::vector<std::string>{"greyscales"});
    CHECK(g.kernels[0].writes == "tmp0");
    CHECK(g.kernels[1].reads == std::vector<std::string>{"tmp0", "weights"});
    CHECK(g.kernels[1].writes == "tmp1");
    CHECK(g.kernels[2].reads == std::vector<std::string>{"tmp1"});
    CHECK(g.kernels[2].writes == "out");
    CHECK(g.temporaries == std::vector<std::string>{"tmp0", "tmp1"});
    CHECK(contains(g.source, "hidden_layer_s1_weigh("));
}

TEST_CASE("dtype and formula choose the functions") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) {
        j["dtype"] = "float64";
        j["stages"][2]["formula"] = "exp";
    }));
    CHECK(contains(g.source, "typedef double real;"));
    CHECK(contains(g.source, "exp(x)"));
    CHECK_FALSE(contains(g.source, "expf"));
    CHECK_FALSE(contains(g.source, "op_tanh_builtin"));
    CHECK(g.vector_width == 2);
    CHECK(contains(g.source, "__align__(16)"));
}

TEST_CASE("vector width 1 has no vector loop") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["launch"]["vector_width"] = 1; }));
    CHECK_FALSE(contains(g.source, "reinterpret_cast<const vec*>"));
    CHECK(contains(g.source, "for (long long i = done + first; i < n; i += stride)"));
}

TEST_CASE("an input read twice is one parameter") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["stages"][1]["by"] = "greyscales"; }));
    CHECK(g.kernels[0].reads == std::vector<std::string>{"greyscales"});
}

TEST_CASE("--templates DIR overrides the embedded templates") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "elementwise.cu.mustache") << "// custom {{name}}\n{{#kernels}}K={{kernel}}\n{{/kernels}}";
    std::ofstream(dir.path() / "copy.cu.mustache") << "// copy\n";
    const auto templates = codegen::template_set::from_directory(dir.path());
    const auto g = codegen::generate(config::from_json(kjit::testing::default_document()), templates);
    CHECK(g.source == "// custom hidden_layer\nK=hidden_layer_fused\n");
}

TEST_CASE("a broken template is a config error naming the file; a missing one a usage error") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "elementwise.cu.mustache") << "{{#kernels}} unterminated";
    std::ofstream(dir.path() / "copy.cu.mustache") << "";
    const auto templates = codegen::template_set::from_directory(dir.path());
    const auto p = config::from_json(kjit::testing::default_document());
    const auto m = kjit::testing::error_message([&] { (void)codegen::generate(p, templates); });
    CHECK(m.find("elementwise.cu.mustache") != std::string::npos);
    CHECK(m.find("template error") != std::string::npos);

    kjit::testing::temp_dir empty;
    kjit::testing::error_message([&] { (void)codegen::template_set::from_directory(empty.path()); }, error_kind::usage);
}

// The generated kernel, as host code: a vector loop over n / width groups, then a scalar tail, both
// grid-stride. Every element must be written exactly once for any n, grid, block and width.
TEST_CASE("index arithmetic of the generated loops covers every element once") {
    for (long long n : {1LL, 2LL, 3LL, 4LL, 5LL, 17LL, 4097LL, 100003LL}) {
        for (int width : {1, 2, 4}) {
            for (long long grid : {1LL, 3LL, 1000LL}) {
                const int block = 32;
                std::vector<int> writes(static_cast<std::size_t>(n), 0);
                const long long stride = grid * block;
                for (long long thread = 0; thread < stride; ++thread) {
                    long long done = 0;
                    if (width > 1) {
                        const long long nvec = n / width;
                        for (long long v = thread; v < nvec; v += stride)
                            for (int k = 0; k < width; ++k) ++writes[static_cast<std::size_t>(v * width + k)];
                        done = nvec * width;
                    }
                    for (long long i = done + thread; i < n; i += stride) ++writes[static_cast<std::size_t>(i)];
                }
                CAPTURE(n);
                CAPTURE(width);
                CAPTURE(grid);
                CHECK(std::all_of(writes.begin(), writes.end(), [](int w) { return w == 1; }));
            }
        }
    }
    // …and the template really has those loops.
    const auto g = generate(config::from_json(kjit::testing::default_document()));
    CHECK(contains(g.source, "const long long nvec = n / 4;"));
    CHECK(contains(g.source, "for (long long v = first; v < nvec; v += stride)"));
    CHECK(contains(g.source, "done = nvec * 4;"));
    CHECK(contains(g.source, "for (long long i = done + first; i < n; i += stride)"));
}
