// The L2 flush before a cold sample: a memset of twice the L2, so that nothing a kernel touched is
// left in it, as Triton's do_bench and nvbench flush. The memset leaves the L2 full of its own dirty
// lines, which the next kernel writes back to DRAM as it evicts them; `clean` also discards them
// (PTX discard.global.L2: a line invalidated, not written back), so that the next kernel's DRAM
// traffic is its own alone. The timed loops flush as peers do; the counter pass flushes clean.
#pragma once
#include <memory>

#include "cuda/handles.hpp"

namespace kjit::cuda {

class l2_flush {
public:
    l2_flush(std::shared_ptr<const driver_api> api, std::size_t l2_bytes);
    /// The memset (allocated at the first flush).
    void dirty(CUstream stream);
    /// The memset, then its lines discarded (the discarding kernel loaded at the first clean flush).
    void clean(CUstream stream);

private:
    std::shared_ptr<const driver_api> m_api;
    std::size_t m_bytes;
    buffer_handle m_buffer;
    module_handle m_discard_module;
    CUfunction m_discard = nullptr;
};

}  // namespace kjit::cuda
