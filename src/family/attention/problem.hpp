// The attention family's problem and policy. A pipeline of one stage {"op": "attention", "input":
// "q", "keys": "k", "values": "v", "heads": H, …} over Q, K and V stored as matrices of rows of
// head_dim elements: Q's rows are the pipeline's shape, batch · heads · queries of them; K's and
// V's have a "shape" of their own, batch · kv_heads · keys rows. The problem is read from the
// stage (resolve checks it once); the policy is the launch resolved for the target.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "expr/evaluate.hpp"
#include "family/attention/tile_mask.hpp"

namespace kjit::family::attention {

/// What the attention stage computes: sizes, the inputs, and the scale of the scores.
struct problem {
    long long batch = 1, heads = 1, kv_heads = 1;
    long long queries = 0, keys = 0;  ///< sequence lengths of Q and of K and V, per head
    long long head_dim = 0;
    std::string q, k, v;  ///< the inputs
    double scale = 1;     ///< scores are scale · q · k before the score expression
    /// Query heads per head of K and V (grouped-query attention; 1 for multi-head).
    [[nodiscard]] long long group() const { return heads / kv_heads; }
    /// The head of K and V (of batch · kv_heads) that query head `head` (of batch · heads) reads.
    [[nodiscard]] long long kv_head_of(long long head) const { return head / heads * kv_heads + head % heads / group(); }
};

/// The problem of a pipeline its family resolved (its stage was checked then).
[[nodiscard]] problem problem_of(const config::pipeline& p);

/// Where the score expression is evaluated over the keys of query row `row` of Q (of all
/// batch · heads · queries rows): row and col are the query and the key within their head, head
/// and batch the query's; every `stride`-th key.
[[nodiscard]] expr::positions score_positions(const problem& pr, long long row, long long stride = 1);

/// The tile tests of a score (tile_mask.hpp): where its mask covers a whole tile, and where it
/// reaches into none of it.
struct tile_tests {
    std::optional<tile_test> masked, plain;
};

/// The values of the score's reads by token over the keys of query row `row` (of all
/// batch · heads · queries rows), as expr::chunk's arrays take them: "doc[row]" the query's
/// token's value at every key, "doc[col]" each key's. `value(name, i)` is element i of input name.
class token_reads {
public:
    token_reads(const config::pipeline& p, const problem& pr);
    /// Reads row `row`'s values; arrays() then points at them.
    void read(long long row, const std::function<double(const std::string&, long long)>& value);
    [[nodiscard]] const std::map<std::string, const double*>& arrays() const { return m_arrays; }

private:
    problem m_problem;
    std::vector<expr::token_read> m_reads;
    std::map<std::string, std::vector<double>> m_values;
    std::map<std::string, const double*> m_arrays;
};

/// The scalar kernel argument that holds the scale: the stage's, named as op stages' numbers are.
inline constexpr const char* k_scale_scalar = "s0_scale";

/// The rungs: warp-level tensor cores (mma.sync, ldmatrix, cp.async; sm_80 and newer), and
/// Hopper's warp-group ones (wgmma, the TMA unit, mbarriers, a producer and two consumer warp
/// groups; sm_90 alone).
enum class rung { mma, wgmma };
[[nodiscard]] std::string_view to_string(rung r);

/// The launch: which rung, and the tiles of queries and keys a block takes.
struct policy final : config::launch_policy {
    rung kind = rung::mma;
    int block_m = 128;  ///< queries per block: whole pieces of 16 per warp (wgmma: 64 per consumer)
    int warps = 4;      ///< mma: the block's warps, each on block_m / warps queries
    int block_n = 64;   ///< keys per tile held in shared memory
    int consumers = 2;  ///< wgmma: consumer warp groups, 64 queries each (block_m = 64 · consumers)
    int stages = 2;     ///< wgmma: the tiles of keys and values in shared memory at once
    /// wgmma (launch.schedule): serial, each consumer's tile multiplied, softmaxed and multiplied
    /// again in turn; overlap, a tile's softmax while the consumer's P · V of the one before runs;
    /// pingpong, overlap with the consumers taking turns at the tensor cores.
    enum class schedule { serial, overlap, pingpong } order = schedule::serial;
    /// The tile tests the kernel uses (tile_mask.hpp), decided once: `masked` where the score's
    /// mask is one whose whole tiles the kernel finds from their corners (it skips them); `plain`
    /// where launch.plain_tiles (default true) lets a tile whose scores are x itself (no mask
    /// reaches into it) take a shorter softmax: the max of the raw products, the scale in the
    /// exponent's multiply-add, no score expression. Each is absent where the score has no such
    /// tiles, or plain tiles are off.
    tile_tests tiles;
    [[nodiscard]] bool skips_tiles() const { return tiles.masked.has_value(); }
    [[nodiscard]] bool plain_tiles() const { return tiles.plain.has_value(); }
    /// wgmma (launch.persistent): a block an SM, each taking work item after item (a tile of
    /// queries of one head), the next item's queries copied while the last one's products finish;
    /// else a block an item.
    bool persistent = false;
    /// mma (launch.splits): the blocks an item's keys are split among (Flash-Decoding), each
    /// writing its queries' partial softmax (split_keys.hpp) for a second kernel to combine; 1: a
    /// block takes all of an item's keys.
    int splits = 1;
    /// launch.pack_heads: the query heads that share a head of K and V taken as one sequence of
    /// all their queries (kernel_view), so that a tile of keys and values is read once for the
    /// group (FlashAttention-3's PackGQA; FlashAttention-2 swaps a decode step's heads into its
    /// queries alike). Only where the score uses no query's place but its batch.
    bool packs_heads = false;
    /// fusion "separate": three kernels of the mma rung's warps, the scores in memory between them
    /// (attention_separate.cu.mustache): Q · Kᵀ in tiles of block_m queries × block_n keys, each
    /// row's softmax by a block of softmax_threads, then P · V as the fused kernel's.
    bool separate = false;
    int softmax_threads = 0;
    [[nodiscard]] int threads() const { return kind == rung::wgmma ? 128 * (1 + consumers) : 32 * warps; }
    /// wgmma: the registers a consumer's thread takes (setmaxnreg) from what the producer's give
    /// up (it keeps 24): 240 for two consumers, 160 for three.
    [[nodiscard]] int consumer_registers() const { return consumers == 2 ? 240 : 160; }
    /// Dynamic shared memory per block for `head_dim`. mma: the queries, and two tiles of keys and
    /// of values, rows padded by 16 bytes. wgmma: from a 1024-byte boundary, the queries and the
    /// ring's tiles in slabs of 64 columns, and the barriers (the queries' two, and three a buffer).
    /// Separate: the larger of its two products' kernels' (scores_shared_bytes, values_shared_bytes).
    [[nodiscard]] std::size_t shared_bytes(long long head_dim, config::dtype type) const;
    /// Separate: the Q · Kᵀ kernel's queries and keys, and the P · V kernel's two buffers of P's
    /// tile and of V's, rows padded by 16 bytes.
    [[nodiscard]] std::size_t scores_shared_bytes(long long head_dim, config::dtype type) const;
    [[nodiscard]] std::size_t values_shared_bytes(long long head_dim, config::dtype type) const;
    [[nodiscard]] config::json_value columns() const override;
    [[nodiscard]] std::string label() const override;

