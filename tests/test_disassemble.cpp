// kjit sass with the real disassembler (nvdisasm: the toolkit's, or the one scripts/setup.sh
// installs), no GPU: every shipped config, the GEMM rungs' tensor-core instructions, a diff.
#include <filesystem>

#include "codegen/codegen.hpp"
#include "helpers.hpp"
#include "run/build.hpp"
#include "why/sass.hpp"

using namespace kjit;
using kjit::testing::config_path;
using kjit::testing::kjit_cli;

TEST_CASE("sass: every shipped config's kernels disassemble, each with an instruction mix") {
    kjit::testing::temp_dir cache;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(KJIT_SOURCE_DIR) + "/configs")) {
        CAPTURE(entry.path().filename().string());
        const auto r = kjit_cli({"sass", entry.path().string(), "--mix", "--cache-dir", cache.path().string()});
        CHECK(r.err == "");
        REQUIRE(r.status == exit_status::ok);
        CHECK(r.out.find("all instructions") != std::string::npos);
        // Every variant writes its result: by its threads, or by TMA from shared memory.
        CHECK((r.out.find("global stores") != std::string::npos || r.out.find("TMA and cp.async") != std::string::npos));
    }
}

TEST_CASE("sass: the mma rung's products are HMMA, the wgmma rung's HGMMA, fed by ldmatrix and TMA") {
    kjit::testing::temp_dir cache;
    const auto mma = kjit_cli({"sass", config_path("mlp_layer.json"), "--set", "launch.rung=mma", "--cache-dir",
                               cache.path().string(), "--kernel", "matmul"});
    REQUIRE(mma.status == exit_status::ok);
    CHECK(mma.out.find(" HMMA.16816.F32.BF16 ") != std::string::npos);
    CHECK(mma.out.find(" LDSM.") != std::string::npos);
    CHECK(mma.out.find("HGMMA") == std::string::npos);
    const auto wgmma = kjit_cli({"sass", config_path("mlp_layer.json"), "--set", "launch.rung=wgmma", "--cache-dir",
                                 cache.path().string(), "--diff-set", "launch.rung=mma"});
    REQUIRE(wgmma.status == exit_status::ok);
    CHECK(wgmma.out.find("tensor-core products") != std::string::npos);
    CHECK(wgmma.out.find("TMA and cp.async copies") != std::string::npos);
    CHECK(wgmma.out.find("  HGMMA.") != std::string::npos);  // among the opcodes that changed
    CHECK(wgmma.out.find("  HMMA.16816.F32.BF16 ") != std::string::npos);
}

TEST_CASE("sass: instructions sit under the generated lines they came from; emit --sass is the same") {
    kjit::testing::temp_dir cache;
    const auto r = kjit_cli({"sass", "--cache-dir", cache.path().string()});
    REQUIRE(r.status == exit_status::ok);
    CHECK(r.out.find("// hidden_layer_fused: ") == 0);
    CHECK(r.out.find(" | extern \"C\" __global__ void hidden_layer_fused(\n") != std::string::npos);
    CHECK(r.out.find("EXIT") != std::string::npos);
    CHECK(kjit_cli({"emit", "--sass", "--cache-dir", cache.path().string()}).out == r.out);
    // The line-info build is a cache entry of its own: the timed build stays as it was.
    const auto compiled = kjit_cli({"compile", "--cache-dir", cache.path().string()});
    CHECK(compiled.out.find("miss") != std::string::npos);
}

TEST_CASE("sass --diff: the exp formula's tanh against the builtin, by kind and by opcode") {
    kjit::testing::temp_dir cache;
    const auto r = kjit_cli({"sass", "--cache-dir", cache.path().string(), "--diff-set", "stages[2].formula=exp"});
    REQUIRE(r.status == exit_status::ok);
    CHECK(r.out.find("A: hidden_layer") == 0);
    CHECK(r.out.find("opcodes that changed (A → B):") != std::string::npos);
    CHECK(r.out.find("  MUFU.EX2 ") != std::string::npos);
    const auto same = kjit_cli({"sass", "--cache-dir", cache.path().string(), "--diff", config_path("hidden_layer.json")});
    CHECK(same.out.find("none: the same instructions") != std::string::npos);
    const auto bad = kjit_cli({"sass", "--kernel", "nothing_like_it", "--cache-dir", cache.path().string()});
    CHECK(bad.status == exit_status::usage);
    CHECK(bad.err == "kjit: --kernel nothing_like_it: no kernel of hidden_layer: fused float32 tanh=builtin block=256 vec=4 has it in its name (hidden_layer_fused)\n");
}

TEST_CASE("sass: -lineinfo adds the map to the source and changes no instruction") {
    for (const char* name : {"softmax.json", "mlp_layer.json"}) {
        CAPTURE(name);
        const auto p = family::load(config::load_document(config_path(name)));
        auto request = run::compile_request_for(p, family::plan(p, codegen::template_set::embedded()), 90);
        const auto plain = why::disassemble(jit::compile(request).cubin);
        request.line_info = true;
        const auto mapped = why::disassemble(jit::compile(request).cubin);
        REQUIRE(plain.size() == mapped.size());
        for (std::size_t k = 0; k < plain.size(); ++k) {
            REQUIRE(plain[k].instructions.size() == mapped[k].instructions.size());
            int with_line = 0;
            for (std::size_t i = 0; i < plain[k].instructions.size(); ++i) {
                const auto &a = plain[k].instructions[i], &b = mapped[k].instructions[i];
                CHECK(a.opcode + " " + a.operands == b.opcode + " " + b.operands);
                CHECK(a.line == 0);
                with_line += b.line > 0;
            }
            CHECK(with_line == static_cast<int>(mapped[k].instructions.size()));
        }
    }
}
