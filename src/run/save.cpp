#include "run/save.hpp"

#include <cctype>
#include <filesystem>
#include <limits>

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/npy.hpp"

namespace kjit::run {
namespace {

/// The variant's label as part of a file name: "fused_float32_block=256_vec=4".
std::string file_part(const std::string& label) {
    std::string part;
    for (const char c : label)
        part += std::isalnum(static_cast<unsigned char>(c)) || c == '=' || c == '-' || c == '+' || c == '.' ? c : '_';
    return part;
}

}  // namespace

std::vector<std::string> save_result(const save_request& to, const config::pipeline& p, const family::program& prog,
                                     std::optional<std::size_t> sweep_index, const reference::typed_array& out,
                                     const reference::expected_values& expected) {
    std::error_code ec;
    std::filesystem::create_directories(to.dir, ec);
    if (ec) throw error(error_kind::io, "--save " + to.dir + ": cannot create the folder: " + ec.message());
    std::vector<long long> shape{static_cast<long long>(out.size())};
    if (!prog.result_per_row && prog.output_rows > 0) shape = {prog.output_rows, prog.output_cols};
    const std::string stem = (std::filesystem::path(to.dir) / p.name).string() +
                             (sweep_index ? ".p" + std::to_string(*sweep_index) : "") + "." + file_part(config::variant_label(p));
    std::vector<std::string> written;
    const auto save = [&](const std::string& path, const npy::element_type& type, std::string_view data) {
        fs::write_file_atomic(path, npy::encode(type, shape, data));
        written.push_back(path);
    };
    if (p.type == config::dtype::bfloat16) {  // NumPy has no bfloat16: widened to float32, exactly
        std::vector<float> widened(out.size());
        for (std::size_t i = 0; i < out.size(); ++i) widened[i] = static_cast<float>(out.get(i));
        save(stem + ".npy", *npy::find_type("float32"),
             {reinterpret_cast<const char*>(widened.data()), widened.size() * sizeof(float)});
    } else {
        save(stem + ".npy", *npy::find_type(config::to_string(p.type)),
             {static_cast<const char*>(out.data()), out.bytes()});
    }
    if (to.reference && expected.sampled.empty()) {
        save(stem + ".reference.npy", *npy::find_type("float64"),
             {reinterpret_cast<const char*>(expected.values.data()), expected.values.size() * sizeof(double)});
    } else if (to.reference) {  // a sample: NaN where the reference was not computed
        std::vector<double> values(out.size(), std::numeric_limits<double>::quiet_NaN());
        for (std::size_t j = 0; j < expected.sampled.size(); ++j) values[expected.sampled[j]] = expected.values[j];
        save(stem + ".reference.npy", *npy::find_type("float64"),
             {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double)});
    }
    return written;
}

}  // namespace kjit::run
