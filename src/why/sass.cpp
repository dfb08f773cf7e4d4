#include "why/sass.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <regex>
#include <sstream>

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

namespace kjit::why {
namespace {

/// Opcode stems (the opcode up to its first '.') of each kind but integer_and_other, the default.
const std::map<std::string, instruction_kind, std::less<>>& kinds_by_stem() {
    using enum instruction_kind;
    static const std::map<std::string, instruction_kind, std::less<>> table = [] {
        std::map<std::string, instruction_kind, std::less<>> t;
        const std::pair<instruction_kind, std::vector<const char*>> groups[] = {
            {tensor_product, {"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "UTCMMA", "UTCHMMA",
                              "UTCQMMA", "UTCIMMA"}},
            {fma, {"FFMA", "FFMA2", "HFMA2", "DFMA"}},
            {float_other, {"FADD", "FADD2", "FMUL", "FMUL2", "FMNMX", "FSETP", "FSET", "FSEL", "FCHK", "FSWZADD", "HADD2",
                           "HMUL2", "HMNMX2", "HSETP2", "HSET2", "DADD", "DMUL", "DSETP", "DMNMX"}},
            {special_function, {"MUFU"}},
            {conversion, {"F2F", "F2I", "I2F", "F2FP", "I2FP", "F2IP", "FRND", "I2I", "I2IP"}},
            {global_load, {"LDG", "LD"}},
            {global_store, {"STG", "ST"}},
            {atomic, {"RED", "ATOM", "ATOMG", "ATOMS", "REDG", "REDAS"}},
            {shared_load, {"LDS"}},
            {shared_store, {"STS"}},
            {matrix_load, {"LDSM", "STSM"}},
            {async_copy, {"UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UTMACCTL", "UBLKCP", "UBLKRED", "UBLKPF", "LDGSTS",
                          "LDGDEPBAR"}},
            {local_memory, {"LDL", "STL"}},
            {barrier, {"BAR", "SYNCS", "MEMBAR", "DEPBAR", "WARPGROUP", "WARPSYNC", "ERRBAR", "CCTL", "FENCE", "ARRIVES"}},
            {warp_exchange, {"SHFL", "VOTE", "VOTEU", "REDUX", "MATCH"}},
            {control, {"BRA", "BRX", "JMP", "JMX", "EXIT", "BSSY", "BSYNC", "CALL", "RET", "BREAK", "BPT", "KILL", "YIELD",
                       "ACQBULK", "ELECT"}},
        };
        for (const auto& [kind, stems] : groups)
            for (const char* stem : stems) t.emplace(stem, kind);
        return t;
    }();
    return table;
}

/// A candidate that exists and is executable, or "".
std::string executable_at(const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0 ? path.string() : "";
}

std::string trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos) return "";
    return std::string(text.substr(first, text.find_last_not_of(" \t") - first + 1));
}

}  // namespace

instruction_kind kind_of(std::string_view opcode, std::string_view operands) {
    if (opcode.starts_with("HFMA2") && operands.find("-RZ, RZ") != std::string_view::npos)
        return instruction_kind::integer_and_other;
    const auto stem = opcode.substr(0, opcode.find('.'));
    const auto& table = kinds_by_stem();
    const auto found = table.find(stem);
    return found == table.end() ? instruction_kind::integer_and_other : found->second;
}

const char* to_string(instruction_kind kind) {
    constexpr const char* k_labels[k_instruction_kinds] = {
        "tensor-core products", "FMAs", "other float math", "special functions (MUFU)", "conversions",
        "global loads", "global stores", "atomics", "shared loads", "shared stores", "ldmatrix / stmatrix",
        "TMA and cp.async copies", "local memory (spills)", "barriers and waits", "warp shuffles and votes",
        "branches and calls", "integer, moves and other"};
    return k_labels[static_cast<std::size_t>(kind)];
}

int instruction_mix::total() const {
    int sum = 0;
    for (const int c : counts) sum += c;
    return sum;
}

instruction_mix mix_of(const kernel_code& kernel) {
    instruction_mix mix;
    for (const auto& i : kernel.instructions) ++mix.counts[static_cast<std::size_t>(kind_of(i.opcode, i.operands))];
    return mix;
}

