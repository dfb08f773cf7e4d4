// The row family's policy: the launch choices only row kernels have (blocks per row, a warp per
// row, where a row waits between passes, evict-first loads, blocks per SM), read from the launch
// block with every "auto" chosen for the shape and target (policy.cpp), and carried with the
// pipeline (pipeline::policy). The block, vector width and grid, which every family's launch has,
// are config::launch_spec's.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace kjit::family::rows {

/// Where a row waits between the passes over it (a reduce is a pass; so is the store). "values"
/// (the default): in registers, as the flowing values, each map applied once. "inputs": in
/// registers as loaded (for 16-bit storage, half the space), the maps applied again wherever x is
/// used. "none": nowhere: each pass reads the row from memory again (from L2, mostly), applying
/// the maps again; any row length, and few registers. "shared": in the block's shared memory as
/// loaded (copied there asynchronously, sm_80 and newer), the maps applied again; up to
/// max_shared_row_bytes a block: a row, or with a cluster each block's share of it.
enum class row_cache { values, inputs, none, shared };
[[nodiscard]] std::string_view to_string(row_cache c);

struct policy final : config::launch_policy {
    /// Blocks per row: a thread-block cluster (sm_90 and newer) that shares its row values
    /// through distributed shared memory.
    int cluster = 1;
    /// "row_mapping": "warp": each row on one warp (a block of 32) instead of a block: short rows.
    bool warp_per_row = false;
    row_cache cache = row_cache::values;
    /// The row's loads and the result's stores marked as touched once (ld/st.global.cs,
    /// cp.async.cg: evict first), so that what every row reads again, a per-column input, stays
    /// in L1.
    bool streaming = false;
    /// The second argument of __launch_bounds__: the compiler keeps registers few enough for this
    /// many blocks per SM (spilling if it must); 0: not given.
    int min_blocks_per_sm = 0;
    /// "copy_groups": with row_cache "shared" and a block (or cluster) per row, a thread's copies
    /// of the row land in this many groups, and the first pass over the row starts on a group as
    /// soon as it lands instead of waiting for the whole row. 1 where blocks loop over rows.
    int copy_groups = 1;
    [[nodiscard]] config::json_value columns() const override;
    [[nodiscard]] std::string label() const override;
};

/// A row pipeline's launch keys: the shared block, vector_width and grid, then the policy's.
[[nodiscard]] std::vector<std::string> launch_keys();
/// Resolves p's launch (vector width, block, and p.policy), every "auto" chosen; pairs online sums.
void resolve_policy(config::pipeline& p, const std::string& source);
/// The resolved policy of `p`.
[[nodiscard]] const policy& policy_of(const config::pipeline& p);

}  // namespace kjit::family::rows
