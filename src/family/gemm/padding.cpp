#include "family/gemm/padding.hpp"

#include <algorithm>

#include "family/stage_chain.hpp"

namespace kjit::family::gemm {
namespace {

/// Threads per block of a pad kernel (a grid-stride loop over 16-byte vectors).
constexpr int k_pad_block = 256;

}  // namespace

std::vector<padded_operand> padded_operands(const config::pipeline& p, const policy& t, const sizes& s) {
    const auto per_16_bytes = static_cast<long long>(16 / config::element_size(p.type));
    const auto pitch = [&](long long cols) { return (cols + per_16_bytes - 1) / per_16_bytes * per_16_bytes; };
    std::vector<padded_operand> pads;
    if (t.pad_a) pads.push_back({"A", p.stages.front().input, "kjit_a_padded", s.m, s.k, pitch(s.k)});
    if (t.pad_b) pads.push_back({"B", multiplier(p), "kjit_b_padded", s.k, s.n, pitch(s.n)});
    return pads;
}

std::pair<std::string, long long> operand_read(const std::string& matrix, const std::vector<padded_operand>& pads) {
    for (const auto& pad : pads)
        if (pad.from == matrix) return {pad.to, pad.pitch};
    return {matrix, 0};
}

std::pair<kernel, codegen::mu::data> pad_kernel(const config::pipeline& p, const padded_operand& pad) {
    const auto element = static_cast<double>(config::element_size(p.type));
    kernel k;
    k.name = p.name + "_pad_" + (pad.matrix == "A" ? "a" : "b");
    k.what = pad.matrix + " (" + pad.from + ") in rows " + std::to_string(pad.pitch) + " elements apart, which the TMA unit copies";
    k.block = {k_pad_block, 1, 1};
    const long long vectors = pad.rows * pad.pitch / 8;  // (the template's: 16 bytes of 16-bit elements)
    k.grid = {std::max(1LL, (vectors + k_pad_block - 1) / k_pad_block), 1, 1};
    k.resident = resident_rule::at_most;
    k.args = {array_argument(pad.from, false, "kjit_from"), array_argument(pad.to, true, "kjit_to"), size_argument("rows", pad.rows),
              size_argument("cols", pad.cols), size_argument("kjit_pitch", pad.pitch)};
    k.bytes_read = static_cast<double>(pad.rows * pad.cols) * element;
    k.bytes_written = static_cast<double>(pad.rows * pad.pitch) * element;
    k.pads_rows_to = pad.pitch;
    codegen::mu::data item;
    item.set("heading", codegen::heading(k.name, k.what));
    item.set("kernel", k.name);
    item.set("kernel_params", codegen::parameter_list(declarations(k)));
    return {std::move(k), std::move(item)};
}

std::vector<double> operand_values(const config::pipeline& p, const host_launch& launch, const argument& operand) {
    std::vector<double> values = host_values(p.type, *launch.buffers.at(operand.name));
    if (!operand.map || operand.map->pitch == 0) return values;
    const tensor_map& m = *operand.map;
    std::vector<double> dense;
    for (long long r = 0; r < m.rows; ++r)
        dense.insert(dense.end(), values.begin() + r * m.pitch, values.begin() + r * m.pitch + m.cols);
    return dense;
}

}  // namespace kjit::family::gemm
