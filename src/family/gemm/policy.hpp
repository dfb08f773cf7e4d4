// The GEMM family's policy: which rung computes the product, and its tiles. Resolved once from
// the launch block (every "auto" chosen here) and carried with the pipeline (pipeline::policy).
#pragma once
#include <optional>
#include <string>

#include "config/config.hpp"

namespace kjit::family::gemm {

/// The rungs: CUDA cores; warp-level tensor cores (mma.sync); or Hopper's warp-group tensor
/// cores fed by the TMA unit (wgmma, sm_90 alone); or, for a product of a few rows (a decode
/// step), CUDA cores or warp-level tensor cores streaming B once (stream). The tensor-core rungs
/// take bfloat16 and float16; mma also float32 rounded to TF32, where compile.fp32_precision asks.
enum class rung { simt, mma, wgmma, stream };

struct policy final : config::launch_policy {
    rung kind = rung::simt;
    int tile_m = 128, tile_n = 128, tile_k = 8;  ///< the block's tile of C, and the depth it holds at once
    /// mma: the block's warps, down and across its tile; stream: warps_n warps, their threads
    /// across the tile's columns and down slices of the depth
    int warps_m = 2, warps_n = 4;
    /// mma, wgmma: shared-memory buffers in the copy pipeline (simt: two, fixed); stream: steps of
    /// the depth whose loads a thread has in flight at once
    int stages = 1;
    int group_m = 8;     ///< blocks run down groups of this many tile rows before moving across
    /// wgmma: the two consumer warp groups take turns, a whole tile each ("pingpong"), instead of
    /// sharing each tile ("cooperative").
    bool pingpong = false;
    /// wgmma: blocks in a cluster, on tiles one under another, sharing B's tile by TMA multicast
    /// (1 where the tiles are not copied by TMA).
    int cluster_m = 1;
    /// wgmma, stream: blocks in a cluster that split the depth of one tile, the first adding the
    /// others' partial tiles (read from their shared memory) before the epilogue.
    int split_k = 1;
    /// mma: float32 operands rounded to TF32 (8 deep an mma.sync, not 16).
    bool tf32 = false;
    /// stream: multiplied on tensor cores (mma.sync, B's columns on its rows and A's rows on its
    /// columns), not CUDA cores.
    bool tensor = false;
    int width_a = 1, width_b = 1, width_c = 1;  ///< elements per load of A and of B, per store of C
    /// mma: tiles copied by cp.async, which needs rows of A and B that start on 16-byte
    /// boundaries; else the tiles are copied element by element. wgmma: by the TMA unit, always.
    bool async_copies = false;
    /// wgmma: A's rows (K not a multiple of 16 bytes), B's rows (N not), do not start on the
    /// 16-byte boundaries the TMA unit needs: a kernel first copies the matrix to rows that do,
    /// and the TMA unit copies from there. C's rows then do not either: the consumers' threads
    /// store its tiles from shared memory, not the TMA unit.
    bool pad_a = false, pad_b = false;
    /// wgmma with TMA: the rows of A's tile copied, M's rounded up to 8 where one tile row holds
    /// all of M (a decode step), else the tile's. The rows past them hold what an earlier tile
    /// left: they make rows of C past M, which are never stored, and are not worth the TMA unit's
    /// zero-filling.
    int a_rows_copied = 0;
    [[nodiscard]] int threads() const;
    /// wgmma: the TMA unit stores C's tiles from shared memory (its rows start on 16-byte
    /// boundaries).
    [[nodiscard]] bool tma_stores_c() const { return kind == rung::wgmma && !pad_b; }
    /// Blocks a cluster holds: cluster_m or split_k (the policy refuses both).
    [[nodiscard]] int cluster_blocks() const { return cluster_m * split_k; }
    /// Dynamic shared memory per block.
    [[nodiscard]] std::size_t shared_bytes(config::dtype type) const;
    /// The launch keys it chose, as a launch block would give them: rung, tiles, and the rung's own.
    [[nodiscard]] config::json_value choices() const;
    [[nodiscard]] config::json_value columns() const override;
    [[nodiscard]] std::string label() const override;
};

/// The pipeline's M, N and K: rows of x, columns of the matrix it is multiplied by, and its depth.
struct sizes {
    long long m = 0, n = 0, k = 0;
};
[[nodiscard]] sizes sizes_of(const config::pipeline& p);
/// The stage index of the matmul (always 0) and the name of the input it multiplies by.
[[nodiscard]] std::string multiplier(const config::pipeline& p);

/// The launch keys.
[[nodiscard]] std::vector<std::string> launch_keys();
/// Checks the matmul, its inputs and epilogue, and resolves the launch into p.policy.
void resolve(config::pipeline& p, const std::string& source);
/// The resolved policy of `p`.
[[nodiscard]] const policy& policy_of(const config::pipeline& p);
[[nodiscard]] std::string_view to_string(rung r);
/// wgmma: the rows of a tile a consumer warp group computes (half of them, or all in ping-pong).
[[nodiscard]] int consumer_rows(const policy& t);
/// stream: the most rows of A a product may have on CUDA cores, and on tensor cores.
constexpr long long k_stream_rows = 8;
constexpr long long k_stream_tensor_rows = 64;
/// stream: the most rows of A "auto" streams B for in any dtype (on CUDA cores), and where tensor
/// cores take the product; and from how many rows it takes tensor cores.
constexpr long long k_stream_auto_rows = 4;
constexpr long long k_stream_tensor_auto_rows = 16;
constexpr long long k_stream_tensor_from_rows = 3;
/// On sm_90, where B's rows are not 16-byte aligned: the most rows of A "auto" multiplies on mma,
/// whose copies take such rows element by element, rather than on wgmma after padding all of B.
constexpr long long k_unpadded_rows = 64;
/// stream on tensor cores: what it takes of a product (16-bit elements, rows of A and B of whole
/// 16-byte vectors, sm_80 and newer); else the reason it cannot, for messages.
[[nodiscard]] std::optional<std::string> stream_tensor_refusal(const sizes& s, config::dtype type, int arch);

}  // namespace kjit::family::gemm
