// kjit sass without the disassembler: nvdisasm's text parsed, instructions sorted into a mix, the
// listing under its source lines, two variants compared, and the disassembler looked up.
#include <cstdlib>

#include "helpers.hpp"
#include "why/counters.hpp"
#include "why/sass.hpp"

using namespace kjit;
using why::instruction_kind;

namespace {

// nvdisasm -c -g's shape: a function header, line markers, predicated and bare instructions.
constexpr const char* k_two_kernels = R"(	.target	sm_90a
//--------------------- .text.first_kernel       --------------------------
	.section	.text.first_kernel,"ax",@progbits
first_kernel:
.text.first_kernel:
	//## File "/tmp/x/kjit.cu", line 2
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E.128.CONSTANT R4, desc[UR6][R2.64] ;
	//## File "/tmp/x/kjit.cu", line 3
        /*0020*/                   MUFU.EX2 R5, R4 ;
        /*0030*/               @!P0 BRA `(.L_x_1) ;
        /*0040*/                   HFMA2.MMA R7, -RZ, RZ, 1.875, 0 ;
        /*0050*/                   EXIT ;
.L_x_1:
//--------------------- .text.second_kernel      --------------------------
second_kernel:
        /*0000*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;
        /*0010*/                   UTMALDG.2D [UR8], [UR10] ;
        /*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x10], R3 ;
        /*0030*/                   STG.E.64 desc[UR4][R2.64], R8 ;
)";

}  // namespace

TEST_CASE("sass: nvdisasm's text becomes kernels of instructions, each with its source line") {
    const auto kernels = why::parse_disassembly(k_two_kernels);
    REQUIRE(kernels.size() == 2);
    CHECK(kernels[0].name == "first_kernel");
    REQUIRE(kernels[0].instructions.size() == 6);
    const auto& branch = kernels[0].instructions[3];
    CHECK(branch.address == "0030");
    CHECK(branch.predicate == "@!P0");
    CHECK(branch.opcode == "BRA");
    CHECK(branch.line == 3);
    CHECK(kernels[0].instructions[1].line == 2);  // a line holds until the next marker
    CHECK(kernels[0].instructions[1].operands == "R4, desc[UR6][R2.64]");
    CHECK(kernels[0].instructions[5].operands.empty());
    CHECK(kernels[1].instructions.front().line == 0);  // a new kernel starts with no line
}

TEST_CASE("sass: each opcode has its kind; a constant moved through the FMA pipe is a move") {
    CHECK(why::kind_of("HMMA.16816.F32.BF16") == instruction_kind::tensor_product);
    CHECK(why::kind_of("HGMMA.64x128x16.F32.BF16") == instruction_kind::tensor_product);
    CHECK(why::kind_of("FFMA.FTZ") == instruction_kind::fma);
    CHECK(why::kind_of("MUFU.TANH") == instruction_kind::special_function);
    CHECK(why::kind_of("F2FP.BF16.F32.PACK_AB") == instruction_kind::conversion);
    CHECK(why::kind_of("LDSM.16.M88.4") == instruction_kind::matrix_load);
    CHECK(why::kind_of("LDS.128") == instruction_kind::shared_load);
    CHECK(why::kind_of("LDGSTS.E.BYPASS.128") == instruction_kind::async_copy);
    CHECK(why::kind_of("STL.64") == instruction_kind::local_memory);
    CHECK(why::kind_of("SHFL.BFLY") == instruction_kind::warp_exchange);
    CHECK(why::kind_of("IMAD.WIDE.U32") == instruction_kind::integer_and_other);
    CHECK(why::kind_of("HFMA2", "R4, R2, R3, R4") == instruction_kind::fma);
    CHECK(why::kind_of("HFMA2.MMA", "R7, -RZ, RZ, 1.875, 0") == instruction_kind::integer_and_other);

    const auto kernels = why::parse_disassembly(k_two_kernels);
    const auto first = why::mix_of(kernels[0]);
    CHECK(first[instruction_kind::global_load] == 1);
    CHECK(first[instruction_kind::special_function] == 1);
    CHECK(first[instruction_kind::control] == 2);
    CHECK(first[instruction_kind::integer_and_other] == 2);  // the LDC and the move
    CHECK(first.total() == 6);
    const auto both = why::mix_of(kernels);
    CHECK(both[instruction_kind::tensor_product] == 1);
    CHECK(both[instruction_kind::async_copy] == 1);
    CHECK(both[instruction_kind::barrier] == 1);
    CHECK(both.total() == 10);
}

TEST_CASE("sass: the listing heads each run of instructions with its generated line") {
    const auto kernels = why::parse_disassembly(k_two_kernels);
    const std::string text = why::listing(kernels[0], "// line one\n  float y = kjit_load(x);\n  y = __expf(y);\n");
    CHECK(text.find("// first_kernel: 6 instructions") != std::string::npos);
    CHECK(text.find("    2 | float y = kjit_load(x);\n        0000") != std::string::npos);
    CHECK(text.find("    3 | y = __expf(y);\n        0020") != std::string::npos);
    CHECK(text.find("0030  @!P0  BRA `(.L_x_1)") != std::string::npos);
    CHECK(text.find("special functions (MUFU)") != std::string::npos);
    CHECK(text.find("tensor-core products") == std::string::npos);  // kinds with no instruction are left out
}