instruction_mix mix_of(const std::vector<kernel_code>& kernels) {
    instruction_mix mix;
    for (const auto& k : kernels) {
        const auto one = mix_of(k);
        for (std::size_t i = 0; i < k_instruction_kinds; ++i) mix.counts[i] += one.counts[i];
    }
    return mix;
}

std::string disassembler() {
    if (const char* chosen = std::getenv("KJIT_NVDISASM"); chosen && *chosen) {
        const std::string found = executable_at(chosen);
        if (found.empty())
            throw error(error_kind::io, std::string("KJIT_NVDISASM=") + chosen + ": not an executable file (expected nvdisasm)");
        return found;
    }
    std::vector<std::filesystem::path> candidates;
    if (const char* home = std::getenv("CUDA_HOME"); home && *home) candidates.emplace_back(std::filesystem::path(home) / "bin/nvdisasm");
    candidates.emplace_back(KJIT_CUDA_BIN_DIR "/nvdisasm");
    if (std::string_view(KJIT_NVDISASM_INSTALLED).size() > 0) candidates.emplace_back(KJIT_NVDISASM_INSTALLED);
    if (const char* path = std::getenv("PATH")) {
        std::istringstream dirs(path);
        for (std::string dir; std::getline(dirs, dir, ':');)
            if (!dir.empty()) candidates.emplace_back(std::filesystem::path(dir) / "nvdisasm");
    }
    for (const auto& candidate : candidates)
        if (auto found = executable_at(candidate); !found.empty()) return found;
    throw error(error_kind::io, "no nvdisasm, the CUDA toolkit's disassembler: not in $KJIT_NVDISASM, $CUDA_HOME/bin, " KJIT_CUDA_BIN_DIR
                                " or on PATH (scripts/setup.sh installs one from PyPI: nvidia-cuda-nvdisasm)");
}

std::vector<kernel_code> parse_disassembly(std::string_view text) {
    static const std::regex k_function(R"(^//-+ \.text\.(\S+)\s+-+\s*$)");
    static const std::regex k_line(R"(^\s*//## File ".*", line (\d+))");
    static const std::regex k_instruction(R"(^\s*/\*([0-9a-f]+)\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)\s*(.*?)\s*;)");
    std::vector<kernel_code> kernels;
    int line = 0;
    for (const auto& text_line : lines_of(text)) {
        std::smatch m;
        if (std::regex_search(text_line, m, k_function)) {
            kernels.push_back({m[1].str(), {}});
            line = 0;
        } else if (std::regex_search(text_line, m, k_line)) {
            line = std::stoi(m[1].str());
        } else if (!kernels.empty() && std::regex_search(text_line, m, k_instruction)) {
            kernels.back().instructions.push_back({m[1].str(), trimmed(m[2].str()), m[3].str(), m[4].str(), line});
        }
    }
    return kernels;
}

std::vector<kernel_code> disassemble(const std::string& cubin) {
    const std::string tool = disassembler();
    fs::temp_directory scratch("kjit-sass");
    const auto image = scratch.path() / "program.cubin", output = scratch.path() / "sass.txt";
    fs::write_file_atomic(image, cubin);
    const auto done = process::run(tool, {"--print-code", "--print-line-info", image.string()}, {}, output.string());
    const std::string text = fs::read_file(output);
    if (done.exit_code != 0)
        throw error(error_kind::io, tool + " exited " + std::to_string(done.exit_code) + ": " + bounded(trimmed(text), 2000));
    auto kernels = parse_disassembly(text);
    if (kernels.empty()) throw error(error_kind::io, tool + " printed no kernel: " + bounded(trimmed(text), 2000));
    return kernels;
}

std::string listing(const kernel_code& kernel, const std::string& source) {
    const auto source_lines = lines_of(source);
    std::ostringstream out;
    out << "// " << kernel.name << ": " << kernel.instructions.size() << " instructions\n";
    int shown_line = -1;
    for (const auto& i : kernel.instructions) {
        if (i.line != shown_line && i.line > 0) {
            const bool known = i.line <= static_cast<int>(source_lines.size());
            out << "\n" << std::setw(5) << i.line << " | "
                << (known ? printable(trimmed(source_lines[static_cast<std::size_t>(i.line - 1)])) : std::string("?")) << "\n";
            shown_line = i.line;
        }
        out << "        " << i.address << "  " << std::left << std::setw(6) << i.predicate << std::right << i.opcode
            << (i.operands.empty() ? "" : " " + i.operands) << "\n";
    }
    out << "\n" << mix_table({{kernel.name, mix_of(kernel)}});
    return out.str();
}

