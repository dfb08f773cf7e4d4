// kjit sass (and emit --sass): the variant's machine code beside its generated CUDA, its
// instruction mix, and --diff: two variants' mixes and the opcodes that changed.
#include "cli/commands.hpp"
#include "why/sass.hpp"

namespace kjit::cli {
namespace {

struct disassembled {
    std::string label;  ///< "hidden_layer: fused float32 tanh=builtin block=256 vec=4"
    std::string source;
    std::vector<why::kernel_code> kernels;
};

disassembled disassemble_variant(const options& o) {
    const auto cfg = load(o);
    run::session s = session_for(o);
    const auto built = s.build_to_read(cfg.pipeline, true);
    const std::string label = cfg.pipeline.name + ": " + config::variant_label(cfg.pipeline);
    auto kernels = why::disassemble(built.binary.cubin);
    if (!o.kernel.empty()) kernels = why::kernels_named(std::move(kernels), o.kernel, label);
    return {label, built.program.source, std::move(kernels)};
}

}  // namespace

exit_status cmd_sass(const options& o, std::ostream& out) {
    const disassembled a = disassemble_variant(o);
    if (o.diff_config.empty() && o.diff_sets.empty()) {
        out << why::sass_text(a.kernels, a.source, o.mix_only);
        return exit_status::ok;
    }
    options other = o;
    if (!o.diff_config.empty()) other.config_path = o.diff_config;
    other.sets.insert(other.sets.end(), o.diff_sets.begin(), o.diff_sets.end());
    const disassembled b = disassemble_variant(other);
    out << why::diff_text(a.label, a.kernels, b.label, b.kernels);
    return exit_status::ok;
}

}  // namespace kjit::cli
