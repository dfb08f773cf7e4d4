// A std::vector whose resize leaves new elements uninitialized (default-initialized). For large
// host arrays that are written in full by parallel workers: a zeroing std::vector would first
// memset them on one thread, a page fault at a time (≈ 100 ms for 256 MiB), and the workers'
// writes would then be the second touch instead of the first.
#pragma once
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace kjit {

template <class T>
struct default_init_allocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = default_init_allocator<U>;
    };
    using std::allocator<T>::allocator;

    template <class U>
    void construct(U* where) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(where)) U;
    }
    template <class U, class... Args>
    void construct(U* where, Args&&... args) {
        ::new (static_cast<void*>(where)) U(std::forward<Args>(args)...);
    }
};

template <class T>
using uninitialized_vector = std::vector<T, default_init_allocator<T>>;

}  // namespace kjit
