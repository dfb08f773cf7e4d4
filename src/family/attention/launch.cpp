// The attention family's launch: each key of "launch" as given, or its "auto" for the rung, the
// head dim and the target (launch.hpp).
#include "family/attention/launch.hpp"

#include <algorithm>

#include "family/attention/score_code.hpp"
#include "family/attention/split_keys.hpp"

namespace kjit::family::attention {
namespace {

using config::pipeline;
using config::detail::object_reader;

/// Queries a head up to which a work item is one piece of 16 queries: decoding, one token a
/// sequence (or a few, speculative decoding) against a long cache of keys.
constexpr long long k_decode_queries = 16;

/// "auto": on sm_90 from head_dim 64 the wgmma rung, but where decoding, whose 64 queries a
/// consumer would be all but empty, and else (and for the separate kernels, which are the mma
/// rung's) the mma rung.
rung auto_rung(const pipeline& p, const problem& pr) {
    const bool fused = p.fuse != config::fusion::separate;
    const bool wide = pr.head_dim >= 64 && pr.queries > k_decode_queries;
    return fused && config::compiled_arch(p) == 90 && wide ? rung::wgmma : rung::mma;
}

/// A rung's "auto" launch, 128 queries a block.
/// - wgmma: tiles of 128 keys (the consumers, buffers and schedule: choose_wgmma_ring). Past
///   head_dim 128 (in slabs of 64), tiles of 64 keys: 128 would not fit in shared memory at 192,
///   nor their scores with the output rows in a consumer's registers at 256.
/// - mma: up to head dim 128, 4 warps of 2 pieces each and tiles of 64 keys: the fastest at 8k ×
///   128 on the H200 (309 TFLOP/s against 284 with tiles of 32 keys and 231 with 8 warps of one
///   piece; bench/results/2026-12-04-attention/second). Up to head dim 64, tiles of 128 keys: at
///   1k, 4k and 16k × 64, causal or not, 9-18 % faster than 64 (on an H100,
///   bench/results/2026-12-06-short/first: 289 TFLOP/s against 260 at 1k, 307 against 261 at 16k
///   causal). Past 128 the output rows of 2 pieces would not fit in registers: 8 warps of one
///   piece and tiles of 32 keys. Decoding, one warp of one piece, its keys split among blocks
///   (choose_splits).
policy auto_policy(rung kind, const problem& pr) {
    const long long head_dim = pr.head_dim;
    policy t;
    t.kind = kind;
    t.block_m = 128;
    if (kind == rung::wgmma) {
        t.block_n = padded_head_dim(head_dim) > 128 ? 64 : 128;
        return t;
    }
    t.warps = head_dim > 128 ? 8 : 4;
    t.block_n = head_dim > 128 ? 32 : head_dim > 64 ? 64 : 128;
    if (pr.queries <= k_decode_queries) {  // (its warps follow: one)
        t.block_m = 16;
        t.block_n = head_dim > 128 ? 32 : 64;
    }
    return t;
}

/// The fewest tiles of keys an automatic split takes.
constexpr long long k_split_tiles = 4;

/// The most floats a wgmma consumer's thread may hold in its scores and output rows, block_n / 2
/// and padded head_dim / 2, with P's registers (block_n / 4) and the rest: within 240 registers
/// (two consumers), 168; within 160 (three), 96.
int wgmma_accumulators(const policy& t) { return t.consumers == 2 ? 168 : 96; }

/// The wgmma rung's consumers, buffers and schedule: each as given, or where left "auto" chosen
/// from those before it by rules measured on an H100 (bench/results/2026-12-05-wgmma/third and
/// fourth, every schedule and buffer count at the FlashAttention-3 grid):
/// - consumers: three at head dim 64, whose scores and output rows fit 160 registers (335 against
///   314 TFLOP/s at 4k × 64), else two;
/// - buffers: as many as fit the target's shared memory, up to four at head dim 64 and three
///   above: a consumer that overlaps holds two tiles (S of one, P · V of the one before) while the
///   producer fills the next;
/// - schedule: with three buffers or more, ping-pong (584 against serial's 467 at 8k × 128; at head
///   dim 64 without a mask, 385 against overlap's 362-368 at 1k, 502-505 against 485-489 at 4k,
///   either ahead at 16k: bench/results/2026-12-06-short/sixth, since plain tiles shortened the
///   softmax); with two, as at head dim 256, serial (606 against ping-pong's 472).
void choose_wgmma_ring(const object_reader& l, const pipeline& p, const problem& pr, policy& chosen) {
    const bool narrow = padded_head_dim(pr.head_dim) == 64;
    chosen.consumers = l.leaves_auto("consumers") ? (narrow ? 3 : 2) : static_cast<int>(l.integer("consumers", 2, 3, std::nullopt));
    chosen.block_m = policy::k_wgmma_consumer_rows * chosen.consumers;
    if (!l.leaves_auto("buffers")) {
        chosen.stages = static_cast<int>(l.integer("buffers", 2, 8, std::nullopt));
    } else {
        for (chosen.stages = narrow ? 4 : 3; chosen.stages > 2; --chosen.stages)
            if (chosen.shared_bytes(pr.head_dim, p.type) <= p.target.shared_per_block) break;
    }
    using order = policy::schedule;
    if (!l.leaves_auto("schedule"))
        chosen.order = l.choice<order>("schedule", {{"serial", order::serial}, {"overlap", order::overlap}, {"pingpong", order::pingpong}},
                                       std::nullopt);
    else chosen.order = chosen.stages < 3 ? order::serial : order::pingpong;
}

/// Persistent blocks (each taking item after item, the next one's queries fetched into L2 as it
/// starts one) where "auto": at head dim 64 (three consumers, 192 queries an item) up to 8,192
/// keys, where no mask skips tiles. On an H100 (bench/results/2026-12-06-short/eighth, ninth; two
/// rounds each) 385 → 416 TFLOP/s at 1k × 64, 470 → 500 at 2k, 507 → 528 at 4k, 545 → 570 at 8k,
/// but 561 → 526 at 16k; at head dim 128 2–3 % slower from 1k to 8k; under a causal mask, whose
/// items differ in length and are dealt in a fixed order, 229 → 189 at 1k × 64 (…/first); under
/// the causal window of 1,024 at 8k, whose items are short and alike, 411 → 394 at head dim 128
/// and 266 → 242 at 64, with the first turn handed on (bench/results/2026-12-07-producer-lanes).
/// The handoff lifted persistent blocks at 1k × 128 to 531 against a block an item's 521, but at
/// 4k they stay behind (633 against 650): not taken at head dim 128.
bool auto_persistent(const policy& chosen, const problem& pr, bool skips) {
    return chosen.consumers == 3 && pr.keys <= 8192 && !skips;
}

/// The wgmma rung's keys over its "auto": the consumers and their 64 queries each, the buffers, the
/// schedule, persistent blocks, a tile the registers hold.
void read_wgmma_launch(const object_reader& l, const pipeline& p, const problem& pr, bool skips, policy& chosen) {
    choose_wgmma_ring(l, p, pr, chosen);
    chosen.persistent = l.leaves_auto("persistent") ? auto_persistent(chosen, pr, skips) : l.boolean("persistent", false);
    if (!l.leaves_auto("block_m") && l.integer("block_m", 16, 256, std::nullopt) != chosen.block_m)
        l.fail("block_m", "the wgmma rung's consumer warp groups take 64 queries each: expected " + std::to_string(chosen.block_m) +
                              " for " + std::to_string(chosen.consumers) + " consumers");
    if (pr.head_dim < 64)
        l.fail("rung", "the wgmma rung copies slabs of 64 columns: expected head_dim 64 or more, got " + std::to_string(pr.head_dim));
    const long long held = (chosen.block_n + padded_head_dim(pr.head_dim)) / 2;
    if (held > wgmma_accumulators(chosen))
        l.fail("block_n", "a consumer's thread holds block_n / 2 scores and head_dim / 2 output floats (head_dim in slabs of 64): at most " +
                              std::to_string(wgmma_accumulators(chosen)) + " together with " + std::to_string(chosen.consumers) +
                              " consumers, got " + std::to_string(held));
}

/// The fused mma rung's tile where "auto" and the head dim's does not fit the target's shared
/// memory (99 KiB a block on sm_86 and sm_89, where 128 × 64 at head dim 128 needs 102 KiB): the
/// keys' tile halves first, down to 32, then the queries', down to 64, as FlashAttention-2 takes
/// 128 × 32 at head dim 128 and 64 × 32 at 256 on those GPUs. Not measured on them (none was
/// lent); a tile given that does not fit is refused by resolve.
void fit_mma_tile(const object_reader& l, const pipeline& p, const problem& pr, policy& chosen) {
    const auto fits = [&] { return chosen.shared_bytes(pr.head_dim, p.type) <= p.target.shared_per_block; };
    while (!fits() && l.leaves_auto("block_n") && chosen.block_n > 32) chosen.block_n /= 2;
    while (!fits() && l.leaves_auto("block_m") && chosen.block_m > 64) chosen.block_m /= 2;
}

/// Split keys (launch.splits, the mma rung's fused kernel): as given, up to the item's tiles of
/// keys, or where "auto" and the work items would leave the target's SMs idle, as many blocks an
/// item as the GPU holds at once (the blocks of this tile an SM holds, times the SMs) and no more:
/// a second, partial wave of blocks cost more than it split (on an H100 at batch 8 × 8192 keys, 64
/// items, 396 blocks at once: 7 splits 129.6 µs, 4 113.5; bench/results/2026-12-07-split-keys).
/// Each split takes k_split_tiles tiles of keys or more, so that its partial row is worth writing,
/// and no more splits than the shares of ⌈tiles / splits⌉ fill (30 of 121 tiles would leave the
/// last 5 blocks none: 25).
void choose_splits(const object_reader& l, const pipeline& p, const problem& pr, policy& chosen) {
    const long long tiles = (pr.keys + chosen.block_n - 1) / chosen.block_n;
    if (!l.leaves_auto("splits")) {
        chosen.splits = static_cast<int>(l.integer("splits", 1, 1024, std::nullopt));
        if (chosen.splits > tiles)
            l.fail("splits", "each split takes a tile of " + std::to_string(chosen.block_n) + " keys or more: at most " +
                                 std::to_string(tiles) + " for " + std::to_string(pr.keys) + " keys, got " + std::to_string(chosen.splits));
        return;
    }
    const long long per_sm = std::max<long long>(1, static_cast<long long>(p.target.shared_per_sm / chosen.shared_bytes(pr.head_dim, p.type)));
    const long long resident = per_sm * p.target.sm_count, items = work_items(kernel_view(pr, chosen), chosen);
    if (items >= p.target.sm_count) return;
    const long long splits = std::clamp(resident / items, 1LL, std::max(1LL, tiles / k_split_tiles));
    const long long share = split_share(tiles, splits);
    chosen.splits = static_cast<int>((tiles + share - 1) / share);  // the shares the tiles fill: none left with no tiles
}

/// The mma rung's keys over its "auto": a tile the target holds, queries in whole pieces of 16 a
/// warp.
void read_mma_launch(const object_reader& l, const pipeline& p, const problem& pr, policy& chosen) {
    if (!l.leaves_auto("block_m")) chosen.block_m = static_cast<int>(l.integer("block_m", 16, 256, std::nullopt));
    if (p.fuse != config::fusion::separate) fit_mma_tile(l, p, pr, chosen);
    if (!l.leaves_auto("warps")) chosen.warps = static_cast<int>(l.integer("warps", 1, 16, std::nullopt));
    else chosen.warps = std::min(chosen.warps, std::max(1, chosen.block_m / 16));
    const int pieces = chosen.block_m / (16 * chosen.warps);
    if (pieces < 1 || pieces > 4 || pieces * 16 * chosen.warps != chosen.block_m)
        l.fail("block_m", "a warp takes 1 to 4 pieces of 16 queries: expected 16, 32, 48 or 64 times warps (" +
                              std::to_string(chosen.warps) + "), got " + std::to_string(chosen.block_m));
    if (p.fuse != config::fusion::separate) choose_splits(l, p, pr, chosen);
}

/// launch.pack_heads: as given, refused where the score reads a query's place; or where "auto",
/// in the fused kernels when decoding with grouped heads, whose work items would each read the
/// same keys and values (through L2) once for every query head of the group.
bool read_pack_heads(const object_reader& l, const pipeline& p, const problem& pr) {
    const bool allowed = packable(score_names(p));
    if (l.leaves_auto("pack_heads"))
        return p.fuse != config::fusion::separate && pr.group() > 1 && pr.queries <= k_decode_queries && allowed;
    const bool given = l.boolean("pack_heads", false);
    if (given && !allowed)
        l.fail("pack_heads", "the score reads a query's place (row, head, or an input at the query's token), which packed heads' "
                             "queries do not keep");
    return given;
}

}  // namespace

policy read_launch(const object_reader& l, const pipeline& p, const problem& pr, bool skips) {
    rung kind = l.leaves_auto("rung") ? auto_rung(p, pr)
                                      : l.choice<rung>("rung", {{"mma", rung::mma}, {"wgmma", rung::wgmma}}, std::nullopt);
    for (const char* key : {"warps", "splits"})  // the rung whose key is given
        if (l.leaves_auto("rung") && !l.leaves_auto(key)) kind = rung::mma;
    for (const char* key : {"consumers", "buffers", "schedule", "persistent"})
        if (l.leaves_auto("rung") && !l.leaves_auto(key)) kind = rung::wgmma;
    policy chosen = auto_policy(kind, pr);
    chosen.packs_heads = read_pack_heads(l, p, pr);
    for (const char* key : kind == rung::wgmma ? std::vector<const char*>{"warps", "splits"}
                                               : std::vector<const char*>{"consumers", "buffers", "schedule", "persistent"})
        if (!l.leaves_auto(key))
            l.fail(key, "a key of the \"" + std::string(kind == rung::wgmma ? "mma" : "wgmma") + "\" rung; this one is \"" +
                            std::string(to_string(kind)) + "\"");
    if (!l.leaves_auto("block_n")) {
        chosen.block_n = static_cast<int>(l.integer("block_n", 16, 256, std::nullopt));
        if (chosen.block_n % 16 != 0) l.fail("block_n", "expected a multiple of 16 keys, got " + std::to_string(chosen.block_n));
    }
    if (kind == rung::wgmma) read_wgmma_launch(l, p, pr, skips, chosen);
    else read_mma_launch(l, p, pr, chosen);
    return chosen;
}

}  // namespace kjit::family::attention
