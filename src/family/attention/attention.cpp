#include "family/attention/attention.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "family/attention/host_model.hpp"
#include "family/attention/problem.hpp"
#include "family/attention/reference.hpp"
#include "family/attention/score_code.hpp"
#include "family/attention/separate.hpp"
#include "family/attention/split_keys.hpp"
#include "expr/evaluate.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family {
namespace {

namespace mu = codegen::mu;
using config::pipeline;
namespace at = attention;

/// The epilogue's element function (the stages after the attention, on one output element), its
/// arrays read at output element kjit_element; a scalar the score takes too is passed once.
element_call epilogue_call_of(const pipeline& p, const at::score_call& score) {
    element_call call = element_call_of(p, 1, p.stages.size(), "kjit_element");
    std::erase_if(call.scalars, [&](const argument& s) {
        return std::any_of(score.scalars.begin(), score.scalars.end(), [&](const argument& a) { return a.name == s.name; });
    });
    return call;
}

/// Heads on which kept_share evaluates a score that uses its head or batch, at most.
constexpr long long k_mask_heads = 8;

/// Points of the grid (per side) on which the score expression is evaluated to count what it masks.
constexpr long long k_mask_grid = 256;

/// The share of (query, key) pairs the score expression keeps (does not make −inf whatever the
/// score), on a grid of up to k_mask_grid² points spread over both sequences, a query's row of
/// keys evaluated at once (on up to k_mask_heads heads spread over all, where the mask is a
/// head's): 1 without a mask, about ½ causal.
double kept_share(const pipeline& p, const at::problem& pr) {
    const long long side_q = std::min(pr.queries, k_mask_grid);
    const long long step = std::max(1LL, pr.keys / k_mask_grid), side_k = (pr.keys + step - 1) / step;
    const long long all_heads = pr.batch * pr.heads;
    const long long heads = at::uses_heads(at::score_names(p)) ? std::min(all_heads, k_mask_heads) : 1;
    const std::map<std::string, double> scalars = config::scalar_values(p);
    const auto count = static_cast<std::size_t>(side_k);
    std::vector<double> zeros(count, 0.0), ones(count, 1.0), at_zero(count), at_one(count);
    // Inputs read by token are not known when planning: counted as if every token were in one
    // document (all 0), so only the positions mask.
    std::map<std::string, const double*> tokens;
    for (const auto& read : at::score_names(p).tokens) tokens[read.text()] = zeros.data();
    long long kept = 0;
    for (long long h = 0; h < heads; ++h) {
        for (long long i = 0; i < side_q; ++i) {
            const long long row = h * all_heads / heads * pr.queries + i * pr.queries / side_q;
            const expr::positions where = at::score_positions(pr, row, step);
            const auto score = [&](const std::vector<double>& x, std::vector<double>& into) {
                const expr::chunk in{count, x.data(), zeros.data(), &tokens, &scalars, true, nullptr, &where};
                expr::evaluate(p.stages.front().kernel, in, into.data(), nullptr);
            };
            score(zeros, at_zero);
            score(ones, at_one);
            for (std::size_t j = 0; j < count; ++j)
                kept += !(std::isinf(at_zero[j]) && at_zero[j] < 0 && at_zero[j] == at_one[j]);
        }
    }
    return static_cast<double>(kept) / static_cast<double>(heads * side_q * side_k);
}

/// Tensor-core FLOPs of a launch: two products of queries × keys × head_dim per head, 4 · B · H ·
/// Sq · Skv · D (FlashAttention's count), on the pairs a mask keeps where it skips tiles (so a
/// causal mask's is half, as the FlashAttention papers count it).
double flops_of(const pipeline& p, const at::problem& pr, bool skips_tiles) {
    return 4.0 * static_cast<double>(pr.batch * pr.heads) * static_cast<double>(pr.queries) * static_cast<double>(pr.keys) *
           static_cast<double>(pr.head_dim) * (skips_tiles ? kept_share(p, pr) : 1.0);
}

class attention_impl final : public family {
public:
    std::string_view name() const override { return "attention"; }
    std::string_view pipelines() const override { return "an attention stage"; }
    std::string_view template_file() const override { return "attention.cu.mustache"; }
    std::vector<std::string> stage_ops() const override { return {"attention"}; }

