// Codegen: each variant's kernels, what they read and write, and the template override. The sources
// themselves are golden files (test_golden.cpp); their loops run as host code in test_generated_host.cpp.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "codegen/codegen.hpp"
#include "helpers.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {
family::program generate(const config::pipeline& p) {
    return family::plan(p, codegen::template_set::embedded());
}

/// A kernel's buffers by what it does with them, from its arguments: the arrays it reads, the
/// row values it reads, what it writes first and the row values it writes besides.
std::vector<std::string> buffers_where(const family::kernel& k, bool written, bool row_value) {
    std::vector<std::string> names;
    for (const auto& a : k.args)
        if (a.what == family::argument::kind::buffer && a.written == written &&
            a.cuda_name.starts_with("kjit_row_") == row_value)
            names.push_back(a.name);
    return names;
}
std::vector<std::string> reads(const family::kernel& k) { return buffers_where(k, false, false); }
std::vector<std::string> row_reads(const family::kernel& k) { return buffers_where(k, false, true); }
std::string writes(const family::kernel& k) {
    for (const auto& a : k.args)
        if (a.written) return a.name;
    return "";
}
std::vector<std::string> also_writes(const family::kernel& k) {
    auto names = buffers_where(k, true, true);
    names.erase(std::remove(names.begin(), names.end(), writes(k)), names.end());
    return names;
}
/// The program's buffers of one role, in order.
std::vector<std::string> buffers(const family::program& g, family::buffer_role role) {
    std::vector<std::string> names;
    for (const auto& b : g.buffers)
        if (b.role == role) names.push_back(b.name);
    return names;
}
/// How many times a kernel reads its one array of `p`'s n elements: its bytes read over the array's.
double passes(const config::pipeline& p, const family::kernel& k) {
    return k.bytes_read / static_cast<double>(p.n * static_cast<long long>(config::element_size(p.type)));
}
}  // namespace

TEST_CASE("fused: one kernel reading both inputs, no intermediates, no headers") {
    const auto g = generate(family::load(kjit::testing::default_document()));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].name == "hidden_layer_fused");
    CHECK(reads(g.kernels[0]) == std::vector<std::string>{"greyscales", "weights"});
    CHECK(writes(g.kernels[0]) == "out");
    CHECK(buffers(g, family::buffer_role::temporary).empty());
}

TEST_CASE("separate: one kernel per stage, chained through intermediate arrays") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["fusion"] = "separate"; }));
    REQUIRE(g.kernels.size() == 3);
    CHECK(reads(g.kernels[0]) == std::vector<std::string>{"greyscales"});
    CHECK(writes(g.kernels[0]) == "tmp0");
    CHECK(reads(g.kernels[1]) == std::vector<std::string>{"tmp0", "weights"});
    CHECK(writes(g.kernels[1]) == "tmp1");
    CHECK(reads(g.kernels[2]) == std::vector<std::string>{"tmp1"});
    CHECK(writes(g.kernels[2]) == "out");
    CHECK(buffers(g, family::buffer_role::temporary) == std::vector<std::string>{"tmp0", "tmp1"});
}

TEST_CASE("dtype and formula choose the functions") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) {
        j["dtype"] = "float64";
        j["stages"][2]["formula"] = "exp";
    }));
    CHECK(g.vector_width == 2);
}


TEST_CASE("an input read twice is one parameter") {
    const auto g = generate(kjit::testing::pipeline_with([](json& j) { j["stages"][1]["by"] = "greyscales"; }));
    CHECK(reads(g.kernels[0]) == std::vector<std::string>{"greyscales"});
}

TEST_CASE("--templates DIR overrides the embedded templates") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "elementwise.cu.mustache") << "// custom {{name}}\n{{#kernels}}void {{kernel}}(\n{{/kernels}}";
    std::ofstream(dir.path() / "copy.cu.mustache") << "// copy\n";
    std::ofstream(dir.path() / "rows.cu.mustache") << "";
    const auto templates = codegen::template_set::from_directory(dir.path());
    const auto g = family::plan(family::load(kjit::testing::default_document()), templates);
    CHECK(g.source == "// custom hidden_layer\nvoid hidden_layer_fused(\n");
}

