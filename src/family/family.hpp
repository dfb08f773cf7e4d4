// Kernel families: the seam between a validated pipeline and the kernels that compute it. The
// registry picks one family per pipeline, once, when the config is loaded; that family validates
// its own launch keys and resolves every "auto" (its policy), plans the program (family/program.hpp)
// and computes the float64 reference. Adding a family is a folder under src/family/, a template
// and a line in registry.cpp (docs/architecture.md walks through one).
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "family/program.hpp"
#include "reference/reference.hpp"

namespace kjit::family {

/// A matrix on the host, row after row: what a kernel holds between its stages, as a fake GPU
/// that executes plans runs it (tests/plan_executor.hpp).
struct host_matrix {
    long long rows = 0, cols = 0;
    std::vector<double> values;
};
/// One launch of a kernel on the host: the kernel, its buffers by the plan's names (elements of
/// the pipeline's dtype), and its scalar and size arguments by name.
struct host_launch {
    const kernel& k;
    std::map<std::string, const std::vector<unsigned char>*> buffers;
    std::map<std::string, double> scalars;
    std::map<std::string, long long> sizes;
};
/// A buffer's elements of `type`, widened to double.
[[nodiscard]] std::vector<double> host_values(config::dtype type, const std::vector<unsigned char>& bytes);

class family {
public:
    virtual ~family() = default;
    [[nodiscard]] virtual std::string_view name() const = 0;
    /// The pipelines it computes, for messages: "stages with a reduce".
    [[nodiscard]] virtual std::string_view pipelines() const = 0;
    /// Its template, kernel_templates/NAME.
    [[nodiscard]] virtual std::string_view template_file() const = 0;
    /// Stage ops it implements itself (config::stage::family_op), such as "transpose".
    [[nodiscard]] virtual std::vector<std::string> stage_ops() const { return {}; }
    /// True when it computes `p` (parsed, not yet resolved). At most one family says yes.
    [[nodiscard]] virtual bool accepts(const config::pipeline& p) const = 0;
    /// Its launch keys ("block", …): any other key in the config's launch block is an error.
    [[nodiscard]] virtual std::vector<std::string> launch_keys() const = 0;
    /// Validates what is its own in `p` and resolves every "auto" into p.launch, once, for the GPU
    /// p.target (which the registry sets first) and the shape. Throws
    /// kjit::error(config) naming `source` and the key path.
    virtual void resolve(config::pipeline& p, const std::string& source) const = 0;
    /// The launch space `kjit tune` searches when a config has no "tune" block, in that block's
    /// form (tune/space.hpp): {"axes": {…}, "paired": […]}.
    [[nodiscard]] virtual config::json_value tune_space(const config::pipeline& p) const = 0;
    /// The policy as record columns: every launch choice, resolved.
    [[nodiscard]] virtual config::json_value policy(const config::pipeline& p) const = 0;
    /// The kernels of `p` (resolved) and their source.
    [[nodiscard]] virtual program plan(const config::pipeline& p, const codegen::template_set& templates) const = 0;
    /// The float64 reference of `p` from `inputs`.
    [[nodiscard]] virtual reference::expected_values reference(const config::pipeline& p,
                                                               const reference::input_arrays& inputs) const = 0;
    /// Stage `stage`, an op of its own (stage_ops), on the host: the matrix it leaves, from x, the
    /// one the stages before it in the kernel left, or from the launch's buffers where it is the
    /// kernel's first (x empty). The model a fake GPU runs for the op; other families are never
    /// asked.
    [[nodiscard]] virtual host_matrix host_op(const config::pipeline& p, std::size_t stage, host_matrix x,
                                              const host_launch& launch) const {
        (void)x;
        (void)launch;
        throw std::logic_error(std::string(name()) + " has no op of its own: " + p.stages.at(stage).op);
    }
    /// What the reference depends on besides the inputs and the stages (the kernels' order of
    /// additions, where a sum's error bound follows it); null when nothing.
    [[nodiscard]] virtual config::json_value reference_key(const config::pipeline& p) const = 0;
};

/// Every family, in the order the registry asks them.
[[nodiscard]] const std::vector<const family*>& families();
/// The family that resolved `p` (p.family).
[[nodiscard]] const family& family_of(const config::pipeline& p);

/// The GPU a pipeline is resolved for where no device is given (`compile`, `emit`): the config's
/// compile.target, else a typical GPU of its compile.arch, else config::default_target().
[[nodiscard]] config::target configured_target(const config::compile_spec& c);
/// A config document as a resolved pipeline: config::from_json, then its family's resolve for
/// `device` (the GPU it will run on), or where none is given for configured_target.
[[nodiscard]] config::pipeline load(const config::document& doc, const std::optional<config::target>& device = std::nullopt);
/// config::expand_sweep with every point resolved by its family for `device` (as load), before any
/// work starts.
[[nodiscard]] std::vector<config::sweep_point> expand_sweep(const config::document& doc,
                                                            const std::optional<config::target>& device = std::nullopt,
                                                            const std::optional<std::vector<std::size_t>>& indices = std::nullopt);

/// The program of `p`: family_of(p).plan.
[[nodiscard]] program plan(const config::pipeline& p, const codegen::template_set& templates);

}  // namespace kjit::family
