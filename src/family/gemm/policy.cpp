#include "family/gemm/policy.hpp"

#include <algorithm>
#include <cmath>

#include "config/reader.hpp"
#include "expr/expr.hpp"
#include "family/gemm/shape_rule.hpp"
#include "family/program.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace kjit::family::gemm {
namespace {

using config::pipeline;
using config::detail::object_reader;
using config::detail::quoted_list;
using config::detail::shown;

/// wgmma: a consumer warp group's accumulators per thread.
int accumulators(const policy& t) { return consumer_rows(t) * t.tile_n / 128; }

/// The launch keys the shape rule chooses together.
constexpr const char* k_tile_keys[] = {"tile_m", "tile_n", "schedule", "buffers", "warps_m", "warps_n"};

/// stream: the vectors of B across a block's columns (threads on one slice of the depth).
int stream_vectors(const policy& t) { return t.tile_n / t.width_b; }

bool sixteen_bit(config::dtype t) { return t == config::dtype::bfloat16 || t == config::dtype::float16; }

/// float32 operands rounded to TF32 on mma's tensor cores (compile.fp32_precision "tf32").
bool takes_tf32(const pipeline& p) { return p.type == config::dtype::float32 && p.compile.tf32; }

/// The rung where "auto": a decode step of at most 4 rows streams B on CUDA cores (stream: on an
/// H100, 21.2–22.2 µs at 1–4 × 4096 × 4096 where wgmma's split took 24.2, and 25.6 against 24.3
/// at 8 rows: bench/results/2026-12-06-tf32/third), one of at most 16 on tensor cores where they
/// take it (stream_tensor_refusal: 21.6–22.4 µs at 8–16 × 4096 × 4096 where wgmma's split took
/// 24.2–24.3; at 32 and 64 rows wgmma was ahead, 24.2 against 25.1 and 28.8 µs:
/// bench/results/2026-12-06-stream-tensor/first); 16-bit inputs on tensor cores, the fastest
/// rung the target has: wgmma on sm_90 (at K or N not a multiple of 8 too, its operands padded
/// first), else mma (sm_80 and newer: cp.async and mbarrier). TF32 takes mma: wgmma reads TF32
/// operands depth-major alone, and B's rows run along N. CUDA cores for the rest.
/// But where B's rows would be padded (N not a multiple of 8), padding all of B costs more than a
/// product of a few rows gains by it: up to k_stream_rows rows stream B on CUDA cores, up to
/// k_unpadded_rows take mma (on an H100, GPT-2's output layer, N = 50,257, K = 768: 8 rows 73.0 µs
/// streamed where wgmma with B padded took 103.0; 64 rows 86.4 on mma where wgmma took 108.6, but
/// 128 rows 157.1 where wgmma took 117.6: bench/results/2026-12-08-padded/first and second).
rung auto_rung(const pipeline& p) {
    const int arch = config::compiled_arch(p);
    const sizes s = sizes_of(p);
    if (s.m <= k_stream_auto_rows) return rung::stream;
    if (s.m <= k_stream_tensor_auto_rows && !stream_tensor_refusal(s, p.type, arch)) return rung::stream;
    if (arch < 80) return rung::simt;
    if (takes_tf32(p)) return rung::mma;
    if (!sixteen_bit(p.type)) return rung::simt;
    if (arch != 90) return rung::mma;
    const bool pads_b = s.n % 8 != 0;  // (16-bit elements: 16 bytes)
    if (pads_b && s.m <= k_stream_rows) return rung::stream;
    return pads_b && s.m <= k_unpadded_rows ? rung::mma : rung::wgmma;
}

/// What the rung multiplies, or a one-line reason it cannot multiply this pipeline's type.
void check_operands(const object_reader& l, rung kind, const pipeline& p) {
    if (kind == rung::simt || kind == rung::stream || sixteen_bit(p.type) || (kind == rung::mma && takes_tf32(p))) return;
    const std::string type(config::to_string(p.type));
    if (kind == rung::wgmma && takes_tf32(p))
        l.fail("rung", "\"wgmma\" reads TF32 operands along the depth alone, and B's rows run along its columns: use \"mma\"");
    l.fail("rung", "\"" + std::string(to_string(kind)) + "\" multiplies bfloat16 or float16 on tensor cores; this pipeline is " + type +
                       ": use \"simt\"" +
                       (p.type == config::dtype::float32 ? ", or \"mma\" with compile.fp32_precision \"tf32\" (TF32 operands)" : ""));
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

std::optional<std::string> stream_tensor_refusal(const sizes& s, config::dtype type, int arch) {
    if (!sixteen_bit(type)) return "multiplies bfloat16 or float16; this pipeline is " + std::string(config::to_string(type));
    if (arch < 80) return "needs mma.sync on 16-bit operands, which sm_" + std::to_string(arch) + " has not (sm_80 and newer)";
    if (s.k % 8 != 0 || s.n % 8 != 0)
        return "reads A and B in vectors of 8 elements: K and N must be multiples of 8, got " + std::to_string(s.k) + " and " +
               std::to_string(s.n);
    return std::nullopt;
}

int consumer_rows(const policy& t) { return t.pingpong ? t.tile_m : t.tile_m / 2; }

std::string_view to_string(rung r) {
    switch (r) {
        case rung::simt: return "simt";
        case rung::mma: return "mma";
        case rung::wgmma: return "wgmma";
        case rung::stream: return "stream";
    }
    return "?";
}

int policy::threads() const {
    if (kind == rung::wgmma) return 3 * 128;  // a producer warp group and two consumers
    if (kind == rung::stream) return 32 * warps_n;
    return kind == rung::mma ? 32 * warps_m * warps_n : tile_m / 8 * (tile_n / 8);
}

std::size_t policy::shared_bytes(config::dtype type) const {
    if (kind == rung::wgmma) {  // from a 1024-byte boundary: the buffers, each consumer's tile of
        // C, each consumer's partial tile where the depth is split (in float), two barriers a
        // buffer and two more (four more for a split)
        const std::size_t element = config::element_size(type);
        const auto consumer_tile = static_cast<std::size_t>(consumer_rows(*this)) * tile_n;
        const std::size_t staged = 2 * consumer_tile * element;
        const std::size_t partial = split_k > 1 ? 2 * consumer_tile * sizeof(float) + 32 : 0;
        return static_cast<std::size_t>(stages) * ((tile_m + tile_n) * tile_k * element + 16) + staged + partial + 16 + 1024;
    }
    if (kind == rung::stream)  // each warp's sums (in the compute type) for the block's tile of C
        return static_cast<std::size_t>(warps_n) * tile_m * tile_n * (config::computes_in_double(type) ? 8 : 4);
    if (kind == rung::mma) {  // A's and B's tiles as stored, A's rows padded by 16 bytes, B's by 8 elements
        const std::size_t element = config::element_size(type);
        return static_cast<std::size_t>(stages) * ((tile_m * (tile_k + 16 / element)) + (tile_k * (tile_n + 8))) * element;
    }
    const std::size_t real_bytes = config::computes_in_double(type) ? 8 : 4;  // in the compute type, A's rows padded by 4
    return 2 * static_cast<std::size_t>(tile_k) * (tile_m + 4 + tile_n) * real_bytes;
}

sizes sizes_of(const pipeline& p) {
    return {p.shape->rows, config::result_columns(p), p.shape->cols};
}

std::string multiplier(const pipeline& p) { return p.stages.front().options.at("by").get<std::string>(); }

std::vector<std::string> launch_keys() {
    return {"rung", "tile_m", "tile_n", "tile_k", "warps_m", "warps_n", "buffers", "group_m", "schedule", "cluster_m", "split_k", "cores"};
}

namespace {

/// "128 × 256 × 64": a tile's rows, columns and depth, for messages.
std::string tile_text(const policy& t) {
    return std::to_string(t.tile_m) + " × " + std::to_string(t.tile_n) + " × " + std::to_string(t.tile_k);
}

/// The launch keys the config gives, each checked against the rung, into `chosen`.
void read_given(const object_reader& l, rung kind, policy& chosen) {
    const auto given = [&](const char* key) { return !l.leaves_auto(key); };
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
    const bool mma = kind == rung::mma, wgmma = kind == rung::wgmma, stream = kind == rung::stream;
    const auto not_for = [&](const char* key, const char* rungs) {
        if (given(key)) l.fail(key, std::string("a key of the ") + rungs + "; this one is \"" + std::string(to_string(kind)) + "\"");
    };
    if (stream) {  // a block takes every row of A, and the depth as its warps split it
        not_for("tile_m", "\"simt\", \"mma\" and \"wgmma\" policies (\"stream\" takes every row of A a block)");
        not_for("tile_k", "\"simt\", \"mma\" and \"wgmma\" policies (\"stream\" splits the depth among its warps)");
        not_for("group_m", "\"simt\", \"mma\" and \"wgmma\" policies (\"stream\" has one row of tiles)");
    }
    if (!stream) not_for("cores", "\"stream\" policy (the other rungs' cores follow from the rung)");
    if (given("cores")) chosen.tensor = l.choice<bool>("cores", {{"cuda", false}, {"tensor", true}}, std::nullopt);
    if (!wgmma) not_for("schedule", "\"wgmma\" policy");
    if (given("schedule")) chosen.pingpong = l.choice<bool>("schedule", {{"cooperative", false}, {"pingpong", true}}, std::nullopt);
    if (!wgmma) not_for("cluster_m", "\"wgmma\" policy");
    if (!wgmma && !stream) not_for("split_k", "\"wgmma\" and \"stream\" policies");
    read("cluster_m", chosen.cluster_m, {1, 2});
    read("split_k", chosen.split_k, stream ? std::vector{1, 2, 4, 8} : std::vector{1, 2, 4});
    // A cluster given one way leaves the rule's the other way out (the kernel takes one).
    if (wgmma && given("cluster_m") && !given("split_k") && chosen.cluster_m > 1) chosen.split_k = 1;
    if (wgmma && given("split_k") && !given("cluster_m") && chosen.split_k > 1) chosen.cluster_m = 1;
    read("tile_m", chosen.tile_m, wgmma ? std::vector{64, 128, 256} : mma ? std::vector{32, 64, 128, 256} : std::vector{32, 64, 128});
    read("tile_n", chosen.tile_n, wgmma                      ? std::vector{64, 128, 192, 256}
                                  : mma                      ? std::vector{32, 64, 128, 256}
                                  : stream && chosen.tensor  ? std::vector{16, 32, 64}
                                  : stream                   ? std::vector{8, 16, 32, 64, 128, 256}
                                           : std::vector{32, 64, 128});
    read("tile_k", chosen.tile_k, wgmma ? std::vector{64} : mma ? std::vector{16, 32, 64} : std::vector{8, 16, 32});
    read("group_m", chosen.group_m, {1, 2, 4, 8, 16, 32});
    if (!mma) not_for("warps_m", "\"mma\" policy");
    if (!mma && !stream) not_for("warps_n", "\"mma\" and \"stream\" policies");
    if (kind == rung::simt) not_for("buffers", "\"mma\", \"wgmma\" and \"stream\" policies");
    read("warps_m", chosen.warps_m, {1, 2, 4, 8});
    read("warps_n", chosen.warps_n, stream ? std::vector{1, 2, 4, 8, 16, 32} : std::vector{1, 2, 4, 8});
    read("buffers", chosen.stages, stream ? std::vector{1, 2, 4} : std::vector{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
}

/// What each rung's kernel needs of its tile: warps of whole mma tiles, consumers of 64 rows and
/// accumulators that fit, loads that divide among the threads.
void check_tile(const object_reader& l, rung kind, const policy& chosen, const sizes& s, config::dtype type, int arch) {
    const std::string tile = tile_text(chosen);
    if (kind == rung::mma) {
        const int warp_m = chosen.tile_m / chosen.warps_m, warp_n = chosen.tile_n / chosen.warps_n;
        if (warp_m < 16 || warp_m % 16 != 0 || warp_n < 16 || warp_n % 16 != 0)
            l.fail("warps_n", "each warp computes a (tile_m / warps_m) × (tile_n / warps_n) piece, of 16 × 16 mma tiles at least: " +
                                  std::to_string(chosen.warps_m) + " × " + std::to_string(chosen.warps_n) + " warps cannot share " + tile);
        if (chosen.threads() > 512) l.fail("warps_n", "expected at most 16 warps a block, got " + std::to_string(chosen.threads() / 32));
    } else if (kind == rung::wgmma) {
        if (consumer_rows(chosen) < 64)
            l.fail("tile_m", "each of the two consumer warp groups takes half the rows of a cooperative tile, 64 at least: "
                             "use 128 or 256, or \"schedule\": \"pingpong\"");
        if (chosen.cluster_m > 1 && chosen.split_k > 1)
            l.fail("split_k", "a cluster either shares B's tiles (cluster_m) or splits the depth (split_k): give one of them");
        const long long depth_tiles = (s.k + chosen.tile_k - 1) / chosen.tile_k;
        if (chosen.split_k > depth_tiles)
            l.fail("split_k", "each of the " + std::to_string(chosen.split_k) + " parts of the depth takes 64 of it at least; this product is " +
                                  std::to_string(s.k) + " deep");
        if (accumulators(chosen) > 128)
            l.fail("tile_n", "a consumer warp group of a " + tile + " tile holds " + std::to_string(accumulators(chosen)) +
                                 " accumulators a thread, more than the 128 that fit beside its other registers");
    } else if (kind == rung::stream) {
        if (chosen.tensor)
            if (const auto refusal = stream_tensor_refusal(s, type, arch)) l.fail("cores", "\"tensor\" " + *refusal);
        const long long most_rows = chosen.tensor ? k_stream_tensor_rows : k_stream_rows;
        if (s.m > most_rows)
            l.fail("rung", "\"stream\" multiplies at most " + std::to_string(most_rows) + " rows (a decode step) on " +
                               (chosen.tensor ? "tensor" : "CUDA") + " cores; this product has " + std::to_string(s.m));
        if (chosen.split_k > 1 && arch < 90)
            l.fail("split_k", "the blocks that split the depth are a cluster, which sm_" + std::to_string(arch) + " has not (sm_90 and newer)");
        if (stream_vectors(chosen) > 32)
            l.fail("tile_n", "a warp's threads take at least one vector of " + std::to_string(chosen.width_b) + " columns each: " +
                                 std::to_string(chosen.tile_n) + " columns are more than a warp holds; use at most " +
                                 std::to_string(32 * chosen.width_b));
    } else {
        const int a_vectors = chosen.tile_m * chosen.tile_k / chosen.width_a;
        const int b_vectors = chosen.tile_k * chosen.tile_n / chosen.width_b;
        if (a_vectors % chosen.threads() != 0 || b_vectors % chosen.threads() != 0)
            l.fail("tile_k", "the " + std::to_string(chosen.threads()) + " threads of a " + tile + " tile load " +
                                 std::to_string(a_vectors) + " vectors of A and " + std::to_string(b_vectors) +
                                 " of B a step, which must be multiples of them: use a deeper tile_k");
    }
}

/// The tile's shared memory on the target: buffers not given are kjit's, as many of the rule's as
/// fit beside what the launch gave (a split's partial tiles, a wider tile); then it must fit.
void fit_shared_memory(const object_reader& l, rung kind, const pipeline& p, policy& chosen) {
    const bool buffered = kind == rung::mma || kind == rung::wgmma;
    if (buffered && l.leaves_auto("buffers"))
        while (chosen.stages > 2 && chosen.shared_bytes(p.type) > p.target.shared_per_block) --chosen.stages;
    if (chosen.shared_bytes(p.type) <= p.target.shared_per_block) return;
    const std::string tile = tile_text(chosen);
    const char* key = buffered ? "buffers" : kind == rung::stream ? "tile_n" : "tile_k";
    l.fail(key, "a block of " + tile + (buffered ? " in " + std::to_string(chosen.stages) + " buffers" : "") + " needs " +
                        std::to_string(chosen.shared_bytes(p.type)) + " bytes of shared memory, more than the " +
                        std::to_string(p.target.shared_per_block / 1024) + " KiB a block may have on " + p.target.describe());
}

}  // namespace

void resolve(pipeline& p, const std::string& source) {
    check_stages(p, source);
    object_reader l(p.launch.given, "launch", source, launch_keys());
    const auto given = [&](const char* key) { return !l.leaves_auto(key); };
    const rung kind = given("rung") ? l.choice<rung>("rung",
                                                     {{"simt", rung::simt}, {"mma", rung::mma}, {"wgmma", rung::wgmma}, {"stream", rung::stream}},
                                                     std::nullopt)
                                    : auto_rung(p);
    check_operands(l, kind, p);
    // The shape rule chooses a whole tile (its size, schedule or warps, and depth) or none of it:
    // a launch that gives any of these starts from the large-shape policy, as it always did.
    const bool tile_given = std::any_of(std::begin(k_tile_keys), std::end(k_tile_keys), given);
    // (stream's tile follows from the shape: it always starts from the rule's)
    const bool from_large = tile_given && kind != rung::stream;
    policy chosen = from_large ? large_shape_policy(kind, p.type) : auto_policy(kind, sizes_of(p), p.target, p.type);
    chosen.tf32 = kind == rung::mma && takes_tf32(p);
    read_given(l, kind, chosen);
    fit_to(chosen, sizes_of(p), p.type);
    check_tile(l, kind, chosen, sizes_of(p), p.type, config::compiled_arch(p));
    fit_shared_memory(l, kind, p, chosen);
    p.launch.block = chosen.threads();
    p.launch.block_auto = false;
    p.launch.vector_width = chosen.width_c;
    p.policy = std::make_shared<const policy>(chosen);
}

config::json_value policy::choices() const {
    config::json_value chosen = {{"rung", to_string(kind)}, {"tile_m", tile_m}, {"tile_n", tile_n}};
    if (kind != rung::stream) {  // (stream: one tile row, the depth split among the warps)
        chosen["tile_k"] = tile_k;
        chosen["group_m"] = group_m;
    }
    if (kind == rung::mma) chosen["warps_m"] = warps_m;
    if (kind == rung::mma || kind == rung::stream) chosen["warps_n"] = warps_n;
    if (kind != rung::simt) chosen["buffers"] = stages;
    if (kind == rung::stream) {
        chosen["split_k"] = split_k;
        chosen["cores"] = tensor ? "tensor" : "cuda";
    }
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
    if (kind == rung::mma) columns["operands"] = tf32 ? "tf32" : "as stored";
    if (kind == rung::mma) columns["copies"] = async_copies ? "cp.async" : "elementwise";
    if (kind == rung::wgmma) {
        columns["copies"] = pad_a && pad_b ? "TMA, A and B padded first" : pad_a ? "TMA, A padded first" : pad_b ? "TMA, B padded first" : "TMA";
        columns["a_rows_copied"] = a_rows_copied;
    }
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
