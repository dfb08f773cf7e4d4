#include "cuda/l2_flush.hpp"

#include <algorithm>

namespace kjit::cuda {
namespace {

// Each thread discards the 128-byte lines i, i + threads, … of the buffer: loaded as PTX (the
// driver compiles it for the GPU), since the flush sits under the runner and its compiler.
constexpr const char* k_discard_ptx = R"(.version 7.4
.target sm_80
.address_size 64
.visible .entry kjit_l2_discard(.param .u64 base, .param .u64 lines)
{
    .reg .u64 %base, %lines, %line, %first, %stride, %at;
    .reg .u32 %thread, %block, %threads, %blocks;
    .reg .pred %done;
    ld.param.u64 %base, [base];
    ld.param.u64 %lines, [lines];
    mov.u32 %thread, %tid.x;
    mov.u32 %block, %ctaid.x;
    mov.u32 %threads, %ntid.x;
    mov.u32 %blocks, %nctaid.x;
    mul.wide.u32 %line, %block, %threads;
    cvt.u64.u32 %first, %thread;
    add.u64 %line, %line, %first;
    mul.wide.u32 %stride, %threads, %blocks;
LOOP:
    setp.ge.u64 %done, %line, %lines;
    @%done bra END;
    mad.lo.u64 %at, %line, 128, %base;
    discard.global.L2 [%at], 128;
    add.u64 %line, %line, %stride;
    bra LOOP;
END:
    ret;
}
)";
constexpr unsigned k_discard_block = 256;
constexpr unsigned k_discard_grid = 1024;

}  // namespace

l2_flush::l2_flush(std::shared_ptr<const driver_api> api, std::size_t l2_bytes)
    : m_api(std::move(api)), m_bytes(std::max<std::size_t>(2 * l2_bytes, 1 << 20) / 128 * 128) {}

void l2_flush::dirty(CUstream stream) {
    if (!m_buffer) {
        CUdeviceptr pointer = 0;
        m_api->check(m_api->cuMemAlloc(&pointer, m_bytes), "cuMemAlloc", "L2 flush buffer");
        m_buffer = buffer_handle(pointer, {m_api});
    }
    m_api->check(m_api->cuMemsetD8Async(m_buffer.get(), 0, m_bytes, stream), "cuMemsetD8Async", "L2 flush");
}

void l2_flush::clean(CUstream stream) {
    dirty(stream);
    if (!m_discard) {
        CUmodule module = nullptr;
        m_api->check(m_api->cuModuleLoadData(&module, k_discard_ptx), "cuModuleLoadData", "the L2 discard kernel");
        m_discard_module = module_handle(module, {m_api});
        m_api->check(m_api->cuModuleGetFunction(&m_discard, module, "kjit_l2_discard"), "cuModuleGetFunction",
                     "kjit_l2_discard");
    }
    CUdeviceptr base = m_buffer.get();
    unsigned long long lines = m_bytes / 128;
    void* args[] = {&base, &lines};
    m_api->check(m_api->cuLaunchKernel(m_discard, k_discard_grid, 1, 1, k_discard_block, 1, 1, 0, stream, args, nullptr),
                 "cuLaunchKernel", "the L2 discard kernel");
}

}  // namespace kjit::cuda
