// The row family's geometry, from a resolved policy: how much of a row each thread and block
// holds, whether blocks loop over rows, and the order in which the kernels add a row up (which
// the reference's error bound for sums follows). Decided here once; the policy, the plan and the
// reference read it.
#pragma once
#include "config/config.hpp"
#include "family/program.hpp"
#include "reference/reference.hpp"

namespace kjit::family::rows {

/// The most elements one thread keeps in registers: a row longer than block × cluster × this is
/// refused (the message says to raise launch.block or launch.cluster).
inline constexpr int k_max_row_items = 32;
/// "auto" keeps a row in registers at up to this many elements a thread (16 beat 32 at 4096
/// columns by up to 6 % on the H200), and gives a row in shared memory a thread per this many bytes.
inline constexpr int k_auto_row_items = 16;
inline constexpr long long k_auto_shared_bytes_per_thread = 128;
/// The largest block "auto" gives a row in shared memory where an SM's shared memory holds two:
/// softmax over 1024 rows of 50,257 bfloat16 on the H200 took 95.5 µs in blocks of 512 (two rows
/// an SM) and 117.7 in blocks of 1024 of 36 registers (one); at 32,000, 512 threads hold the row
/// at 128 bytes each already (bench/results/2026-12-04-rows/second).
inline constexpr int k_two_rows_block = 512;
/// "auto" for a pipeline that computes from positions: more elements a thread, so that its work
/// per element overlaps more loads (the causal softmax, bfloat16, against the unmasked one on the
/// H200: 1.10× at 16; at 32, 1.03× on a warp per row and 1.06× in blocks of 128;
/// bench/results/2026-12-02-h200-causal).
inline constexpr int k_positional_row_items = k_max_row_items;
/// The block "auto" gives row_mapping "warp": this many threads, a row a warp (4096 rows of 768
/// bfloat16 on an H100: RMS norm 8.5 µs in blocks of 64 or 128, 9.6 in blocks of 32, 9.3 in 512;
/// at 2048, 15.0–15.4 in 32–512).
inline constexpr int k_warp_rows_block = 128;
/// "auto" puts a row of at most this many bytes on a warp (choose_warp_rows).
inline constexpr long long k_warp_row_bytes = 4096;
/// "auto" lands a row that row_cache "shared" holds in this many groups of copies a thread (at
/// most one a vector), so the first pass starts on the first group while the rest are in flight.
inline constexpr int k_auto_copy_groups = 8;
/// The few words of shared memory the reductions use, beside a row that row_cache "shared" holds.
inline constexpr std::size_t k_reduction_shared_bytes = 1024;
/// Levels of the template's warp butterfly (kjit_warp_reduce: 32 lanes). kjit_block_reduce runs
/// it twice: over each warp's lanes, then over the (at most 32) warps' results.
inline constexpr long long k_warp_levels = 5;

/// True when a row's length is not a multiple of the vector width, so rows start and end inside
/// vectors: the kernels read a row as the array's vectors that hold any of it, and skip (and do
/// not write) the elements of the rows beside it in its first and last vectors.
[[nodiscard]] bool rows_misaligned(const config::pipeline& p);
/// True when `name` is an input with one value per column (a norm's weights).
[[nodiscard]] bool is_per_column_input(const config::pipeline& p, const std::string& name);
/// The inputs with one value per column that the stages read. Where rows are misaligned, each
/// element reads its column of them (kjit_column).
[[nodiscard]] std::size_t per_column_inputs(const config::pipeline& p);
/// The most vectors one row touches: cols / width, or where rows are misaligned, those of a row
/// that starts on a vector's last element.
[[nodiscard]] long long row_vectors(const config::pipeline& p);
/// The threads that share one row: a warp (row_mapping "warp"), else the block's, times the
/// cluster's blocks. A thread's vectors of the row are this many apart.
[[nodiscard]] long long row_threads(const config::pipeline& p);
/// The rows a block works on at once: one a warp (row_mapping "warp"), else 1.
[[nodiscard]] long long rows_per_block(const config::pipeline& p);
/// True when blocks loop over the rows (launch.grid is not "auto").
[[nodiscard]] bool rows_loop(const config::pipeline& p);
/// The bytes of one row as stored.
[[nodiscard]] long long row_bytes(const config::pipeline& p);
/// The bytes of a row that one block holds with row_cache "shared": the row, in a cluster the
/// block's share (its threads' vectors, as many for each thread), on a warp per row its warps' rows.
[[nodiscard]] long long row_bytes_per_block(const config::pipeline& p);
/// The elements one thread handles (serially, before the block's tree). With row_cache "values"
/// or "inputs" it keeps them in registers: at most k_max_row_items.
[[nodiscard]] long long row_items_per_thread(const config::pipeline& p);
/// True when stage `s` is a reduce that makes its own pass over the row: every reduce but an
/// online sum, which is computed in its max's pass.
[[nodiscard]] bool is_reduce_pass(const config::stage& s);
/// The vectors of a row one thread handles, at most: row_items_per_thread in vectors.
[[nodiscard]] long long vectors_per_thread(const config::pipeline& p);
/// True when a row in shared memory is copied there asynchronously (cp.async: vectors of 4 bytes
/// or more); a smaller vector goes through a register, at once.
[[nodiscard]] bool copies_async(const config::pipeline& p);
/// The vectors of a row each of a thread's copy groups holds (row_cache "shared"): its vectors
/// split into policy::copy_groups groups, the last ones possibly short or empty.
[[nodiscard]] long long copy_group_vectors(const config::pipeline& p);
/// True when the row waits in registers between passes (row_cache "values" or "inputs").
[[nodiscard]] bool row_in_registers(const config::pipeline& p);
/// True where a vector of the row that the first stage ignores (all of it masked) may go unread:
/// the row is loaded once, into registers, by its row function, on a block per row. On a warp per
/// row the row is short, few of its vectors are masked, and the per-vector test cost more than
/// it saved (the causal softmax, bfloat16, on the H200: 32768 × 1024 on a warp per row 1.094×
/// the unmasked softmax with the skip, 1.029× without; 4096² in blocks of 128 1.001× with it,
/// 1.056× without; bench/results/2026-12-02-causal-skip).
[[nodiscard]] bool may_skip_reads(const config::pipeline& p);
/// The most bytes of a row that row_cache "shared" holds: what one block may have on the target,
/// less the reductions' words.
[[nodiscard]] std::size_t max_shared_row_bytes(const config::pipeline& p);
/// Dynamic shared memory per block of a kernel that reads a row: with row_cache "shared", the
/// block's row (two when it loops over rows: the next one arrives while this one is worked on);
/// otherwise none.
[[nodiscard]] std::size_t shared_bytes(const config::pipeline& p);

/// The longest chains of roundings in a row's sums: a thread adds its elements in order, then
/// the block's two butterflies (2 × k_warp_levels; on a warp per row, one), then the cluster's
/// blocks in rank order. An online sum's partial may also be multiplied at each of those steps by
/// exp(old max − new max), whose rounding and exp's error (at most 2 ulps for expf; __expf's grows
/// with the argument, but the factor's weight falls faster) add about 4 roundings more: 5 × the
/// depth.
[[nodiscard]] reference::row_sums sum_depths(const config::pipeline& p);

}  // namespace kjit::family::rows
