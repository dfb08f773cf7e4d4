// A row pipeline's sums: the online ones paired with their maxes, and the formula of a sum the
// config leaves chosen for where the row waits (sums.hpp).
#include "family/rows/sums.hpp"

#include "expr/expr.hpp"
#include "expr/functions.hpp"
#include "family/rows/geometry.hpp"
#include "util/error.hpp"

namespace kjit::family::rows {
namespace {

using config::pipeline;

/// Nodes printed of a composed tree at most, when it is compared or quoted: enough for any
/// expression a user writes, and a bound on the work for a composition whose text is
/// exponentially long.
constexpr std::size_t k_compared_nodes = 1 << 16, k_quoted_nodes = 64;

/// True when `t` is exp(reduced - m), where m names a row value.
bool is_exp_less_max(const expr::tree& t, const expr::tree& reduced, const std::string& max_name) {
    if (t->kind != expr::node_kind::call || t->function->name != "exp") return false;
    const expr::node& difference = *t->args[0];
    return difference.kind == expr::node_kind::binary && difference.op == expr::binary_op::sub &&
           difference.args[1]->kind == expr::node_kind::name && difference.args[1]->binding == expr::name_kind::row &&
           difference.args[1]->name == max_name &&
           expr::to_text(difference.args[0], k_compared_nodes) == expr::to_text(reduced, k_compared_nodes);
}

/// The max that sum `i` can be computed with, in one pass: the reduce before it, with only maps
/// between, when it is a max m of v and the sum, with those maps put in for x, is of exp(v − m).
/// Else nothing, and `why` says what is missing.
std::optional<std::size_t> online_max_of(const pipeline& p, std::size_t i, std::string& why) {
    const config::stage& sum = p.stages[i];
    std::size_t after_max = i;
    while (after_max > 0 && p.stages[after_max - 1].reduce == config::reduction::none) --after_max;
    if (after_max == 0 || p.stages[after_max - 1].reduce != config::reduction::max) {
        why = "\"online\" computes this sum in one pass with a max: the reduce before it must be fn \"max\", with only "
              "maps between";
        return std::nullopt;
    }
    const config::stage& max = p.stages[after_max - 1];
    // The maps composed first to last, each substituted into the next (linear in their size).
    const auto summand_of = [&](expr::tree config::stage::*which) {
        expr::tree v;  // x itself, until a map
        for (std::size_t k = after_max; k < i; ++k) v = v ? expr::substitute_flowing(p.stages[k].*which, v) : p.stages[k].*which;
        return v ? expr::substitute_flowing(sum.*which, v) : sum.*which;
    };
    const expr::tree summand = summand_of(&config::stage::kernel);
    if (!is_exp_less_max(summand, max.kernel, max.as) || !is_exp_less_max(summand_of(&config::stage::exact), max.exact, max.as)) {
        why = "\"online\" needs a sum of exp(v - " + max.as + ") where " + max.as + " is the max of v = " +
              expr::to_text(max.kernel, k_quoted_nodes) + "; this sum is of " + expr::to_text(summand, k_quoted_nodes);
        return std::nullopt;
    }
    return after_max - 1;
}

/// True where a sum that leaves its formula is computed online when it can be: the row is read
/// from shared or global memory in each pass, so the online sum saves a pass over it and a
/// reduction across the block (or cluster) — softmax over 1024 rows of bfloat16 on an H100:
/// 50,257 columns 90.4 → 81.2 µs, 128,256 224 → 210, 32,000 unchanged
/// (bench/results/2026-12-05-rows/first). Held in registers, the classic sum computes each exp
/// once and the online one twice (docs/reductions.md).
bool online_by_default(const pipeline& p) { return !row_in_registers(p) && p.fuse == config::fusion::fused; }

}  // namespace

void choose_sum_formulas(pipeline& p, const std::string& source) {
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        config::stage& sum = p.stages[i];
        const bool asked = sum.formula == "online";
        if (sum.reduce != config::reduction::sum || !(asked || (sum.formula.empty() && online_by_default(p)))) continue;
        const std::string path = "stages[" + std::to_string(i) + "].formula";
        std::string why;
        const std::optional<std::size_t> max = online_max_of(p, i, why);
        if (!max && asked) throw config_error(source, path, why);
        if (!max) continue;
        if (asked && p.fuse == config::fusion::separate && i + 1 == p.stages.size())
            throw config_error(source, path, "\"online\" with fusion \"separate\" computes the sum in the max's kernel, which "
                                             "writes row values; the last stage's sum is the output: use fusion \"fused\", or "
                                             "\"classic\"");
        sum.formula = "online";
        sum.online_with = max;
    }
}

}  // namespace kjit::family::rows
