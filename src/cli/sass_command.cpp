// kjit sass (and emit --sass): the variant's machine code beside its generated CUDA, its
// instruction mix, and --diff: two variants' mixes and the opcodes that changed.
#include <sstream>

#include "cli/commands.hpp"
#include "family/family.hpp"
#include "why/sass.hpp"

namespace kjit::cli {
namespace {

struct disassembled {
    std::string label;
    std::string source;
    std::vector<why::kernel_code> kernels;
};

disassembled disassemble_variant(const options& o) {
    auto built = compile_for_reading(o, true);
    auto kernels = why::disassemble(built.binary.cubin);
    if (!o.kernel.empty()) {
        std::vector<std::string> names;
        for (const auto& k : kernels) names.push_back(k.name);
        std::erase_if(kernels, [&](const why::kernel_code& k) { return k.name.find(o.kernel) == std::string::npos; });
        if (kernels.empty())
            throw error(error_kind::usage, "--kernel " + o.kernel + ": no kernel of " + built.label + " has it in its name (" +
                                               join(names, ", ") + ")");
    }
    return {built.label, built.program.source, std::move(kernels)};
}

void print_diff(const disassembled& a, const disassembled& b, std::ostream& out) {
    out << "A: " << a.label << "\nB: " << b.label << "\n\n";
    out << why::mix_table({{"A", why::mix_of(a.kernels)}, {"B", why::mix_of(b.kernels)}});
    const std::string changes = why::opcode_changes(a.kernels, b.kernels);
    out << "\nopcodes that changed (A → B):\n" << (changes.empty() ? "  none: the same instructions, counted by opcode\n" : changes);
}

}  // namespace

exit_status cmd_sass(const options& o, std::ostream& out) {
    const disassembled a = disassemble_variant(o);
    if (!o.diff_config.empty() || !o.diff_sets.empty()) {
        options other = o;
        if (!o.diff_config.empty()) other.config_path = o.diff_config;
        other.sets.insert(other.sets.end(), o.diff_sets.begin(), o.diff_sets.end());
        print_diff(a, disassemble_variant(other), out);
        return exit_status::ok;
    }
    for (const auto& kernel : a.kernels) {
        if (o.mix_only) out << "// " << kernel.name << "\n" << why::mix_table({{"count", why::mix_of(kernel)}}) << "\n";
        else out << why::listing(kernel, a.source) << "\n";
    }
    return exit_status::ok;
}

}  // namespace kjit::cli
