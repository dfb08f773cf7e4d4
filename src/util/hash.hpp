// XXH3-128 hashing for cache keys and integrity checks. Standard library only in the interface.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kjit {

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
