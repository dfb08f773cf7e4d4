// The row family's policy: every "auto" of a row pipeline's launch resolved once (vector width,
// block, cluster, copy groups), the combinations that cannot work refused with one line, the sums'
// formulas chosen (sums.cpp). What follows from it is geometry.cpp's.
#include "family/rows/policy.hpp"

#include <algorithm>
#include <numbers>

#include "config/reader.hpp"
#include "expr/expr.hpp"
#include "expr/functions.hpp"
#include "family/rows/geometry.hpp"
#include "family/rows/sums.hpp"
#include "util/error.hpp"

namespace kjit::family::rows {
namespace {

using config::pipeline;
/// Throws kjit::error(config) at a key path of the config.
struct failer {
    const std::string& source;
    [[noreturn]] void operator()(const std::string& path, const std::string& what) const {
        throw config_error(source, path, what);
    }
};

/// True when the launch block leaves `key` to the family: absent or "auto".
bool is_auto(const pipeline& p, const char* key) { return config::detail::leaves_auto(p.launch.given, key); }

/// The policy's keys as the launch block gives them; "auto" (or absent) leaves the default, which
/// choose_row_cache and choose_row_launch may change.
policy given_policy(const pipeline& p, const std::string& source) {
    const config::detail::object_reader l(p.launch.given, "launch", source, launch_keys());
    policy given;
    given.warp_per_row = l.choice<bool>("row_mapping", {{"auto", false}, {"block", false}, {"warp", true}}, false);
    given.cache = l.choice<row_cache>("row_cache",
                                      {{"auto", row_cache::values},
                                       {"values", row_cache::values},
                                       {"inputs", row_cache::inputs},
                                       {"none", row_cache::none},
                                       {"shared", row_cache::shared}},
                                      row_cache::values);
    if (!l.leaves_auto("streaming")) given.streaming = l.boolean("streaming", false);
    if (!l.leaves_auto("min_blocks_per_sm"))
        given.min_blocks_per_sm = static_cast<int>(l.integer("min_blocks_per_sm", 1, 32, std::nullopt));
    if (!l.leaves_auto("cluster")) {
        const config::json_value& cluster = *l.find("cluster");
        if (!cluster.is_number_integer() || !(cluster == 1 || cluster == 2 || cluster == 4 || cluster == 8))
            l.fail("cluster", "expected 1, 2, 4, 8 or \"auto\", got " + config::detail::shown(cluster));
        given.cluster = cluster.get<int>();
    }
    if (!l.leaves_auto("copy_groups")) given.copy_groups = static_cast<int>(l.integer("copy_groups", 1, 16, std::nullopt));
    return given;
}

/// True when a stage computes from the element's position (a mask such as `col > row`).
bool uses_positions(const pipeline& p) {
    expr::used_names used;
    for (const auto& s : p.stages) expr::collect_names(s.kernel, used);
    return !used.positions.empty();
}

/// Each row on one warp, block / 32 rows a block: k_warp_rows_block threads where the block is
/// "auto".
void take_warp_rows(pipeline& p, policy& chosen) {
    chosen.warp_per_row = true;
    if (!p.launch.block_auto) return;
    p.launch.block = k_warp_rows_block;
    p.launch.block_auto = false;
}

/// True where no map comes before a reduce: the passes over the row then apply no map again, so
/// that a row held as loaded (row_cache "inputs") costs no work over its values, and in 16-bit
/// storage half the registers.
bool maps_follow_reduces(const pipeline& p) {
    bool mapped = false;
    for (const auto& s : p.stages) {
        if (s.reduce != config::reduction::none && mapped) return false;
        mapped = mapped || s.reduce == config::reduction::none;
    }
    return true;
}

/// Short rows (at most k_warp_row_bytes) where the mapping, block and cluster are "auto", and a
/// row_mapping "warp" given with row_cache "auto": a warp per row, the row in registers where the
/// warp holds it at k_max_row_items elements a thread (as loaded where maps_follow_reduces: layer
/// and RMS norm over 4096 rows of 768 bfloat16 on an H100, 8.3 and 7.9 µs where their values took
/// 9.0 and 8.7, two alternated rounds: bench/results/2026-12-07-cluster-wait/fifth; softmax, whose
/// exp would be applied again, keeps its values), else in shared memory (sm_80 and newer,
/// where the block's rows fit), else read in each pass. Measured on an H100, 4096 rows of
/// bfloat16 (bench/results/2026-12-05-small/first): RMS norm at 768 columns 9.3 → 8.5 µs, layer
/// norm 10.0 → 8.9; at 1024 layer norm 11.6 → 10.7, RMS norm 10.1 → 10.2; at 2048 (in shared
/// memory) 16.4 → 15.3 and 17.2 → 16.3; over 16,384 rows of 768, 1-3 % slower (22.0 → 22.6).
/// On the H200 (…/fifth): at 768, RMS norm 8.4 → 7.7-8.1 and layer norm 8.8 → 8.0-8.2; at 1024,
/// layer norm 10.0-10.2 → 9.6-9.7, RMS norm 9.1 → 9.2-9.3. True where it chose so.
bool choose_warp_rows(pipeline& p, policy& chosen, bool cluster_auto) {
    const bool short_row = is_auto(p, "row_mapping") && p.launch.block_auto && cluster_auto && !rows_loop(p) &&
                           row_bytes(p) <= k_warp_row_bytes;
    if (!chosen.warp_per_row && !short_row) return false;
    take_warp_rows(p, chosen);
    if (row_items_per_thread(p) <= k_max_row_items) {
        if (maps_follow_reduces(p)) chosen.cache = row_cache::inputs;
        return true;  // else "values"
    }
    chosen.cache = config::compiled_arch(p) >= 80 ? row_cache::shared : row_cache::none;
    if (shared_bytes(p) > max_shared_row_bytes(p)) chosen.cache = row_cache::none;
    return true;
}

/// A block of a cluster of `cluster` blocks that hold a row in shared memory, a share each: the
/// power of two from 128 to 1024 nearest (by ratio) a thread per k_auto_shared_bytes_per_thread of
/// its share.
/// Softmax over 1024 rows of bfloat16 on an H100, the best of the row family's 88–116 launches at
/// each length (bench/results/2026-12-06-fixed-base/second): 128,256 and 151,936 columns in blocks
/// of 256 (125 and 148 bytes a thread), 256,000 in blocks of 512 (125), where blocks of 128 took
/// 2.4 %, 5.6 % and 13.7 % longer.
int cluster_block(const pipeline& p, int cluster) {
    const double share = static_cast<double>(row_bytes(p)) / cluster;
    int block = 128;
    while (block < 1024 && block * std::numbers::sqrt2 * k_auto_shared_bytes_per_thread < share) block *= 2;
    return block;
}

/// The row cache, its streaming, the block and the row mapping where "auto", by the rule measured
/// on the H200 over the exhaustive launch spaces of softmax, layer norm and RMS norm
/// (docs/tuning.md): a row that a block holds in registers at k_auto_row_items elements a thread
/// stays there, in the smallest such block; a longer row goes to shared memory where it fits,
/// streamed, with 128 bytes of it per thread; a row longer still stays in shared memory spread over a
/// cluster of 8 blocks (sm_90), each holding an eighth, about 128 bytes of it a thread
/// (cluster_block), not streamed (softmax over 1024 rows of 128,256 bfloat16 on the H200: 189 µs
/// in blocks of 128, the best of the row family's 152 launches then, where reading it again in
/// each pass took 412: bench/results/2026-12-03-defaults/second); one whose eighth does not fit
/// either is read again from memory in each pass by a cluster of 8 blocks of 1024 (one row of
/// 2^20: 5.4 times faster than one block).
/// A pipeline that computes from positions does work per element that a copy does not (the
/// causal mask's compare and select): where its row stays in registers it takes
/// k_positional_row_items elements a thread, on one warp per row where a warp holds the row so.
void choose_row_cache(pipeline& p, policy& chosen, bool& cluster_auto) {
    using cache = row_cache;
    if (!is_auto(p, "row_cache") || choose_warp_rows(p, chosen, cluster_auto)) return;
    const long long width = p.launch.vector_width;
    const auto items_at = [&](long long block) { return (row_vectors(p) + block - 1) / block * width; };
    const long long held = p.launch.block_auto ? 1024 : p.launch.block;
    if (items_at(held) <= (p.launch.block_auto ? k_auto_row_items : k_max_row_items)) {
        if (p.launch.block_auto) {
            const bool positional = uses_positions(p);
            if (positional && is_auto(p, "row_mapping") && cluster_auto && !rows_loop(p) &&
                items_at(32) <= k_positional_row_items) {
                take_warp_rows(p, chosen);
                return;  // "values", on a warp per row
            }
            const int items = positional ? k_positional_row_items : k_auto_row_items;
            int block = 64;
            while (items_at(block) > items) block *= 2;
            p.launch.block = block;
            p.launch.block_auto = false;
        }
        return;  // "values"
    }
    chosen.cache = config::compiled_arch(p) >= 80 ? cache::shared : cache::none;
    if (p.launch.block_auto) {
        // Two rows an SM where its shared memory holds them: a block of 1024 threads taking more
        // than 32 registers each leaves an SM's registers room for one.
        const bool two_fit = 2 * (static_cast<std::size_t>(row_bytes(p)) + k_reduction_shared_bytes) <= p.target.shared_per_sm;
        const int largest = two_fit ? k_two_rows_block : 1024;
        int block = 64;
        while (block < largest && block * k_auto_shared_bytes_per_thread < row_bytes(p)) block *= 2;
        p.launch.block = block;
        p.launch.block_auto = false;
    }
    const bool clusters = cluster_auto && !rows_loop(p) && config::compiled_arch(p) >= 90;
    bool over_cluster = false;  // the row in shared memory over a cluster
    if (chosen.cache == cache::shared && shared_bytes(p) > max_shared_row_bytes(p) && clusters && is_auto(p, "cluster")) {
        chosen.cluster = 8;  // an eighth of the row a block, if that fits
        if (is_auto(p, "block")) p.launch.block = cluster_block(p, chosen.cluster);
        over_cluster = shared_bytes(p) <= max_shared_row_bytes(p);
        if (over_cluster) {
            cluster_auto = false;
        } else {
            chosen.cluster = 1;
        }
    }
    if (chosen.cache == cache::shared && (shared_bytes(p) > max_shared_row_bytes(p) || !is_auto(p, "cluster"))) {
        chosen.cache = cache::none;
        if (is_auto(p, "block")) p.launch.block = 1024;
        if (clusters) {
            chosen.cluster = 8;
            cluster_auto = false;
        }
    }
    // (over a cluster, streamed loads were as fast or up to 6 % slower: 151,936 columns in blocks
    // of 256, 251.4 µs against 237.1)
    if (is_auto(p, "streaming")) chosen.streaming = !over_cluster;
}

/// row_mapping "warp": each row on one warp, block / 32 rows a block (every block is whole warps;
/// k_warp_rows_block where "auto") and no cluster; the row must fit the warp's registers where it
/// is held there, and the block's rows its shared memory where they are held there.
void launch_warp_per_row(pipeline& p, policy& chosen, bool cluster_auto, const failer& fail) {
    const bool in_registers = row_in_registers(p);
    if (!cluster_auto && chosen.cluster != 1)
        fail("launch.cluster", "row_mapping \"warp\" runs each row on one warp: cluster is 1, got " +
                                        std::to_string(chosen.cluster));
    take_warp_rows(p, chosen);
    chosen.cluster = 1;
    if (in_registers && row_items_per_thread(p) > k_max_row_items)
        fail("shape", "a row of " + std::to_string(p.shape->cols) + " elements is longer than a warp holds (32 threads × " +
                            std::to_string(k_max_row_items) + " elements each); use launch.row_mapping \"block\"");
    if (chosen.cache == row_cache::shared && shared_bytes(p) > max_shared_row_bytes(p))
        fail("shape", "the rows of a block of " + std::to_string(p.launch.block) + " threads (one a warp" +
                              (rows_loop(p) ? ", two each where blocks loop over rows" : "") + ") take " +
                              std::to_string(shared_bytes(p)) + " bytes, more than launch.row_cache \"shared\" holds (" +
                              std::to_string(max_shared_row_bytes(p)) + "); use a smaller launch.block or \"none\"");
}

/// A row kernel's block and cluster, where "auto": the first that holds the row, one block per
/// row before clusters, smaller blocks first. Many small blocks per SM overlap one row's loads
/// with another's reductions and stores, and each thread's loads are all in flight at once: on
/// the H200 this beat larger blocks at every shape tried (bench/results/2026-12-01-h200-rows).
void fit_block_and_cluster(pipeline& p, policy& chosen, bool cluster_auto, const failer& fail) {
    const bool in_registers = row_in_registers(p);
    const std::vector<int> blocks = p.launch.block_auto ? std::vector<int>{64, 128, 256, 512, 1024}
                                                        : std::vector<int>{p.launch.block};
    // A row not in registers needs no cluster to hold it.
    const std::vector<int> clusters = !cluster_auto ? std::vector<int>{chosen.cluster}
                                      : in_registers         ? std::vector<int>{1, 2, 4, 8}
                                                             : std::vector<int>{1};
    const auto fits = [&](int block, int cluster) {
        p.launch.block = block;
        chosen.cluster = cluster;
        return row_items_per_thread(p) <= k_max_row_items;
    };
    const bool found = [&] {
        for (const int cluster : clusters)
            for (const int block : blocks)
                if (fits(block, cluster)) return true;
        return false;
    }();
    if (!found && !in_registers)  // a row not in registers may be longer: the largest block
        p.launch.block = blocks.back();
    else if (!found)
        fail("shape", "a row of " + std::to_string(p.shape->cols) + " elements is longer than a row kernel holds: " +
                            std::to_string(p.launch.block) + " threads × " + std::to_string(chosen.cluster) +
                            " blocks × " + std::to_string(k_max_row_items) +
                            " elements each; raise launch.block (at most 1024) or launch.cluster (at most 8), or read it "
                            "from memory in each pass with launch.row_cache \"none\"");
}

/// What the block and cluster chosen must meet: the shared memory a row (or a block's share of
/// two) takes, the rows a grid of clusters can count, clusters that loop over rows, the threads
/// an SM holds, and the architecture clusters and cp.async need.
void check_row_launch(const pipeline& p, const policy& chosen, const failer& fail) {
    using cache = row_cache;
    if (chosen.cache == cache::shared) {
        // A block that loops over rows holds two: the next is copied while this one is worked on.
        const long long share = row_bytes_per_block(p);
        const std::string what = chosen.cluster > 1 ? "a block's share (" + std::to_string(share) + " bytes) of a row is" :
                                 rows_loop(p) ? "two rows (this one and the next, as a block that loops over rows holds "
                                                "them) of " + std::to_string(share) + " bytes are"
                                              : "a row of " + std::to_string(share) + " bytes is";
        if (shared_bytes(p) > max_shared_row_bytes(p))
            fail("shape", what + " more than launch.row_cache \"shared\" holds (" +
                                std::to_string(max_shared_row_bytes(p)) + " bytes of a block's shared memory); use \"none\"" +
                                (rows_loop(p) ? " or launch.grid \"auto\"" : ", or spread the row over a launch.cluster"));
    }
    if (p.shape->rows > ((1LL << 31) - 1) / chosen.cluster)
        fail("shape", "expected at most (2^31 − 1) / " + std::to_string(chosen.cluster) +
                            " rows (a row kernel launches a cluster of blocks per row), got " + std::to_string(p.shape->rows));
    // Clusters loop over rows with their shares of two rows in shared memory, over a number of
    // blocks given: the occupancy kjit asks for "resident" counts blocks, not clusters.
    if (rows_loop(p) && chosen.cluster > 1) {
        const std::string cluster = std::to_string(chosen.cluster);
        if (p.launch.grid_resident)
            fail("launch.grid", "\"resident\" counts blocks, not the clusters of " + cluster + " this launch takes; give a "
                                "number of blocks (whole clusters are launched), or launch.cluster 1");
        if (chosen.cache != cache::shared)
            fail("launch.grid", "clusters of " + cluster + " blocks loop over the rows with row_cache \"shared\" alone (each "
                                "block holding its share of two rows), and this one is \"" + std::string(to_string(chosen.cache)) +
                                "\"; use launch.grid \"auto\", row_cache \"shared\", or launch.cluster 1");
    }
    if (chosen.min_blocks_per_sm * p.launch.block > config::k_max_threads_per_sm)
        fail("launch.min_blocks_per_sm", std::to_string(chosen.min_blocks_per_sm) + " blocks of " +
                                                  std::to_string(p.launch.block) + " threads are more than the " +
                                                  std::to_string(config::k_max_threads_per_sm) + " threads an SM holds");
    if (chosen.cluster > 1 && p.compile.arch && *p.compile.arch < 90)
        fail("compile", "launch.cluster " + std::to_string(chosen.cluster) +
                              " needs thread-block clusters: sm_90 or newer, and compile.arch is sm_" +
                              std::to_string(*p.compile.arch));
}

/// The groups a thread's copies of a row land in, where "auto": k_auto_copy_groups (at most one
/// a vector) for a row copied asynchronously into shared memory on a block or cluster per row,
/// where the pipeline makes one reduce pass over it before the store (fused: its kernel's); 1
/// otherwise. Measured on an H100
/// over 1024 rows of bfloat16 (bench/results/2026-12-05-rows/fourth): at 128,256 columns RMS norm
/// 236 → 198 µs, the online softmax 212 → 200; layer norm, two passes (mean, variance), 232 → 252
/// (why is not known); at 50,257 and 32,000 columns within 2 % either way. Given groups need such
/// a row (copied at once, they are one group whatever is given).
void choose_copy_groups(const pipeline& p, policy& chosen, const failer& fail) {
    const bool lands_in_groups = chosen.cache == row_cache::shared && !rows_loop(p);
    if (!is_auto(p, "copy_groups")) {
        if (chosen.copy_groups > 1 && !lands_in_groups)
            fail("launch.copy_groups", "groups of copies are for a row in shared memory (row_cache \"shared\") on a "
                                       "block or cluster per row (launch.grid \"auto\"); this launch takes 1 or \"auto\", got " +
                                               std::to_string(chosen.copy_groups));
        return;
    }
    const auto passes = std::count_if(p.stages.begin(), p.stages.end(), is_reduce_pass);
    const bool overlaps = lands_in_groups && copies_async(p) && passes == 1;
    chosen.copy_groups = overlaps ? static_cast<int>(std::min<long long>(vectors_per_thread(p), k_auto_copy_groups)) : 1;
}

/// A row kernel's block and cluster (row_mapping "warp": one warp a row; else fit_block_and_cluster)
/// and what they must meet.
void choose_row_launch(pipeline& p, policy& chosen, bool cluster_auto, const failer& fail) {
    if (chosen.cache == row_cache::shared && p.compile.arch && *p.compile.arch < 80)
        fail("compile", "launch.row_cache \"shared\" copies the row with cp.async: sm_80 or newer, and compile.arch is sm_" +
                              std::to_string(*p.compile.arch));
    if (chosen.warp_per_row) {
        launch_warp_per_row(p, chosen, cluster_auto, fail);
        return;
    }
    fit_block_and_cluster(p, chosen, cluster_auto, fail);
    check_row_launch(p, chosen, fail);
}

/// The configured width, or 16 bytes' worth for auto. A row whose length it does not divide is
/// read in the array's vectors, its edges skipped (rows_misaligned), and an input per column an
/// element at a time: softmax over 1024 rows of 50,257 bfloat16 on the H200 took 95.5 µs so, and
/// 109.5 an element at a time, in blocks of 512 (bench/results/2026-12-04-rows/third); RMS norm,
/// its weight read by element, 88.4 µs, where halving the width until it divided cols (to 1) took
/// 106.7. Two such inputs cost more than the vectors save: layer norm took 149.6 µs with its
/// weight and bias read by element, 118.6 at width 1 (bench/results/2026-12-04-setup/third and
/// fourth), so with more than one the width is halved until it divides cols.
int row_vector_width(const pipeline& p) {
    int width = p.launch.vector_width != 0 ? p.launch.vector_width : static_cast<int>(16 / config::element_size(p.type));
    if (p.launch.vector_width == 0 && per_column_inputs(p) > 1)
        while (p.shape->cols % width != 0) width /= 2;
    return width;
}

}  // namespace

std::string_view to_string(row_cache c) {
    switch (c) {
        case row_cache::values: return "values";
        case row_cache::inputs: return "inputs";
        case row_cache::none: return "none";
        case row_cache::shared: return "shared";
    }
    return "values";
}

config::json_value policy::columns() const {
    return {{"cluster", cluster},
            {"row_mapping", warp_per_row ? "warp" : "block"},
            {"row_cache", to_string(cache)},
            {"streaming", streaming},
            {"copy_groups", copy_groups},
            {"min_blocks_per_sm", min_blocks_per_sm ? config::json_value(min_blocks_per_sm) : config::json_value("auto")}};
}

std::string policy::label() const {
    std::string text;
    if (cluster > 1) text += " cluster=" + std::to_string(cluster);
    if (warp_per_row) text += " warp-per-row";
    if (cache != row_cache::values) text += " row-cache=" + std::string(to_string(cache));
    if (min_blocks_per_sm) text += " min-blocks=" + std::to_string(min_blocks_per_sm);
    if (streaming) text += " streaming";
    if (copy_groups > 1) text += " copy-groups=" + std::to_string(copy_groups);
    return text;
}

std::vector<std::string> launch_keys() {
    return {"block", "vector_width", "grid", "cluster",
            "row_mapping", "row_cache", "streaming", "min_blocks_per_sm", "copy_groups"};
}

const policy& policy_of(const pipeline& p) {
    return config::policy_as<policy>(p, "rows");
}

void resolve_policy(pipeline& p, const std::string& source) {
    const failer fail{source};
    p.launch.vector_width = row_vector_width(p);
    // The policy the geometry reads while the launch is chosen, and the pipeline carries after.
    const auto chosen = std::make_shared<policy>(given_policy(p, source));
    p.policy = chosen;
    bool cluster_auto = is_auto(p, "cluster");
    choose_row_cache(p, *chosen, cluster_auto);
    choose_row_launch(p, *chosen, cluster_auto, fail);
    choose_sum_formulas(p, source);  // before the copy groups, which count the passes it leaves
    choose_copy_groups(p, *chosen, fail);
}

}  // namespace kjit::family::rows