TEST_CASE("a template that renders without a kernel (a typo like {{kernel}, or empty) is a template error") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "copy.cu.mustache") << "";
    std::ofstream(dir.path() / "rows.cu.mustache") << "";
    const auto p = family::load(kjit::testing::default_document());
    for (const std::string& text : {std::string("{{#kernels}}extern \"C\" __global__ void {{kernel}({{name}})\n{{/kernels}}"), std::string()}) {
        std::ofstream(dir.path() / "elementwise.cu.mustache") << text;
        const auto templates = codegen::template_set::from_directory(dir.path());
        const auto m = kjit::testing::error_message([&] { (void)family::plan(p, templates); });
        CAPTURE(m);
        CHECK(m.find("defines no kernel 'hidden_layer_fused('") != std::string::npos);
    }
}

TEST_CASE("a broken template is a config error naming the file; a missing one a usage error") {
    kjit::testing::temp_dir dir;
    std::ofstream(dir.path() / "elementwise.cu.mustache") << "{{#kernels}} unterminated";
    std::ofstream(dir.path() / "copy.cu.mustache") << "";
    std::ofstream(dir.path() / "rows.cu.mustache") << "";
    const auto templates = codegen::template_set::from_directory(dir.path());
    const auto p = family::load(kjit::testing::default_document());
    const auto m = kjit::testing::error_message([&] { (void)family::plan(p, templates); });
    CHECK(m.find("elementwise.cu.mustache") != std::string::npos);
    CHECK(m.find("template error") != std::string::npos);

    kjit::testing::temp_dir empty;
    kjit::testing::error_message([&] { (void)codegen::template_set::from_directory(empty.path()); }, error_kind::usage);
}

// ---- row kernels

namespace {
config::pipeline shipped(const std::string& name, const std::string& fusion = "fused") {
    auto doc = config::load_document(kjit::testing::config_path(name));
    doc.json["fusion"] = fusion;
    return family::load(doc);
}
}  // namespace

TEST_CASE("fused softmax: one row kernel, a block per row, the row read once and written once") {
    const auto g = generate(shipped("softmax.json"));
    REQUIRE(g.kernels.size() == 1);
    const auto& k = g.kernels[0];
    CHECK(g.family == "rows");
    CHECK(writes(k) == "out");
    CHECK_FALSE(g.result_per_row);
    CHECK(reads(k) == std::vector<std::string>{"logits"});
    CHECK(row_reads(k).empty());
    CHECK(buffers(g, family::buffer_role::temporary).empty());
    CHECK(buffers(g, family::buffer_role::row_value).empty());
}

TEST_CASE("separate softmax: a kernel per stage; row values and the intermediate in memory") {
    const auto g = generate(shipped("softmax.json", "separate"));
    REQUIRE(g.kernels.size() == 4);
    CHECK(buffers(g, family::buffer_role::row_value) == std::vector<std::string>{"m", "s"});
    CHECK(buffers(g, family::buffer_role::temporary) == std::vector<std::string>{"tmp1"});
    CHECK(buffers(g, family::buffer_role::row_value).front() == writes(g.kernels[0]));  // a row value
    CHECK(writes(g.kernels[0]) == "m");
    CHECK(reads(g.kernels[1]) == std::vector<std::string>{"logits"});
    CHECK(row_reads(g.kernels[1]) == std::vector<std::string>{"m"});
    CHECK(writes(g.kernels[1]) == "tmp1");
    CHECK(reads(g.kernels[2]) == std::vector<std::string>{"tmp1"});  // x flows past the reduce
    CHECK(row_reads(g.kernels[3]) == std::vector<std::string>{"s"});
    CHECK(writes(g.kernels[3]) == "out");
}

TEST_CASE("a final reduce writes one stored value per row; a mean divides by cols") {
    auto doc = config::load_document(kjit::testing::config_path("row_sum.json"));
    doc.json["stages"][0]["fn"] = "mean";
    const auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.result_per_row);
    CHECK(g.buffers.back().bytes == 4096 * sizeof(float));  // one per row
}



