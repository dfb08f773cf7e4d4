// The generated CUDA, compiled as host C++ (float32 and float64 sources include no headers) with a
// small shim, and run over a grid of "threads" one after another: its result must match the
// float64 reference on every element. This runs the vector loop, the scalar tail, and the unaligned
// fallback (arrays offset by one element; UBSan aborts if a misaligned vector load is attempted).
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "codegen/codegen.hpp"
#include "helpers.hpp"
#include "reference/reference.hpp"
#include "run/inputs.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {

// What CUDA provides and host C++ does not.
constexpr const char* k_shim = R"(#include <math.h>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>
struct kjit_index { unsigned x = 0; };
static kjit_index threadIdx, blockIdx, blockDim, gridDim;
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__ __restrict
#define __align__(n) alignas(n)
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
#include <cstring>
inline float __int_as_float(int bits) { float f; std::memcpy(&f, &bits, sizeof f); return f; }
inline double __longlong_as_double(long long bits) { double d; std::memcpy(&d, &bits, sizeof d); return d; }
)";

/// main(): reads the inputs, runs every kernel over 3 blocks of 32 threads, writes out.bin.
std::string host_main(const config::pipeline& p, const family::program& g) {
    std::ostringstream m;
    m << "static std::vector<store_t> array(long long n, int offset) { return std::vector<store_t>(n + offset + 8, "
         "store_t(NAN)); }\n"
         "int main(int, char** argv) {\n"
         "    const std::string dir = argv[1];\n"
         "    const long long n = std::atoll(argv[2]);\n"
         "    const int offset = std::atoi(argv[3]);\n";
    for (const auto& in : p.inputs)
        m << "    auto buffer_" << in.name << " = array(n, offset);\n    store_t* " << in.name << " = buffer_" << in.name
          << ".data() + offset;\n    std::ifstream(dir + \"/" << in.name << ".bin\", std::ios::binary).read((char*)"
          << in.name << ", n * sizeof(store_t));\n";
    std::vector<std::string> written;
    for (const auto& b : g.buffers)
        if (b.role != family::buffer_role::input) written.push_back(b.name);
    for (const auto& name : written)
        m << "    auto buffer_" << name << " = array(n, offset);\n    store_t* " << name << " = buffer_" << name
          << ".data() + offset;\n";
    for (const auto& k : g.kernels) {
        std::vector<std::string> args;  // in the program's order: buffers, scalars, then sizes
        for (const auto& a : k.args) {
            char text[40];
            if (a.what == family::argument::kind::buffer) args.push_back(a.name);
            if (a.what == family::argument::kind::size) args.push_back(a.name == "n" ? "n" : std::to_string(a.size));
            if (a.what != family::argument::kind::scalar) continue;
            std::snprintf(text, sizeof text, "(real)%.17g", config::find_scalar(p, a.name)->value);
            args.emplace_back(text);
        }
        m << "    gridDim.x = 3; blockDim.x = 32;\n"
             "    for (unsigned b = 0; b < gridDim.x; ++b)\n"
             "        for (unsigned t = 0; t < blockDim.x; ++t) {\n"
             "            blockIdx.x = b; threadIdx.x = t;\n"
             "            "
          << k.name << "(" << join(args, ", ") << ");\n        }\n";
    }
    m << "    std::ofstream(dir + \"/out.bin\", std::ios::binary).write((const char*)out, n * sizeof(store_t));\n}\n";
    return m.str();
}

int shell(const std::string& command) {
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// `text` compiled as host C++ (with `flags`) in `dir`: the program's path. A compile error fails
/// the test with the compiler's log.
std::string host_program(const kjit::testing::temp_dir& dir, const std::string& text, const std::string& flags = "") {
    const std::string source = (dir.path() / "program.cpp").string(), program = (dir.path() / "program").string(),
                      log = (dir.path() / "build.log").string();
    std::ofstream(source) << text;
    const int built = shell("c++ -std=c++17 -O1 -w " + flags + " -o '" + program + "' '" + source + "' > '" + log + "' 2>&1");
    INFO(fs::read_file(log));
    REQUIRE(built == 0);
    return program;
}

/// Compiles p's generated source for the host, runs it with arrays offset by `offset` elements,
/// and compares with the reference.
void check_on_host(const config::pipeline& p) {
    kjit::testing::temp_dir dir;
    const auto g = family::plan(p, codegen::template_set::embedded());
    REQUIRE(g.headers.empty());
    const std::string program = host_program(dir, k_shim + g.source + host_main(p, g),
                                             "-fsanitize=alignment -fno-sanitize-recover=all");
    const std::string log = (dir.path() / "log").string();
    const auto inputs = run::make_inputs(p);
    for (const auto& [name, array] : inputs)
        std::ofstream(dir.path() / (name + ".bin"), std::ios::binary)
            .write(static_cast<const char*>(array.data()), static_cast<std::streamsize>(array.bytes()));
    const auto expected = family::family_of(p).reference(p, inputs);
    for (int offset : {0, 1}) {
        CAPTURE(offset);
        const int ran = shell("'" + program + "' '" + dir.path().string() + "' " + std::to_string(p.n) + " " +
                              std::to_string(offset) + " > '" + log + "' 2>&1");
        INFO(fs::read_file(log));
        REQUIRE(ran == 0);
        reference::typed_array out(p.type, static_cast<std::size_t>(p.n));
        std::ifstream(dir.path() / "out.bin", std::ios::binary)
            .read(static_cast<char*>(out.data()), static_cast<std::streamsize>(out.bytes()));
        const auto result = reference::compare(out, expected, config::default_tolerance(p));
        CHECK(result.nan_count == 0);  // every element written: the tail and the unaligned loop ran
        CHECK(result.pass);
    }
}

}  // namespace