    static constexpr int k_wgmma_consumer_rows = 64;  ///< a consumer's queries: one wgmma's rows
};

[[nodiscard]] std::string_view to_string(policy::schedule s);

/// wgmma: the head dimension as the tiles hold it, in slabs of 64 columns (128 bytes, the swizzle's
/// width); the TMA unit fills the columns past head_dim with zeros.
[[nodiscard]] inline long long padded_head_dim(long long head_dim) { return (head_dim + 63) / 64 * 64; }

/// The problem as the kernels see it: where the policy packs heads, a head of queries for each
/// head of K and V, its queries those of the group's heads one after the other (the same rows of
/// Q, in the same order); else the problem itself.
[[nodiscard]] problem kernel_view(const problem& pr, const policy& t);

/// True where a score whose names are `used` reads no query's place but its batch (and keys' places
/// alone), so that the query heads of a group may be packed.
[[nodiscard]] bool packable(const expr::used_names& used);

/// The kernel's work items: tiles of block_m queries of each head of each batch (of the kernel's
/// view of the problem).
[[nodiscard]] long long work_items(const problem& pr, const policy& t);

[[nodiscard]] std::vector<std::string> launch_keys();
/// Checks the stage, its inputs and the rest of the pipeline, turns the stage's score expression
/// into its kernel tree, adds the scale as a scalar, and resolves the launch into p.policy.
void resolve(config::pipeline& p, const std::string& source);
[[nodiscard]] const policy& policy_of(const config::pipeline& p);

}  // namespace kjit::family::attention
