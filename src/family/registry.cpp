// The registry: which families there are, and the one place a pipeline gets its family.
#include <algorithm>

#include "config/ops.hpp"
#include "config/reader.hpp"
#include "family/attention/attention.hpp"
#include "family/elementwise/elementwise.hpp"
#include "family/family.hpp"
#include "family/gemm/gemm.hpp"
#include "family/rows/rows.hpp"
#include "family/transpose/transpose.hpp"
#include "util/error.hpp"

namespace kjit::family {
namespace {

using config::detail::quoted_list;

/// An op of a stage that no family implements: the message lists every op there is.
[[noreturn]] void refuse_op(const config::pipeline& p, const std::string& source) {
    std::vector<std::string> ops{"map", "reduce", "activate"};
    for (const auto& [name, op] : config::builtin_ops()) ops.push_back(name);
    std::vector<std::string> family_ops;
    for (const family* f : families())
        for (const auto& op : f->stage_ops()) family_ops.push_back(op);
    ops.insert(ops.end(), family_ops.begin(), family_ops.end());
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const config::stage& s = p.stages[i];
        if (s.family_op && std::find(family_ops.begin(), family_ops.end(), s.op) == family_ops.end())
            throw config_error(source, "stages[" + std::to_string(i) + "].op",
                               "expected one of " + quoted_list(ops) + ", got " + config::detail::shown(s.op));
    }
    throw config_error(source, "stages", "no kernel family computes " + config::describe_stages(p));
}

/// Every key of the launch block must be one of the family's.
void check_launch_keys(const family& chosen, const config::pipeline& p, const std::string& source) {
    const std::vector<std::string> keys = chosen.launch_keys();
    for (const auto& item : p.launch.given.items()) {
        const std::string& key = item.key();
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        const auto owner = std::find_if(families().begin(), families().end(), [&](const family* f) {
            const auto theirs = f->launch_keys();
            return std::find(theirs.begin(), theirs.end(), key) != theirs.end();
        });
        if (owner == families().end())
            throw config_error(source, "launch." + key, "unknown key; expected one of " + quoted_list(keys));
        throw config_error(source, "launch." + key,
                           "a launch key of " + std::string((*owner)->name()) + " pipelines (" +
                               std::string((*owner)->pipelines()) + "); this pipeline is " + std::string(chosen.name()) +
                               ", whose keys are " + quoted_list(keys));
    }
}

}  // namespace

const std::vector<const family*>& families() {
    static const std::vector<const family*> all{&elementwise_family(), &rows_family(), &transpose_family(), &gemm_family(),
                                                &attention_family()};
    return all;
}

const family& family_of(const config::pipeline& p) {
    for (const family* f : families())
        if (f->name() == p.family) return *f;
    throw error(error_kind::usage, "pipeline \"" + p.name + "\" has no kernel family: load it with family::load");
}

config::target configured_target(const config::compile_spec& c) {
    if (c.target) return *c.target;
    if (c.arch) return *config::named_target("sm_" + std::to_string(*c.arch));
    return config::default_target();
}

config::pipeline load(const config::document& doc, const std::optional<config::target>& device) {
    config::pipeline p = config::from_json(doc);
    p.target = device ? *device : configured_target(p.compile);
    const family* chosen = nullptr;
    for (const family* f : families())
        if (f->accepts(p)) chosen = f;
    if (!chosen) refuse_op(p, doc.source);
    check_launch_keys(*chosen, p, doc.source);
    chosen->resolve(p, doc.source);
    p.family = std::string(chosen->name());
    return p;
}

std::vector<config::sweep_point> expand_sweep(const config::document& doc, const std::optional<config::target>& device,
                                              const std::optional<std::vector<std::size_t>>& indices) {
    return config::expand_sweep(doc, [&](const config::document& point) { return load(point, device); }, indices);
}

program plan(const config::pipeline& p, const codegen::template_set& templates) {
    return family_of(p).plan(p, templates);
}

}  // namespace kjit::family
