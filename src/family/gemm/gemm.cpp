#include "family/gemm/gemm.hpp"

#include <algorithm>
#include <numeric>

#include "family/gemm/policy.hpp"
#include "family/gemm/reference.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family {
namespace {

namespace mu = codegen::mu;
using config::pipeline;
using gemm::rung;

/// Threads per block of a separate epilogue stage's kernel.
constexpr int k_stage_block = 256;

/// An element function's parameters and its call's arguments for the stages in [first, last):
/// x, then each array's value at column kjit_c, then the scalars; and the kernel arguments
/// (arrays, then scalars) the call needs.
struct element_call {
    std::vector<std::string> params{"real x"}, args{"x"};
    std::vector<argument> arrays, scalars;
};
element_call element_call_of(const pipeline& p, std::size_t first, std::size_t last) {
    element_call call;
    expr::used_names used;
    for (std::size_t i = first; i < last; ++i) expr::collect_names(p.stages[i].kernel, used);
    for (const auto& a : used.arrays) {
        call.params.push_back("real " + a);
        call.args.push_back("load(" + a + "[kjit_c])");
        call.arrays.push_back(array_argument(a, false));
    }
    for (const auto& s : used.scalars) {
        call.params.push_back("real " + s);
        call.args.push_back(s);
        call.scalars.push_back(scalar_argument(s));
    }
    return call;
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

    /// The tile and, for mma, the warps that share it and the pipeline's depth (a combination
    /// the policy refuses is not measured).
    config::json_value tune_space(const pipeline& p) const override {
        if (gemm::policy_of(p).kind == rung::simt)
            return {{"axes", {{"launch.tile_m", {64, 128}}, {"launch.tile_n", {64, 128}}, {"launch.tile_k", {8, 16, 32}}}}};
        return {{"axes",
                 {{"launch.tile_m", {64, 128, 256}},
                  {"launch.tile_n", {64, 128, 256}},
                  {"launch.tile_k", {32, 64}},
                  {"launch.warps_m", {1, 2, 4}},
                  {"launch.warps_n", {2, 4}},
                  {"launch.stages", {2, 3, 4, 5}}}}};
    }

    config::json_value policy(const pipeline& p) const override {
        const gemm::policy t = gemm::policy_of(p);
        config::json_value columns = p.launch.given;
        columns["threads"] = t.threads();
        columns["width_a"] = t.width_a;
        columns["width_b"] = t.width_b;
        columns["width_c"] = t.width_c;
        if (t.kind == rung::mma) columns["copies"] = t.async_copies ? "cp.async" : "elementwise";
        return columns;
    }

    program plan(const pipeline& p, const codegen::template_set& templates) const override;

    reference::expected_values reference(const pipeline& p, const reference::input_arrays& inputs) const override {
        return gemm::reference(p, inputs);
    }
    config::json_value reference_key(const pipeline&) const override { return nullptr; }
};

program gemm_family_impl::plan(const pipeline& p, const codegen::template_set& templates) const {
    const gemm::policy t = gemm::policy_of(p);
    const gemm::sizes s = gemm::sizes_of(p);
    const std::string a = p.stages.front().input, b = gemm::multiplier(p);
    const bool separate = p.fuse == config::fusion::separate && p.stages.size() > 1;
    const std::size_t element = config::element_size(p.type);
    const auto product = static_cast<std::size_t>(s.m * s.n);

    program prog;
    prog.family = std::string(name());
    prog.double_scalars = config::computes_in_double(p.type);
    prog.vector_width = t.width_c;
    // cp.async copies 16 bytes; otherwise the widest of A's, B's and C's vectors.
    prog.array_alignment = t.async_copies ? 16 : static_cast<std::size_t>(std::max({t.width_a, t.width_b, t.width_c})) * element;
    prog.output_rows = s.m;
    prog.output_cols = s.n;
    prog.inputs_align_with_output = false;
    for (const auto& in : p.inputs)
        prog.buffers.push_back({in.name, static_cast<std::size_t>(config::elements_of(p, in)) * element, buffer_role::input});
    // Separate: the product, then each stage but the last, in an array of its own.
    std::vector<std::string> arrays;
    for (std::size_t i = 1; separate && i < p.stages.size(); ++i) {
        arrays.push_back(i == 1 ? "kjit_product" : "kjit_stage" + std::to_string(i - 1));
        prog.buffers.push_back({arrays.back(), product * element, buffer_role::temporary});
    }
    arrays.push_back(k_output_buffer);
    prog.buffers.push_back({k_output_buffer, product * element, buffer_role::output});

    const std::string dtype(config::to_string(p.type));
    mu::data data = codegen::prologue_data(p, dtype + ", " + std::string(gemm::to_string(t.kind)) + ", " + std::to_string(t.tile_m) +
                                                  " × " + std::to_string(t.tile_n) + " × " + std::to_string(t.tile_k) + " tiles",
                                           t.width_c, prog.headers);
    for (const auto& [key, value] : std::initializer_list<std::pair<const char*, int>>{
             {"tile_m", t.tile_m}, {"tile_n", t.tile_n}, {"tile_k", t.tile_k}, {"group_m", t.group_m}, {"width_c", t.width_c},
             {"width_a", t.width_a}, {"width_b", t.width_b}, {"warps_m", t.warps_m}, {"warps_n", t.warps_n}, {"stages", t.stages}})
        data.set(key, std::to_string(value));
    data.set("simt", codegen::flag(t.kind == rung::simt));
    data.set("mma", codegen::flag(t.kind == rung::mma));
    data.set("async_copies", codegen::flag(t.async_copies));
    data.set("mma_type", p.type == config::dtype::bfloat16 ? "bf16" : "f16");
    data.set("a", a);
    data.set("b", b);
    data.set("c", separate ? "kjit_to" : k_output_buffer);

    // The matmul's kernel, with the epilogue fused unless separate.
    const std::size_t fused_end = separate ? 1 : p.stages.size();
    const element_call epilogue = element_call_of(p, 1, fused_end);
    kernel k;
    k.name = p.name + "_matmul";
    k.what = separate ? "stages[0]: " + config::describe(p.stages[0]) + ", a kernel of its own"
                      : config::describe_stages(p) + ", fused into one kernel";
    for (std::size_t i = 0; i < fused_end; ++i) k.stages.push_back(i);
    k.reads_x = a;
    k.block = {t.threads(), 1, 1};
    k.grid = {((s.m + t.tile_m - 1) / t.tile_m) * ((s.n + t.tile_n - 1) / t.tile_n), 1, 1};
    k.shared_bytes = t.shared_bytes(p.type);
    k.args = {array_argument(a, false), array_argument(b, false)};
    k.args.insert(k.args.end(), epilogue.arrays.begin(), epilogue.arrays.end());
    k.args.push_back(array_argument(arrays.front(), true, separate ? "kjit_to" : ""));
    k.args.insert(k.args.end(), epilogue.scalars.begin(), epilogue.scalars.end());
    k.args.push_back(size_argument("rows", s.m));
    k.args.push_back(size_argument("cols", s.n));
    k.args.push_back(size_argument("kjit_depth", s.k));
    k.bytes_read = static_cast<double>((s.m * s.k + s.k * s.n) * static_cast<long long>(element) +
                                       static_cast<long long>(epilogue.arrays.size()) * s.n * static_cast<long long>(element));
    k.bytes_written = static_cast<double>(product * element);
    k.flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    data.set("kernel", k.name);
    data.set("heading", codegen::heading(k.name, k.what));
    data.set("kernel_params", codegen::parameter_list(declarations(k)));
    std::vector<std::size_t> epilogue_stages(fused_end - 1);
    std::iota(epilogue_stages.begin(), epilogue_stages.end(), 1);
    data.set("epilogue", codegen::stage_steps(p, epilogue_stages));
    data.set("no_epilogue", separate ? "each stage after the matmul is a kernel of its own" : "the pipeline is the matmul alone");
    data.set("epilogue_params", codegen::parameter_list(epilogue.params));
    data.set("epilogue_args", codegen::parameter_list(epilogue.args, 24));  // called on lines indented by 16
    std::vector<std::string> names{k.name};
    prog.kernels.push_back(std::move(k));

    // Separate: a kernel per stage after the matmul, array to array.
    mu::data stage_kernels{mu::data::type::list};
    for (std::size_t i = 1; separate && i < p.stages.size(); ++i) {
        element_call call = element_call_of(p, i, i + 1);
        call.args.front() = "load(kjit_in.e[kjit_e])";
        kernel stage;
        stage.name = p.name + "_stage" + std::to_string(i);
        stage.what = "stages[" + std::to_string(i) + "]: " + config::describe(p.stages[i]) + ", a kernel of its own";
        stage.stages = {i};
        stage.reads_x = arrays[i - 1];
        stage.block = {k_stage_block, 1, 1};
        const long long vectors = s.m * s.n / t.width_c;
        stage.grid = {std::max(1LL, (vectors + k_stage_block - 1) / k_stage_block), 1, 1};
        stage.resident = resident_rule::at_most;
        stage.args = {array_argument(arrays[i - 1], false, "kjit_from")};
        stage.args.insert(stage.args.end(), call.arrays.begin(), call.arrays.end());
        stage.args.push_back(array_argument(arrays[i], true, "kjit_to"));
        stage.args.insert(stage.args.end(), call.scalars.begin(), call.scalars.end());
        stage.args.push_back(size_argument("rows", s.m));
        stage.args.push_back(size_argument("cols", s.n));
        stage.bytes_read = static_cast<double>(product * element) + static_cast<double>(call.arrays.size() * s.n * element);
        stage.bytes_written = static_cast<double>(product * element);
        mu::data item = codegen::stage_steps(p, {i}).list_value().front();  // index, what, code
        item.set("heading", codegen::heading(stage.name, stage.what));
        item.set("params", codegen::parameter_list(call.params));
        item.set("args", codegen::parameter_list(call.args, 24));
        item.set("kernel", stage.name);
        item.set("kernel_params", codegen::parameter_list(declarations(stage)));
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
