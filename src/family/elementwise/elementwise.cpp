#include "family/elementwise/elementwise.hpp"

#include <algorithm>

#include "family/checks.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family {
namespace {

namespace mu = codegen::mu;

/// 256 threads: enough warps per SM to hide memory latency at any vector width, and the block
/// CUDA's own guides start from.
constexpr int k_default_block = 256;
/// Auto vectors are 16 bytes, the widest load one instruction makes.
constexpr int k_vector_bytes = 16;

class elementwise final : public family {
public:
    std::string_view name() const override { return "elementwise"; }
    std::string_view pipelines() const override { return "maps only"; }
    std::string_view template_file() const override { return "elementwise.cu.mustache"; }

    bool accepts(const config::pipeline& p) const override {
        return std::none_of(p.stages.begin(), p.stages.end(), [](const config::stage& s) {
            return s.family_op || s.reduce != config::reduction::none;
        });
    }

    std::vector<std::string> launch_keys() const override { return {"block", "vector_width", "grid"}; }

    /// Block, vector width (a width the dtype cannot take is refused, so not measured) and grid.
    config::json_value tune_space(const config::pipeline&) const override {
        return {{"axes",
                 {{"launch.block", {128, 256, 512, 1024}},
                  {"launch.vector_width", {1, 2, 4, 8}},
                  {"launch.grid", {"auto", "resident"}}}}};
    }

    void resolve(config::pipeline& p, const std::string& source) const override {
        refuse_per_column_inputs(p, source);
        refuse_shaped_inputs(p, source);
        if (p.launch.block_auto) p.launch.block = k_default_block;
        if (p.launch.vector_width == 0)
            p.launch.vector_width = static_cast<int>(k_vector_bytes / config::element_size(p.type));
    }

    config::json_value policy(const config::pipeline& p) const override {
        return {{"block", p.launch.block}, {"vector_width", p.launch.vector_width}, {"grid", config::grid_value(p.launch)}};
    }

    program plan(const config::pipeline& p, const codegen::template_set& templates) const override;

    reference::expected_values reference(const config::pipeline& p, const reference::input_arrays& inputs) const override {
        return reference::compute(p, inputs, std::nullopt);
    }

    config::json_value reference_key(const config::pipeline&) const override { return nullptr; }
};

/// Position `name` of the element at `index`: a matrix's row and column from its index; the
/// sizes are the kernel's parameters of the same names.
std::string position_value(const std::string& name, const std::string& index) {
    const std::string operand = index.find(' ') == std::string::npos ? index : "(" + index + ")";
    if (name == "i") return index;
    if (name == "row") return operand + " / cols";
    if (name == "col") return operand + " % cols";
    return name;
}

/// The template's data for one kernel: its element function and its loops.
mu::data kernel_data(const config::pipeline& p, const chain_kernel& k, const kernel& planned) {
    const expr::cuda_style style = codegen::style_of(p);
    const auto& reads = k.reads;
    // The element function takes each array's element, the scalars, then the positions it uses,
    // from the loop's index.
    const auto element_args = [&](const auto& spell_array, const std::string& index, int indent) {
        std::vector<std::string> args;
        for (const auto& a : reads) args.push_back(spell_array(a));
        args.insert(args.end(), k.scalars.begin(), k.scalars.end());
        for (const auto& name : k.positions) args.push_back(expr::position_argument(position_value(name, index), style));
        return codegen::parameter_list(args, indent);
    };
    mu::data item;
    item.set("kernel", k.name);
    item.set("heading", codegen::heading(k.name, k.what));
    // One kernel's element function, or each separate stage's (named by its stage).
    item.set("element_suffix", p.fuse == config::fusion::fused ? std::string() : "_s" + std::to_string(k.stages.front()));
    item.set("first", k.first_value.empty() ? std::string("0") : k.first_value);
    std::vector<std::string> element_params;
    for (const auto& a : reads) element_params.push_back("real " + a);
    for (const auto& a : k.scalars) element_params.push_back("real " + a);
    for (const auto& a : k.positions) element_params.push_back(std::string(expr::position_type(style)) + " " + a);
    item.set("element_params", codegen::parameter_list(element_params));
    item.set("kernel_params", codegen::parameter_list(declarations(planned)));
    // Continued lines of a call go 8 columns deeper than the statement.
    item.set("vector_args", element_args([](const std::string& a) { return "load(kjit_v_" + a + ".e[kjit_k])"; },
                                         "kjit_v * kjit_width + kjit_k", 24));
    item.set("scalar_args", element_args([](const std::string& a) { return "load(" + a + "[kjit_i])"; }, "kjit_i", 16));
    mu::data arrays{mu::data::type::list};
    for (const auto& a : reads) arrays.push_back(mu::data("array", a));
    item.set("arrays", arrays);
    item.set("steps", codegen::stage_steps(p, k.stages));
    return item;
}

program elementwise::plan(const config::pipeline& p, const codegen::template_set& templates) const {
    chain_start start = start_chain(p, name());
    const long long vectors = (p.n + p.launch.vector_width - 1) / p.launch.vector_width;  // and the tail
    for (const auto& k : start.chain.kernels) {
        kernel planned = kernel_of(k, p.launch.block);
        // A grid-stride loop covers any n: one pass at most, or what the device holds at once.
        if (p.launch.grid) {
            planned.grid.x = *p.launch.grid;
        } else {
            planned.grid.x = std::max(1LL, (vectors + p.launch.block - 1) / p.launch.block);
            planned.resident = p.launch.grid_resident ? resident_rule::exactly : resident_rule::at_most;
        }
        for (const auto& a : k.reads) planned.args.push_back(array_argument(a, false));
        planned.args.push_back(array_argument(k.writes, true, k_output_buffer));  // the template writes `out`
        for (const auto& s : k.scalars) planned.args.push_back(scalar_argument(s));
        planned.args.push_back(size_argument("n", p.n));
        // A matrix's sizes, where a stage uses a position of it.
        if (std::any_of(k.positions.begin(), k.positions.end(), [](const std::string& name) { return name != "i" && name != "n"; })) {
            planned.args.push_back(size_argument("rows", p.shape->rows));
            planned.args.push_back(size_argument("cols", p.shape->cols));
        }
        count_work(p, k, 1, planned);
        mu::data item = kernel_data(p, k, planned);
        start.add(std::move(planned), std::move(item));
    }
    return start.finish(templates, template_file());
}

}  // namespace

const family& elementwise_family() {
    static const elementwise instance;
    return instance;
}

}  // namespace kjit::family
