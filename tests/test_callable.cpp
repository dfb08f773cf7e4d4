// Kernels on the caller's arrays (run::callable, what kjit's Python kernels are): loaded through
// the session, bound to the caller's memory with no copy, checked array by array, launched on the
// caller's stream, verified against the reference. Fake GPUs whose "device addresses" are host
// vectors; needs NVRTC, not a GPU.
#include "fake_gpu.hpp"
#include "helpers.hpp"
#include "reference/reference.hpp"
#include "run/callable.hpp"
#include "run/session.hpp"

using namespace kjit;
using json = kjit::config::json_value;
using kjit::testing::error_message;
using kjit::testing::fake_gpu;

namespace {
constexpr long long k_n = 1000;

config::pipeline hidden_layer() {
    return kjit::testing::pipeline_with([](json& j) { j["n"] = k_n; });
}

/// A float32 array of the caller's, in the fake's "device memory".
struct caller_memory {
    std::vector<unsigned char> bytes;
    run::caller_array array(int device = 0) {
        return {fake_gpu::address_of(bytes), "float32", {static_cast<long long>(bytes.size() / 4)}, true, device};
    }
};
caller_memory filled(long long count, double (*value)(long long)) {
    caller_memory m{std::vector<unsigned char>(static_cast<std::size_t>(count) * 4)};
    for (long long i = 0; i < count; ++i) reference::set_element(config::dtype::float32, m.bytes.data(), i, value(i));
    return m;
}

struct fixture {
    kjit::testing::temp_dir dir;
    kjit::testing::fake_provider* provider = nullptr;
    fake_gpu* opened = nullptr;
    std::unique_ptr<run::session> session;
    fixture() {
        auto gpus = std::make_unique<kjit::testing::fake_provider>();
        provider = gpus.get();
        gpus->setup = [this, executor = kjit::testing::plan_executor(std::vector<config::pipeline>{hidden_layer()})](
                          fake_gpu& g) {
            g.on_launch = executor;
            opened = &g;
        };
        session = std::make_unique<run::session>(
            run::session_options{"", dir.path().string(), std::nullopt, jit::cache_mode::use}, std::move(gpus));
    }
};
}  // namespace

TEST_CASE("a callable runs the pipeline on the caller's arrays, on the caller's stream, and verifies") {
    fixture f;
    report::record rec;
    const auto kernels = f.session->load(hidden_layer(), 0, rec);
    CHECK(rec.cache_status == "miss");
    CHECK(rec.get(report::phase::context).has_value());  // the GPU opened for it
    REQUIRE(kernels->parameters().size() == 3);
    CHECK(kernels->parameters()[0].name == "greyscales");
    CHECK(kernels->parameters()[2].name == "out");
    CHECK(kernels->parameters()[2].written);
    CHECK(kernels->parameters()[1].shape == std::vector<long long>{k_n});

    auto greyscales = filled(k_n, [](long long i) { return static_cast<double>(i % 256); });
    auto weights = filled(k_n, [](long long i) { return 0.25 + static_cast<double>(i % 7) / 10; });
    auto out = filled(k_n, [](long long) { return std::nan(""); });
    const std::vector<run::caller_array> arrays{greyscales.array(), weights.array(), out.array()};
    (*kernels)(arrays, 0x1234);
    CHECK(f.opened->streams == std::vector<std::uintptr_t>{0x1234});
    for (long long i : {0LL, 17LL, k_n - 1}) {
        const double expected = std::tanh(static_cast<double>(i % 256) / 255 * (0.25 + static_cast<double>(i % 7) / 10));
        CHECK(reference::get_element(config::dtype::float32, out.bytes.data(), i) == doctest::Approx(expected).epsilon(1e-6));
    }
    CHECK(kernels->verify(arrays, 7).pass);

    // A wrong output is caught by verify, naming the element.
    f.opened->after_launch = [](const std::string&, const std::vector<std::vector<unsigned char>*>& buffers,
                                const run::kernel_launch&) { reference::set_element(config::dtype::float32, buffers.back()->data(), 5, 9.0); };
    const report::check_row check = kernels->verify(arrays, 7);
    CHECK_FALSE(check.pass);
    CHECK(check.mismatches == 1);
    CHECK(check.first_bad.find("element 5:") == 0);

    // A second callable on the same device opens nothing more.
    report::record again;
    const auto second = f.session->load(hidden_layer(), 0, again);
    CHECK(f.provider->opened == 1);
    CHECK(again.cache_status == "hit");
}