TEST_CASE("generated kernels run as host code: vector loop, scalar tail, unaligned fallback") {
    struct variant {
        const char* what;
        json edit;
    };
    const std::vector<variant> variants{
        {"default: fused float32, vector width 4", json::object()},
        {"separate float64, exp formula, width 2", {{"fusion", "separate"}, {"dtype", "float64"}}},
        {"width 1, grid-stride only", {{"launch", {{"vector_width", 1}}}}},
        {"width 8 float32 (two 16-byte loads)", {{"launch", {{"vector_width", 8}}}}},
    };
    for (const auto& v : variants) {
        CAPTURE(v.what);
        check_on_host(kjit::testing::pipeline_with([&](json& j) {
            j["n"] = 1003;  // not a multiple of any width: the tail runs
            j.update(v.edit, true);
            if (std::string(v.what).find("exp formula") != std::string::npos) j["stages"][2]["formula"] = "exp";
        }));
    }
}

TEST_CASE("map expressions, params and every activation formula run as host code and match the reference") {
    const std::vector<json> stages{
        {{"op", "map"}, {"expr", "x * weights + alpha > 0 ? x * weights + alpha : alpha * (x * weights)"}},
        {{"op", "activate"}, {"fn", "gelu"}, {"formula", "tanh"}},
        {{"op", "activate"}, {"fn", "sigmoid"}, {"formula", "tanh"}},
        {{"op", "activate"}, {"fn", "softplus"}, {"formula", "stable"}},
        {{"op", "activate"}, {"fn", "elu"}},
        {{"op", "map"}, {"expr", "clamp(pow(abs(x), 1.5), 0, 2) + fma(x, x, -x) - rsqrt(1 + x * x) + cbrt(x)"}},
    };
    for (const auto& stage : stages) {
        CAPTURE(stage.dump());
        for (const char* dtype : {"float32", "float64"})
            check_on_host(kjit::testing::pipeline_with([&](json& j) {
                j["n"] = 517;
                j["dtype"] = dtype;
                j["params"] = {{"alpha", 0.25}};
                j["inputs"]["greyscales"] = {{"fill", "normal"}, {"mean", 0}, {"std", 400}};
                j["stages"][2] = stage;
            }));
    }
}

TEST_CASE("params named like the templates' own locals (k, j, first, next) reach the kernel as themselves") {
    // Were a template local named k, `x * k` would read the loop's counter instead, and not match.
    for (const char* dtype : {"float32", "float64"})
        check_on_host(kjit::testing::pipeline_with([&](json& j) {
            j["n"] = 517;
            j["dtype"] = dtype;
            j["params"] = {{"k", 0.5}, {"j", 3.0}, {"first", -1.25}, {"next", 8.0}, {"n2", 2.0}};
            j["stages"][2] = {{"op", "map"}, {"expr", "x * k + j * first - next / n2"}};
        }));
}

TEST_CASE("positions, constants and sigmoid run as host code at odd sizes and match the reference") {
    // 517 = 11 × 47: the vector loop, the tail and the unaligned loop each meet rows part-way.
    // A NaN or -inf that the reference has too passes; any other would count as a NaN or Inf.
    struct variant {
        json where;  // "n" or "shape"
        const char* expr;
    };
    const std::vector<variant> variants{
        {{{"n", 517}}, "x + i * 0.5 - n / 4 + sigmoid(x / 100) * pi"},
        {{{"n", 517}}, "i == 3 ? nan : i > n - 2 ? -inf : x"},
        {{{"shape", {11, 47}}}, "col > row ? -inf : x * (row + 1) - col / cols + rows"},
        {{{"shape", {11, 47}}}, "clamp(x, -row, col) + (row * cols + col == i ? 0 : nan)"},
    };
    for (const auto& v : variants) {
        CAPTURE(v.expr);
        for (const char* dtype : {"float32", "float64"})
            check_on_host(kjit::testing::pipeline_with([&](json& j) {
                j.erase("n");
                j.update(v.where);
                j["dtype"] = dtype;
                j["stages"][2] = {{"op", "map"}, {"expr", v.expr}};
            }));
    }
}

