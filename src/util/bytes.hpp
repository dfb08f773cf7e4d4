// Element i of an array of T in raw bytes, read or written with memcpy: any alignment, no
// aliasing rules broken. Standard library only.
#pragma once
#include <cstddef>
#include <cstring>

namespace kjit {

template <class T>
[[nodiscard]] T load_element(const unsigned char* bytes, std::size_t i) {
    T value;
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    return value;
}

template <class T>
void store_element(unsigned char* bytes, std::size_t i, T value) {
    std::memcpy(bytes + i * sizeof(T), &value, sizeof(T));
}

}  // namespace kjit