TEST_CASE("a callable checks every array before it launches, with one line naming it") {
    fixture f;
    report::record rec;
    const auto kernels = f.session->load(hidden_layer(), 0, rec);
    auto a = filled(k_n, [](long long) { return 1.0; });
    auto b = filled(k_n, [](long long) { return 1.0; });
    auto out = filled(k_n, [](long long) { return 0.0; });
    const auto failure = [&](run::caller_array weights) {
        const std::vector<run::caller_array> arrays{a.array(), weights, out.array()};
        try {
            (*kernels)(arrays, 0);
        } catch (const error& e) {
            CHECK(e.kind() == error_kind::usage);
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string expected = "weights: expected a contiguous float32 array of 1000 elements on CUDA device 0, got ";
    run::caller_array wrong = b.array();
    wrong.dtype = "float64";
    CHECK(failure(wrong) == expected + "float64");
    wrong = b.array();
    wrong.shape = {999};
    CHECK(failure(wrong) == expected + "shape [999]");
    wrong.shape = {10, 100};  // any shape of n elements will do for a 1-D pipeline
    CHECK(failure(wrong) == "no error");
    wrong = b.array();
    wrong.contiguous = false;
    CHECK(failure(wrong) == expected + "a strided view (make it contiguous first)");
    CHECK(failure(b.array(-1)) == expected + "an array that is not in CUDA device memory");
    CHECK(failure(b.array(1)) == expected + "one on CUDA device 1");
    CHECK(f.opened->launches == 1);  // only the call that passed launched
}

TEST_CASE("a matmul's callable takes x, W, the bias and out each in its own shape") {
    fixture f;
    auto doc = config::load_document(kjit::testing::config_path("mlp_layer.json"));
    doc.json.erase("sweep");
    doc.json["shape"] = {6, 4};
    doc.json["inputs"]["W"]["shape"] = {4, 5};
    doc.json["dtype"] = "float32";
    report::record rec;
    const auto kernels = f.session->load(family::load(doc), 0, rec);
    std::map<std::string, std::vector<long long>> shapes;
    for (const auto& parameter : kernels->parameters()) shapes[parameter.name] = parameter.shape;
    CHECK(shapes.at("x_in") == std::vector<long long>{6, 4});
    CHECK(shapes.at("W") == std::vector<long long>{4, 5});
    CHECK(shapes.at("b") == std::vector<long long>{5});
    CHECK(shapes.at("out") == std::vector<long long>{6, 5});

    // Its loads of A are 4 floats wide (K = 4): an array must start on 16 bytes, a view 4 bytes
    // into one is refused before anything launches.
    auto x = filled(24, [](long long) { return 1.0; }), w = filled(21, [](long long) { return 1.0; });
    auto b = filled(5, [](long long) { return 0.0; }), out = filled(30, [](long long) { return 0.0; });
    run::caller_array w_view = w.array();
    w_view.address += 4;
    w_view.shape = {4, 5};
    std::vector<run::caller_array> arrays{x.array(), w_view, b.array(), out.array()};
    arrays[0].shape = {6, 4};
    arrays[3].shape = {6, 5};
    const std::string message = error_message([&] { (*kernels)(arrays, 0); }, error_kind::usage);
    CHECK(message == "W: expected an address aligned to 16 bytes (the kernels load that much at once), got one 4 bytes "
                     "past it: a view into another array? Pass a copy");
    CHECK(f.opened->launches == 0);
}
