// The machine code of a compiled variant, for a learner: each kernel's SASS from the toolkit's own
// disassembler (nvdisasm, found at run time as NVRTC is), each instruction under the generated
// CUDA line it came from, an instruction mix by kind, and two variants' mixes side by side.
// Needs no GPU.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::why {

struct instruction {
    std::string address;    ///< "0040": its offset in the kernel, as nvdisasm prints it
    std::string predicate;  ///< "@P0", "@!P1", or empty
    std::string opcode;     ///< "LDG.E.128.CONSTANT"
    std::string operands;   ///< "R4, desc[UR6][R2.64]"
    int line = 0;           ///< the generated-source line; 0 where the cubin has no line info
};

struct kernel_code {
    std::string name;
    std::vector<instruction> instructions;
};

/// What an instruction does, coarsely: the rows of an instruction mix, in the order shown.
enum class instruction_kind {
    tensor_product,    ///< HMMA, HGMMA (wgmma), IMMA, …: tensor-core matrix products
    fma,               ///< FFMA, HFMA2, DFMA
    float_other,       ///< FADD, FMUL, FMNMX, FSETP, …
    special_function,  ///< MUFU: exp2, rcp, rsqrt, tanh, sin, … on the SFU
    conversion,        ///< F2F, F2I, I2F, F2FP (packing to 16 bits), …
    global_load,       ///< LDG
    global_store,      ///< STG
    atomic,            ///< RED, ATOM, ATOMS, ATOMG
    shared_load,       ///< LDS
    shared_store,      ///< STS
    matrix_load,       ///< LDSM, STSM: ldmatrix / stmatrix
    async_copy,        ///< TMA (UTMALDG, UTMASTG, UBLKCP) and cp.async (LDGSTS)
    local_memory,      ///< LDL, STL: the stack, where registers spill
    barrier,           ///< BAR, SYNCS (mbarriers), MEMBAR, DEPBAR, WARPGROUP, WARPSYNC
    warp_exchange,     ///< SHFL, VOTE, REDUX, MATCH
    control,           ///< BRA, EXIT, BSSY, BSYNC, CALL, RET
    integer_and_other, ///< integer arithmetic, moves, predicates, constants, NOP
};
inline constexpr std::size_t k_instruction_kinds = static_cast<std::size_t>(instruction_kind::integer_and_other) + 1;

/// The kind of `opcode`. With its `operands`, a constant moved through the FMA pipe (ptxas writes
/// `HFMA2.MMA R5, -RZ, RZ, 1.5, 0` for a move) counts as a move, not as math.
[[nodiscard]] instruction_kind kind_of(std::string_view opcode, std::string_view operands = {});
/// "tensor-core products": how a mix's row is labelled.
[[nodiscard]] const char* to_string(instruction_kind kind);

struct instruction_mix {
    std::array<int, k_instruction_kinds> counts{};
    [[nodiscard]] int total() const;
    [[nodiscard]] int operator[](instruction_kind kind) const { return counts[static_cast<std::size_t>(kind)]; }
};
[[nodiscard]] instruction_mix mix_of(const kernel_code& kernel);
[[nodiscard]] instruction_mix mix_of(const std::vector<kernel_code>& kernels);

/// The disassembler kjit runs: $KJIT_NVDISASM, else nvdisasm in $CUDA_HOME/bin, in the toolkit
/// kjit was built with, beside the one setup.sh installs, or on PATH. Throws kjit::error(io),
/// naming where it looked and how to install one, when there is none.
[[nodiscard]] std::string disassembler();

/// Each kernel's machine code in `cubin`, through the disassembler (with line info where the
/// cubin has it). Throws kjit::error(io) with the disassembler's output when it fails.
[[nodiscard]] std::vector<kernel_code> disassemble(const std::string& cubin);
/// The kernels in nvdisasm's text (`-c -g`): what disassemble parses.
[[nodiscard]] std::vector<kernel_code> parse_disassembly(std::string_view text);

/// The kernel's SASS, each run of instructions headed by the generated line (of `source`) it came
/// from, then its instruction mix.
[[nodiscard]] std::string listing(const kernel_code& kernel, const std::string& source);
/// Instruction mixes side by side: one column per (title, mix), a last column with the change
/// from the first to the second where there are two.
[[nodiscard]] std::string mix_table(const std::vector<std::pair<std::string, instruction_mix>>& columns);
/// The opcodes whose count differs between `before` and `after`, largest change first:
/// "MUFU.EX2  4 → 2  (−2)", one a line.
[[nodiscard]] std::string opcode_changes(const std::vector<kernel_code>& before, const std::vector<kernel_code>& after);

/// The kernels whose names hold `text` (all where it is empty). Throws kjit::error(usage) naming
/// `variant` and its kernels where none does.
[[nodiscard]] std::vector<kernel_code> kernels_named(std::vector<kernel_code> kernels, const std::string& text,
                                                     const std::string& variant);
/// kjit sass's text: each kernel's listing, or with `mix_only` its instruction mix alone.
[[nodiscard]] std::string sass_text(const std::vector<kernel_code>& kernels, const std::string& source, bool mix_only);
/// kjit sass --diff's text: the two variants named, their mixes side by side, the opcodes that changed.
[[nodiscard]] std::string diff_text(const std::string& label_a, const std::vector<kernel_code>& a,
                                    const std::string& label_b, const std::vector<kernel_code>& b);

}  // namespace kjit::why
