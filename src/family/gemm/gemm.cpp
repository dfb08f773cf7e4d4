#include "family/gemm/gemm.hpp"

#include <algorithm>
#include <numeric>

#include "family/gemm/padding.hpp"
#include "family/gemm/policy.hpp"
#include "family/gemm/reference.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family {
namespace {

namespace mu = codegen::mu;
using config::pipeline;
using gemm::padded_operand;
using gemm::rung;

/// Threads per block of a separate epilogue stage's kernel.
constexpr int k_stage_block = 256;

/// The epilogue's call in a tensor-core piece: each array's values at the piece's two columns
/// were read once (kjit_NAME_at), then the scalars.
std::vector<std::string> piece_args_of(const element_call& call) {
    std::vector<std::string> args{"x"};
    for (const auto& a : call.arrays) args.push_back("kjit_" + a.name + "_at[(kjit_h + kjit_e) % 2]");
    for (const auto& s : call.scalars) args.push_back(s.name);
    return args;
}

class gemm_family_impl final : public family {
public:
    std::string_view name() const override { return "gemm"; }
    std::string_view pipelines() const override { return "a matmul stage"; }
    std::string_view template_file() const override { return "gemm.cu.mustache"; }
    std::vector<std::string> stage_ops() const override { return {"matmul"}; }

    bool accepts(const pipeline& p) const override {
        const auto any = [&](auto test) { return std::any_of(p.stages.begin(), p.stages.end(), test); };
        return any([](const config::stage& s) { return s.family_op && s.op == "matmul"; }) &&
               !any([](const config::stage& s) { return (s.family_op && s.op != "matmul") || s.reduce != config::reduction::none; });
    }

    std::vector<std::string> launch_keys() const override { return gemm::launch_keys(); }
    void resolve(pipeline& p, const std::string& source) const override { gemm::resolve(p, source); }

    /// The tile and, for mma, the warps that share it and the pipeline's depth; for wgmma, how
    /// its consumers share tiles, clusters, splits of the depth and buffers; for stream, its
    /// cores, warps, split and steps in flight (a combination the policy refuses is not measured).
    config::json_value tune_space(const pipeline& p) const override {
        const rung kind = gemm::policy_of(p).kind;
        if (kind == rung::simt)
            return {{"axes", {{"launch.tile_m", {64, 128}}, {"launch.tile_n", {64, 128}}, {"launch.tile_k", {8, 16, 32}}}}};
        if (kind == rung::stream)
            return {{"axes",
                     {{"launch.cores", {"cuda", "tensor"}},
                      {"launch.tile_n", {16, 32, 64, 128}},
                      {"launch.warps_n", {4, 8, 16, 32}},
                      {"launch.split_k", {1, 2, 4}},
                      {"launch.buffers", {1, 2, 4}}}}};
        if (kind == rung::wgmma)
            return {{"axes",
                     {{"launch.tile_m", {64, 128, 256}},
                      {"launch.tile_n", {64, 128, 192, 256}},
                      {"launch.schedule", {"cooperative", "pingpong"}},
                      {"launch.cluster_m", {1, 2}},
                      {"launch.split_k", {1, 2}},
                      {"launch.buffers", {3, 4, 8}},
                      {"launch.group_m", {8, 16}}}}};
        return {{"axes",
                 {{"launch.tile_m", {64, 128, 256}},
                  {"launch.tile_n", {64, 128, 256}},
                  {"launch.tile_k", {32, 64}},
                  {"launch.warps_m", {1, 2, 4}},
                  {"launch.warps_n", {2, 4}},
                  {"launch.buffers", {2, 3, 4, 5}}}}};
    }

    config::json_value policy(const pipeline& p) const override { return gemm::policy_of(p).columns(); }

    program plan(const pipeline& p, const codegen::template_set& templates) const override;

    reference::expected_values reference(const pipeline& p, const reference::input_arrays& inputs) const override {
        return gemm::reference(p, inputs);
    }
    config::json_value reference_key(const pipeline&) const override { return nullptr; }