    bool accepts(const pipeline& p) const override {
        return std::any_of(p.stages.begin(), p.stages.end(), [](const config::stage& s) { return s.family_op && s.op == "attention"; });
    }
    std::vector<std::string> launch_keys() const override { return at::launch_keys(); }
    void resolve(pipeline& p, const std::string& source) const override { at::resolve(p, source); }

    /// The resolved rung's keys (a combination the policy refuses is not measured). mma: queries per
    /// block, the warps they are shared among, and keys per tile; decoding (a block of one piece of
    /// 16 queries), keys per tile, their splits and packed heads. wgmma: keys per tile, consumers,
    /// buffers, the schedule, and persistent blocks.
    config::json_value tune_space(const pipeline& p) const override {
        const at::policy& t = at::policy_of(p);
        if (t.kind == at::rung::mma && t.block_m == 16 && !t.separate)
            return {{"axes", {{"launch.block_n", {32, 64, 128}},
                               {"launch.splits", {1, 2, 4, 8, 16, 32, 64}},
                               {"launch.pack_heads", {false, true}}}}};
        if (t.kind == at::rung::wgmma)
            return {{"axes", {{"launch.block_n", {64, 128, 176}},
                               {"launch.consumers", {2, 3}},
                               {"launch.buffers", {2, 3, 4}},
                               {"launch.schedule", {"serial", "overlap", "pingpong"}},
                               {"launch.persistent", {false, true}}}}};
        return {{"axes", {{"launch.block_m", {64, 128}}, {"launch.warps", {4, 8}}, {"launch.block_n", {32, 64, 128}}}}};
    }
    config::json_value policy(const pipeline& p) const override { return at::policy_of(p).columns(); }
    program plan(const pipeline& p, const codegen::template_set& templates) const override;
    reference::expected_values reference(const pipeline& p, const reference::input_arrays& inputs) const override {
        return at::reference(p, inputs);
    }
    config::json_value reference_key(const pipeline&) const override { return nullptr; }
    host_matrix host_op(const pipeline& p, std::size_t, host_matrix, const host_launch& launch) const override {
        const at::policy& t = at::policy_of(p);
        if (t.separate) return at::host_separate(p, launch);
        return t.splits > 1 ? at::host_split(p, launch) : at::host_fused(p, launch);
    }
};

/// The kernel's arguments: Q, K and V (as tensor maps where the TMA unit copies them: a stack of
/// one matrix per head, boxes of a tile's rows and 64 columns), the output (where keys are split,
/// the partials), the scale, the score's inputs by token, the epilogue's arrays, the scalars (the
/// epilogue's none where keys are split), and the sequence lengths.
std::vector<argument> kernel_arguments(const pipeline& p, const at::problem& pr, const at::policy& t, const at::score_call& call,
                                       const element_call& epilogue) {
    std::vector<argument> args;
    if (t.kind == at::rung::wgmma) {
        const auto type = map_element(p.type);
        const tensor_map keys{type, pr.keys, pr.head_dim, t.block_n, 64, pr.batch * pr.kv_heads};
        args = {map_argument(pr.q, {type, pr.queries, pr.head_dim, t.block_m, 64, pr.batch * pr.heads}), map_argument(pr.k, keys),
                map_argument(pr.v, keys)};
    } else {
        args = {array_argument(pr.q, false), array_argument(pr.k, false), array_argument(pr.v, false)};
    }
    // (where keys are split, the partials, in float: the combine kernel applies the epilogue)
    args.push_back(t.splits > 1 ? at::partials_argument(true) : array_argument(k_output_buffer, true));
    args.push_back(scalar_argument(at::k_scale_scalar));
    args.insert(args.end(), call.tokens.begin(), call.tokens.end());
    if (t.splits == 1) args.insert(args.end(), epilogue.arrays.begin(), epilogue.arrays.end());
    args.insert(args.end(), call.scalars.begin(), call.scalars.end());
    if (t.splits == 1) args.insert(args.end(), epilogue.scalars.begin(), epilogue.scalars.end());
    args.push_back(size_argument("rows", pr.queries));
    args.push_back(size_argument("cols", pr.keys));
    return args;
}

/// What the kernel's work is: Q, K, V and each array of the output's shape the epilogue reads,
/// read once; the output (or the partials) written once; the tensor cores' FLOPs.
void count_work(const pipeline& p, const at::problem& pr, const at::policy& t, std::size_t epilogue_arrays, kernel& k) {
    const auto element = static_cast<double>(config::element_size(p.type));
    const double kv_bytes = 2.0 * static_cast<double>(pr.batch * pr.kv_heads * pr.keys * pr.head_dim) * element;
    const double output = static_cast<double>(p.n) * element;
    k.bytes_read = static_cast<double>(1 + (t.splits > 1 ? 0 : epilogue_arrays)) * output + kv_bytes;
    k.bytes_written = t.splits > 1 ? static_cast<double>(at::partials_buffer(pr, t).bytes) : output;
    k.flops = flops_of(p, pr, t.skips_tiles());
    k.flops_on = math_unit::tensor;
}

/// The template's numbers and names for the rung: its constants, its types, its wgmma operands.
void set_launch_data(const pipeline& p, const at::problem& pr, const at::policy& t, mu::data& data) {
    const bool wgmma = t.kind == at::rung::wgmma;
    for (const auto& [key, value] : std::initializer_list<std::pair<const char*, long long>>{
             {"head_dim", pr.head_dim}, {"block_m", t.block_m}, {"warps", t.warps}, {"block_n", t.block_n}, {"group", pr.group()},
             {"heads", pr.heads}, {"batch", pr.batch},
             {"consumers", t.consumers}, {"consumer_registers", t.consumer_registers()}, {"stages", t.stages},
             {"pingpong", t.order == at::policy::schedule::pingpong ? 1 : 0}, {"persistent", t.persistent ? 1 : 0}, {"splits", t.splits}, {"out_cols", at::padded_head_dim(pr.head_dim)}, {"threads", t.threads()},
             {"shared_bytes", static_cast<long long>(t.shared_bytes(pr.head_dim, p.type))}})
        data.set(key, std::to_string(value));
    data.set("mma", codegen::flag(!wgmma && !t.separate));
    data.set("separate", codegen::flag(t.separate));
    data.set("split", codegen::flag(t.splits > 1));
    data.set("packs_heads", codegen::flag(t.packs_heads));
    data.set("wgmma", codegen::flag(wgmma));
    data.set("serial", codegen::flag(t.order == at::policy::schedule::serial));
    if (wgmma) {
        data.set("scores_wgmma", codegen::wgmma_operands(t.block_n));
        data.set("values_wgmma", codegen::wgmma_operands(static_cast<int>(at::padded_head_dim(pr.head_dim)), 4));
    }
    const bool bf16 = p.type == config::dtype::bfloat16;
    data.set("mma_type", bf16 ? "bf16" : "f16");
    data.set("pair_type", bf16 ? "__nv_bfloat162" : "__half2");
    data.set("pair_make", bf16 ? "__floats2bfloat162_rn" : "__floats2half2_rn");
}

/// What the kernels share: the family, the architectures, the output's shape and how its
/// elements are named, and the buffers (separate: the scores between the kernels too).
program program_frame(const pipeline& p, const at::problem& pr, const at::policy& t) {
    program prog;
    prog.family = "attention";
    if (t.kind == at::rung::wgmma) {
        prog.only_arch = 90;
        prog.only_arch_why = "the wgmma rung: Hopper's warp-group tensor cores, the TMA unit and setmaxnreg";
    } else {
        prog.min_arch = 80;
        prog.min_arch_why = "the mma rung: mma.sync on 16-bit types, and cp.async";
    }
    prog.output_rows = p.shape->rows;
    prog.output_cols = p.shape->cols;
    prog.inputs_align_with_output = false;
    prog.output_row_parts = {{"batch", pr.batch}, {"head", pr.heads}, {"query", pr.queries}};
    prog.output_col_name = "column";
    prog.array_alignment = 16;  // cp.async and the TMA unit copy 16 bytes
    const std::size_t element = config::element_size(p.type);
    for (const auto& in : p.inputs)
        prog.buffers.push_back({in.name, static_cast<std::size_t>(config::elements_of(p, in)) * element, buffer_role::input});
    if (t.separate) prog.buffers.push_back({at::k_scores_buffer, at::scores_bytes(p, pr), buffer_role::temporary});
    if (t.splits > 1) prog.buffers.push_back(at::partials_buffer(pr, t));
    prog.buffers.push_back({k_output_buffer, static_cast<std::size_t>(p.n) * element, buffer_role::output});
    return prog;
}

/// The fused kernel: a block a work item (persistent, as many as are resident), or where keys are
/// split, a block a share of an item's keys, writing partials.
kernel fused_kernel(const pipeline& p, const at::problem& pr, const at::policy& t, const at::score_call& call,
                    const element_call& epilogue) {
    const std::string softmax = "softmax(" + expr::to_text(p.stages.front().kernel) + ") · V";
    kernel k;
    if (t.splits > 1) {
        k.name = p.name + at::k_partials_kernel;
        k.what = "attention, " + softmax + ", over a share of each query's keys: its partial softmax";
        k.stages = {0};
    } else {
        k.name = p.name + "_attention";
        k.what = "attention, " + softmax + ", fused into one kernel" + (p.stages.size() > 1 ? " with the stages after it" : "");
        for (std::size_t i = 0; i < p.stages.size(); ++i) k.stages.push_back(i);
    }
    k.reads_x = pr.q;
    k.block = {t.threads(), 1, 1};
    k.grid = {at::work_items(pr, t) * t.splits, 1, 1};
    if (t.persistent) k.resident = resident_rule::at_most;
    k.shared_bytes = t.shared_bytes(pr.head_dim, p.type);
    k.args = kernel_arguments(p, pr, t, call, epilogue);
    count_work(p, pr, t, epilogue.arrays.size(), k);
    return k;
}

program attention_impl::plan(const pipeline& p, const codegen::template_set& templates) const {
    const at::policy& t = at::policy_of(p);
    const at::problem asked = at::problem_of(p);
    program prog = program_frame(p, asked, t);  // (the output named by the heads asked for)
    const at::problem pr = at::kernel_view(asked, t);
    const at::score_call call = at::score_call_of(p);
    const element_call epilogue = epilogue_call_of(p, call);
    if (t.separate) prog.kernels = at::separate_kernels(p, pr, t, call, epilogue);
    else prog.kernels = {fused_kernel(p, pr, t, call, epilogue)};
    if (t.splits > 1) prog.kernels.push_back(at::combine_kernel(p, pr, t, epilogue));

    const std::string what = std::string(config::to_string(p.type)) + ", " +
                             (t.separate ? std::string("separate") : std::string(at::to_string(t.kind))) + ", tiles of " +
                             std::to_string(t.block_m) + " queries × " + std::to_string(t.block_n) + " keys";
    mu::data data = codegen::prologue_data(p, what, 1, prog.headers);
    set_launch_data(p, pr, t, data);
    data.set("asked_group", std::to_string(asked.group()));
    data.set("queries", pr.q);
    data.set("keys", pr.k);
    data.set("values", pr.v);
    data.set("output", k_output_buffer);
    data.set("scale", at::k_scale_scalar);
    at::set_score_data(p, call, data);
    data.set("epilogue", codegen::stage_steps(p, {prog.kernels.back().stages.begin() + 1, prog.kernels.back().stages.end()}));
    data.set("epilogue_params", codegen::parameter_list(epilogue.params));
    data.set("epilogue_args", codegen::parameter_list(epilogue.args, 28));  // (called on lines indented by 12)
    if (t.separate) {
        at::set_separate_data(p, t, prog.kernels, call, data);
    } else {
        const kernel& k = prog.kernels.front();
        data.set("kernel", k.name);
        data.set("heading", codegen::heading(k.name, k.what));
        data.set("kernel_params", codegen::parameter_list(declarations(k)));
        if (t.splits > 1) at::set_split_data(pr, prog.kernels.back(), data);
    }
    std::vector<std::string> names;
    for (const kernel& k : prog.kernels) names.push_back(k.name);
    prog.source = codegen::render(templates, template_file(), data, names);
    return prog;
}

}  // namespace

const family& attention_family() {
    static const attention_impl instance;
    return instance;
}

}  // namespace kjit::family
