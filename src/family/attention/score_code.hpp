// The score expression as the attention kernel's code: its function's parameters and its calls'
// arguments (positions, head and batch, params, inputs read by token), and the tile tests the
// policy uses (tile_mask.hpp) as the template's kjit_tile_masked and kjit_tile_plain.
#pragma once
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "expr/expr.hpp"
#include "family/attention/problem.hpp"
#include "family/program.hpp"

namespace kjit::family::attention {

/// The score function's parameters and the arguments of its calls: x, the positions (int: resolve
/// checked that they fit), the head and batch where the expression uses them (the grid's y and z),
/// the params it uses, then its inputs' values by token. `extra_*`: those after row and col and
/// before the token values, which the tile test takes too.
struct score_call {
    std::vector<std::string> params{"real x", "int row", "int col", "int rows", "int cols"};
    std::vector<std::string> args{"x", "kjit_row", "kjit_col", "(int)rows", "(int)cols"};
    std::string extra_params, extra_args;
    std::vector<argument> scalars;
    std::vector<argument> tokens;  ///< the inputs it reads by token
};

/// The CUDA spelling of the score's code: the kernel's, positions as ints (resolve checks that a
/// head's queries and keys fit one).
[[nodiscard]] expr::cuda_style score_style(const config::pipeline& p);
/// p's score's tile tests, in score_style: the inputs it reads by token ascend where they are
/// filled "sorted" (along each batch's tokens, the input's rows).
[[nodiscard]] tile_tests tile_tests_of(const config::pipeline& p);
/// The names the score expression uses.
[[nodiscard]] expr::used_names score_names(const config::pipeline& p);
/// True when the score expression (whose names are `used`) uses the query's head or batch.
[[nodiscard]] bool uses_heads(const expr::used_names& used);
/// The score function's call for `p`.
[[nodiscard]] score_call score_call_of(const config::pipeline& p);
/// The score function and the tile tests, as the template's placeholders.
void set_score_data(const config::pipeline& p, const score_call& call, codegen::mu::data& data);

}  // namespace kjit::family::attention
