// The row family's geometry (geometry.hpp): what follows from a resolved policy and the shape,
// computed here once for the policy, the plan and the reference.
#include "family/rows/geometry.hpp"

#include <algorithm>

#include "expr/expr.hpp"
#include "family/rows/policy.hpp"

namespace kjit::family::rows {

using config::pipeline;

bool rows_misaligned(const pipeline& p) { return p.shape->cols % p.launch.vector_width != 0; }

bool is_per_column_input(const pipeline& p, const std::string& name) {
    const config::input_spec* input = config::find_input(p, name);
    return input && input->per_column;
}

std::size_t per_column_inputs(const pipeline& p) {
    expr::used_names used;
    for (const auto& s : p.stages) expr::collect_names(s.kernel, used);
    return static_cast<std::size_t>(std::count_if(used.arrays.begin(), used.arrays.end(), [&](const std::string& name) {
        return is_per_column_input(p, name);
    }));
}

long long row_vectors(const pipeline& p) {
    const long long cols = p.shape->cols, width = p.launch.vector_width;
    return rows_misaligned(p) ? (cols + 2 * width - 2) / width : cols / width;
}

long long row_threads(const pipeline& p) {
    return policy_of(p).warp_per_row ? 32 : static_cast<long long>(p.launch.block) * policy_of(p).cluster;
}

long long rows_per_block(const pipeline& p) { return policy_of(p).warp_per_row ? p.launch.block / 32 : 1; }

bool rows_loop(const pipeline& p) { return p.launch.grid || p.launch.grid_resident; }

long long row_bytes(const pipeline& p) { return p.shape->cols * static_cast<long long>(config::element_size(p.type)); }

long long row_bytes_per_block(const pipeline& p) {
    const long long width = p.launch.vector_width, vectors = row_vectors(p);
    if (policy_of(p).cluster == 1) return rows_per_block(p) * vectors * width * static_cast<long long>(config::element_size(p.type));
    const long long stride = row_threads(p);
    return (vectors + stride - 1) / stride * p.launch.block * width * static_cast<long long>(config::element_size(p.type));
}

bool copies_async(const pipeline& p) { return p.launch.vector_width * config::element_size(p.type) >= 4; }

bool is_reduce_pass(const config::stage& s) { return s.reduce != config::reduction::none && !s.online_with; }

long long vectors_per_thread(const pipeline& p) { return row_items_per_thread(p) / p.launch.vector_width; }

long long copy_group_vectors(const pipeline& p) {
    const long long groups = policy_of(p).copy_groups;
    return (vectors_per_thread(p) + groups - 1) / groups;
}

long long row_items_per_thread(const pipeline& p) {
    const long long vectors = row_vectors(p), threads = row_threads(p);
    return (vectors + threads - 1) / threads * p.launch.vector_width;
}

bool row_in_registers(const pipeline& p) {
    using cache = row_cache;
    return policy_of(p).cache == cache::values || policy_of(p).cache == cache::inputs;
}

bool may_skip_reads(const pipeline& p) { return row_in_registers(p) && !rows_loop(p) && !policy_of(p).warp_per_row; }

std::size_t max_shared_row_bytes(const pipeline& p) {
    return p.target.shared_per_block - k_reduction_shared_bytes;
}

std::size_t shared_bytes(const pipeline& p) {
    if (policy_of(p).cache != row_cache::shared) return 0;
    return static_cast<std::size_t>(row_bytes_per_block(p) * (rows_loop(p) ? 2 : 1));
}

reference::row_sums sum_depths(const pipeline& p) {
    const long long butterflies = policy_of(p).warp_per_row ? 1 : 2;
    const long long depth = row_items_per_thread(p) + butterflies * k_warp_levels + policy_of(p).cluster - 1;
    return {depth, 5 * depth};
}

}  // namespace kjit::family::rows
