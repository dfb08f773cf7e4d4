#include "run/inputs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numbers>
#include <random>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/hash.hpp"
#include "util/parallel.hpp"

namespace kjit::run {
namespace {

// Values are drawn per chunk from a generator seeded by (seed, input, chunk), so the result does
// not depend on how chunks are spread over threads. mt19937_64's output is fixed by the standard;
// the distributions are written out here because std's are not.
constexpr std::size_t k_chunk = 1 << 16;

double unit_uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double draw(const config::input_spec& in, std::mt19937_64& rng) {
    double value = 0;
    switch (in.fill) {
        case config::fill_kind::uniform: value = in.low + (in.high - in.low) * unit_uniform(rng); break;
        case config::fill_kind::normal: {  // Box–Muller, one value per pair
            const double u1 = 1.0 - unit_uniform(rng), u2 = unit_uniform(rng);
            value = in.mean + in.std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
            break;
        }
        case config::fill_kind::constant: value = in.value; break;
        case config::fill_kind::file: break;  // read, not drawn
    }
    switch (in.round) {
        case config::rounding::none: return value;
        case config::rounding::floor: return std::floor(value);
        case config::rounding::nearest: return std::nearbyint(value);
    }
    return value;
}

/// A file's values in the pipeline's dtype: each element widened to double (exact), then rounded
/// once to the dtype.
reference::typed_array read_file_input(const config::pipeline& p, const config::input_spec& in) {
    const std::string data = npy::read_data(in.path, in.file);
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    const auto n = static_cast<std::size_t>(in.file.count());
    reference::typed_array array(p.type, n);
    parallel_ranges(n, [&](std::size_t first, std::size_t last) {
        for (std::size_t i = first; i < last; ++i) array.set(i, in.file.type->get(bytes, i));
    });
    return array;
}

/// Whether every value of `from` is one of `to`: its significand fits, and for floats its
/// exponent range too.
bool converts_exactly(const npy::element_type& from, config::dtype to) {
    const config::dtype_info& target = config::info(to);
    if (from.precision > target.precision) return false;
    return !from.is_float || from.min_exponent >= target.min_exponent;
}

/// The length of a row of `in` as "sorted" orders it: its own shape's columns, else the
/// pipeline's; the whole array where it has neither.
std::size_t sorted_row_length(const config::pipeline& p, const config::input_spec& in) {
    return static_cast<std::size_t>(!in.dims.empty()              ? in.dims[1]
                                    : p.shape && !in.per_column ? p.shape->cols
                                                                : config::elements_of(p, in));
}

/// "sorted": each row of the array in ascending order (the dtype's rounding keeps the order).
void sort_rows(const config::pipeline& p, const config::input_spec& in, reference::typed_array& array) {
    const auto n = static_cast<std::size_t>(config::elements_of(p, in));
    const std::size_t cols = sorted_row_length(p, in);
    parallel_ranges(n / cols, [&](std::size_t first, std::size_t last) {
        std::vector<double> row(cols);
        for (std::size_t r = first; r < last; ++r) {
            for (std::size_t c = 0; c < cols; ++c) row[c] = array.get(r * cols + c);
            std::sort(row.begin(), row.end());
            for (std::size_t c = 0; c < cols; ++c) array.set(r * cols + c, row[c]);
        }
    }, 1);
}

/// A file declared "sorted" must be: kernels rely on it. Throws kjit::error(config) naming the
/// file, the key and the first element out of order.
void check_sorted(const config::pipeline& p, const config::input_spec& in, const reference::typed_array& array) {
    const std::size_t cols = sorted_row_length(p, in), n = array.size();
    for (std::size_t i = 1; i < n; ++i) {
        if (i % cols == 0 || array.get(i) >= array.get(i - 1)) continue;
        std::ostringstream what;
        what << in.path.string() << ": inputs." << in.name << ".sorted: expected each row in ascending order; row " << i / cols
             << " falls from " << array.get(i - 1) << " to " << array.get(i) << " at column " << i % cols;
        throw error(error_kind::config, what.str());
    }
}

}  // namespace

reference::input_arrays make_inputs(const config::pipeline& p) {
    reference::input_arrays arrays;
    for (std::size_t index = 0; index < p.inputs.size(); ++index) {
        const auto& in = p.inputs[index];
        if (in.fill == config::fill_kind::file) {
            reference::typed_array array = read_file_input(p, in);
            if (in.sorted) check_sorted(p, in, array);
            arrays.emplace(in.name, std::move(array));
            continue;
        }
        const auto n = static_cast<std::size_t>(config::elements_of(p, in));
        reference::typed_array array(p.type, n);
        const std::size_t chunks = (n + k_chunk - 1) / k_chunk;
        parallel_ranges(chunks, [&](std::size_t first, std::size_t last) {
            for (std::size_t chunk = first; chunk < last; ++chunk) {
                std::seed_seq seed{static_cast<std::uint32_t>(p.seed), static_cast<std::uint32_t>(p.seed >> 32),
                                   static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(chunk)};
                std::mt19937_64 rng(seed);
                for (std::size_t i = chunk * k_chunk; i < std::min(n, (chunk + 1) * k_chunk); ++i)
                    array.set(i, draw(in, rng));
            }
        }, 1);
        if (in.sorted) sort_rows(p, in, array);
        arrays.emplace(in.name, std::move(array));
    }
    return arrays;
}

std::string inputs_key(const config::pipeline& p) {
    nlohmann::json key = {{"n", p.n}, {"dtype", config::to_string(p.type)}, {"seed", p.seed}};
    if (p.shape) key["shape"] = {p.shape->rows, p.shape->cols};
    for (const auto& in : p.inputs)
        key["inputs"].push_back({in.name, static_cast<int>(in.fill), in.low, in.high, in.mean, in.std, in.value,
                                 static_cast<int>(in.round), in.sorted, in.per_column, in.dims,
                                 in.fill == config::fill_kind::file ? file_fingerprint(in) : std::string()});
    return key.dump();
}

std::string file_fingerprint(const config::input_spec& in) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(in.path, ec);
    const auto modified = std::filesystem::last_write_time(in.path, ec).time_since_epoch().count();
    using stamp = std::tuple<std::string, std::uintmax_t, long long>;
    static std::mutex mutex;
    static std::map<stamp, std::string> hashes;  // a sweep asks once per point
    const stamp key{in.path.string(), size, static_cast<long long>(modified)};
    const std::lock_guard lock(mutex);
    auto found = hashes.find(key);
    if (found == hashes.end()) {
        std::string content;
        try {
            content = fs::read_file(in.path);
        } catch (const error&) {  // reported, naming the file, when the run reads it
        }
        found = hashes.emplace(key, xxh3_128_hex(content)).first;
    }
    return in.path.string() + "@" + found->second;
}

std::string describe_file_inputs(const config::pipeline& p) {
    std::string text;
    for (const auto& in : p.inputs) {
        if (in.fill != config::fill_kind::file) continue;
        const std::string_view from = in.file.type->name, to = config::to_string(p.type);
        text += (text.empty() ? "" : "; ") + in.name + " ← " + in.path.string() + " (" + std::string(from) +
                " " + npy::shape_text(in.file.shape) + " → " + std::string(to) + ", " +
                (from == to ? "as stored" : converts_exactly(*in.file.type, p.type) ? "exact" : "rounded to nearest even") + ")";
    }
    return text;
}

}  // namespace kjit::run
