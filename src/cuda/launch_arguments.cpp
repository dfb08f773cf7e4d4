#include "cuda/launch_arguments.hpp"

#include <vector>

#include "cuda/tensor_map.hpp"

namespace kjit::cuda {

void** launch_arguments(const driver_api& api, const run::kernel_launch& launch,
                        const std::function<CUdeviceptr(run::buffer_id)>& address_of) {
    // Each value in a slot of its own, which stays put while the kernel is launched.
    union slot {
        CUdeviceptr pointer;
        float f32;
        double f64;
        long long i64;
        CUtensorMap map;
    };
    const std::size_t count = launch.args.size();
    thread_local std::vector<slot> slots;
    thread_local std::vector<void*> args;
    slots.resize(count);
    args.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
        const run::argument_value& a = launch.args[i];
        using type = run::argument_value::type;
        switch (a.what) {
            case type::buffer: slots[i].pointer = address_of(a.buffer); break;
            case type::address: slots[i].pointer = static_cast<CUdeviceptr>(a.address); break;
            case type::f32: slots[i].f32 = static_cast<float>(a.number); break;
            case type::f64: slots[i].f64 = a.number; break;
            case type::i64: slots[i].i64 = a.integer; break;
        }
        // (encoded at each launch: host-side work, and a caller's arrays move between calls)
        if (a.map) slots[i].map = encode_tensor_map(api, slots[i].pointer, *a.map);
        args[i] = &slots[i];
    }
    return args.data();
}

}  // namespace kjit::cuda