namespace {
/// The definition of the generated function that starts with `head`, up to its closing brace.
std::string generated_function(const std::string& source, const std::string& head) {
    const auto at = source.find(head);
    REQUIRE_MESSAGE(at != std::string::npos, "no " << head);
    return source.substr(at, source.find("\n}\n", at) + 3 - at);
}

/// check(mask, masked, plain): every tile of 700 tokens at 13, 64 or 128 queries by 16, 37 or 128
/// keys (odd sizes too, so that a tile's edges meet the mask's at every offset), the tile tests
/// against the mask of each score; prints the tiles a test wrongly skips, then for each test the
/// tiles it tells and the tiles it could.
constexpr const char* k_tile_checker = R"(#include <algorithm>
#include <cstdio>
#include <cstdlib>
#define __device__
#define __forceinline__ inline
typedef float real;
template <class Mask, class Masked, class Plain> void check(Mask mask, Masked masked, Plain plain) {
    const int S = 700;
    long wrong = 0, masked_told = 0, masked_tiles = 0, plain_told = 0, plain_tiles = 0;
    for (int tile_m : {13, 64, 128}) for (int tile_n : {16, 37, 128})
        for (int r0 = 0; r0 < S; r0 += tile_m) for (int c0 = 0; c0 < S; c0 += tile_n) {
            const int r1 = std::min(r0 + tile_m, S) - 1, c1 = std::min(c0 + tile_n, S) - 1;
            bool every = true, none = true;
            for (long long r = r0; r <= r1; ++r) for (long long c = c0; c <= c1; ++c)
                every = every && mask(r, c), none = none && !mask(r, c);
            const bool m = masked(r0, r1, c0, c1, S, S), p = plain(r0, r1, c0, c1, S, S);
            wrong += (m && !every) + (p && !none);
            masked_told += m, masked_tiles += every, plain_told += p, plain_tiles += none;
        }
    std::printf("%ld %ld %ld %ld %ld\n", wrong, masked_told, masked_tiles, plain_told, plain_tiles);
}
)";
}  // namespace

TEST_CASE("attention's tile tests run as host code: a tile is skipped only where every score is masked, and every such tile is") {
    // Each mask's generated kjit_tile_masked and kjit_tile_plain against the same mask written in
    // C++ for one score (k_tile_checker). A tile skipped with a score kept in it would leave its
    // queries' sums short on the GPU, silently; one not skipped costs time only. These masks are
    // told exactly.
    const std::vector<std::pair<const char*, const char*>> masks{
        {"col > row ? -inf : x", "col > row"},
        {"col > row || row - col >= 256 ? -inf : x", "col > row || row - col >= 256"},
        {"abs(row - col) < 100 ? x : -inf", "std::llabs(row - col) >= 100"},
        {"col > row || abs(row - col) >= 200 ? -inf : x", "col > row || std::llabs(row - col) >= 200"},
        {"col > max(row, 300) ? -inf : x", "col > std::max(row, 300LL)"},
        {"col < min(row - 50, 200) ? -inf : x", "col < std::min(row - 50, 200LL)"},
        {"row // 128 != col // 128 ? -inf : x", "row / 128 != col / 128"},
        {"(row + 30) // 64 < (col + 30) // 64 ? -inf : x", "(row + 30) / 64 < (col + 30) / 64"},
        {"col > row || row // 256 != col // 256 ? -inf : x", "col > row || row / 256 != col / 256"},
    };
    std::ostringstream program;
    program << k_tile_checker;
    for (std::size_t i = 0; i < masks.size(); ++i) {
        auto doc = config::load_document(std::string(KJIT_SOURCE_DIR) + "/configs/attention.json");
        doc.json["stages"][0]["score"] = masks[i].first;
        const auto source = family::plan(family::load(doc), codegen::template_set::embedded()).source;
        program << "namespace mask" << i << " {\n";
        if (source.find("kjit_floor_div(long long") != std::string::npos)
            program << generated_function(source, "__device__ __forceinline__ long long kjit_floor_div(");
        program << generated_function(source, "__device__ __forceinline__ bool kjit_tile_masked(")
                << generated_function(source, "__device__ __forceinline__ bool kjit_tile_plain(") << "}\n";
    }
    program << "int main() {\n";
    for (std::size_t i = 0; i < masks.size(); ++i)
        program << "    check([](long long row, long long col) { return " << masks[i].second << "; }, mask" << i
                << "::kjit_tile_masked, mask" << i << "::kjit_tile_plain);\n";
    program << "}\n";
    kjit::testing::temp_dir dir;
    const std::string binary = host_program(dir, program.str()), log = (dir.path() / "log").string();
    REQUIRE(shell("'" + binary + "' > '" + log + "' 2>&1") == 0);
    std::istringstream counts(fs::read_file(log));
    for (const auto& mask : masks) {
        INFO("score: " << mask.first);
        long wrong = -1, masked_told = -1, masked_tiles = -2, plain_told = -1, plain_tiles = -2;
        counts >> wrong >> masked_told >> masked_tiles >> plain_told >> plain_tiles;
        CHECK(wrong == 0);
        CHECK(masked_told == masked_tiles);
        CHECK(plain_told == plain_tiles);
        CHECK(masked_tiles > 0);
    }
}