TEST_CASE("row_cache \"none\": no row in registers; each pass reads the row again, and counts its bytes") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["row_cache"] = "none";
    const auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(passes(family::load(doc), g.kernels[0]) == 2);  // the max with the sum (online, as auto takes it here), the store
    doc.json["stages"][2]["formula"] = "classic";
    CHECK(passes(family::load(doc), generate(family::load(doc)).kernels[0]) == 3);  // the max, the sum, the store
    // A separate kernel passes over its row once, whatever the cache.
    doc.json["fusion"] = "separate";
    for (const auto& k : generate(family::load(doc)).kernels) CHECK((reads(k).size() * 4096 + row_reads(k).size()) * 4096 * 4 == k.bytes_read);
}

TEST_CASE("row_cache \"shared\": the row copied to shared memory once, every pass reading it there") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["row_cache"] = "shared";
    auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(passes(family::load(doc), g.kernels[0]) == 1);
    CHECK(g.kernels[0].shared_bytes == 4096 * 4);
    // An odd row of bfloat16: the 16-byte vectors that hold any of it, 5 where it starts on a vector's last element.
    doc.json["dtype"] = "bfloat16";
    doc.json["shape"] = {3, 33};
    g = generate(family::load(doc));
    CHECK(g.kernels[0].shared_bytes == 5 * 16);
    CHECK(g.source.find("kjit_copy_to_shared(vec* shared, const vec* global)\n{\n    asm volatile(\"cp.async") != std::string::npos);
    // A 2-byte vector is copied through a register: cp.async takes 4 bytes or more.
    doc.json["launch"]["vector_width"] = 1;
    g = generate(family::load(doc));
    CHECK(g.kernels[0].shared_bytes == 33 * 2);
    CHECK(g.source.find("kjit_copy_to_shared(vec* shared, const vec* global)\n{\n    *shared = kjit_read_once(global);") != std::string::npos);
    // Separate: each kernel holds the row it reads.
    doc.json["fusion"] = "separate";
    for (const auto& k : generate(family::load(doc)).kernels) CHECK(k.shared_bytes == 33 * 2);
}

TEST_CASE("launch.grid on a row kernel: its blocks loop over the rows; with row_cache \"shared\" the next row is copied during this one") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["launch"]["grid"] = "resident";
    doc.json["launch"]["row_cache"] = "none";
    auto g = generate(family::load(doc));
    CHECK(g.kernels[0].shared_bytes == 0);
    // A row in registers: the next row's loads are issued before this row is worked on.
    doc.json["launch"]["row_cache"] = "values";
    g = generate(family::load(doc));
    doc.json["launch"]["row_cache"] = "shared";
    g = generate(family::load(doc));
    CHECK(g.kernels[0].shared_bytes == 2 * 4096 * 4);  // this row and the next
    // "auto" (the default): a block per row, no loop.
    doc.json["launch"]["grid"] = "auto";
    g = generate(family::load(doc));
    CHECK(g.kernels[0].shared_bytes == 4096 * 4);
}


TEST_CASE("formula \"online\": the max and the sum in one pass, by a running max and a rescaled sum") {
    auto doc = config::load_document(kjit::testing::config_path("softmax.json"));
    doc.json["stages"][2]["formula"] = "online";
    auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(passes(family::load(doc), g.kernels[0]) == 1);
    doc.json["launch"]["row_cache"] = "none";
    CHECK(passes(family::load(doc), generate(family::load(doc)).kernels[0]) == 2);  // one read fewer than classic's 3

    // Separate: the max's kernel computes and writes the sum too; the sum has no kernel.
    doc.json["fusion"] = "separate";
    g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 3);
    CHECK(writes(g.kernels[0]) == "m");
    CHECK(also_writes(g.kernels[0]) == std::vector<std::string>{"s"});
    CHECK(g.kernels[0].stages == std::vector<std::size_t>{0, 2});
    CHECK(buffers(g, family::buffer_role::row_value) == std::vector<std::string>{"m", "s"});
    CHECK(row_reads(g.kernels[2]) == std::vector<std::string>{"s"});

    // Fast math spells the rescale as the stages spell exp.
    doc.json["compile"]["fast_math"] = true;
}




