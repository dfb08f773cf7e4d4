#include "family/gemm/policy.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>

#include "config/reader.hpp"
#include "expr/expr.hpp"
#include "family/program.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace kjit::family::gemm {
namespace {

using config::pipeline;
using config::detail::object_reader;
using config::detail::quoted_list;
using config::detail::shown;

/// The policies where "auto" at large shapes. simt: 128 × 128 tiles of 8 × 8 per thread, the
/// classic shape for CUDA cores (87–91 % of cuBLAS fp32 on the H200). mma: 256 × 128 tiles on 8
/// warps of 64 × 64, 32 deep, three buffers (85 KiB): of 60 launches tuned at 8192³ bfloat16 on the
/// H200, the fastest whose shared memory fits every GPU the rung runs on (99 KiB on sm_86 and
/// sm_89): 2.93 ms, where the fastest of all (256 × 128 × 64 on 8 warps of 128 × 32, four buffers,
/// 212 KiB: Hopper alone) took 2.65 (bench/results/2026-12-03-mma/second). wgmma: 128 × 256 tiles,
/// two consumer warp groups of 64 × 256 each, three buffers 64 deep (the 128-byte rows the
/// swizzle is made for), groups of 16 tile rows: the fastest of 16 launches at each of 4096³,
/// 8192³ and 8192 × 4096 × 4096 on the H200 (bench/results/2026-12-03-wgmma/third); one block
/// fills an SM.
policy large_shape_policy(rung kind) {
    policy chosen;
    chosen.kind = kind;
    if (kind == rung::mma) {
        chosen.tile_m = 256;
        chosen.tile_k = 32;
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
    return chosen;
}

/// A tile the shape rule may choose, and the share of the rung's best rate it reached on a full
/// machine (one block an SM, tiles enough for many waves).
struct tile_choice {
    int tile_m, tile_n;
    bool pingpong;  ///< wgmma's schedule
    int warps_m, warps_n;  ///< mma's warps
    int stages;
    double rate;
};

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
/// took 40.2 (bench/results/2026-12-04-split/first).
constexpr tile_choice k_wgmma_tiles[] = {
        {128, 256, false, 0, 0, 3, 1.00},
        {128, 192, false, 0, 0, 4, 0.99},
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

/// wgmma: a consumer warp group's accumulators per thread.
int accumulators(const policy& t) { return consumer_rows(t) * t.tile_n / 128; }

/// The widest of 4, 2, 1 elements, at most 16 bytes, that divides `extent`: a vector never
/// straddles two rows.
int width_dividing(long long extent, std::size_t element_bytes, int widest) {
    int width = std::min<int>(widest, static_cast<int>(16 / element_bytes));
    while (extent % width != 0) width /= 2;
    return width;
}

/// What follows from the shapes, for a tile: the vector widths, and whether rows of A and B are
/// 16-byte chunks that cp.async or TMA can copy (and so whether clusters can multicast). Made here
/// only, for resolve.
void fit_to(policy& chosen, const sizes& s, config::dtype type) {
    const std::size_t element = config::element_size(type);
    if (chosen.kind != rung::simt) {
        chosen.async_copies = s.k % 8 == 0 && s.n % 8 == 0;
        if (!chosen.async_copies) chosen.cluster_m = 1;  // multicast is a TMA copy
        chosen.a_rows_copied = static_cast<int>(std::min<long long>(chosen.tile_m, (s.m + 7) / 8 * 8));
        chosen.width_c = s.n % 2 == 0 ? 2 : 1;  // the two columns an mma accumulator holds
        return;
    }
    chosen.width_a = width_dividing(s.k, element, 4);
    chosen.width_b = width_dividing(s.n, element, 4);
    chosen.width_c = chosen.width_b;
}

/// The tiles of tile_m × tile_n that cover the product's M × N.
long long tiles_of(int tile_m, int tile_n, const sizes& s) { return (s.m + tile_m - 1) / tile_m * ((s.n + tile_n - 1) / tile_n); }

/// The tile and split whose estimated time at `s` is least: the waves of blocks it takes, one
/// block an SM (a tile's last wave costs a whole one), times the tile's area over its rate and over
/// the split, which divides each block's depth. A tile whose area the product would leave mostly
/// empty (M of 16 in 128 rows) loses to a smaller one this way; so does one of too few tiles to
/// fill the SMs, unless a split of its depth fills them. At the 8 shapes measured without splits,
/// the tile chosen ran within 2 % of the fastest of the 16 launches (decode at M ≤ 64 is bound by
/// W's bytes, not by area: there the smallest tiles are all within 2 % of each other).
double estimated_time(const policy& candidate, double rate, const sizes& s, const config::target& gpu) {
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
    policy chosen = large_shape_policy(kind);
    chosen.tile_m = tile.tile_m;
    chosen.tile_n = tile.tile_n;
    chosen.stages = tile.stages;
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
std::optional<policy> thin_policy(const sizes& s, const config::target& gpu, config::dtype type) {
    for (const int columns : {64, 128, 256}) {
        if (tiles_of(64, columns, s) > gpu.sm_count) continue;
        const tile_choice tile{64, columns, true, 0, 0, 8, 0.0};
        policy split = with_tile(rung::wgmma, tile, 2, s, type);
        const long long depth_tiles = (s.k + split.tile_k - 1) / split.tile_k;  // a shallow one's halves fill fewer
        split.stages = static_cast<int>(std::clamp<long long>(depth_tiles / 2, 2, tile.stages));
        if (split_fits(split, s, gpu, type)) return split;
        policy deep = with_tile(rung::wgmma, tile, 1, s, type);
        deep.stages = k_thin_stages;
        while (deep.stages > 2 && deep.shared_bytes(type) > gpu.shared_per_block) --deep.stages;
        return deep;
    }
    return std::nullopt;
}

/// The policy where "auto": a thin product's, or the rung's large-shape policy with the tile and
/// split the wave model chooses for `s` on `gpu`.
policy auto_policy(rung kind, const sizes& s, const config::target& gpu, config::dtype type) {
    if (kind == rung::simt) return large_shape_policy(kind);
    if (kind == rung::wgmma && s.m <= k_thin_rows)
        if (const std::optional<policy> thin = thin_policy(s, gpu, type)) return *thin;
    const std::span<const tile_choice> tiles = kind == rung::wgmma ? std::span<const tile_choice>(k_wgmma_tiles) : k_mma_tiles;
    policy best = large_shape_policy(kind);
    double best_time = INFINITY;
    for (const tile_choice& tile : tiles)
        // Splits in two at most: clusters of 4 ran every decode step slower than 2 or none
        // (30.6–35.0 µs at N = K = 4096 where 2 took 19.2–24.4: bench/results/2026-12-04-split).
        for (const int split : {1, 2}) {
            const policy candidate = with_tile(kind, tile, split, s, type);
            if (!split_fits(candidate, s, gpu, type)) continue;
            const double time = estimated_time(candidate, tile.rate, s, gpu);
            if (time < best_time) {
                best = candidate;
                best_time = time;
            }
        }
    return best;
}

/// The launch keys the shape rule chooses together.
constexpr const char* k_tile_keys[] = {"tile_m", "tile_n", "schedule", "stages", "warps_m", "warps_n"};

bool tensor_core_type(config::dtype t) { return t == config::dtype::bfloat16 || t == config::dtype::float16; }

/// The rung where "auto": 16-bit inputs on tensor cores, the fastest rung the target has: wgmma on
/// sm_90 where the TMA unit can copy the rows of A and B (K and N multiples of 8 elements: 16
/// bytes), else mma (sm_80 and newer: cp.async and mbarrier); CUDA cores for the rest.
rung auto_rung(const pipeline& p) {
    const int arch = config::compiled_arch(p);
    if (!tensor_core_type(p.type) || arch < 80) return rung::simt;
    const sizes s = sizes_of(p);
    return arch == 90 && s.k % 8 == 0 && s.n % 8 == 0 ? rung::wgmma : rung::mma;
}

void check_stages(const pipeline& p, const std::string& source) {
    const config::stage& first = p.stages.front();
    for (std::size_t i = 1; i < p.stages.size(); ++i)
        if (p.stages[i].family_op && p.stages[i].op == "matmul")
            throw config_error(source, "stages[" + std::to_string(i) + "]",
                               "a matmul must be the first stage: one matmul a pipeline, maps after it");  // so stages[0] is it
    if (!p.shape) throw config_error(source, "stages[0]", "a matmul needs a matrix: give \"shape\": [rows, depth] instead of \"n\"");
    for (const auto& [key, value] : first.options.items())
        if (key != "by") throw config_error(source, "stages[0]." + key, "unknown key; expected one of \"op\", \"input\", \"by\"");
    const auto by = first.options.find("by");
    if (by == first.options.end() || !by->is_string())
        throw config_error(source, "stages[0].by", "expected the name of an input with \"shape\": [depth, cols] to multiply by" +
                                                       (by == first.options.end() ? std::string() : ", got " + shown(*by)));
    const config::input_spec* matrix = config::find_input(p, by->get<std::string>());
    if (!matrix || matrix->dims.size() != 2)
        throw config_error(source, "stages[0].by", "expected an input with \"shape\": [depth, cols], got " + shown(*by));
    if (matrix->dims[0] != p.shape->cols)
        throw config_error(source, "inputs." + matrix->name + ".shape",
                           "a " + std::to_string(p.shape->rows) + " × " + std::to_string(p.shape->cols) + " matrix is multiplied by one of " +
                               std::to_string(p.shape->cols) + " rows, got " + std::to_string(matrix->dims[0]));
    if (p.shape->rows > config::k_max_elements / matrix->dims[1])
        throw config_error(source, "inputs." + matrix->name + ".shape",
                           "the product of a " + std::to_string(p.shape->rows) + "-row matrix by " + std::to_string(matrix->dims[1]) +
                               " columns would have more than 2^40 elements");
    for (std::size_t i = 1; i < p.stages.size(); ++i) {
        const std::string at = "stages[" + std::to_string(i) + "]";
        expr::used_names used;
        expr::collect_names(p.stages[i].kernel, used);
        expr::collect_names(p.stages[i].exact, used);
        if (!used.positions.empty())
            throw config_error(source, at, "uses '" + used.positions.front() + "': positions are not offered in a matmul's epilogue");
        for (const auto& name : used.arrays)
            if (!config::find_input(p, name)->per_column)
                throw config_error(source, at, "uses \"" + name + "\": an epilogue reads inputs of one value per column of the "
                                                                  "product (\"per\": \"column\") only");
    }
    for (const auto& in : p.inputs)
        if (!in.dims.empty() && in.name != matrix->name)
            throw config_error(source, "inputs." + in.name + ".shape", "only the matrix the matmul multiplies by has a shape of its own");
}

}  // namespace

int consumer_rows(const policy& t) { return t.pingpong ? t.tile_m : t.tile_m / 2; }

std::string_view to_string(rung r) { return r == rung::wgmma ? "wgmma" : r == rung::mma ? "mma" : "simt"; }

int policy::threads() const {
    if (kind == rung::wgmma) return 3 * 128;  // a producer warp group and two consumers
    return kind == rung::mma ? 32 * warps_m * warps_n : tile_m / 8 * (tile_n / 8);
}

std::size_t policy::shared_bytes(config::dtype type) const {
    if (kind == rung::wgmma) {  // from a 1024-byte boundary: the buffers, each consumer's tile of C
        // where TMA stores it, each consumer's partial tile where the depth is split (in float),
        // two barriers a buffer and two more (four more for a split)
        const std::size_t element = config::element_size(type);
        const auto consumer_tile = static_cast<std::size_t>(consumer_rows(*this)) * tile_n;
        const std::size_t staged = async_copies ? 2 * consumer_tile * element : 0;
        const std::size_t partial = split_k > 1 ? 2 * consumer_tile * sizeof(float) + 32 : 0;
        return static_cast<std::size_t>(stages) * ((tile_m + tile_n) * tile_k * element + 16) + staged + partial + 16 + 1024;
    }
    if (kind == rung::mma)  // A's and B's tiles as stored, each row padded by 16 bytes
        return static_cast<std::size_t>(stages) * ((tile_m * (tile_k + 8)) + (tile_k * (tile_n + 8))) * config::element_size(type);
    const std::size_t real_bytes = config::computes_in_double(type) ? 8 : 4;  // in the compute type, A's rows padded by 4
    return 2 * static_cast<std::size_t>(tile_k) * (tile_m + 4 + tile_n) * real_bytes;
}

sizes sizes_of(const pipeline& p) {
    return {p.shape->rows, config::result_columns(p), p.shape->cols};
}

std::string multiplier(const pipeline& p) { return p.stages.front().options.at("by").get<std::string>(); }

std::vector<std::string> launch_keys() {
    return {"rung", "tile_m", "tile_n", "tile_k", "warps_m", "warps_n", "stages", "group_m", "schedule", "cluster_m", "split_k"};
}

void resolve(pipeline& p, const std::string& source) {
    check_stages(p, source);
    object_reader l(p.launch.given, "launch", source, launch_keys());
    const auto given = [&](const char* key) { return !l.leaves_auto(key); };
    const rung kind = given("rung") ? l.choice<rung>("rung", {{"simt", rung::simt}, {"mma", rung::mma}, {"wgmma", rung::wgmma}},
                                                     std::nullopt)
                                    : auto_rung(p);
    if (kind != rung::simt && !tensor_core_type(p.type))
        l.fail("rung", "\"" + std::string(to_string(kind)) + "\" multiplies bfloat16 or float16 on tensor cores; this pipeline is " +
                             std::string(config::to_string(p.type)) + ": use \"simt\"");
    // The shape rule chooses a whole tile (its size, schedule or warps, and depth) or none of it:
    // a launch that gives any of these starts from the large-shape policy, as it always did.
    const bool tile_given = std::any_of(std::begin(k_tile_keys), std::end(k_tile_keys), given);
    policy chosen = tile_given ? large_shape_policy(kind) : auto_policy(kind, sizes_of(p), p.target, p.type);
    const auto read = [&](const char* key, int& field, std::vector<int> allowed) {
        if (!given(key)) return;
        const long long value = l.integer(key, 1, 1 << 20, std::nullopt);  // then one of `allowed`
        if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
            std::vector<std::string> names;
            for (int a : allowed) names.push_back(std::to_string(a));
            l.fail(key, "expected one of " + join(names, ", ") + " or \"auto\", got " + std::to_string(value));
        }
        field = static_cast<int>(value);
    };
    const bool mma = kind == rung::mma, wgmma = kind == rung::wgmma;
    if (given("schedule")) {
        if (!wgmma) l.fail("schedule", "a key of the \"wgmma\" policy; this one is \"" + std::string(to_string(kind)) + "\"");
        chosen.pingpong = l.choice<bool>("schedule", {{"cooperative", false}, {"pingpong", true}}, std::nullopt);
    }
    for (const char* key : {"cluster_m", "split_k"})
        if (!wgmma && given(key)) l.fail(key, "a key of the \"wgmma\" policy; this one is \"" + std::string(to_string(kind)) + "\"");
    read("cluster_m", chosen.cluster_m, {1, 2});
    read("split_k", chosen.split_k, {1, 2, 4});
    read("tile_m", chosen.tile_m, wgmma ? std::vector{64, 128, 256} : mma ? std::vector{32, 64, 128, 256} : std::vector{32, 64, 128});
    read("tile_n", chosen.tile_n, wgmma ? std::vector{64, 128, 192, 256} : mma ? std::vector{32, 64, 128, 256} : std::vector{32, 64, 128});
    read("tile_k", chosen.tile_k, wgmma ? std::vector{64} : mma ? std::vector{16, 32, 64} : std::vector{8, 16, 32});
    read("group_m", chosen.group_m, {1, 2, 4, 8, 16, 32});
    for (const char* key : {"warps_m", "warps_n"})
        if (!mma && given(key)) l.fail(key, "a key of the \"mma\" policy; this one is \"" + std::string(to_string(kind)) + "\"");
    if (kind == rung::simt && given("stages")) l.fail("stages", "a key of the \"mma\" and \"wgmma\" policies; this one is \"simt\"");
    read("warps_m", chosen.warps_m, {1, 2, 4, 8});
    read("warps_n", chosen.warps_n, {1, 2, 4, 8});
    read("stages", chosen.stages, {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});

    fit_to(chosen, sizes_of(p), p.type);
    const std::string tile = std::to_string(chosen.tile_m) + " × " + std::to_string(chosen.tile_n) + " × " + std::to_string(chosen.tile_k);
    if (mma) {
        const int warp_m = chosen.tile_m / chosen.warps_m, warp_n = chosen.tile_n / chosen.warps_n;
        if (warp_m < 16 || warp_m % 16 != 0 || warp_n < 16 || warp_n % 16 != 0)
            l.fail("warps_n", "each warp computes a (tile_m / warps_m) × (tile_n / warps_n) piece, of 16 × 16 mma tiles at least: " +
                                  std::to_string(chosen.warps_m) + " × " + std::to_string(chosen.warps_n) + " warps cannot share " + tile);
        if (chosen.threads() > 512) l.fail("warps_n", "expected at most 16 warps a block, got " + std::to_string(chosen.threads() / 32));
    } else if (wgmma) {
        if (consumer_rows(chosen) < 64)
            l.fail("tile_m", "each of the two consumer warp groups takes half the rows of a cooperative tile, 64 at least: "
                             "use 128 or 256, or \"schedule\": \"pingpong\"");
        if (chosen.cluster_m > 1 && chosen.split_k > 1)
            l.fail("split_k", "a cluster either shares B's tiles (cluster_m) or splits the depth (split_k): give one of them");
        const long long depth_tiles = (sizes_of(p).k + chosen.tile_k - 1) / chosen.tile_k;
        if (chosen.split_k > depth_tiles)
            l.fail("split_k", "each of the " + std::to_string(chosen.split_k) + " parts of the depth takes 64 of it at least; this product is " +
                                  std::to_string(sizes_of(p).k) + " deep");
        if (accumulators(chosen) > 128)
            l.fail("tile_n", "a consumer warp group of a " + tile + " tile holds " + std::to_string(accumulators(chosen)) +
                                 " accumulators a thread, more than the 128 that fit beside its other registers");
    } else {
        const int a_vectors = chosen.tile_m * chosen.tile_k / chosen.width_a;
        const int b_vectors = chosen.tile_k * chosen.tile_n / chosen.width_b;
        if (a_vectors % chosen.threads() != 0 || b_vectors % chosen.threads() != 0)
            l.fail("tile_k", "the " + std::to_string(chosen.threads()) + " threads of a " + tile + " tile load " +
                                 std::to_string(a_vectors) + " vectors of A and " + std::to_string(b_vectors) +
                                 " of B a step, which must be multiples of them: use a deeper tile_k");
    }
    // Buffers not given are kjit's: as many of the rule's as fit beside what the launch gave (a
    // split's partial tiles, a wider tile).
    if (kind != rung::simt && !given("stages"))
        while (chosen.stages > 2 && chosen.shared_bytes(p.type) > p.target.shared_per_block) --chosen.stages;
    if (chosen.shared_bytes(p.type) > p.target.shared_per_block)
        l.fail(mma || wgmma ? "stages" : "tile_k", "a block of " + tile + (mma || wgmma ? " in " + std::to_string(chosen.stages) + " buffers" : "") +
                                              " needs " + std::to_string(chosen.shared_bytes(p.type)) +
                                              " bytes of shared memory, more than the " +
                                              std::to_string(p.target.shared_per_block / 1024) + " KiB a block may have on " +
                                              p.target.describe());
    p.launch.block = chosen.threads();
    p.launch.block_auto = false;
    p.launch.vector_width = chosen.width_c;
    p.policy = std::make_shared<const policy>(chosen);
}

config::json_value policy::choices() const {
    config::json_value chosen = {{"rung", to_string(kind)}, {"tile_m", tile_m}, {"tile_n", tile_n}, {"tile_k", tile_k}, {"group_m", group_m}};
    if (kind == rung::mma) {
        chosen["warps_m"] = warps_m;
        chosen["warps_n"] = warps_n;
    }
    if (kind != rung::simt) chosen["stages"] = stages;
    if (kind == rung::wgmma) {
        chosen["schedule"] = pingpong ? "pingpong" : "cooperative";
        chosen["cluster_m"] = cluster_m;
        chosen["split_k"] = split_k;
    }
    return chosen;
}

config::json_value policy::columns() const {
    config::json_value columns = choices();
    columns["threads"] = threads();
    columns["width_a"] = width_a;
    columns["width_b"] = width_b;
    columns["width_c"] = width_c;
    if (kind != rung::simt) columns["copies"] = !async_copies ? "elementwise" : kind == rung::mma ? "cp.async" : "TMA";
    if (kind == rung::wgmma && async_copies) columns["a_rows_copied"] = a_rows_copied;
    return columns;
}

std::string policy::label() const {
    const config::json_value chosen = choices();  // (a temporary's items() would dangle)
    std::string text;
    for (const auto& [key, value] : chosen.items()) text += " " + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    return text;
}

const policy& policy_of(const pipeline& p) {
    return config::policy_as<policy>(p, "gemm");
}

}  // namespace kjit::family::gemm