    /// x = A · B: A (rows × depth) and B (depth × cols) are the kernel's first two arguments (the
    /// pipeline's input and the matmul's `by`, or their copies in padded rows).
    host_matrix host_op(const pipeline& p, std::size_t, host_matrix, const host_launch& launch) const override {
        const long long rows = launch.sizes.at("rows"), cols = launch.sizes.at("cols"), depth = launch.sizes.at("kjit_depth");
        const std::vector<double> a = gemm::operand_values(p, launch, launch.k.args.at(0));
        const std::vector<double> b = gemm::operand_values(p, launch, launch.k.args.at(1));
        host_matrix x{rows, cols, std::vector<double>(static_cast<std::size_t>(rows * cols), 0.0)};
        for (long long r = 0; r < rows; ++r)
            for (long long c = 0; c < cols; ++c)
                for (long long d = 0; d < depth; ++d) x.values[r * cols + c] += a[r * depth + d] * b[d * cols + c];
        return x;
    }
};

namespace {

/// The arrays the kernels write, in order: where the stages are separate, the product and each
/// stage's but the last's, each in an array of its own; then the output.
std::vector<std::string> written_arrays(const pipeline& p, bool separate) {
    std::vector<std::string> arrays;
    for (std::size_t i = 1; separate && i < p.stages.size(); ++i)
        arrays.push_back(i == 1 ? "kjit_product" : "kjit_stage" + std::to_string(i - 1));
    arrays.push_back(k_output_buffer);
    return arrays;
}

/// The program around the kernels: the architectures the rung needs, the alignment its copies
/// need and the buffers (inputs, padded operands, the temporaries of separate stages, the output).
program program_frame(const pipeline& p, const gemm::policy& t, const gemm::sizes& s, const std::vector<padded_operand>& pads,
                      const std::vector<std::string>& written) {
    const std::size_t element = config::element_size(p.type);
    program prog;
    prog.double_scalars = config::computes_in_double(p.type);
    prog.vector_width = t.width_c;
    // cp.async and TMA copy 16 bytes (but where the wgmma rung pads both operands: kernels read
    // them element by element, and C's rows, unaligned too, are stored by threads); otherwise the
    // widest of A's, B's and C's vectors.
    const bool copies_16_bytes = t.async_copies && !(t.pad_a && t.pad_b);
    prog.array_alignment = copies_16_bytes ? 16 : static_cast<std::size_t>(std::max({t.width_a, t.width_b, t.width_c})) * element;
    if (t.kind == rung::wgmma) {
        prog.only_arch = 90;
        prog.only_arch_why = "the wgmma rung: Hopper's warp-group tensor cores, the TMA unit and setmaxnreg";
    }
    if (t.kind == rung::stream && t.tensor) {
        prog.min_arch = 80;
        prog.min_arch_why = "the stream rung on tensor cores: mma.sync on 16-bit operands";
    }
    if (t.kind == rung::stream && t.split_k > 1) {
        prog.min_arch = 90;
        prog.min_arch_why = "the stream rung's split of the depth: a cluster of blocks";
    }
    if (t.kind == rung::mma) {
        prog.min_arch = 80;
        prog.min_arch_why = "the mma rung: its copies (cp.async) and their barriers (mbarrier)";
    }
    prog.output_rows = s.m;
    prog.output_cols = s.n;
    prog.inputs_align_with_output = false;
    for (const auto& in : p.inputs)
        prog.buffers.push_back({in.name, static_cast<std::size_t>(config::elements_of(p, in)) * element, buffer_role::input});
    for (const auto& pad : pads)
        prog.buffers.push_back({pad.to, static_cast<std::size_t>(pad.rows * pad.pitch) * element, buffer_role::temporary});
    const auto product_bytes = static_cast<std::size_t>(s.m * s.n) * element;
    for (const auto& array : written)
        prog.buffers.push_back({array, product_bytes, array == k_output_buffer ? buffer_role::output : buffer_role::temporary});
    return prog;
}

/// The policy's numbers and choices as the template's named constants and flags; `a`, `b` and
/// `c` are the matrices' names (`c`: what the matmul writes), `pads` the operands padded first.
void set_policy(mu::data& data, const pipeline& p, const gemm::policy& t, const std::string& a, const std::string& b,
                const std::string& c, const std::vector<padded_operand>& pads) {
    for (const auto& [key, value] : std::initializer_list<std::pair<const char*, int>>{
             {"tile_m", t.tile_m}, {"tile_n", t.tile_n}, {"tile_k", t.tile_k}, {"group_m", t.group_m}, {"width_c", t.width_c},
             {"width_a", t.width_a}, {"width_b", t.width_b}, {"warps_m", t.warps_m}, {"warps_n", t.warps_n}, {"stages", t.stages},
             {"threads", t.threads()}, {"shared_bytes", static_cast<int>(t.shared_bytes(p.type))},
             {"mma_k", t.tf32 ? 8 : 16}})  // (mma_k: an mma.sync's depth)
        data.set(key, std::to_string(value));
    data.set("simt", codegen::flag(t.kind == rung::simt));
    data.set("stream", codegen::flag(t.kind == rung::stream));
    data.set("stream_tensor", codegen::flag(t.kind == rung::stream && t.tensor));
    data.set("split_k", std::to_string(t.split_k));
    data.set("split", codegen::flag(t.split_k > 1));
    data.set("tensor_cores", codegen::flag(t.kind == rung::mma || t.kind == rung::wgmma));
    data.set("mma", codegen::flag(t.kind == rung::mma));
    data.set("wgmma", codegen::flag(t.kind == rung::wgmma));
    if (t.kind == rung::wgmma) {
        codegen::set_wgmma_operands(data, t.tile_n);
        data.set("pingpong", t.pingpong ? "1" : "0");
        data.set("cluster_m", std::to_string(t.cluster_m));
        data.set("clustered", codegen::flag(t.cluster_m > 1));
        data.set("a_rows_copied", std::to_string(t.a_rows_copied));
        data.set("cluster_blocks", std::to_string(t.cluster_blocks()));
        data.set("in_clusters", codegen::flag(t.cluster_blocks() > 1));
        data.set("a_map", gemm::operand_read(a, pads).first + "_map");
        data.set("b_map", gemm::operand_read(b, pads).first + "_map");
        data.set("tma_stores_c", codegen::flag(t.tma_stores_c()));
        data.set("c_map", c + "_map");
    }
    data.set("async_copies", codegen::flag(t.async_copies));
    data.set("c_direct", codegen::flag(t.kind != rung::wgmma));  // C's pieces go straight to C
    data.set("mma_type", t.tf32 ? "tf32" : p.type == config::dtype::bfloat16 ? "bf16" : "f16");
    data.set("tf32", codegen::flag(t.tf32));
    data.set("a", a);
    data.set("b", b);
}

/// The matmul's kernel, and where its output is among its arguments.
struct matmul_kernel {
    kernel k;
    std::size_t output_at = 0;
};

/// The matmul's grid: a block per tile, or for wgmma clusters of cluster_m blocks, each on
/// cluster_m tiles one under another, or (wgmma, stream) of split_k blocks on one tile, each on a
/// part of its depth.
void set_grid(kernel& k, const gemm::policy& t, const gemm::sizes& s) {
    const bool wgmma = t.kind == rung::wgmma;
    const long long band = static_cast<long long>(t.tile_m) * (wgmma ? t.cluster_m : 1);
    const long long tiles_n = (s.n + t.tile_n - 1) / t.tile_n;
    k.grid = {((s.m + band - 1) / band) * tiles_n * t.cluster_blocks(), 1, 1};
    // Single wgmma blocks are persistent, a tile after another, as many as fit at once. Clusters
    // take one tile each: the occupancy API kjit asks counts blocks, not clusters, so a
    // persistent grid could hold more clusters than fit at once, and one left over would run its
    // whole share of tiles after the others.
    if (wgmma && t.cluster_blocks() == 1) k.resident = resident_rule::at_most;
}

/// The matmul with the stages [1, fused_end) as its epilogue (none where the stages are
/// separate), writing `written`.
matmul_kernel matmul_kernel_of(const pipeline& p, const gemm::policy& t, const gemm::sizes& s, bool separate,
                               std::size_t fused_end, const std::string& written, const element_call& epilogue,
                               const std::vector<padded_operand>& pads) {
    const std::string a = p.stages.front().input, b = gemm::multiplier(p);
    const auto element = static_cast<long long>(config::element_size(p.type));
    matmul_kernel out;
    kernel& k = out.k;
    k.name = p.name + "_matmul";
    k.what = separate ? "stages[0]: " + config::describe(p.stages[0]) + ", a kernel of its own"
                      : config::describe_stages(p) + ", fused into one kernel";
    for (std::size_t i = 0; i < fused_end; ++i) k.stages.push_back(i);
    k.reads_x = a;
    k.block = {t.threads(), 1, 1};
    set_grid(k, t, s);
    k.shared_bytes = t.shared_bytes(p.type);
    // wgmma: A in boxes of a tile's rows (those it copies) by 64 deep, B in boxes 64 deep by 64
    // columns, each from its padded copy where it has one; and C stored in boxes of a consumer's
    // rows by 64 columns, where its rows start on 16-byte boundaries (else by the consumers'
    // threads).
    const auto type = map_element(p.type);
    if (t.kind == rung::wgmma) {
        const auto [a_read, a_pitch] = gemm::operand_read(a, pads);
        const auto [b_read, b_pitch] = gemm::operand_read(b, pads);
        k.args = {map_argument(a_read, {type, s.m, s.k, t.a_rows_copied, t.tile_k, 0, a_pitch}),
                  map_argument(b_read, {type, s.k, s.n, t.tile_k, 64, 0, b_pitch})};
    } else {
        k.args = {array_argument(a, false), array_argument(b, false)};
    }
    k.args.insert(k.args.end(), epilogue.arrays.begin(), epilogue.arrays.end());
    out.output_at = k.args.size();
    k.args.push_back(t.tma_stores_c() ? map_argument(written, {type, s.m, s.n, gemm::consumer_rows(t), 64}, true)
                                      : array_argument(written, true, separate ? "kjit_to" : ""));
    k.args.insert(k.args.end(), epilogue.scalars.begin(), epilogue.scalars.end());
    k.args.push_back(size_argument("rows", s.m));
    k.args.push_back(size_argument("cols", s.n));
    k.args.push_back(size_argument("kjit_depth", s.k));
    const auto column_arrays = static_cast<long long>(epilogue.arrays.size());
    k.bytes_read = static_cast<double>((s.m * s.k + s.k * s.n) * element + column_arrays * s.n * element);
    k.bytes_written = static_cast<double>(s.m * s.n * element);
    k.flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    k.flops_on = t.kind == rung::simt || (t.kind == rung::stream && !t.tensor) ? math_unit::fma : math_unit::tensor;
    return out;
}

/// The matmul kernel's names and parameters in the template, and its epilogue: the fused stages'
/// code, and what kjit_store_piece takes (a piece of C, where it is and where it goes, and what the
/// epilogue needs: the kernel's arguments but A's, B's, C's and the depth).
void set_matmul(mu::data& data, const pipeline& p, const gemm::policy& t, const matmul_kernel& m, bool separate,
                std::size_t fused_end, const element_call& epilogue) {
    const kernel& k = m.k;
    data.set("kernel", k.name);
    data.set("heading", codegen::heading(k.name, k.what));
    data.set("kernel_params", codegen::parameter_list(declarations(k)));
    std::vector<std::size_t> epilogue_stages(fused_end - 1);
    std::iota(epilogue_stages.begin(), epilogue_stages.end(), 1);
    data.set("epilogue", codegen::stage_steps(p, epilogue_stages));
    data.set("no_epilogue", separate ? "each stage after the matmul is a kernel of its own" : "the pipeline is the matmul alone");
    data.set("epilogue_params", codegen::parameter_list(epilogue.params));
    data.set("epilogue_args", codegen::parameter_list(epilogue.args, 24));  // (on lines indented by 16 in the simt kernel)
    data.set("piece_args", codegen::parameter_list(piece_args_of(epilogue), 20));  // (by 12 in kjit_store_piece)
    std::vector<std::string> columns;
    for (const auto& array : epilogue.arrays) columns.push_back(array.name);
    data.set("column_inputs", codegen::text_list(columns));
    data.set("has_column_inputs", codegen::flag(!columns.empty()));
    // (kjit_store_piece is called on lines indented by 12 in the mma kernel, by 20 in the wgmma
    // kernel's consumer loop over its tiles.)
    std::vector<std::string> store_params{"const float (&kjit_piece)[4]", "int kjit_row", "int kjit_col",
                                          "longlong2 kjit_from", "Place kjit_place"};
    std::vector<std::string> store_args{"kjit_acc[kjit_i][kjit_j]", "kjit_row", "kjit_col", "kjit_from", "kjit_place"};
    for (std::size_t i = 2; i + 1 < k.args.size(); ++i) {
        if (i == m.output_at) continue;
        store_params.push_back(k.args[i].cuda);
        store_args.push_back(k.args[i].cuda_name);
    }
    data.set("store_params", codegen::parameter_list(store_params));
    data.set("store_args", codegen::parameter_list(store_args, t.kind == rung::wgmma ? 28 : 20));
}

/// Stage i (after the matmul) as a kernel of its own, array to array, and its template item.
std::pair<kernel, mu::data> stage_kernel(const pipeline& p, std::size_t i, const gemm::sizes& s, int width_c,
                                         const std::vector<std::string>& arrays) {
    const auto element = config::element_size(p.type);
    const auto product_bytes = static_cast<double>(static_cast<std::size_t>(s.m * s.n) * element);
    element_call call = element_call_of(p, i, i + 1, "kjit_c");
    call.args.front() = "load(kjit_in.e[kjit_e])";
    kernel stage;
    stage.name = p.name + "_stage" + std::to_string(i);
    stage.what = "stages[" + std::to_string(i) + "]: " + config::describe(p.stages[i]) + ", a kernel of its own";
    stage.stages = {i};
    stage.reads_x = arrays[i - 1];
    stage.block = {k_stage_block, 1, 1};
    const long long vectors = s.m * s.n / width_c;
    stage.grid = {std::max(1LL, (vectors + k_stage_block - 1) / k_stage_block), 1, 1};
    stage.resident = resident_rule::at_most;
    stage.args = {array_argument(arrays[i - 1], false, "kjit_from")};
    stage.args.insert(stage.args.end(), call.arrays.begin(), call.arrays.end());
    stage.args.push_back(array_argument(arrays[i], true, "kjit_to"));
    stage.args.insert(stage.args.end(), call.scalars.begin(), call.scalars.end());
    stage.args.push_back(size_argument("rows", s.m));
    stage.args.push_back(size_argument("cols", s.n));
    stage.bytes_read = product_bytes + static_cast<double>(call.arrays.size() * s.n * element);
    stage.bytes_written = product_bytes;
    mu::data item = codegen::stage_steps(p, {i}).list_value().front();  // index, what, code
    item.set("heading", codegen::heading(stage.name, stage.what));
    item.set("params", codegen::parameter_list(call.params));
    item.set("args", codegen::parameter_list(call.args, 24));
    item.set("kernel", stage.name);
    item.set("kernel_params", codegen::parameter_list(declarations(stage)));
    return {std::move(stage), std::move(item)};
}

}  // namespace

program gemm_family_impl::plan(const pipeline& p, const codegen::template_set& templates) const {
    const gemm::policy& t = gemm::policy_of(p);
    const gemm::sizes s = gemm::sizes_of(p);
    const bool separate = p.fuse == config::fusion::separate && p.stages.size() > 1;
    const std::vector<std::string> arrays = written_arrays(p, separate);
    const std::vector<padded_operand> pads = gemm::padded_operands(p, t, s);
    program prog = program_frame(p, t, s, pads, arrays);
    prog.family = std::string(name());

    const std::string dtype(config::to_string(p.type));
    mu::data data = codegen::prologue_data(p, dtype + ", " + std::string(gemm::to_string(t.kind)) + ", " + std::to_string(t.tile_m) +
                                                  " × " + std::to_string(t.tile_n) + " × " + std::to_string(t.tile_k) + " tiles",
                                           t.width_c, prog.headers);
    set_policy(data, p, t, p.stages.front().input, gemm::multiplier(p), arrays.front(), pads);
    data.set("c", separate ? "kjit_to" : k_output_buffer);

    // The operands padded first; the matmul's kernel, with the epilogue fused unless separate;
    // then, separate, a kernel per stage after it.
    std::vector<std::string> names;
    mu::data pad_kernels{mu::data::type::list};
    for (const auto& pad : pads) {
        auto [k, item] = gemm::pad_kernel(p, pad);
        pad_kernels.push_back(item);
        names.push_back(k.name);
        prog.kernels.push_back(std::move(k));
    }
    data.set("pads", pad_kernels);
    data.set("padded", codegen::flag(!pads.empty()));
    const std::size_t fused_end = separate ? 1 : p.stages.size();
    const element_call epilogue = element_call_of(p, 1, fused_end, "kjit_c");
    matmul_kernel matmul = matmul_kernel_of(p, t, s, separate, fused_end, arrays.front(), epilogue, pads);
    set_matmul(data, p, t, matmul, separate, fused_end, epilogue);
    names.push_back(matmul.k.name);
    prog.kernels.push_back(std::move(matmul.k));
    mu::data stage_kernels{mu::data::type::list};
    for (std::size_t i = 1; separate && i < p.stages.size(); ++i) {
        auto [stage, item] = stage_kernel(p, i, s, t.width_c, arrays);
        stage_kernels.push_back(item);
        names.push_back(stage.name);
        prog.kernels.push_back(std::move(stage));
    }
    data.set("separate", stage_kernels);
    prog.source = codegen::render(templates, template_file(), data, names);
    return prog;
}

}  // namespace

const family& gemm_family() {
    static const gemm_family_impl instance;
    return instance;
}

}  // namespace kjit::family