std::string mix_table(const std::vector<std::pair<std::string, instruction_mix>>& columns) {
    constexpr int k_label_width = 26, k_column_width = 12;
    const bool change = columns.size() == 2;
    std::ostringstream out;
    out << std::left << std::setw(k_label_width) << "instruction mix" << std::right;
    for (const auto& [title, mix] : columns) out << std::setw(k_column_width) << bounded(title, k_column_width - 1);
    if (change) out << std::setw(k_column_width) << "change";
    out << "\n";
    auto row = [&](const std::string& label, auto count_of) {
        out << std::left << std::setw(k_label_width) << label << std::right;
        for (const auto& column : columns) out << std::setw(k_column_width) << count_of(column.second);
        if (change) {
            const int delta = count_of(columns[1].second) - count_of(columns[0].second);
            out << std::setw(k_column_width) << (delta == 0 ? std::string("") : (delta > 0 ? "+" : "") + std::to_string(delta));
        }
        out << "\n";
    };
    for (std::size_t k = 0; k < k_instruction_kinds; ++k) {
        const auto kind = static_cast<instruction_kind>(k);
        const bool any = std::any_of(columns.begin(), columns.end(), [&](const auto& c) { return c.second[kind] > 0; });
        if (any) row(to_string(kind), [&](const instruction_mix& m) { return m[kind]; });
    }
    row("all instructions", [](const instruction_mix& m) { return m.total(); });
    return out.str();
}

std::string opcode_changes(const std::vector<kernel_code>& before, const std::vector<kernel_code>& after) {
    std::map<std::string, std::pair<int, int>> counts;
    for (const auto& k : before)
        for (const auto& i : k.instructions) ++counts[i.opcode].first;
    for (const auto& k : after)
        for (const auto& i : k.instructions) ++counts[i.opcode].second;
    std::vector<std::pair<std::string, std::pair<int, int>>> changed;
    for (const auto& entry : counts)
        if (entry.second.first != entry.second.second) changed.push_back(entry);
    std::stable_sort(changed.begin(), changed.end(), [](const auto& a, const auto& b) {
        return std::abs(a.second.second - a.second.first) > std::abs(b.second.second - b.second.first);
    });
    std::ostringstream out;
    for (const auto& [opcode, count] : changed) {
        const int delta = count.second - count.first;
        out << "  " << std::left << std::setw(28) << opcode << std::right << std::setw(6) << count.first << " → " << std::setw(6)
            << count.second << "  (" << (delta > 0 ? "+" : "") << delta << ")\n";
    }
    return out.str();
}

std::vector<kernel_code> kernels_named(std::vector<kernel_code> kernels, const std::string& text,
                                       const std::string& variant) {
    std::vector<std::string> names;
    for (const auto& k : kernels) names.push_back(k.name);
    std::erase_if(kernels, [&](const kernel_code& k) { return k.name.find(text) == std::string::npos; });
    if (kernels.empty())
        throw error(error_kind::usage, "--kernel " + text + ": no kernel of " + variant + " has it in its name (" +
                                           join(names, ", ") + ")");
    return kernels;
}

std::string sass_text(const std::vector<kernel_code>& kernels, const std::string& source, bool mix_only) {
    std::string text;
    for (const auto& kernel : kernels)
        text += (mix_only ? "// " + kernel.name + "\n" + mix_table({{"count", mix_of(kernel)}}) : listing(kernel, source)) + "\n";
    return text;
}

std::string diff_text(const std::string& label_a, const std::vector<kernel_code>& a, const std::string& label_b,
                      const std::vector<kernel_code>& b) {
    const std::string changes = opcode_changes(a, b);
    return "A: " + label_a + "\nB: " + label_b + "\n\n" + mix_table({{"A", mix_of(a)}, {"B", mix_of(b)}}) +
           "\nopcodes that changed (A → B):\n" + (changes.empty() ? "  none: the same instructions, counted by opcode\n" : changes);
}

}  // namespace kjit::why
