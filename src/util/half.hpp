// The 16-bit floats on the host, from and to their bits: IEEE binary16 (float16) and bfloat16,
// rounded to nearest even. Used by the reference's typed arrays and by file inputs.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kjit {

/// bfloat16 is the top half of a float: widen by shifting, narrow by rounding to nearest even.
[[nodiscard]] inline float bfloat16_to_float(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}
[[nodiscard]] inline std::uint16_t float_to_bfloat16(float value) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // stay a NaN
    const std::uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
    return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

/// IEEE binary16: GCC 12 and clang 15 know _Float16 on x86; older clang (the fuzzing build's)
/// has only the storage type __fp16, which converts the same way (and may not be a parameter or
/// a return type: these convert through the bits).
#if defined(__clang__) && __clang_major__ < 15
using host_half = __fp16;
#else
using host_half = _Float16;
#endif
[[nodiscard]] inline double float16_to_double(std::uint16_t bits) {
    host_half value;
    std::memcpy(&value, &bits, sizeof bits);
    return static_cast<double>(value);
}
[[nodiscard]] inline std::uint16_t double_to_float16(double value) {
    const host_half narrow = static_cast<host_half>(value);
    std::uint16_t bits;
    std::memcpy(&bits, &narrow, sizeof bits);
    return bits;
}

}  // namespace kjit
