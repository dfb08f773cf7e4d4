// The score expression as the attention kernel's code (score_code.hpp).
#include "family/attention/score_code.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "family/attention/problem.hpp"
#include "family/attention/score_folds.hpp"
#include "family/attention/tile_mask.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family::attention {

namespace mu = codegen::mu;
using config::pipeline;

expr::cuda_style score_style(const pipeline& p) {
    expr::cuda_style style = codegen::style_of(p);
    style.int_positions = true;
    return style;
}

tile_tests tile_tests_of(const pipeline& p) {
    const expr::cuda_style style = score_style(p);
    std::vector<std::string> ascending;
    for (const auto& in : p.inputs)
        if (in.sorted) ascending.push_back(in.name);
    const expr::tree& score = p.stages.front().kernel;
    return {tile_masked(score, style, ascending), tile_plain(score, style, ascending)};
}

expr::used_names score_names(const pipeline& p) {
    expr::used_names used;
    expr::collect_names(p.stages.front().kernel, used);
    return used;
}

bool uses_heads(const expr::used_names& used) {
    return std::any_of(used.positions.begin(), used.positions.end(),
                       [](const std::string& name) { return name == "head" || name == "batch"; });
}

score_call score_call_of(const pipeline& p) {
    score_call call;
    const auto add = [&](const std::string& param, const std::string& arg) {
        call.params.push_back(param);
        call.args.push_back(arg);
        call.extra_params += ", " + param;
        call.extra_args += ", " + arg;
    };
    const expr::used_names used = score_names(p);
    if (uses_heads(used)) {
        add("int head", "kjit_head_index");
        add("int batch", "kjit_batch_index");
    }
    for (const auto& s : used.scalars) {
        add("real " + s, s);
        call.scalars.push_back(scalar_argument(s));
    }
    // An input read by token: its value at the query's or the key's token of the work item's batch
    // (a position past the last, whose score is not used, reads the last).
    for (const auto& read : used.tokens) {
        const std::string size = read.index == "row" ? "rows" : "cols";
        call.params.push_back("real " + read.parameter());
        call.args.push_back("load(" + read.name + "[kjit_batch_index * " + size + " + min(kjit_" + read.index + ", (int)" +
                            size + " - 1)])");
        if (std::none_of(call.tokens.begin(), call.tokens.end(), [&](const argument& a) { return a.name == read.name; }))
            call.tokens.push_back(array_argument(read.name, false));
    }
    return call;
}

namespace {

/// What follows a tile test's corners and the sizes, in its parameters (`params`) and in a call's
/// arguments (`args`): the score's extra ones, then a pointer to the work item's batch's tokens of
/// each ascending input the tests bound, one a line, aligned with the parenthesis at `column`.
struct tile_test_tail {
    std::string params, args;
    std::vector<expr::token_read> bounded;

