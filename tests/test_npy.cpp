// File inputs and saved results: kjit reads every dtype NumPy writes (1-D and 2-D), NumPy loads
// what kjit writes, a bad file is one line naming it (exit 2, when the config is loaded), and a
// pipeline on a file converts its values and says how. The files are made by NumPy itself.
#include <sys/wait.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "helpers.hpp"
#include "run/inputs.hpp"
#include "util/npy.hpp"

using namespace kjit;
using json = kjit::config::json_value;

namespace {

/// Runs `script` with the python3 that has NumPy, in `dir`; its exit status.
int run_python(const std::filesystem::path& dir, const std::string& script) {
    const std::string python = KJIT_NUMPY_PYTHON;
    REQUIRE_MESSAGE(!python.empty(), "no python3 with NumPy found when configuring: scripts/setup.sh installs python3-numpy");
    const auto file = dir / "script.py";
    std::ofstream(file) << "import numpy as np, os\nos.chdir(" << json(dir.string()).dump() << ")\n" << script;
    const int status = std::system((python + " '" + file.string() + "' > '" + (dir / "py.log").string() + "' 2>&1").c_str());
    INFO(fs::read_file(dir / "py.log"));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<double> numbers_in(const std::filesystem::path& path) {
    std::istringstream text(fs::read_file(path));
    std::vector<double> values;
    for (std::string word; text >> word;) values.push_back(std::stod(word));
    return values;
}

/// A config of one input `a` read from `file` (its keys given), n or shape as `size`.
json config_with_file(const json& file_keys, const json& size) {
    json j = {{"name", "t"},
              {"inputs", {{"a", file_keys}}},
              {"stages", json::array({{{"op", "map"}, {"input", "a"}, {"expr", "x * 2"}}})}};
    j.update(size);
    return j;
}

}  // namespace

TEST_CASE("npy: every dtype NumPy writes, 1-D and 2-D, reads back with the same values") {
    kjit::testing::temp_dir dir;
    const std::vector<std::string> types{"float16", "float32", "float64", "int8", "uint8", "int16",
                                         "uint16", "int32", "uint32", "int64", "uint64"};
    REQUIRE(run_python(dir.path(), R"(
for t in ['float16', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64']:
    info = np.finfo(t) if t.startswith('float') else np.iinfo(t)
    # the extremes of the type, and odd values between
    a = np.linspace(float(info.min) / 3, float(info.max) / 3, 24).astype(t)
    a[0], a[-1] = info.min, info.max
    np.save(t + '.npy', a)
    np.save(t + '_2d.npy', a.reshape(4, 6))
    with open(t + '.txt', 'w') as f:
        f.write(' '.join(repr(float(v)) for v in a))
)") == 0);
    for (const auto& type : types) {
        CAPTURE(type);
        const auto expected = numbers_in(dir.path() / (type + ".txt"));
        for (const std::string suffix : {"", "_2d"}) {
            const auto path = dir.path() / (type + suffix + ".npy");
            const npy::layout at = npy::read_header(path);
            CHECK(at.type->name == type);
            CHECK(at.shape == (suffix.empty() ? std::vector<long long>{24} : std::vector<long long>{4, 6}));
            const std::string data = npy::read_data(path, at);
            for (std::size_t i = 0; i < expected.size(); ++i)
                CHECK(at.type->get(reinterpret_cast<const unsigned char*>(data.data()), i) == expected[i]);
        }
    }
}

TEST_CASE("npy: what kjit writes, NumPy loads with its dtype, shape and values") {
    kjit::testing::temp_dir dir;
    const std::vector<float> values{1.5f, -2.25f, 3e-5f, 65504.0f, -0.0f, 7.0f};
    fs::write_file_atomic(dir.path() / "m.npy",
                          npy::encode(*npy::find_type("float32"), {2, 3},
                                      {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)}));
    const std::vector<double> wide{0.1, 1e300};
    fs::write_file_atomic(dir.path() / "v.npy", npy::encode(*npy::find_type("float64"), {2},
                                                            {reinterpret_cast<const char*>(wide.data()), 16}));
    CHECK(run_python(dir.path(), R"(
m = np.load('m.npy')
assert m.dtype == np.float32 and m.shape == (2, 3), (m.dtype, m.shape)
assert (m == np.array([[1.5, -2.25, 3e-5], [65504.0, -0.0, 7.0]], dtype=np.float32)).all(), m
v = np.load('v.npy')
assert v.dtype == np.float64 and v.shape == (2,) and v[0] == 0.1 and v[1] == 1e300, v
)") == 0);
    // And kjit reads its own files back.
    CHECK(npy::read_header(dir.path() / "m.npy").shape == std::vector<long long>{2, 3});
}

TEST_CASE("npy: a bad file is refused when the config loads, in one line naming the file and the problem") {
    kjit::testing::temp_dir dir;
    REQUIRE(run_python(dir.path(), R"(
a = np.arange(12, dtype=np.float32)
np.save('good.npy', a)
np.save('good_2d.npy', a.reshape(3, 4))
np.save('fortran.npy', np.asfortranarray(a.reshape(3, 4)))
np.save('big.npy', a.astype('>f4'))
np.save('complex.npy', a.astype(np.complex64))
np.save('three_d.npy', a.reshape(2, 3, 2))
np.save('empty.npy', np.zeros(0, dtype=np.float32))
np.save('no_cols.npy', np.zeros((64, 0), dtype=np.float32))
raw = open('good.npy', 'rb').read()
open('truncated.npy', 'wb').write(raw[:-5])
open('header_cut.npy', 'wb').write(raw[:20])
open('longer.npy', 'wb').write(raw + b'\0\0\0\0')
open('not_npy.npy', 'wb').write(b'hello world, not an array')
open('version9.npy', 'wb').write(raw[:6] + b'\x09' + raw[7:])
open('odd.raw', 'wb').write(b'\0' * 7)
huge = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }\n"
open('huge.npy', 'wb').write(b'\x93NUMPY\x01\x00' + len(huge).to_bytes(2, 'little') + huge)
empty_descr = b"{'descr': '', 'fortran_order': False, 'shape': (12,), }\n"
open('empty_descr.npy', 'wb').write(b'\x93NUMPY\x01\x00' + len(empty_descr).to_bytes(2, 'little') + empty_descr + bytes(48))
os.mkdir('folder.npy')
)") == 0);
    struct bad {
        std::string file;
        json extra;  // further keys of the input
        std::string says;
    };
    const std::vector<bad> cases{
        {"missing.npy", {}, "no such file"},
        {"folder.npy", {}, "is a directory"},
        {"truncated.npy", {}, "truncated: its header says 12 elements (48 bytes), the file has 43"},
        {"header_cut.npy", {}, "truncated: the file ends inside its .npy header"},
        {"longer.npy", {}, "has 4 bytes after the data its header describes"},
        {"not_npy.npy", {}, "not a .npy file"},
        {"version9.npy", {}, ".npy format version 9 (kjit reads 1, 2 and 3)"},
        {"fortran.npy", {}, "Fortran order"},
        {"big.npy", {}, "big-endian data (>f4)"},
        {"complex.npy", {}, "element type '<c8' is not supported"},
        {"empty_descr.npy", {}, "element type '' is not supported"},
        {"odd.raw", {{"format", "float32"}}, "7 bytes is not a whole number of float32 elements"},
        {"huge.npy", {}, "holds more than 2^40 elements"},
        {"good.npy", {{"format", "float128"}}, "expected the raw file's element type, one of float16"},
        {"good.npy", {{"low", 0}}, "does not apply to fill \"file\""},
    };
    for (const auto& c : cases) {
        CAPTURE(c.file);
        json keys = {{"fill", "file"}, {"path", c.file}};
        if (!c.extra.is_null()) keys.update(c.extra);
        const auto config = dir.path() / "c.json";
        fs::write_file_atomic(config, config_with_file(keys, {{"n", 12}}).dump());
        const auto result = kjit::testing::kjit_cli({"emit", config.string()});
        CHECK(result.status == exit_status::usage);
        CHECK(result.err.find(c.says) != std::string::npos);
        CHECK(result.err.find("inputs.a.") != std::string::npos);
        CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
    }
    // The right file of the wrong size, and a 3-D file where the config gives no size.
    const auto config = dir.path() / "c.json";
    fs::write_file_atomic(config, config_with_file({{"fill", "file"}, {"path", "good.npy"}}, {{"n", 10}}).dump());
    CHECK(kjit::testing::kjit_cli({"emit", config.string()}).err.find("good.npy: holds 12 float32 elements; the pipeline needs 10 (n)") !=
          std::string::npos);
    fs::write_file_atomic(config, config_with_file({{"fill", "file"}, {"path", "good.npy"}}, {{"shape", {4, 3}}}).dump());
    CHECK(kjit::testing::kjit_cli({"emit", config.string()}).status == exit_status::ok);  // 1-D: its count is the shape's
    fs::write_file_atomic(config, config_with_file({{"fill", "file"}, {"path", "good_2d.npy"}}, {{"shape", {4, 3}}}).dump());
    CHECK(kjit::testing::kjit_cli({"emit", config.string()}).err.find("holds 3 × 4 float32 elements; the pipeline needs 4 × 3 (the shape)") !=
          std::string::npos);
    fs::write_file_atomic(config, config_with_file({{"fill", "file"}, {"path", "three_d.npy"}}, json::object()).dump());
    CHECK(kjit::testing::kjit_cli({"emit", config.string()}).err.find("has 3 dimensions") != std::string::npos);
    // A size taken from a file has the bounds of one given: no empty array, no dimension of 0.
    for (const char* file : {"empty.npy", "no_cols.npy"}) {
        CAPTURE(file);
        fs::write_file_atomic(config, config_with_file({{"fill", "file"}, {"path", file}}, json::object()).dump());
        const auto sized = kjit::testing::kjit_cli({"emit", config.string()});
        CHECK(sized.status == exit_status::usage);
        CHECK(sized.err.find("inputs.a.path: ") != std::string::npos);
        CHECK(sized.err.find("the size it gives must be 1 to 2^40 elements, none of its dimensions 0") != std::string::npos);
    }
}

TEST_CASE("file inputs: relative to the config, sized by a 2-D file, converted to the dtype and said how") {
    kjit::testing::temp_dir dir;
    std::filesystem::create_directory(dir.path() / "data");
    REQUIRE(run_python(dir.path(), R"(
g = (np.arange(35).reshape(5, 7) * 37 % 256).astype(np.uint8)
np.save('data/grey.npy', g)
np.save('data/wide.npy', np.linspace(0, 1, 35).reshape(5, 7))
)") == 0);
    const auto config = dir.path() / "data" / "c.json";
    json j = config_with_file({{"fill", "file"}, {"path", "grey.npy"}}, json::object());  // no n, no shape
    j["inputs"]["w"] = {{"fill", "file"}, {"path", "wide.npy"}};
    fs::write_file_atomic(config, j.dump());
    const auto p = family::load(config::load_document(config.string()));
    REQUIRE(p.shape.has_value());
    CHECK(p.shape->rows == 5);
    CHECK(p.shape->cols == 7);
    const auto inputs = run::make_inputs(p);
    for (std::size_t i = 0; i < 35; ++i) CHECK(inputs.at("a").get(i) == static_cast<double>(i * 37 % 256));
    CHECK(inputs.at("w").get(34) == 1.0);
    CHECK(inputs.at("w").get(1) == static_cast<double>(static_cast<float>(1.0 / 34)));  // rounded once, to float32
    const std::string data = std::filesystem::absolute(dir.path() / "data").lexically_normal().string();
    CHECK(run::describe_file_inputs(p) == "a ← " + data + "/grey.npy (uint8 5 × 7 → float32, exact); "
                                          "w ← " + data + "/wide.npy (float64 5 × 7 → float32, rounded to nearest even)");
    // A sweep's points (and a tune's) read the same files: the config's folder, not the working
    // folder, which here holds a grey.npy of other values (wide.npy's).
    j["sweep"] = {{"dtype", {"float32", "float64"}}};
    fs::write_file_atomic(config, j.dump());
    // No result file replaces an input file: it is refused before any work, and the file stays.
    const std::string grey = (dir.path() / "data" / "grey.npy").string(), grey_bytes = fs::read_file(grey);
    for (const char* option : {"--json", "--csv", "--trace"}) {
        const auto over = kjit::testing::kjit_cli({"compile", config.string(), option, grey});
        CHECK(over.status == exit_status::usage);
        CHECK(over.err.find(std::string(option) + " " + grey + ": is ") == 6);  // after "kjit: "
        CHECK(over.err.find("which kjit reads") != std::string::npos);
    }
    CHECK(fs::read_file(grey) == grey_bytes);
    const auto working = std::filesystem::current_path();
    std::filesystem::current_path(dir.path());
    std::filesystem::copy_file("data/wide.npy", "grey.npy");
    const auto points = family::expand_sweep(config::load_document("data/c.json"));
    std::filesystem::current_path(working);
    REQUIRE(points.size() == 2);
    for (const auto& point : points) {
        CHECK(point.pipeline.inputs.front().path == std::filesystem::absolute(dir.path() / "data" / "grey.npy").lexically_normal());
        CHECK(run::make_inputs(point.pipeline).at("a").get(1) == 37.0);
    }
    // The inputs' key follows the file's content: an edited file is read again.
    const std::string before = run::inputs_key(p);
    REQUIRE(run_python(dir.path(), "np.save('data/grey.npy', np.zeros((5, 7), dtype=np.uint8))\n") == 0);
    CHECK(run::inputs_key(p) != before);
    CHECK(run::make_inputs(p).at("a").get(1) == 0.0);
}

TEST_CASE("file inputs: a raw bfloat16 file (NumPy has no bfloat16), read as its bits say") {
    kjit::testing::temp_dir dir;
    const std::vector<std::uint16_t> bits{0x3F80, 0xC040, 0x0000, 0x7F80};  // 1, -3, 0, inf
    std::ofstream(dir.path() / "b.raw", std::ios::binary).write(reinterpret_cast<const char*>(bits.data()), 8);
    const auto config = dir.path() / "c.json";
    json j = config_with_file({{"fill", "file"}, {"path", "b.raw"}, {"format", "bfloat16"}}, {{"n", 4}});
    j["dtype"] = "bfloat16";
    fs::write_file_atomic(config, j.dump());
    const auto p = family::load(config::load_document(config.string()));
    const auto a = run::make_inputs(p).at("a");
    CHECK(a.get(0) == 1.0);
    CHECK(a.get(1) == -3.0);
    CHECK(std::isinf(a.get(3)));
    CHECK(run::describe_file_inputs(p) ==
          "a ← " + std::filesystem::absolute(dir.path() / "b.raw").lexically_normal().string() + " (bfloat16 4 → bfloat16, as stored)");
}

TEST_CASE("file inputs: \"sorted\" declares each row ascending, and a file whose row falls is refused when read") {
    kjit::testing::temp_dir dir;
    REQUIRE(run_python(dir.path(), R"(
np.save('sorted.npy', np.array([[0, 0, 1, 2], [1, 1, 3, 3]], dtype=np.int32))
np.save('falls.npy', np.array([[0, 0, 1, 2], [1, 1, 0, 3]], dtype=np.int32))
)") == 0);
    const auto config = dir.path() / "c.json";
    const auto inputs_of = [&](const char* file) {
        fs::write_file_atomic(config, config_with_file({{"fill", "file"}, {"path", file}, {"sorted", true}}, json::object()).dump());
        return run::make_inputs(family::load(config::load_document(config.string())));
    };
    CHECK(inputs_of("sorted.npy").at("a").get(6) == 3.0);
    const std::string message = kjit::testing::error_message([&] { (void)inputs_of("falls.npy"); });
    CHECK(message.find("falls.npy: inputs.a.sorted: expected each row in ascending order; row 1 falls from 1 to 0 at column 2") !=
          std::string::npos);
    // without the declaration the same file is read as it is
    fs::write_file_atomic(config, config_with_file({{"fill", "file"}, {"path", "falls.npy"}}, json::object()).dump());
    CHECK(run::make_inputs(family::load(config::load_document(config.string()))).at("a").get(6) == 0.0);
}
