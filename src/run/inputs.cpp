#include "run/inputs.hpp"

#include <cmath>
#include <numbers>
#include <random>

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
    }
    switch (in.round) {
        case config::rounding::none: return value;
        case config::rounding::floor: return std::floor(value);
        case config::rounding::nearest: return std::nearbyint(value);
    }
    return value;
}

}  // namespace

reference::input_arrays make_inputs(const config::pipeline& p) {
    reference::input_arrays arrays;
    for (std::size_t index = 0; index < p.inputs.size(); ++index) {
        const auto& in = p.inputs[index];
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
        arrays.emplace(in.name, std::move(array));
    }
    return arrays;
}

}  // namespace kjit::run
