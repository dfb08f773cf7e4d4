// XXH3-128 hashing for cache keys and integrity checks. Standard library only in the interface.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kjit {

/// SplitMix64: a fixed, well-mixed hash of t, for samples that must be the same on every machine
/// (the references' sampled rows and elements).
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t t) {
    t += 0x9e3779b97f4a7c15ULL;
    t = (t ^ (t >> 30)) * 0xbf58476d1ce4e5b9ULL;
    t = (t ^ (t >> 27)) * 0x94d049bb133111ebULL;
    return t ^ (t >> 31);
}

/// Hex digest (32 characters) of XXH3-128 over `bytes`.
[[nodiscard]] std::string xxh3_128_hex(std::string_view bytes);

/// Hashes a sequence of fields without ambiguity: each field is length-prefixed, so
/// ("ab","c") and ("a","bc") differ. Used for cache keys.
class field_hasher {
public:
    field_hasher();
    ~field_hasher();
    field_hasher(const field_hasher&) = delete;
    field_hasher& operator=(const field_hasher&) = delete;

    field_hasher& add(std::string_view field);
    [[nodiscard]] std::string hex_digest() const;

private:
    struct state;
    std::unique_ptr<state> m_state;
};

}  // namespace kjit
