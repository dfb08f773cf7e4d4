#include "family/attention/problem.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include "config/reader.hpp"
#include "family/attention/score_code.hpp"
#include "family/attention/separate.hpp"
#include "family/checks.hpp"

namespace kjit::family::attention {
namespace {

using config::pipeline;
using config::detail::object_reader;

const char* const k_stage = "stages[0]";
const std::vector<std::string> k_stage_keys{"keys", "values", "heads", "kv_heads", "batch", "scale", "score"};

/// The input `key` of the stage names: one with a "shape" of its own, [rows, head_dim].
const config::input_spec& shaped_input(const object_reader& r, const pipeline& p, const std::string& key) {
    const std::string name = r.string(key, std::nullopt);
    const config::input_spec* in = config::find_input(p, name);
    if (!in || in->dims.size() != 2)
        r.fail(key, "expected the name of an input with a \"shape\" of its own, [batch · kv_heads · keys, head_dim], got " +
                        config::detail::shown(name));
    return *in;
}

/// The stage's options as a problem, each checked against the shapes: what both resolve and
/// problem_of read (problem_of after resolve, when nothing can fail).
problem read_problem(const pipeline& p, const std::string& source) {
    const config::stage& s = p.stages.front();
    const object_reader r(s.options, k_stage, source, k_stage_keys);
    problem pr;
    pr.q = s.input;
    pr.head_dim = p.shape->cols;
    pr.heads = r.integer("heads", 1, 65535, std::nullopt);
    pr.kv_heads = r.integer("kv_heads", 1, pr.heads, pr.heads);
    if (pr.heads % pr.kv_heads != 0)
        r.fail("kv_heads", "expected a divisor of heads (" + std::to_string(pr.heads) + "): each head of K and V serves as many " +
                               "query heads, got " + std::to_string(pr.kv_heads));
    pr.batch = r.integer("batch", 1, 65535, 1);
    if (p.shape->rows % (pr.batch * pr.heads) != 0)
        throw config_error(source, "shape", "Q's " + std::to_string(p.shape->rows) + " rows must be batch · heads · queries (batch " +
                                                std::to_string(pr.batch) + ", heads " + std::to_string(pr.heads) + ")");
    pr.queries = p.shape->rows / (pr.batch * pr.heads);
    const config::input_spec& k = shaped_input(r, p, "keys");
    const config::input_spec& v = shaped_input(r, p, "values");
    pr.k = k.name;
    pr.v = v.name;
    if (k.dims != v.dims)
        r.fail("values", "V's shape must be K's, " + npy::shape_text(k.dims) + ", got " + npy::shape_text(v.dims));
    if (k.dims[1] != pr.head_dim || k.dims[0] % (pr.batch * pr.kv_heads) != 0)
        throw config_error(source, "inputs." + k.name + ".shape",
                           "expected [batch · kv_heads · keys, " + std::to_string(pr.head_dim) + "] (batch " +
                               std::to_string(pr.batch) + ", kv_heads " + std::to_string(pr.kv_heads) + ", head_dim from Q's shape), got " +
                               npy::shape_text(k.dims));
    pr.keys = k.dims[0] / (pr.batch * pr.kv_heads);
    if (pr.queries > INT_MAX || pr.keys > INT_MAX)
        throw config_error(source, "shape", "a head's queries and keys are int positions: at most 2^31 − 1 each");
    pr.scale = r.number("scale", 1.0 / std::sqrt(static_cast<double>(pr.head_dim)));
    return pr;
}

/// Each input the score reads by token has one value per token of the sequence it is read at:
/// [batch, queries] for name[row], [batch, keys] for name[col].
void check_token_inputs(const pipeline& p, const problem& pr, const expr::used_names& used, const std::string& source) {
    for (const auto& read : used.tokens) {
        const bool at_query = read.index == "row";
        const std::vector<long long> expected{pr.batch, at_query ? pr.queries : pr.keys};
        const config::input_spec& in = *config::find_input(p, read.name);
        if (in.dims != expected)
            throw config_error(source, "inputs." + read.name + ".shape",
                               "the score reads " + read.text() + ": one value per " + (at_query ? "query" : "key") +
                                   " of each batch, expected " + npy::shape_text(expected) + ", got " + npy::shape_text(in.dims));
    }
}

/// The score expression: of x (the scaled score), the query (row) and key (col) positions, the
/// sequence lengths (rows, cols), the query's head and batch, and the params; "x" when none is
/// given.
expr::tree read_score(const pipeline& p, const problem& pr, const std::string& source) {
    const object_reader r(p.stages.front().options, k_stage, source, k_stage_keys);
    expr::scope names;
    for (const auto& s : p.scalars) names.scalars.push_back(s.name);
    names.has_shape = true;
    names.has_heads = true;
    for (const auto& in : p.inputs)  // inputs of one value per token: [batch, tokens]
        if (in.dims.size() == 2 && in.name != pr.k && in.name != pr.v) names.tokens.push_back(in.name);
    const expr::tree score = r.find("score") ? config::detail::parse_expression(r, "score", names) : expr::parse("x", names);
    expr::used_names used;
    expr::collect_names(score, used);
    for (const auto& position : used.positions)
        if (position == "i" || position == "n")
            r.fail("score", "uses '" + position +
                                    "': a score has the positions row (its query), col (its key), rows, cols, head and batch");
    check_token_inputs(p, pr, used, source);
    return score;
}

/// The stages after the attention, its epilogue: maps of each output element, of the inputs of
/// Q's shape (read at the element's place: a gate, a residual) and the params.
void check_epilogue(const pipeline& p, const std::string& source) {
    for (std::size_t i = 1; i < p.stages.size(); ++i) {
        const config::stage& s = p.stages[i];
        const std::string at = "stages[" + std::to_string(i) + "]";
        if (s.family_op || s.reduce != config::reduction::none)
            throw config_error(source, at, "after the attention come maps of each output element (an epilogue), got \"" + s.op + "\"");
        expr::used_names used;
        expr::collect_names(s.kernel, used);
        expr::collect_names(s.exact, used);
        if (!used.positions.empty())
            throw config_error(source, at, "uses '" + used.positions.front() + "': positions are not offered in attention's epilogue");
        for (const auto& name : used.arrays)
            if (!config::find_input(p, name)->dims.empty())
                throw config_error(source, at, "uses \"" + name + "\": an epilogue reads inputs of Q's shape (the output's), one value "
                                                                   "per element; \"" + name + "\" has a shape of its own");
    }
}

/// The stage and the pipeline around it: an attention stage over 16-bit matrices, then its
/// epilogue.
void check_pipeline(const pipeline& p, const std::string& source) {
    if (!p.shape) throw config_error(source, "shape", "attention needs Q as a matrix: give \"shape\": [batch · heads · queries, head_dim]");
    if (!p.stages.front().family_op || p.stages.front().op != "attention")
        throw config_error(source, "stages[0]", "attention starts the pipeline: expected {\"op\": \"attention\", …} first, got \"" +
                                                    p.stages.front().op + "\"");
    if (p.type != config::dtype::bfloat16 && p.type != config::dtype::float16)
        throw config_error(source, "dtype", "attention runs on tensor cores: expected \"bfloat16\" or \"float16\", got \"" +
                                                std::string(config::to_string(p.type)) + "\"");
    if (p.shape->cols % 16 != 0 || p.shape->cols > 256)
        throw config_error(source, "shape", "head_dim (Q's columns) must be a multiple of 16 up to 256, got " +
                                                std::to_string(p.shape->cols));
    refuse_per_column_inputs(p, source);
    check_epilogue(p, source);
}

/// "auto": on sm_90 from head_dim 64 the wgmma rung, else (and for the separate kernels, which
/// are the mma rung's) the mma rung.
rung auto_rung(const pipeline& p, long long head_dim) {
    const bool fused = p.fuse != config::fusion::separate;
    return fused && config::compiled_arch(p) == 90 && head_dim >= 64 ? rung::wgmma : rung::mma;
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
///   piece and tiles of 32 keys.
policy auto_policy(rung kind, long long head_dim) {
    policy t;
    t.kind = kind;
    t.block_m = 128;
    if (kind == rung::wgmma) {
        t.block_n = padded_head_dim(head_dim) > 128 ? 64 : 128;
        return t;
    }
    t.warps = head_dim > 128 ? 8 : 4;
    t.block_n = head_dim > 128 ? 32 : head_dim > 64 ? 64 : 128;
    return t;
}

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
/// items differ in length and are dealt in a fixed order, 229 → 189 at 1k × 64 (…/first).
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
}

/// The launch keys given, over the rung's "auto" policy, each checked for the rung. Where the rung is
/// "auto" and a key of one rung is given (warps; consumers, buffers, schedule), that rung.
policy read_launch(const object_reader& l, const pipeline& p, const problem& pr, bool skips) {
    rung kind = l.leaves_auto("rung") ? auto_rung(p, pr.head_dim)
                                      : l.choice<rung>("rung", {{"mma", rung::mma}, {"wgmma", rung::wgmma}}, std::nullopt);
    if (l.leaves_auto("rung") && !l.leaves_auto("warps")) kind = rung::mma;  // the rung whose key is given
    for (const char* key : {"consumers", "buffers", "schedule", "persistent"})
        if (l.leaves_auto("rung") && !l.leaves_auto(key)) kind = rung::wgmma;
    policy chosen = auto_policy(kind, pr.head_dim);
    for (const char* key : kind == rung::wgmma ? std::vector<const char*>{"warps"}
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

}  // namespace

problem problem_of(const pipeline& p) {
    return read_problem(p, "<resolved>");
}

std::string_view to_string(rung r) { return r == rung::wgmma ? "wgmma" : "mma"; }

std::string_view to_string(policy::schedule s) {
    return s == policy::schedule::pingpong ? "pingpong" : s == policy::schedule::overlap ? "overlap" : "serial";
}

std::size_t policy::scores_shared_bytes(long long head_dim, config::dtype type) const {
    const auto row = static_cast<std::size_t>(head_dim) * config::element_size(type) + 16;
    return row * static_cast<std::size_t>(block_m + block_n);
}

std::size_t policy::values_shared_bytes(long long head_dim, config::dtype type) const {
    const std::size_t element = config::element_size(type);
    const auto p_row = static_cast<std::size_t>(block_n) * element + 16, v_row = static_cast<std::size_t>(head_dim) * element + 16;
    return 2 * (p_row * static_cast<std::size_t>(block_m) + v_row * static_cast<std::size_t>(block_n));
}

std::size_t policy::shared_bytes(long long head_dim, config::dtype type) const {
    if (separate) return std::max(scores_shared_bytes(head_dim, type), values_shared_bytes(head_dim, type));
    const std::size_t element = config::element_size(type);
    if (kind == rung::wgmma) {
        const auto slab_row = static_cast<std::size_t>(padded_head_dim(head_dim)) * element;  // a row's slabs
        const auto tile_bytes = slab_row * static_cast<std::size_t>(block_m + 2 * stages * block_n);
        return 1024 + tile_bytes + 8 * static_cast<std::size_t>(2 + 3 * stages);  // q_full, q_free; k_full, v_full, free a buffer
    }
    const auto row = static_cast<std::size_t>(head_dim) * element + 16;
    return row * static_cast<std::size_t>(block_m + 4 * block_n);
}

config::json_value policy::columns() const {
    config::json_value chosen = {{"rung", to_string(kind)}, {"block_m", block_m}};
    if (kind == rung::mma) chosen["warps"] = warps;
    chosen["block_n"] = block_n;
    if (kind == rung::wgmma) {
        chosen["consumers"] = consumers;
        chosen["buffers"] = stages;
        chosen["schedule"] = to_string(order);
        chosen["persistent"] = persistent;
    }
    if (separate) chosen["softmax_threads"] = softmax_threads;
    chosen["skips_tiles"] = skips_tiles();
    chosen["plain_tiles"] = plain_tiles();
    return chosen;
}

std::string policy::label() const {
    const std::string shape = kind == rung::mma ? " warps=" + std::to_string(warps) : "";
    const std::string ring = kind == rung::wgmma ? " consumers=" + std::to_string(consumers) + " buffers=" + std::to_string(stages) +
                                                       " schedule=" + std::string(to_string(order)) + (persistent ? " persistent" : "")
                                                 : "";
    return " rung=" + std::string(to_string(kind)) + " block_m=" + std::to_string(block_m) + shape + " block_n=" + std::to_string(block_n) + ring;
}

std::vector<std::string> launch_keys() {
    return {"rung", "block_m", "warps", "block_n", "consumers", "buffers", "schedule", "persistent", "plain_tiles"};
}

long long work_items(const problem& pr, const policy& t) {
    return (pr.queries + t.block_m - 1) / t.block_m * pr.heads * pr.batch;
}

void resolve(pipeline& p, const std::string& source) {
    check_pipeline(p, source);
    const problem pr = read_problem(p, source);
    config::stage& s = p.stages.front();
    s.kernel = s.exact = read_score(p, pr, source);
    p.scalars.push_back({k_scale_scalar, pr.scale});

    const object_reader l(p.launch.given, "launch", source, launch_keys());
    const tile_tests tests = tile_tests_of(p);
    policy chosen = read_launch(l, p, pr, tests.masked.has_value());
    if (p.fuse == config::fusion::separate) {
        read_separate_launch(l, pr, p.type, source, chosen);
    } else {
        const bool plain_wanted = l.leaves_auto("plain_tiles") || l.boolean("plain_tiles", true);
        chosen.tiles = {tests.masked, plain_wanted ? tests.plain : std::nullopt};
    }
    if (chosen.shared_bytes(pr.head_dim, p.type) > p.target.shared_per_block)
        throw config_error(source, "launch", "block_m " + std::to_string(chosen.block_m) + " and block_n " + std::to_string(chosen.block_n) +
                                                 " need " + std::to_string(chosen.shared_bytes(pr.head_dim, p.type)) +
                                                 " bytes of shared memory at head_dim " + std::to_string(pr.head_dim) + ", more than the " +
                                                 std::to_string(p.target.shared_per_block / 1024) + " KiB a block may have on " +
                                                 p.target.describe());
    if (work_items(pr, chosen) > INT_MAX)
        throw config_error(source, "shape", "the kernel's work items (tiles of " + std::to_string(chosen.block_m) +
                                                " queries of each head of each batch) are counted in an int: at most 2^31 − 1, got " +
                                                std::to_string(work_items(pr, chosen)));
    p.launch.block = chosen.threads();
    p.launch.block_auto = false;
    p.policy = std::make_shared<const policy>(chosen);
}

const policy& policy_of(const pipeline& p) {
    return config::policy_as<policy>(p, "attention");
}

token_reads::token_reads(const pipeline& p, const problem& pr) : m_problem(pr) {
    expr::used_names used;
    expr::collect_names(p.stages.front().kernel, used);
    m_reads = used.tokens;
    for (const auto& read : m_reads) m_values[read.text()].resize(static_cast<std::size_t>(pr.keys));
}

void token_reads::read(long long row, const std::function<double(const std::string&, long long)>& value) {
    const problem& pr = m_problem;
    const long long batch = row / pr.queries / pr.heads, query = row % pr.queries;
    for (const auto& read : m_reads) {
        std::vector<double>& values = m_values.at(read.text());
        if (read.index == "row")
            std::fill(values.begin(), values.end(), value(read.name, batch * pr.queries + query));
        else
            for (long long key = 0; key < pr.keys; ++key) values[static_cast<std::size_t>(key)] = value(read.name, batch * pr.keys + key);
        m_arrays[read.text()] = values.data();
    }
}

expr::positions score_positions(const problem& pr, long long row, long long stride) {
    const long long head = row / pr.queries;  // of batch · heads
    return {.first = row % pr.queries * pr.keys,
            .rows = pr.queries,
            .cols = pr.keys,
            .n = pr.queries * pr.keys,
            .stride = stride,
            .head = head % pr.heads,
            .batch = head / pr.heads};
}

}  // namespace kjit::family::attention
