#include "util/hash.hpp"

#include <cstdio>

#define XXH_INLINE_ALL  // header-only use: the GPU machine has xxhash's headers but not its library
#include <xxhash.h>

namespace kjit {
namespace {
std::string to_hex(XXH128_hash_t h) {
    char text[33];
    std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                  static_cast<unsigned long long>(h.low64));
    return text;
}
}  // namespace

std::string xxh3_128_hex(std::string_view bytes) {
    return to_hex(XXH3_128bits(bytes.data(), bytes.size()));
}

struct field_hasher::state {
    XXH3_state_t xxh;
};

field_hasher::field_hasher() : m_state(std::make_unique<state>()) {
    XXH3_128bits_reset(&m_state->xxh);
}
field_hasher::~field_hasher() = default;

field_hasher& field_hasher::add(std::string_view field) {
    const std::uint64_t size = field.size();
    XXH3_128bits_update(&m_state->xxh, &size, sizeof size);
    XXH3_128bits_update(&m_state->xxh, field.data(), field.size());
    return *this;
}

std::string field_hasher::hex_digest() const { return to_hex(XXH3_128bits_digest(&m_state->xxh)); }

}  // namespace kjit