    [[nodiscard]] std::string parameters(std::size_t column) const {
        std::string text = params;
        for (const auto& read : bounded) text += ",\n" + std::string(column, ' ') + "const store_t* __restrict__ " + tokens_parameter(read);
        return text;
    }
    [[nodiscard]] std::string arguments(std::size_t column) const {
        std::string text = args;
        for (const auto& read : bounded)
            text += ",\n" + std::string(column, ' ') + read.name + " + kjit_batch_index * " + (read.index == "row" ? "rows" : "cols");
        return text;
    }
};

/// A tile test as the template's kjit_tile_<name> function: what it tells (the comment's lines
/// after "True where every score of the tile … is"), its parameters, loads and code.
mu::data tile_function(const std::string& name, const std::vector<std::string>& what, const tile_test& test,
                       const tile_test_tail& tail) {
    const std::string aligned(("__device__ __forceinline__ bool kjit_tile_" + name + "(").size(), ' ');
    mu::data one;
    one.set("name", name);
    one.set("what", codegen::text_list(what));
    one.set("params", "int kjit_r0, int kjit_r1, int kjit_c0, int kjit_c1,\n" + aligned + "int rows, int cols" + tail.parameters(aligned.size()));
    one.set("loads", codegen::text_list(bound_loads(test)));
    one.set("code", test.code);
    return one;
}

/// The tile tests the policy uses (tile_mask.hpp), as the template's kjit_tile_masked and
/// kjit_tile_plain, and their calls' arguments; a plain test that holds at every tile (the score
/// is x) is no function.
void set_tile_data(const pipeline& p, const score_call& call, mu::data& data) {
    const policy& t = policy_of(p);
    const tile_tests& tests = t.tiles;
    const bool plain_test = t.plain_tiles() && tests.plain->code != k_every_tile;
    tile_test_tail tail{call.extra_params, call.extra_args, {}};
    for (const auto& test : {tests.masked, plain_test ? tests.plain : std::nullopt})
        for (const auto& read : test ? test->bounded : std::vector<expr::token_read>{}) add_read(tail.bounded, read);
    mu::data functions{mu::data::type::list};
    if (t.skips_tiles())
        functions.push_back(tile_function("masked",
                                          {"−inf: the condition under which the score is −inf holds everywhere in it. Such a tile is",
                                           "skipped: not copied, not multiplied."},
                                          *tests.masked, tail));
    if (plain_test)
        functions.push_back(tile_function("plain",
                                          {"x itself: the condition under which the score is −inf fails everywhere in it. Such a tile's",
                                           "softmax skips the score expression."},
                                          *tests.plain, tail));
    data.set("tile_tests", functions);
    data.set("skips", codegen::flag(t.skips_tiles()));
    data.set("plain", codegen::flag(t.plain_tiles()));
    data.set("plain_test", codegen::flag(plain_test));
    // (the columns of the calls' parentheses, in attention_tiles.cu.mustache: the wgmma rung's
    // warp and the mma rung's threads call kjit_tile_masked from lines of their own)
    data.set("masked_args", tail.arguments(t.kind == rung::wgmma ? 42 : 34));
    data.set("plain_args", tail.arguments(31));
}

/// `value` as an expression: a number node.
expr::tree number_tree(double value) {
    expr::node number;
    number.number = value;
    return std::make_shared<const expr::node>(number);
}

/// `value` as a CUDA literal of the compute type.
std::string literal_of(double value, const expr::cuda_style& style) { return expr::to_cuda(number_tree(value), style); }

/// The score's folds (score_folds.hpp) as the template's kjit_score_inner and kjit_score_outer; a
/// factor of 1 is no constant.
void set_fold_data(const score_folds& folds, const expr::cuda_style& style, mu::data& data) {
    const bool inner = folds.inner != 1, outer = folds.outer != 1;
    data.set("folds", codegen::flag(inner || outer));
    data.set("both", codegen::flag(inner && outer));
    if (inner) data.set("inner", literal_of(folds.inner, style));
    if (outer) data.set("outer", literal_of(folds.outer, style));
}

/// The fixed base the softmax takes its exponents from (score_folds.hpp), as the template's
/// kjit_score_base and its bounds; absent where the softmax keeps a running max, whose tiles' max
/// then takes the score's outer factor.
void set_base_data(const std::optional<fixed_base>& base, const score_folds& folds, const expr::cuda_style& style,
                   mu::data& data) {
    data.set("fixed_base", codegen::flag(base.has_value()));
    data.set("outer_max", codegen::flag(!base && folds.outer != 1));
    if (!base) return;
    const auto exponent = [](double score) { return std::to_string((int)std::lround(score * std::numbers::log2e)); };
    data.set("base", literal_of(base->base, style));
    data.set("low", expr::to_text(number_tree(base->low)));
    data.set("high", expr::to_text(number_tree(base->high)));
    data.set("lowest", exponent(base->low - base->base));
    data.set("highest", exponent(base->high - base->base));
}

}  // namespace

void set_score_data(const pipeline& p, const score_call& call, mu::data& data) {
    const expr::tree& score = p.stages.front().kernel;
    const expr::cuda_style style = score_style(p);
    // The separate kernels store each score as it is: only the fused kernel's softmax takes factors.
    const policy& t = policy_of(p);
    const score_folds folds = t.separate ? score_folds{score} : fold_score(score, style.approximated.division);
    set_fold_data(folds, style, data);
    // (a score that is x itself somewhere has no bounds, so never both a fixed base and plain tiles)
    set_base_data(t.separate ? std::nullopt : fixed_base_of(score, p.type), folds, style, data);
    data.set("score_comment", codegen::comment_wrapped("// scaled product of their vectors:", expr::to_text(score, 40) + "."));
    data.set("score_code", codegen::fitted(expr::to_cuda(folds.folded, style), 11));  // (after "    return ")
    data.set("score_params", codegen::parameter_list(call.params));
    data.set("score_call", codegen::parameter_list(call.args, 32));  // (called on lines indented by 24)
    set_tile_data(p, call, data);
}

}  // namespace kjit::family::attention
