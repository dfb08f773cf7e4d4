#include "family/stage_chain.hpp"

#include <algorithm>

#include "expr/expr.hpp"

namespace kjit::family {

void add_once(std::vector<std::string>& names, const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

namespace {

/// Adds stages[index] to kernel k: the arrays and scalars it uses become k's parameters, and
/// with `rows_in_memory` the row values it uses too (a separate kernel reads them from memory).
void add_stage(chain_kernel& k, const config::pipeline& p, std::size_t index, bool rows_in_memory) {
    expr::used_names used;
    expr::collect_names(p.stages[index].kernel, used);
    for (const auto& name : used.arrays) add_once(k.reads, name);
    for (const auto& name : used.scalars) add_once(k.scalars, name);
    for (const auto& name : used.positions) add_once(k.positions, name);
    if (rows_in_memory)
        for (const auto& name : used.rows) add_once(k.row_reads, name);
    k.stages.push_back(index);
}

chain_kernel::result final_output(const config::stage& last) {
    return last.reduce == config::reduction::none ? chain_kernel::result::elements : chain_kernel::result::row_output;
}

std::size_t row_value_bytes(const config::pipeline& p) {
    const std::size_t rows = p.shape ? static_cast<std::size_t>(p.shape->rows) : 0;
    return rows * (config::computes_in_double(p.type) ? sizeof(double) : sizeof(float));
}

}  // namespace

stage_chain chain_stages(const config::pipeline& p) {
    stage_chain chain;
    auto& kernels = chain.kernels;
    if (p.fuse == config::fusion::fused) {
        chain_kernel k;
        k.name = p.name + "_fused";
        k.writes = k_output_buffer;
        k.output = final_output(p.stages.back());
        k.first_value = p.stages.front().input;
        if (!k.first_value.empty()) add_once(k.reads, k.first_value);
        for (std::size_t i = 0; i < p.stages.size(); ++i) add_stage(k, p, i, false);
        k.what = config::describe_stages(p) + ", fused into one kernel";
        kernels.push_back(std::move(k));
        return chain;
    }
    std::string holds_x = p.stages.front().input;
    std::vector<std::size_t> kernel_of_stage;
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const auto& s = p.stages[i];
        kernel_of_stage.push_back(kernels.size());
        if (s.online_with) {  // computed by its max's kernel, which writes it too
            chain_kernel& with_max = kernels[kernel_of_stage[*s.online_with]];
            with_max.stages.push_back(i);
            with_max.also_writes.push_back(s.as);
            with_max.what += ", and stages[" + std::to_string(i) + "] in the same pass";
            chain.row_values.push_back(s.as);
            continue;
        }
        const bool map = s.reduce == config::reduction::none;
        chain_kernel k;
        k.name = p.name + "_s" + std::to_string(i) + "_" + s.op;
        k.first_value = holds_x;
        if (!holds_x.empty()) add_once(k.reads, holds_x);
        add_stage(k, p, i, true);
        if (i + 1 == p.stages.size()) {
            k.writes = k_output_buffer;
            k.output = final_output(s);
        } else if (map) {
            k.writes = "tmp" + std::to_string(i);
            chain.temporaries.push_back(k.writes);
        } else {
            k.writes = s.as;
            k.output = chain_kernel::result::row_value;
            chain.row_values.push_back(s.as);
        }
        if (map) holds_x = k.writes;
        k.what = "stages[" + std::to_string(i) + "]: " + config::describe(s) + ", a kernel of its own";
        kernels.push_back(std::move(k));
    }
    return chain;
}

namespace {

/// The program's device buffers (inputs, intermediate arrays, row values, the output) and the
/// output's shape, for the chain of `p`.
void set_buffers(const config::pipeline& p, const stage_chain& chain, program& prog) {
    const std::size_t element = config::element_size(p.type);
    std::vector<buffer>& buffers = prog.buffers;
    for (const auto& in : p.inputs)
        buffers.push_back({in.name, static_cast<std::size_t>(config::elements_of(p, in)) * element, buffer_role::input});
    for (const auto& name : chain.temporaries)
        buffers.push_back({name, static_cast<std::size_t>(p.n) * element, buffer_role::temporary});
    for (const auto& name : chain.row_values) buffers.push_back({name, row_value_bytes(p), buffer_role::row_value});
    buffers.push_back({k_output_buffer, static_cast<std::size_t>(config::output_count(p)) * element, buffer_role::output});
    prog.result_per_row = config::result_per_row(p);
    if (p.shape) {
        prog.output_rows = p.shape->rows;
        prog.output_cols = p.shape->cols;
    }
}

}  // namespace

void chain_start::add(kernel planned, codegen::mu::data item) {
    m_items.push_back(item);
    prog.kernels.push_back(std::move(planned));
}

program chain_start::finish(const codegen::template_set& templates, std::string_view file) {
    std::vector<std::string> names;
    for (const auto& k : prog.kernels) names.push_back(k.name);
    data.set("kernels", m_items);
    prog.source = codegen::render(templates, file, data, names);
    return std::move(prog);
}

chain_start start_chain(const config::pipeline& p, std::string_view family) {
    chain_start start;
    start.chain = chain_stages(p);
    program& prog = start.prog;
    prog.family = std::string(family);
    prog.vector_width = p.launch.vector_width;
    prog.double_scalars = config::computes_in_double(p.type);
    set_buffers(p, start.chain, prog);
    start.data = codegen::prologue_data(p, std::string(config::to_string(p.fuse)) + ", " +
                                               std::string(config::to_string(p.type)) + ", vector width " +
                                               std::to_string(prog.vector_width),
                                        prog.vector_width, prog.headers);
    return start;
}

kernel kernel_of(const chain_kernel& chained, int block) {
    kernel k;
    k.name = chained.name;
    k.what = chained.what;
    k.stages = chained.stages;
    k.reads_x = chained.first_value;
    k.block.x = block;
    return k;
}

namespace {

/// Floating-point operations per element of an expression: each +, −, ×, ÷ and function call one
/// (a roofline's count: a tanh is one operation, whatever instructions it takes); a comparison,
/// a selection, a negation or a name none.
double operations_of(const expr::tree& t) {
    if (!t) return 0;
    double count = 0;
    if (t->kind == expr::node_kind::call) count = 1;
    if (t->kind == expr::node_kind::binary) {
        using enum expr::binary_op;
        const expr::binary_op op = t->op;
        count = op == add || op == sub || op == mul || op == div || op == floor_div || op == mod ? 1 : 0;
    }
    for (const auto& arg : t->args) count += operations_of(arg);
    return count;
}

}  // namespace

void count_work(const config::pipeline& p, const chain_kernel& chained, int passes, kernel& k) {
    const std::size_t element = config::element_size(p.type), array = static_cast<std::size_t>(p.n) * element;
    const std::size_t row_value = row_value_bytes(p);
    using result = chain_kernel::result;
    const std::size_t written = (chained.output == result::elements     ? array
                                 : chained.output == result::row_output ? static_cast<std::size_t>(config::output_count(p)) * element
                                                                        : row_value) +
                                chained.also_writes.size() * row_value;
    std::size_t arrays = 0;  // read once per pass over the row
    for (const auto& name : chained.reads) {
        const config::input_spec* input = config::find_input(p, name);
        arrays += input ? static_cast<std::size_t>(config::elements_of(p, *input)) * element : array;
    }
    k.bytes_read = static_cast<double>(arrays * static_cast<std::size_t>(passes) + chained.row_reads.size() * row_value);
    k.bytes_written = static_cast<double>(written);
    // Each stage's expression once per element, a reduce's combining one more.
    double per_element = 0;
    for (const std::size_t s : chained.stages)
        per_element += operations_of(p.stages[s].kernel) + (p.stages[s].reduce != config::reduction::none ? 1 : 0);
    k.flops = per_element * static_cast<double>(p.n);
}

argument array_argument(const std::string& name, bool written, const std::string& cuda_name) {
    argument a;
    a.name = name;
    a.cuda_name = cuda_name.empty() ? name : cuda_name;
    a.written = written;
    a.cuda = std::string(written ? "store_t* __restrict__ " : "const store_t* __restrict__ ") + a.cuda_name;
    return a;
}

tensor_map::element map_element(config::dtype type) {
    return type == config::dtype::bfloat16 ? tensor_map::element::bfloat16 : tensor_map::element::float16;
}

argument map_argument(const std::string& name, const tensor_map& map, bool written) {
    argument a = array_argument(name, written, name + "_map");
    a.cuda = "const __grid_constant__ kjit_tensor_map " + a.cuda_name;
    a.map = map;
    return a;
}

argument scalar_argument(const std::string& name) {
    argument a;
    a.what = argument::kind::scalar;
    a.name = a.cuda_name = name;
    a.cuda = "real " + name;
    return a;
}

element_call element_call_of(const config::pipeline& p, std::size_t first, std::size_t last, const std::string& index) {
    element_call call;
    expr::used_names used;
    for (std::size_t i = first; i < last; ++i) expr::collect_names(p.stages[i].kernel, used);
    for (const auto& a : used.arrays) {
        call.params.push_back("real " + a);
        call.args.push_back("load(" + a + "[" + index + "])");
        call.arrays.push_back(array_argument(a, false));
    }
    for (const auto& s : used.scalars) {
        call.params.push_back("real " + s);
        call.args.push_back(s);
        call.scalars.push_back(scalar_argument(s));
    }
    return call;
}

std::vector<std::string> declarations(const kernel& k) {
    std::vector<std::string> params;
    for (const auto& a : k.args) params.push_back(a.cuda);
    return params;
}

argument size_argument(const std::string& name, long long value) {
    argument a;
    a.what = argument::kind::size;
    a.name = a.cuda_name = name;
    a.size = value;
    a.cuda = "long long " + name;
    return a;
}

}  // namespace kjit::family