TEST_CASE("row_cache \"shared\" in a cluster: each block copies and reads its share of the row") {
    auto doc = config::load_document(kjit::testing::config_path("layernorm.json"));
    doc.json["shape"] = {1024, 32768};
    doc.json["launch"]["row_cache"] = "shared";
    doc.json["launch"]["block"] = 512;
    doc.json["launch"]["cluster"] = 2;
    const auto g = generate(family::load(doc));
    REQUIRE(g.kernels.size() == 1);
    CHECK(g.kernels[0].shared_bytes == 32768 * 4 / 2);
}

TEST_CASE("fitted: a long expression broken after its lowest operators into lines of 100 columns, aligned as clang-format aligns them") {
    CHECK(codegen::fitted("x + y * z", 11) == "x + y * z");  // short: as it is
    std::string terms;
    for (int i = 1; i <= 6; ++i) terms += (i > 1 ? " + " : "") + std::to_string(i) + ".0f * __tanhf(x * 0.0333333333333f)";
    const std::string code = "x * (" + terms + ")";
    const std::string text = codegen::fitted(code, 11);
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE(lines.size() >= 3);
    CHECK(lines[0] == "x *");  // the top level's only operator, the fewest parentheses in
    CHECK(lines[1].starts_with(std::string(11, ' ') + "(1.0f * __tanhf("));  // under x
    CHECK(lines[2].starts_with(std::string(12, ' ') + "3.0f"));  // in the parenthesis: two terms fit a line
    for (std::size_t i = 1; i < lines.size(); ++i) CHECK(lines[i].size() <= 100);
    CHECK(lines[1].ends_with(" +"));  // broken after the parenthesis's lowest operator, not the *
    std::string joined = lines[0];
    for (std::size_t i = 1; i < lines.size(); ++i) joined += " " + lines[i].substr(lines[i].find_first_not_of(' '));
    CHECK(joined == code);  // nothing but the breaks changed
    // a conditional stays on one line (clang-format's rules for it are its own), as does a line
    // no break fits
    const std::string masked = "col > row ? -__int_as_float(0x7f800000) : " + code;
    CHECK(codegen::fitted(masked, 11) == masked);
    const std::string unbroken = "f(" + std::string(120, 'a') + ")";
    CHECK(codegen::fitted(unbroken, 11) == unbroken);
}

TEST_CASE("comment_wrapped: a comment's words go on in further // lines within 100 columns") {
    CHECK(codegen::comment_wrapped("// the score:", "x.") == "// the score: x.");
    std::string words;
    for (int i = 0; i < 30; ++i) words += (i ? " " : "") + std::string("word") + std::to_string(i);
    const std::string text = codegen::comment_wrapped("// the score:", words);
    std::istringstream in(text);
    int count = 0;
    for (std::string line; std::getline(in, line); ++count) {
        CHECK(line.size() <= 100);
        CHECK(line.starts_with(count == 0 ? "// the score: word0" : "// word"));
    }
    CHECK(count >= 3);
    CHECK(codegen::heading("k", "what") == "// ---- k: what");
}

TEST_CASE("reindented: continued lines as kernel_templates/.clang-format indents them, at any depth") {
    // In `    return …` (the code at column 11 of a statement indented by 4): a break right after a
    // parenthesis indents 8 from the content around it (4 + 8 at the top), else a line aligns
    // with the content of the innermost open parenthesis. The whitespace given is replaced.
    CHECK(codegen::reindented("(\n  a &&\n b)", 11, 4) == "(\n            a &&\n            b)");
    CHECK(codegen::reindented("((\na &&\nb) ||\n(c &&\nd))", 11, 4) ==
          "((\n                    a &&\n                    b) ||\n            (c &&\n             d))");
    // three deep: the inner group's break is 8 in from the content of the one around it (13)
    CHECK(codegen::reindented("(a ||\n((\nb &&\nc) ||\n(d)))", 11, 4) ==
          "(a ||\n            ((\n                     b &&\n                     c) ||\n             (d)))");
    CHECK(codegen::reindented("f(x) + g(y)", 11, 4) == "f(x) + g(y)");  // one line: as it is
}
