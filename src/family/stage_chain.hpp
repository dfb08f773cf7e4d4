// The stages of an elementwise or row pipeline as a chain of kernels: fused, one kernel for
// every stage; separate, one kernel per stage, the shape of the seed's three @vectorize
// functions. Shared by the two families whose kernels run the stages in order
// (family/elementwise, family/rows), with the arguments and buffers they have in common.
#pragma once
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "family/program.hpp"

namespace kjit::family {

/// One kernel of the chain: what it reads and writes, before it has a launch.
struct chain_kernel {
    std::string name;
    std::string what;
    std::vector<std::string> reads;        ///< arrays: inputs and intermediate arrays
    std::vector<std::string> row_reads;    ///< row values written by an earlier kernel
    std::string writes;                    ///< the output, an intermediate array or a row value
    std::vector<std::string> also_writes;  ///< row values besides `writes`: an online sum with its max
    std::vector<std::string> scalars;
    std::vector<std::string> positions;  ///< position names its stages use (i, row, col, …)
    /// What `writes` holds: an element per element, or one value per row (of the storage type
    /// for the output, of the compute type for a row value another kernel reads).
    enum class result { elements, row_output, row_value } output = result::elements;
    std::vector<std::size_t> stages;  ///< the stages it computes, in order
    std::string first_value;          ///< the array its x starts from ("" = none)
};

struct stage_chain {
    std::vector<chain_kernel> kernels;     ///< in launch order
    std::vector<std::string> temporaries;  ///< intermediate arrays (separate stages only)
    std::vector<std::string> row_values;   ///< row values passed on in memory (separate only)
};

/// Appends `name` to `names` unless it is there already (a kernel's parameters, in first use).
void add_once(std::vector<std::string>& names, const std::string& name);

/// The kernels of `p`. Separate: each map writes an intermediate array that the next kernel
/// reads, each reduce a row value (x flows past it in the array that holds it); an online sum is
/// computed, and written, by its max's kernel.
[[nodiscard]] stage_chain chain_stages(const config::pipeline& p);

/// A chain's program as its kernels are planned, and the template data they share.
struct chain_start {
    stage_chain chain;
    program prog;            ///< family, vector width, scalars' type, buffers, the output's shape
    codegen::mu::data data;  ///< the prologue's placeholders; the family adds its own

    /// A planned kernel and its template data ({{#kernels}}), in launch order.
    void add(kernel planned, codegen::mu::data item);
    /// The program, its source rendered from template `file`.
    [[nodiscard]] program finish(const codegen::template_set& templates, std::string_view file);

private:
    codegen::mu::data m_items{codegen::mu::data::type::list};
};
/// The chain of `p` for `family`. Its label names no launch setting ("fused, float32, vector width
/// 4"), so that a sweep over block sizes compiles one source.
[[nodiscard]] chain_start start_chain(const config::pipeline& p, std::string_view family);

/// The program's kernel for `chained`, on blocks of `block` threads: its name, what it computes
/// and its stages; the family adds its grid, arguments and bytes.
[[nodiscard]] kernel kernel_of(const chain_kernel& chained, int block);

/// Sets k's bytes_read and bytes_written (its arrays read `passes` times over, its row values
/// once, what it writes once) and its flops (its stages' operations on every element).
void count_work(const config::pipeline& p, const chain_kernel& chained, int passes, kernel& k);

/// An array argument (read, or written when `written`) in the storage type, called `cuda_name`
/// in the kernel (by default its buffer's name).
[[nodiscard]] argument array_argument(const std::string& name, bool written, const std::string& cuda_name = "");
/// The element type a tensor map of a 16-bit pipeline's matrices holds.
[[nodiscard]] tensor_map::element map_element(config::dtype type);
/// A matrix the TMA unit copies (wgmma rungs): the kernel gets a tensor map of buffer `name`, called
/// name_map.
[[nodiscard]] argument map_argument(const std::string& name, const tensor_map& map, bool written = false);
/// A scalar of the pipeline, in the compute type.
[[nodiscard]] argument scalar_argument(const std::string& name);
/// A size known when planning ("n", "rows", "cols").
[[nodiscard]] argument size_argument(const std::string& name, long long value);
/// The element function of stages [first, last) of `p`, as a kernel calls it on one element: its
/// parameters (x, then each array's element, then the scalars), its call's arguments with each
/// array read at `index` ("load(w[kjit_c])"), and the kernel arguments it needs (the arrays, then
/// the scalars). A matmul's and an attention's epilogue.
struct element_call {
    std::vector<std::string> params{"real x"}, args{"x"};
    std::vector<argument> arrays, scalars;
};
[[nodiscard]] element_call element_call_of(const config::pipeline& p, std::size_t first, std::size_t last, const std::string& index);

/// Each of k's arguments declared as its kernel's parameter, in order (argument::cuda).
[[nodiscard]] std::vector<std::string> declarations(const kernel& k);

}  // namespace kjit::family
