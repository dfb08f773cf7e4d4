// Attention with fusion "separate" (separate.hpp): its kernels and their template data.
#include "family/attention/separate.hpp"

#include <algorithm>
#include <climits>

#include "expr/expr.hpp"

namespace kjit::family::attention {

namespace mu = codegen::mu;
using config::pipeline;

namespace {

/// The most threads a row of scores takes in the separate softmax, each a chunk of 16 bytes at a
/// time; a row of fewer chunks takes as many whole warps as it fills.
constexpr int k_softmax_threads = 256;

/// Operations the softmax spends on a score: the max, the online sum's exponential and addition,
/// then the probability's subtraction, exponential and multiplication.
constexpr double k_softmax_flops = 6;

/// The FLOPs of one of the two products, Q · Kᵀ or P · V: 2 · B · H · Sq · Skv · D, every pair's.
double product_flops(const problem& pr) {
    return 2.0 * static_cast<double>(pr.batch * pr.heads * pr.queries) * static_cast<double>(pr.keys * pr.head_dim);
}

/// The sizes a kernel takes last: the queries (where it needs them), the keys and how far apart
/// the rows of scores are.
void add_sizes(const pipeline& p, const problem& pr, bool queries, kernel& k) {
    if (queries) k.args.push_back(size_argument("rows", pr.queries));
    k.args.push_back(size_argument("cols", pr.keys));
    k.args.push_back(size_argument("score_stride", score_stride(pr, p.type)));
}

/// Q · Kᵀ: a block a tile of block_m queries × block_n keys of one head (grid x keys, y queries,
/// z heads), writing the scores.
kernel scores_kernel(const pipeline& p, const problem& pr, const policy& t, const score_call& call) {
    const auto element = static_cast<double>(config::element_size(p.type));
    kernel k;
    k.name = p.name + k_scores_kernel;
    k.what = "stages[0]: attention's scores into memory, x = scale · Q · Kᵀ, then " + expr::to_text(p.stages.front().kernel);
    k.stages = {0};
    k.reads_x = pr.q;
    k.block = {t.threads(), 1, 1};
    k.grid = {(pr.keys + t.block_n - 1) / t.block_n, (pr.queries + t.block_m - 1) / t.block_m, pr.batch * pr.heads};
    k.shared_bytes = t.scores_shared_bytes(pr.head_dim, p.type);
    k.args = {array_argument(pr.q, false), array_argument(pr.k, false), array_argument(k_scores_buffer, true),
              scalar_argument(k_scale_scalar)};
    k.args.insert(k.args.end(), call.tokens.begin(), call.tokens.end());
    k.args.insert(k.args.end(), call.scalars.begin(), call.scalars.end());
    add_sizes(p, pr, true, k);
    k.bytes_read = static_cast<double>(p.n + pr.batch * pr.kv_heads * pr.keys * pr.head_dim) * element;
    k.bytes_written = static_cast<double>(scores_bytes(p, pr));
    k.flops = product_flops(pr);
    k.flops_on = math_unit::tensor;
    return k;
}

/// The softmax: a block a row of scores, in place.
kernel softmax_kernel(const pipeline& p, const problem& pr, const policy& t) {
    kernel k;
    k.name = p.name + k_softmax_kernel;
    k.what = "stages[0]: attention's softmax of each row of scores, in place";
    k.stages = {0};
    k.reads_x = k_scores_buffer;
    k.block = {t.softmax_threads, 1, 1};
    k.grid = {pr.batch * pr.heads * pr.queries, 1, 1};
    k.args = {array_argument(k_scores_buffer, true)};
    add_sizes(p, pr, false, k);
    k.bytes_read = k.bytes_written = static_cast<double>(scores_bytes(p, pr));
    k.flops = k_softmax_flops * static_cast<double>(pr.batch * pr.heads * pr.queries) * static_cast<double>(pr.keys);
    return k;
}

/// P · V: a block a tile of block_m queries of one head (grid x queries, y heads), through the
/// epilogue.
kernel values_kernel(const pipeline& p, const problem& pr, const policy& t, const element_call& epilogue) {
    const auto element = static_cast<double>(config::element_size(p.type));
    kernel k;
    k.name = p.name + k_values_kernel;
    k.what = "stages[0]: attention's P · V" + std::string(p.stages.size() > 1 ? ", with the stages after it" : "");
    for (std::size_t i = 0; i < p.stages.size(); ++i) k.stages.push_back(i);
    k.reads_x = k_scores_buffer;
    k.block = {t.threads(), 1, 1};
    k.grid = {(pr.queries + t.block_m - 1) / t.block_m, pr.batch * pr.heads, 1};
    k.shared_bytes = t.values_shared_bytes(pr.head_dim, p.type);
    k.args = {array_argument(k_scores_buffer, false), array_argument(pr.v, false), array_argument(k_output_buffer, true)};
    k.args.insert(k.args.end(), epilogue.arrays.begin(), epilogue.arrays.end());
    k.args.insert(k.args.end(), epilogue.scalars.begin(), epilogue.scalars.end());
    add_sizes(p, pr, true, k);
    const double values = static_cast<double>(pr.batch * pr.kv_heads * pr.keys * pr.head_dim) * element;
    k.bytes_read = static_cast<double>(scores_bytes(p, pr)) + values + static_cast<double>(epilogue.arrays.size() * p.n) * element;
    k.bytes_written = static_cast<double>(p.n) * element;
    k.flops = product_flops(pr);
    k.flops_on = math_unit::tensor;
    return k;
}

}  // namespace

/// fusion "separate": the mma rung's kernels with the scores in memory, every tile computed (as
/// eager frameworks do). Refuses the wgmma rung and the fused kernels' plain tiles, split keys and packed heads, and a grid
/// past CUDA's limits: the products' heads on grid.z and query tiles on grid.y (65,535 at most),
/// the softmax's rows on grid.x.
void read_separate_launch(const config::detail::object_reader& l, const problem& pr, config::dtype type, const std::string& source,
                          policy& chosen) {
    if (chosen.kind != rung::mma)
        l.fail("rung", "the separate kernels multiply with mma.sync: expected \"mma\" or \"auto\" with fusion \"separate\"");
    if (!l.leaves_auto("plain_tiles"))
        l.fail("plain_tiles", "a key of the fused kernels: the separate ones compute every score through the score expression");
    if (!l.leaves_auto("splits"))
        l.fail("splits", "a key of the fused kernels: the separate ones take each tile of scores in a block of its own already");
    if (!l.leaves_auto("pack_heads"))
        l.fail("pack_heads", "a key of the fused kernels: the separate ones read the scores of each query head apart");
    chosen.separate = true;
    const long long chunks = score_stride(pr, type) * static_cast<long long>(config::element_size(type)) / 16;
    chosen.softmax_threads = static_cast<int>(std::min<long long>(k_softmax_threads, (chunks + 31) / 32 * 32));
    const long long heads = pr.batch * pr.heads, query_tiles = (pr.queries + chosen.block_m - 1) / chosen.block_m;
    if (heads > 65535 || query_tiles > 65535 || heads * pr.queries > INT_MAX)
        throw config_error(source, "shape", "the separate kernels' grids take batch · heads (" + std::to_string(heads) +
                                            ") and tiles of queries (" + std::to_string(query_tiles) +
                                            ") up to 65,535 each, and their rows up to 2^31 − 1");
}

long long score_stride(const problem& pr, config::dtype type) {
    const auto chunk = static_cast<long long>(16 / config::element_size(type));
    return (pr.keys + chunk - 1) / chunk * chunk;
}

std::size_t scores_bytes(const pipeline& p, const problem& pr) {
    return static_cast<std::size_t>(pr.batch * pr.heads * pr.queries * score_stride(pr, p.type)) * config::element_size(p.type);
}

std::vector<kernel> separate_kernels(const pipeline& p, const problem& pr, const policy& t, const score_call& call,
                                     const element_call& epilogue) {
    return {scores_kernel(p, pr, t, call), softmax_kernel(p, pr, t), values_kernel(p, pr, t, epilogue)};
}

void set_separate_data(const pipeline& p, const policy& t, const std::vector<kernel>& kernels, const score_call& call,
                       mu::data& data) {
    const problem pr = problem_of(p);
    data.set("scores_shared_bytes", std::to_string(t.scores_shared_bytes(pr.head_dim, p.type)));
    data.set("values_shared_bytes", std::to_string(t.values_shared_bytes(pr.head_dim, p.type)));
    data.set("softmax_threads", std::to_string(t.softmax_threads));
    data.set("scores", k_scores_buffer);
    data.set("separate_score_call", codegen::parameter_list(call.args, 24));  // (called on lines indented by 16)
    for (const auto& [key, k] : {std::pair{"scores", &kernels[0]}, std::pair{"softmax", &kernels[1]}, std::pair{"values", &kernels[2]}}) {
        data.set(std::string(key) + "_kernel", k->name);
        data.set(std::string(key) + "_heading", codegen::heading(k->name, k->what));
        data.set(std::string(key) + "_params", codegen::parameter_list(declarations(*k)));
    }
    // The softmax's online sum (collectives.cu.mustache), spelled as the rows family's.
    codegen::set_reduction_spelling(p, data);
    data.set("online_sums", codegen::flag(true));
    for (const char* unused : {"uses_sum", "uses_max", "uses_min", "classic_reductions", "warp_rows"}) data.set(unused, codegen::flag(false));
}

}  // namespace kjit::family::attention
