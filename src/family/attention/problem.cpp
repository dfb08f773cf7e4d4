#include "family/attention/problem.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include "config/reader.hpp"
#include "family/attention/launch.hpp"
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
    if (kind == rung::mma && !separate) chosen["splits"] = splits;
    if (!separate) chosen["pack_heads"] = packs_heads;
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
    const std::string split = (splits > 1 ? " splits=" + std::to_string(splits) : "") + (packs_heads ? " pack_heads" : "");
    const std::string ring = kind == rung::wgmma ? " consumers=" + std::to_string(consumers) + " buffers=" + std::to_string(stages) +
                                                       " schedule=" + std::string(to_string(order)) + (persistent ? " persistent" : "")
                                                 : "";
    return " rung=" + std::string(to_string(kind)) + " block_m=" + std::to_string(block_m) + shape + " block_n=" + std::to_string(block_n) + split + ring;
}

std::vector<std::string> launch_keys() {
    return {"rung", "block_m", "warps", "block_n", "splits", "pack_heads", "consumers", "buffers", "schedule", "persistent", "plain_tiles"};
}

problem kernel_view(const problem& pr, const policy& t) {
    if (!t.packs_heads) return pr;
    problem packed = pr;
    packed.queries = pr.queries * pr.group();
    packed.heads = pr.kv_heads;
    return packed;
}

bool packable(const expr::used_names& used) {
    const auto of_keys = [](const std::string& place) { return place == "col" || place == "cols" || place == "batch"; };
    return std::all_of(used.positions.begin(), used.positions.end(), of_keys) &&
           std::all_of(used.tokens.begin(), used.tokens.end(), [&](const expr::token_read& read) { return of_keys(read.index); });
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
    const long long items = work_items(kernel_view(pr, chosen), chosen) * chosen.splits;
    if (items > INT_MAX)
        throw config_error(source, "shape", "the kernel's work items (tiles of " + std::to_string(chosen.block_m) +
                                                " queries of each head of each batch, times the splits of its keys) are counted in "
                                                "an int: at most 2^31 − 1, got " + std::to_string(items));
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
