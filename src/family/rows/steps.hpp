// How a row kernel's stages become its template's steps: each stage's element function and its
// call on the value flowing through them (in place, or where x is used next), a reduce's op and
// row value with the online sum computed with it, and what the kernel stores.
#pragma once
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "expr/expr.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family::rows {

/// The indent of the template's lines that compute an element (in the loops over a thread's
/// vectors and their elements).
inline constexpr int k_element_indent = 12;

/// How a kernel's stages reach their values: the CUDA style, whether rows start inside a vector
/// (geometry.hpp), and whether maps are applied where x is used next (the row is not kept in
/// registers as computed) rather than in place.
struct step_context {
    const config::pipeline& p;
    const chain_kernel& k;
    expr::cuda_style style;
    bool misaligned = false, maps_at_use = false;

    /// A per-column input does not line up with the vectors of rows that start inside one: there
    /// each element reads its own column's value (a small array every row reads, from L1).
    [[nodiscard]] bool by_element(const std::string& a) const;
    /// The template's vector loads of `arrays` where a loop over x uses them (per column: the same
    /// for every row).
    [[nodiscard]] codegen::mu::data vector_loads(const std::vector<std::string>& arrays) const;
};

/// The value flowing through the stages at an element, and the arrays it reads: where maps are
/// applied at use, each map's call wraps the value before it.
struct flowing_value {
    codegen::code value;
    std::vector<std::string> arrays;
};

/// The template data of stage `i`: its element function and its call on the flowing value, which
/// a map applied at use then becomes.
[[nodiscard]] codegen::mu::data stage_step(const step_context& c, std::size_t i, flowing_value& flow);

/// What the kernel stores: its elements, or row values (for later kernels, the first stage's, a
/// max maybe with its online sum; the output, the last stage's).
void set_stores(const config::pipeline& p, const chain_kernel& k, codegen::mu::data& item);

}  // namespace kjit::family::rows