TEST_CASE("sass: two variants side by side, with the change and the opcodes that moved") {
    const auto kernels = why::parse_disassembly(k_two_kernels);
    const std::vector<why::kernel_code> a{kernels[0]}, b{kernels[0], kernels[1]};
    const std::string table = why::mix_table({{"A", why::mix_of(a)}, {"B", why::mix_of(b)}});
    CHECK(table.find("tensor-core products") != std::string::npos);
    const std::string pad(10, ' ');  // the label's column is 26 wide, each count's 12
    CHECK(table.find("all instructions" + pad + " " + pad + "6" + pad + "10" + pad + "+4\n") != std::string::npos);
    const std::string changes = why::opcode_changes(a, b);
    CHECK(changes.find("HGMMA.64x128x16.F32.BF16") != std::string::npos);
    CHECK(changes.find("MUFU.EX2") == std::string::npos);  // the same count in both
    CHECK(why::opcode_changes(a, a).empty());
}

TEST_CASE("sass: KJIT_NVDISASM that names no program is one clear line") {
    ::setenv("KJIT_NVDISASM", "/nonexistent/nvdisasm", 1);
    const auto message = kjit::testing::error_message([] { (void)why::disassembler(); }, error_kind::io);
    ::unsetenv("KJIT_NVDISASM");
    CHECK(message == "KJIT_NVDISASM=/nonexistent/nvdisasm: not an executable file (expected nvdisasm)");
}

TEST_CASE("counters: the sets, an unknown one refused by name, time-weighted rates and summed bytes") {
    CHECK(why::counters_of("memory").front().column == std::string(why::k_duration_column));
    CHECK(why::counters_of("all").size() ==
          why::counters_of("memory").size() + why::counters_of("compute").size() + why::counters_of("stalls").size() - 2);
    const auto message = kjit::testing::error_message([] { (void)why::counters_of("dram"); }, error_kind::usage);
    CHECK(message == "--metrics dram: expected one of memory, compute, stalls, all");
    const auto counters = why::counters_of("all");
    const auto combined = why::combine(counters, {{{"duration_ns", 3000}, {"dram_read_bytes", 100}, {"l2_hit_rate_pct", 10}},
                                                  {{"duration_ns", 1000}, {"dram_read_bytes", 50}, {"l2_hit_rate_pct", 50}}});
    CHECK(combined.at("duration_ns") == 4000);
    CHECK(combined.at("dram_read_bytes") == 150);
    CHECK(combined.at("l2_hit_rate_pct") == doctest::Approx(20));  // (3000·10 + 1000·50) / 4000
    CHECK_FALSE(combined.contains("dram_write_bytes"));
    const auto top = why::top_stalls({{"stall_barrier", 2.0}, {"stall_long_scoreboard", 9.5}, {"stall_wait", 1.0},
                                      {"l2_hit_rate_pct", 90}}, 2);
    REQUIRE(top.size() == 2);
    CHECK(top[0] == std::pair<std::string, double>{"long_scoreboard", 9.5});
    CHECK(top[1].first == "barrier");
}
