// The GEMM family's shape rule: the policy "auto" chooses for a product's M, N and K on a target,
// from the tiles' rates measured on the H200 (the wave model), and a rule of its own for thin
// products; and what a tile's vectors and copies follow from the shapes.
#include "family/gemm/shape_rule.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>

namespace kjit::family::gemm {

/// The policies where "auto" at large shapes. simt: 128 × 128 tiles of 8 × 8 per thread, the
/// classic shape for CUDA cores (87–91 % of cuBLAS fp32 on the H200). mma: 256 × 128 tiles on 8
/// warps of 64 × 64, 32 deep, three buffers (85 KiB): of 60 launches tuned at 8192³ bfloat16 on the
/// H200, the fastest whose shared memory fits every GPU the rung runs on (99 KiB on sm_86 and
/// sm_89): 2.93 ms, where the fastest of all (256 × 128 × 64 on 8 warps of 128 × 32, four buffers,
/// 212 KiB: Hopper alone) took 2.65 (bench/results/2026-12-03-mma/second). wgmma: 128 × 256 tiles,
/// two consumer warp groups of 64 × 256 each, three buffers 64 deep (the 128-byte rows the
/// swizzle is made for), groups of 16 tile rows: the fastest of 16 launches at each of 4096³,
/// 8192³ and 8192 × 4096 × 4096 on the H200 (bench/results/2026-12-03-wgmma/third); one block
/// fills an SM. mma's depth is 64 bytes: 16 of float32 as TF32, the same shared memory.
policy large_shape_policy(rung kind, config::dtype type) {
    policy chosen;
    chosen.kind = kind;
    if (kind == rung::mma) {
        chosen.tile_m = 256;
        chosen.tile_k = static_cast<int>(64 / config::element_size(type));
        chosen.warps_m = 4;
        chosen.warps_n = 2;
        chosen.stages = 3;
    }
    if (kind == rung::wgmma) {
        chosen.tile_n = 256;
        chosen.tile_k = 64;
        chosen.stages = 3;
        chosen.group_m = 16;
    }
    if (kind == rung::stream) {
        chosen.tile_n = 64;
        chosen.warps_n = 16;
    }
    return chosen;
}

namespace {

/// A tile the shape rule may choose, and the share of the rung's best rate it reached on a full
/// machine (one block an SM, tiles enough for many waves).
struct tile_choice {
    int tile_m, tile_n;
    bool pingpong;  ///< wgmma's schedule
    int warps_m, warps_n;  ///< mma's warps
    int stages;
    double rate;
    /// Its rate where the product is at most k_shallow_depth deep, where that was measured apart.
    double shallow_rate = 0;
};

/// A depth of so few steps that a tile's start and end weigh beside its products.
constexpr long long k_shallow_depth = 1024;

/// wgmma tiles, largest first. Each rate is its time per wave of tiles at 4096 × 11008 × 4096
/// (LLaMA-2-7B's up-projection: 1376 tiles of 128 × 256, 11 waves) against 128 × 256's, on the
/// H200, each tile at its fastest depth: 3 buffers for 128 × 256 and 256 × 128 (4 do not fit
/// beside the staged C), 4 for the others (bench/results/2026-12-03-defaults/first: 16 launches
/// at 8 shapes; the 4096 × 4096 × 11008 product gives the same order, 128 × 128 at 0.91). The
/// smallest tile streams W: 8 buffers keep more of it in flight, 21.4 µs at a decode step (M = 16
/// and 64, N = K = 4096) where 4 took 28.5 (bench/results/2026-12-03-decode/first; thin products
/// have a rule of their own now, thin_policy). 128 × 192 ran LLaMA's up-projection's 15 waves in
/// 498.5 µs where 128 × 256 ran 11 in 484.4 (a rate of 0.99), and fills the SMs where 128 × 256
/// leaves a quarter idle: GPT-2's down-projection (4096 × 768 × 3072) in 31.6 µs where 128 × 256
/// took 40.2 (bench/results/2026-12-04-split/first). At a depth of 768 (GPT-2 small's
/// up-projections) 128 × 192 ran a wave at 1.05 of 128 × 256's rate on an H100: 4096 × 3072 × 768
/// in 38.4 µs (4 waves) where 128 × 256 took 40.6 (3 waves), 8192 × 3072 × 768 69.4 (8) against
/// 72.8 (6), each the best of its shape's 136 launches `kjit tune` measured
/// (bench/results/2026-12-07-cluster-wait/fifth): with so few steps of the depth, its fourth buffer
/// and smaller store count.
constexpr tile_choice k_wgmma_tiles[] = {
        {128, 256, false, 0, 0, 3, 1.00},
        {128, 192, false, 0, 0, 4, 0.99, 1.05},
        {128, 128, false, 0, 0, 4, 0.93},
        {256, 128, false, 0, 0, 3, 0.91},
        {64, 256, true, 0, 0, 4, 0.85},
        {64, 128, true, 0, 0, 4, 0.61},
        {64, 64, true, 0, 0, 8, 0.37},
};
/// What a split of the depth costs beside the time it divides: the partial tiles' trip through
/// shared memory, and blocks that start in clusters.
constexpr double k_split_cost = 1.1;

/// mma tiles, largest first, at the large-shape policy's depth (3 buffers of 32). Not measured
/// per tile: the rates are wgmma's for the same area.
constexpr tile_choice k_mma_tiles[] = {
        {256, 128, false, 4, 2, 3, 1.00},
        {128, 128, false, 2, 2, 3, 0.93},
        {64, 128, false, 2, 2, 3, 0.61},
        {64, 64, false, 2, 2, 3, 0.37},
};

/// The widest of 4, 2, 1 elements, at most 16 bytes, that divides `extent`: a vector never
/// straddles two rows.
int width_dividing(long long extent, std::size_t element_bytes, int widest) {
    int width = std::min<int>(widest, static_cast<int>(16 / element_bytes));
    while (extent % width != 0) width /= 2;
    return width;
}


/// The tiles of tile_m × tile_n that cover the product's M × N.
long long tiles_of(int tile_m, int tile_n, const sizes& s) { return (s.m + tile_m - 1) / tile_m * ((s.n + tile_n - 1) / tile_n); }

/// The tile and split whose estimated time at `s` is least: the waves of blocks it takes, one
/// block an SM (a tile's last wave costs a whole one), times the tile's area over its rate (at a
/// shallow depth its shallow rate, where measured) and over the split, which divides each block's
/// depth. A tile whose area the product would leave mostly empty (M of 16 in 128 rows) loses to a
/// smaller one this way; so does one of too few tiles to fill the SMs, unless a split of its depth
/// fills them. At the 8 shapes measured without splits,
/// the tile chosen ran within 2 % of the fastest of the 16 launches (decode at M ≤ 64 is bound by
/// W's bytes, not by area: there the smallest tiles are all within 2 % of each other).
double estimated_time(const policy& candidate, const tile_choice& tile, const sizes& s, const config::target& gpu) {
    const double rate = s.k <= k_shallow_depth && tile.shallow_rate > 0 ? tile.shallow_rate : tile.rate;
    const long long blocks = tiles_of(candidate.tile_m, candidate.tile_n, s) * candidate.split_k;
    const long long waves = (blocks + gpu.sm_count - 1) / gpu.sm_count;
    const double split_cost = candidate.split_k > 1 ? k_split_cost : 1.0;
    return static_cast<double>(waves) * candidate.tile_m * candidate.tile_n / (rate * candidate.split_k) * split_cost;
}

/// Whether the shape rule may split the depth of `candidate`'s tiles: on wgmma, where the split
/// fills SMs the tiles leave idle (it never adds a wave), each part is at least as deep as the
/// ring of buffers (a shorter part never fills the pipeline), and the partial tiles fit beside the
/// buffers in the target's shared memory.
bool split_fits(const policy& candidate, const sizes& s, const config::target& gpu, config::dtype type) {
    if (candidate.split_k == 1) return true;
    const long long depth_tiles = (s.k + candidate.tile_k - 1) / candidate.tile_k;
    return candidate.kind == rung::wgmma && tiles_of(candidate.tile_m, candidate.tile_n, s) * candidate.split_k <= gpu.sm_count &&
           depth_tiles >= static_cast<long long>(candidate.split_k) * candidate.stages &&
           candidate.shared_bytes(type) <= gpu.shared_per_block;
}

/// The rung's large-shape policy with `tile`, its depth split in `split`, fitted to `s`.
policy with_tile(rung kind, const tile_choice& tile, int split, const sizes& s, config::dtype type) {
    policy chosen = large_shape_policy(kind, type);
    chosen.tile_m = tile.tile_m;
    chosen.tile_n = tile.tile_n;
    // float32's buffers (TF32: 16 deep, two mma steps) are one more: at 4096 × 4096 × 4096,
    // 8192 × 4096 × 4096 and 4096 × 11008 × 4096 four ran 2–8 % faster than three on an H100
    // (bench/results/2026-12-06-tf32/first); fit_shared_memory drops it where it does not fit.
    chosen.stages = kind == rung::mma && type == config::dtype::float32 ? tile.stages + 1 : tile.stages;
    chosen.pingpong = kind == rung::wgmma && tile.pingpong;
    if (kind == rung::mma) {
        chosen.warps_m = tile.warps_m;
        chosen.warps_n = tile.warps_n;
    }
    chosen.split_k = split;
    fit_to(chosen, s, type);
    return chosen;
}

/// A thin product: at most four 64-row tile rows.
constexpr long long k_thin_rows = 256;
/// The most buffers a thin product's unsplit tile keeps: more of W in flight than the wave
/// model's depths, as far as shared memory holds them.
constexpr int k_thin_stages = 12;
/// The depth from which a thin product's parts may be 4 (each at least 2048 deep).
constexpr long long k_thin_quarters_from = 8192;

/// A thin product on wgmma (M ≤ 256) streams W, and its time is W's bytes (how many SMs pull them,
/// how much of it each keeps in flight) more than the tiles' area the wave model weighs. It takes
/// 64-row ping-pong tiles, the narrowest (64, 128 or 256 columns) whose tiles fit one wave; their
/// depth split in two where the doubled blocks still fit one wave (8 buffers, or as many as half
/// the depth fills), else as many buffers as shared memory holds, 12 at most. Nothing where no such
/// tile fits one wave: the wave model chooses. On the H200 (bench/results/2026-12-04-split,
/// second, fourth and fifth), at N = K = 4096 and M = 1, 16, 64: 64 × 64 split 18.8–19.3 µs,
/// unsplit 21.1–21.5 (8 buffers) and 19.5–19.8 (12), 64 × 128 split 24.1–24.7; at 8 × 5120 × 5120
/// (80 tiles of 64 × 64): 12 buffers 23.4 µs, 8 27.8, 64 × 128 split 30.9; at 16 × 3072 × 768:
/// split 9.9, 64 × 128 split 10.9; at 256 × 4096 × 4096 the fastest of 40 launches `kjit tune`
/// tried was 64 × 128 in 8 buffers, 23.0 µs, where 128 × 128 split took 28.6.
///
/// A product k_thin_quarters_from deep or deeper is split in 4 where its blocks fit one wave: on an
/// H100 (bench/results/2026-12-06-narrow-decode/third, 12 launches tuned), 32 × 1024 × 8192 in 4
/// parts 19.1 µs, in 2 (the rule before) 21.0–21.1, cuBLASLt 15.5; at K = 4096 four parts of 1024
/// lost (64 × 2048 × 4096: 2 parts 17.7, unsplit 17.6, 4 parts more than 21.7).
std::optional<policy> thin_policy(const sizes& s, const config::target& gpu, config::dtype type) {
    for (const int columns : {64, 128, 256}) {
        if (tiles_of(64, columns, s) > gpu.sm_count) continue;
        const tile_choice tile{64, columns, true, 0, 0, 8, 0.0};
        for (const int parts : {4, 2}) {
            if (parts == 4 && s.k < k_thin_quarters_from) continue;
            policy split = with_tile(rung::wgmma, tile, parts, s, type);
            const long long depth_tiles = (s.k + split.tile_k - 1) / split.tile_k;  // a shallow one's parts fill fewer
            split.stages = static_cast<int>(std::clamp<long long>(depth_tiles / parts, 2, tile.stages));
            if (split_fits(split, s, gpu, type)) return split;
        }
        policy deep = with_tile(rung::wgmma, tile, 1, s, type);
        deep.stages = k_thin_stages;
        while (deep.stages > 2 && deep.shared_bytes(type) > gpu.shared_per_block) --deep.stages;
        return deep;
    }
    return std::nullopt;
}

/// A decode step on CUDA cores (M ≤ k_stream_rows): 16 warps a block, each warp's loads 8 or 4
/// vectors of a row of B (128 or 64 bytes of 16-bit elements) by 4 or 8 slices of the depth, on
/// sm_90 the depth split over a cluster of 1, 2 or 4 blocks: of these, the launch with the most
/// blocks up to 1.5 a SM, else the fewest (ties: the wider tile, the fewer parts). The fewer rows
/// of A, the more steps of the depth in flight: 4 for 1 or 2 rows, 2 for 3 or 4, else 1. On an
/// H100 (bench/results/2026-12-06-tf32/third and fifth), of 6–10 stream launches at each of 13
/// decode shapes it chose the fastest or one within 3 % at 12: at 1–4 × 4096 × 4096 64 columns
/// split in 2 (21.2–22.2 µs; 4 parts 27.5–33.6, wgmma's split 24.2), at 1 × 5120 × 5120 and
/// 1 × 6144 × 4096 split in 2 (30.5 and 29.5; unsplit 35.4 and 31.5), at 1 × 11008 × 4096
/// unsplit (43.6; split 47.9), at 1 × 768 × 3072 32 columns in 4 parts (9.7; 64 columns 11.4);
/// more steps: 21.2 µs where one took 25.8. It misses at 1 × 3072 × 768 (64 columns in 4 parts,
/// 10.2 µs; in 2, 9.3). Where B's rows take narrower vectors (N odd: one element), a slice has
/// that many times the vectors, up to a warp's 32, so that a warp still reads as many bytes of a
/// row: GPT-2's output layer's decode step (1 × 50,257 × 768) on an H100 took 45.6 µs in 32
/// columns, 53.2 in 16 and 66.9 in 8, where cuBLAS took 48.6
/// (bench/results/2026-12-07-cluster-wait/fifth).
policy stream_cuda_policy(const sizes& s, const config::target& gpu, config::dtype type) {
    policy chosen = large_shape_policy(rung::stream, type);
    fit_to(chosen, s, type);
    // How many times narrower than 16 bytes B's vectors are (1 where its rows allow 16 bytes).
    const int narrower = static_cast<int>(16 / config::element_size(type)) / chosen.width_b;
    chosen.stages = s.m <= 2 ? 4 : s.m <= 4 ? 2 : 1;
    const auto within = [&](long long blocks) { return 2 * blocks <= 3LL * gpu.sm_count; };
    // Within 1.5 a SM beats beyond; within, more blocks are better, beyond, fewer.
    const auto better = [&](long long blocks, long long than) {
        if (within(blocks) != within(than)) return within(blocks);
        return within(blocks) ? blocks > than : blocks < than;
    };
    policy best = chosen;
    long long best_blocks = 0;  // (none yet)
    for (const int wide_vectors : {8, 4}) {
        const int columns = std::min(32, wide_vectors * narrower) * chosen.width_b;  // a slice's vectors'
        for (const int split : {1, 2, 4}) {
            if (split > 1 && gpu.arch < 90) continue;
            const long long blocks = tiles_of(chosen.tile_m, columns, s) * split;
            if (best_blocks > 0 && !better(blocks, best_blocks)) continue;
            best = chosen;
            best.tile_n = columns;
            best.split_k = split;
            best_blocks = blocks;
        }
    }
    return best;
}

/// Shared memory the stream rung's warps' sums may take on tensor cores: three blocks an SM.
constexpr std::size_t k_stream_tensor_sums = 64 * 1024;
/// On tensor cores, where the depth is not split: warps of 64 columns where they make this many
/// blocks, else of 32.
constexpr long long k_stream_tensor_wide_blocks = 64;
/// On tensor cores and sm_90, where blocks of 64 columns would be at most half this many, the
/// depth is split over clusters of 2, 4 or 8 blocks, until they are this many.
constexpr long long k_stream_tensor_split_blocks = 64;
/// Split so, a product this deep takes 64 columns a block, a shallower one 32.
constexpr long long k_stream_tensor_split_wide_depth = 8192;

/// A decode step on tensor cores: 16 warps a block, 8 where its blocks outnumber the SMs (16 warps
/// of some 100 registers fill an SM; fewer still where their sums would take more than
/// k_stream_tensor_sums), the depth split among the warps alone, and warps of 64 columns where
/// those make k_stream_tensor_wide_blocks blocks, one step of the depth in flight; else of 32,
/// two steps in flight, which keep as many of W's bytes in flight as a 64-column warp's one. On an
/// H100 (bench/results/2026-12-06-stream-tensor), of 36 launches `kjit tune` measured at each of
/// 14 decode shapes (columns, warps, split in 1, 2 or 4 blocks, steps in flight; `first`), the
/// fastest had one block on the depth at 12, 16 warps at 10; a second step in flight was within
/// 0.1 µs of one. At 8–16 × 4096 × 4096 64 columns unsplit 21.6–22.4 µs, split in 2 23.6–23.9;
/// at 16 × 3072 × 768 32 columns 8.3 (64: 9.2). 8 warps where 16 left blocks waiting (`third`):
/// 16 × 11008 × 4096 44.8 µs against 51.1, 12 × 14336 × 4096 54.1–54.4 against 56.5; a split in
/// 4 where the blocks are few lost there too (16 × 768 × 3072: 11.5 against 11.3 unsplit). Two
/// steps for 32 columns (bench/results/2026-12-06-other-models/second): 8 × 3584 × 18944 72.1 →
/// 60.7 µs (cuBLASLt 61.4), 8 × 1024 × 16384 49.7 → 38.5; with 64 columns two were within 1 % of
/// one at five shapes of 4096 columns and 4096–14336 deep.
///
/// Few columns (up to 2048, as grouped-query K and V projections have) leave most SMs idle: there
/// the depth is split over a cluster of blocks until they are k_stream_tensor_split_blocks (since
/// a block's warps add up their own sums before the cluster's first block reads them), in blocks
/// of 64 columns where the product is k_stream_tensor_split_wide_depth deep, else of 32. On an
/// H100 (bench/results/2026-12-06-narrow-decode, 32 launches tuned at each shape in `first`):
/// 8 × 1024 × 16384 64 columns in 4 parts 23.1 µs, the best, where 32 unsplit took 38.7 and
/// cuBLASLt 21.9; 8 × 1024 × 4096 32 columns in 2 parts 11.6, best 11.0, unsplit 12.7, cuBLASLt
/// 11.1; 16 × 512 × 3584 32 in 4 parts 10.2, best 10.0, unsplit 14.1, cuBLASLt 10.6; `second`:
/// 16 × 768 × 3072 32 in 4 parts 10.7–10.9 µs, 64 in 4 parts 12.2.
policy stream_tensor_policy(const sizes& s, const config::target& gpu, config::dtype type) {
    policy chosen = large_shape_policy(rung::stream, type);
    chosen.tensor = true;
    const long long wide_tiles = (s.n + 63) / 64;  // (a block a tile of columns)
    const bool split = gpu.arch >= 90 && 2 * wide_tiles <= k_stream_tensor_split_blocks;
    const bool wide = split ? s.k >= k_stream_tensor_split_wide_depth : wide_tiles >= k_stream_tensor_wide_blocks;
    chosen.tile_n = wide ? 64 : 32;
    chosen.stages = wide ? 1 : 2;
    const long long tiles = (s.n + chosen.tile_n - 1) / chosen.tile_n;
    while (split && chosen.split_k < 8 && chosen.split_k * tiles < k_stream_tensor_split_blocks) chosen.split_k *= 2;
    if (tiles > gpu.sm_count) chosen.warps_n = 8;  // (16 warps' registers fill an SM)
    fit_to(chosen, s, type);
    while (chosen.warps_n > 4 && chosen.shared_bytes(type) > k_stream_tensor_sums) chosen.warps_n /= 2;
    return chosen;
}

/// A decode step's stream policy: on tensor cores from k_stream_tensor_from_rows rows, where they
/// take the product; else on CUDA cores (on an H100, 3 × 4096 × 4096 21.9 µs on tensor cores
/// where CUDA cores took 23.0–23.2; at 1 and 2 rows CUDA cores ahead, 21.2 against 21.8 and 21.4
/// against 21.6: bench/results/2026-12-06-stream-tensor/second).
policy stream_policy(const sizes& s, const config::target& gpu, config::dtype type) {
    if (s.m >= k_stream_tensor_from_rows && !stream_tensor_refusal(s, type, gpu.arch)) return stream_tensor_policy(s, gpu, type);
    return stream_cuda_policy(s, gpu, type);
}

}  // namespace

void fit_to(policy& chosen, const sizes& s, config::dtype type) {
    const std::size_t element = config::element_size(type);
    if (chosen.kind == rung::stream && chosen.tensor) {  // a lane's 8 depths of A, its columns of each mma tile of B
        chosen.tile_m = static_cast<int>(std::min(s.m, k_stream_tensor_rows));
        chosen.width_a = 8;
        chosen.width_b = chosen.tile_n / 8;
        chosen.width_c = 1;
        return;
    }
    if (chosen.kind == rung::stream) {  // 16-byte loads along A's rows and B's, C an element at a time
        const auto widest = static_cast<int>(16 / element);
        chosen.tile_m = static_cast<int>(std::min(s.m, k_stream_rows));
        chosen.width_a = width_dividing(s.k, element, widest);
        chosen.width_b = width_dividing(s.n, element, widest);
        chosen.width_c = 1;
        return;
    }
    if (chosen.kind != rung::simt) {
        const auto per_16_bytes = static_cast<long long>(16 / element);  // rows that start on 16-byte boundaries
        const bool wgmma = chosen.kind == rung::wgmma;
        chosen.async_copies = wgmma || (s.k % per_16_bytes == 0 && s.n % per_16_bytes == 0);
        chosen.pad_a = wgmma && s.k % per_16_bytes != 0;
        chosen.pad_b = wgmma && s.n % per_16_bytes != 0;
        chosen.a_rows_copied = static_cast<int>(std::min<long long>(chosen.tile_m, (s.m + 7) / 8 * 8));
        chosen.width_c = s.n % 2 == 0 ? 2 : 1;  // the two columns an mma accumulator holds
        return;
    }
    chosen.width_a = width_dividing(s.k, element, 4);
    chosen.width_b = width_dividing(s.n, element, 4);
    chosen.width_c = chosen.width_b;
}

policy auto_policy(rung kind, const sizes& s, const config::target& gpu, config::dtype type) {
    if (kind == rung::simt) return large_shape_policy(kind, type);
    if (kind == rung::stream) return stream_policy(s, gpu, type);
    if (kind == rung::wgmma && s.m <= k_thin_rows)
        if (const std::optional<policy> thin = thin_policy(s, gpu, type)) return *thin;
    const std::span<const tile_choice> tiles = kind == rung::wgmma ? std::span<const tile_choice>(k_wgmma_tiles) : k_mma_tiles;
    policy best = large_shape_policy(kind, type);
    double best_time = INFINITY;
    for (const tile_choice& tile : tiles)
        // Splits in two at most: clusters of 4 ran every decode step slower than 2 or none
        // (30.6–35.0 µs at N = K = 4096 where 2 took 19.2–24.4: bench/results/2026-12-04-split).
        for (const int split : {1, 2}) {
            const policy candidate = with_tile(kind, tile, split, s, type);
            if (!split_fits(candidate, s, gpu, type)) continue;
            const double time = estimated_time(candidate, tile, s, gpu);
            if (time < best_time) {
                best = candidate;
                best_time = time;
            }
        }
    return best;
}

}  // namespace kjit::family::gemm
