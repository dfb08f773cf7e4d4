// Split keys (split_keys.hpp): the partials' buffer and the kernel that joins them.
#include "family/attention/split_keys.hpp"

namespace kjit::family::attention {

namespace {

/// Threads a block of the combine kernel takes: a warp a query row.
constexpr int k_combine_threads = 128;

}  // namespace

buffer partials_buffer(const problem& pr, const policy& t) {
    const long long floats = pr.batch * pr.heads * pr.queries * t.splits * partial_stride(pr);
    buffer b{k_partials_buffer, static_cast<std::size_t>(floats) * sizeof(float), buffer_role::temporary};
    b.float_elements = true;
    return b;
}

argument partials_argument(bool written) {
    argument partials = array_argument(k_partials_buffer, written);
    partials.cuda = std::string(written ? "float* __restrict__ " : "const float* __restrict__ ") + partials.cuda_name;
    return partials;
}

kernel combine_kernel(const config::pipeline& p, const problem& pr, const policy& t, const element_call& epilogue) {
    const auto element = static_cast<double>(config::element_size(p.type));
    const long long rows = pr.batch * pr.heads * pr.queries;
    kernel k;
    k.name = p.name + k_combine_kernel;
    k.what = "stages[0]: attention, each query's " + std::to_string(t.splits) + " partial softmaxes (a share of its keys each) joined" +
             (p.stages.size() > 1 ? ", with the stages after it" : "");
    for (std::size_t i = 0; i < p.stages.size(); ++i) k.stages.push_back(i);
    k.reads_x = k_partials_buffer;
    k.block = {k_combine_threads, 1, 1};
    k.grid = {(rows * 32 + k_combine_threads - 1) / k_combine_threads, 1, 1};
    k.args = {partials_argument(false), array_argument(k_output_buffer, true)};
    k.args.insert(k.args.end(), epilogue.arrays.begin(), epilogue.arrays.end());
    k.args.insert(k.args.end(), epilogue.scalars.begin(), epilogue.scalars.end());
    k.args.push_back(size_argument("rows", rows));
    k.bytes_read = static_cast<double>(partials_buffer(pr, t).bytes) + static_cast<double>(epilogue.arrays.size() * p.n) * element;
    k.bytes_written = static_cast<double>(p.n) * element;
    return k;
}

void set_split_data(const problem& pr, const kernel& combine, codegen::mu::data& data) {
    data.set("partials", k_partials_buffer);
    data.set("partial_stride", std::to_string(partial_stride(pr)));
    data.set("combine_threads", std::to_string(k_combine_threads));
    data.set("combine_kernel", combine.name);
    data.set("combine_heading", codegen::heading(combine.name, combine.what));
    data.set("combine_params", codegen::parameter_list(declarations(combine)));
}

}  // namespace kjit::family::attention
