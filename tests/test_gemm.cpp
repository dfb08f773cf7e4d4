// The GEMM family: the matmul stage and its inputs, the policy of each rung and what it refuses,
// the program (kernels, arguments, bytes and flops, fused or separate), and the float64 reference:
// exact dot products, the whole result when small and a sample covering every row and column
// when large, and the comparison of a sample (elements outside it checked only as written).
#include <set>

#include "family/gemm/policy.hpp"
#include "family/gemm/reference.hpp"
#include "helpers.hpp"

using namespace kjit;
using kjit::testing::error_message;
using json = kjit::config::json_value;

namespace {
json gemm_config(long long m, long long n, long long k, const std::string& dtype = "float32") {
    return {{"name", "g"},
            {"shape", {m, k}},
            {"dtype", dtype},
            {"inputs",
             {{"a", {{"fill", "uniform"}, {"low", -1}, {"high", 1}}},
              {"w", {{"fill", "uniform"}, {"low", -1}, {"high", 1}, {"shape", {k, n}}}},
              {"b", {{"fill", "uniform"}, {"per", "column"}}}}},
            {"stages", json::array({{{"op", "matmul"}, {"input", "a"}, {"by", "w"}}, {{"op", "bias"}, {"by", "b"}}})}};
}
config::pipeline parsed(const json& j) { return family::load({j, "g.json"}); }
std::string failure(const json& j) { return error_message([&] { (void)parsed(j); }); }
reference::typed_array filled(config::dtype type, const std::vector<double>& values) {
    reference::typed_array a(type, values.size());
    for (std::size_t i = 0; i < values.size(); ++i) a.set(i, values[i]);
    return a;
}
}  // namespace

TEST_CASE("gemm: a matmul takes its matrix's columns: inputs, buffers and the result are sized by them") {
    const auto p = parsed(gemm_config(3, 5, 4));
    CHECK(p.family == "gemm");
    CHECK(config::result_columns(p) == 5);
    CHECK(config::output_count(p) == 15);
    CHECK(config::elements_of(p, *config::find_input(p, "w")) == 20);
    CHECK(config::elements_of(p, *config::find_input(p, "b")) == 5);  // one per column of the product
    CHECK(config::elements_of(p, *config::find_input(p, "a")) == 12);
}

TEST_CASE("gemm: what it refuses, each in one line naming the key") {
    json j = gemm_config(4, 4, 4);
    j["stages"][0].erase("by");
    CHECK(failure(j) == "g.json: stages[0].by: expected the name of an input with \"shape\": [depth, cols] to multiply by");
    j = gemm_config(4, 4, 4);
    j["stages"][0]["by"] = "b";
    CHECK(failure(j) == "g.json: stages[0].by: expected an input with \"shape\": [depth, cols], got \"b\"");
    j = gemm_config(4, 4, 4);
    j["inputs"]["w"]["shape"] = {5, 4};
    CHECK(failure(j) == "g.json: inputs.w.shape: a 4 × 4 matrix is multiplied by one of 4 rows, got 5");
    j = gemm_config(4, 4, 4);
    j["stages"].push_back({{"op", "map"}, {"expr", "x + col"}});
    CHECK(failure(j) == "g.json: stages[2]: uses 'col': positions are not offered in a matmul's epilogue");
    j = gemm_config(4, 4, 4);
    j["stages"].push_back({{"op", "map"}, {"expr", "x * a"}});
    CHECK(failure(j).find("g.json: stages[2]: uses \"a\": an epilogue reads inputs of one value per column") == 0);
    j = gemm_config(4, 4, 4);
    j["stages"] = json::array({{{"op", "map"}, {"expr", "x * 2"}, {"input", "a"}}, {{"op", "matmul"}, {"by", "w"}}});
    CHECK(failure(j) == "g.json: stages[1]: a matmul must be the first stage: one matmul a pipeline, maps after it");
    j = gemm_config(4, 4, 4);
    j["launch"] = {{"rung", "mma"}};
    CHECK(failure(j) == "g.json: launch.rung: \"mma\" multiplies bfloat16 or float16 on tensor cores; this pipeline is float32: use \"simt\", or \"mma\" with compile.fp32_precision \"tf32\" (TF32 operands)");
    j["launch"] = {{"rung", "simt"}, {"tile_m", 96}};
    CHECK(failure(j) == "g.json: launch.tile_m: expected one of 32, 64, 128 or \"auto\", got 96");
    j["launch"] = {{"rung", "simt"}, {"buffers", 3}};
    CHECK(failure(j) == "g.json: launch.buffers: a key of the \"mma\", \"wgmma\" and \"stream\" policies; this one is \"simt\"");
    j["launch"] = {{"stages", 3}};  // kjit 0.5's name, which read as the pipeline's stages: the list shows the new one
    CHECK(failure(j).find("g.json: launch.stages: unknown key; expected one of") == 0);
    CHECK(failure(j).find("\"buffers\"") != std::string::npos);
    j["launch"] = {{"rung", "wgmma"}};
    CHECK(failure(j) == "g.json: launch.rung: \"wgmma\" multiplies bfloat16 or float16 on tensor cores; this pipeline is float32: use \"simt\", or \"mma\" with compile.fp32_precision \"tf32\" (TF32 operands)");
    j = gemm_config(64, 4, 4, "bfloat16");
    j["launch"] = {{"rung", "mma"}, {"warps_m", 8}, {"tile_m", 64}};  // 8 rows of a warp each
    CHECK(failure(j).find("g.json: launch.warps_n: each warp computes a (tile_m / warps_m) × (tile_n / warps_n) piece") == 0);
    j["launch"] = {{"rung", "mma"}, {"tile_m", 256}, {"tile_n", 256}, {"tile_k", 64}, {"buffers", 8}};
    CHECK(failure(j).find("g.json: launch.buffers: a block of 256 × 256 × 64 in 8 buffers needs") == 0);
    j["launch"] = {{"rung", "wgmma"}, {"warps_m", 2}};
    CHECK(failure(j) == "g.json: launch.warps_m: a key of the \"mma\" policy; this one is \"wgmma\"");
    j["launch"] = {{"rung", "wgmma"}, {"tile_k", 32}};  // a row of the swizzle is 64 deep
    CHECK(failure(j) == "g.json: launch.tile_k: expected one of 64 or \"auto\", got 32");
    j["launch"] = {{"rung", "wgmma"}, {"tile_m", 256}, {"tile_n", 256}};
    CHECK(failure(j) == "g.json: launch.tile_n: a consumer warp group of a 256 × 256 × 64 tile holds 256 accumulators a "
                        "thread, more than the 128 that fit beside its other registers");
    j = gemm_config(64, 64, 64, "bfloat16");
    j["launch"] = {{"rung", "wgmma"}, {"buffers", 4}};  // 4 × 48 KiB, and 64 KiB of C
    CHECK(failure(j).find("g.json: launch.buffers: a block of 128 × 256 × 64 in 4 buffers needs 263248 bytes") == 0);
    j["launch"] = {{"rung", "wgmma"}, {"tile_m", 64}};  // 32 rows a consumer
    CHECK(failure(j).find("g.json: launch.tile_m: each of the two consumer warp groups takes half the rows") == 0);
    j["launch"]["schedule"] = "pingpong";
    CHECK_NOTHROW((void)parsed(j));
    j["launch"] = {{"rung", "wgmma"}, {"tile_m", 128}, {"tile_n", 256}, {"schedule", "pingpong"}};
    CHECK(failure(j).find("g.json: launch.tile_n: a consumer warp group of a 128 × 256 × 64 tile holds 256 accumulators") == 0);
    j["launch"] = {{"rung", "mma"}, {"schedule", "pingpong"}};
    CHECK(failure(j) == "g.json: launch.schedule: a key of the \"wgmma\" policy; this one is \"mma\"");
    // The product's M × N is bounded as any array is: 2^39 × 2 by 2 × 2^39 would be 2^78 elements.
    json huge = gemm_config(1LL << 39, 1LL << 39, 2);
    huge["shape"] = {1LL << 39, 2};
    CHECK(failure(huge).find("g.json: inputs.w.shape: the product of a 549755813888-row matrix by 549755813888 columns") == 0);
    // A matrix with its own shape belongs to a matmul; elsewhere it is refused.
    json e = kjit::testing::default_document().json;
    e["inputs"]["weights"]["shape"] = {1000, 1000};
    CHECK(error_message([&] { (void)family::load({e, "e.json"}); }).find("e.json: inputs.weights.shape: a shape of its own is for the matrix a matmul") == 0);
}

TEST_CASE("gemm: auto picks the rung by dtype, and vectors by what divides the rows") {
    const auto f32 = parsed(gemm_config(64, 1000, 12));
    const auto simt = family::family_of(f32).policy(f32);
    CHECK(simt.at("rung") == "simt");
    CHECK(simt.at("width_a") == 4);  // 12 = 3 × 4
    CHECK(simt.at("width_b") == 4);  // 1000 = 250 × 4
    const auto odd = parsed(gemm_config(64, 17, 6));
    CHECK(family::family_of(odd).policy(odd).at("width_a") == 2);
    CHECK(family::family_of(odd).policy(odd).at("width_b") == 1);
    json on_l4 = gemm_config(8192, 4096, 4096, "bfloat16");
    on_l4["compile"] = {{"target", "l4"}};
    const auto bf16 = parsed(on_l4);
    const auto mma = family::family_of(bf16).policy(bf16);
    CHECK(mma.at("rung") == "mma");
    CHECK(mma.at("copies") == "cp.async");
    CHECK(mma.at("threads") == 256);
    // the large-shape launch's buffers fit the 99 KiB a block may have on sm_86 and sm_89
    CHECK(family::gemm::policy_of(bf16).shared_bytes(config::dtype::bfloat16) <= 99 * 1024);
    json unaligned = gemm_config(64, 64, 17, "bfloat16");
    unaligned["compile"] = {{"target", "a100"}};
    const auto unaligned_p = parsed(unaligned);
    CHECK(family::family_of(unaligned_p).policy(unaligned_p).at("copies") == "elementwise");
}

TEST_CASE("gemm: float32 multiplies as TF32 on mma where compile.fp32_precision asks, never by default") {
    json j = gemm_config(4096, 4096, 4096);
    j["compile"] = {{"target", "h200"}};
    CHECK(family::gemm::policy_of(parsed(j)).kind == family::gemm::rung::simt);  // "ieee", as PyTorch's default
    j["compile"]["fp32_precision"] = "tf32";
    const auto tf32 = parsed(j);
    const family::gemm::policy& t = family::gemm::policy_of(tf32);
    CHECK(t.kind == family::gemm::rung::mma);  // on sm_90 too: wgmma's TF32 operands must run along the depth
    CHECK(t.tf32);
    CHECK(t.tile_k == 16);  // 64 bytes deep, as bfloat16's 32
    CHECK(t.stages == 4);  // two mma steps a buffer: one buffer more than bfloat16's
    CHECK(family::family_of(tf32).policy(tf32).at("operands") == "tf32");
    CHECK(config::variant_label(tf32).find(" tf32") != std::string::npos);
    j["compile"]["target"] = "l4";  // its 99 KiB a block hold three of the large-shape tile's buffers
    CHECK(family::gemm::policy_of(parsed(j)).stages == 3);
    CHECK(family::gemm::policy_of(parsed(j)).shared_bytes(config::dtype::float32) <= 99 * 1024);
    j["compile"]["target"] = "sm_75";  // no cp.async nor mbarrier: CUDA cores
    CHECK(family::gemm::policy_of(parsed(j)).kind == family::gemm::rung::simt);
    json f64 = gemm_config(64, 64, 64, "float64");
    f64["compile"] = {{"fp32_precision", "tf32"}};
    CHECK(family::gemm::policy_of(parsed(f64)).kind == family::gemm::rung::simt);  // float32's products alone
    json bf16 = gemm_config(64, 64, 64, "bfloat16");
    bf16["compile"] = {{"fp32_precision", "tf32"}, {"target", "a100"}};
    CHECK_FALSE(family::gemm::policy_of(parsed(bf16)).tf32);
    j["compile"] = {{"fp32_precision", "tf32"}, {"target", "h200"}};
    j["launch"] = {{"rung", "wgmma"}};
    CHECK(failure(j).find("g.json: launch.rung: \"wgmma\" reads TF32 operands along the depth alone") == 0);
    j["compile"].erase("fp32_precision");
    j["launch"] = {{"rung", "mma"}};
    CHECK(failure(j).find("float32: use \"simt\", or \"mma\" with compile.fp32_precision \"tf32\"") != std::string::npos);
    j["compile"]["fp32_precision"] = "high";
    CHECK(failure(j).find("g.json: compile.fp32_precision: expected one of \"ieee\", \"tf32\"") == 0);
}

TEST_CASE("gemm: a decode step streams B, of at most 4 rows on CUDA cores, of up to 64 on tensor cores; its tile and split by the SMs they fill") {
    const auto policy_for = [](long long m, long long n, long long k, const std::string& target, const std::string& dtype = "bfloat16") {
        json j = gemm_config(m, n, k, dtype);
        j["compile"] = {{"target", target}};
        return family::gemm::policy_of(parsed(j));
    };
    const family::gemm::policy one = policy_for(1, 4096, 4096, "h200");
    CHECK(one.kind == family::gemm::rung::stream);
    CHECK(one.tile_n == 64);  // 128 bytes of a row of B a warp's load
    CHECK(one.split_k == 2);  // 64 tiles, 128 blocks (4 parts: 256, more than 1.5 a SM)
    CHECK(one.stages == 4);   // one row of A: four steps in flight
    CHECK(one.threads() == 512);
    CHECK(one.shared_bytes(config::dtype::bfloat16) == 16 * 1 * 64 * 4);  // each warp's sums, in float
    CHECK_FALSE(policy_for(2, 4096, 4096, "h200").tensor);
    CHECK(policy_for(2, 4096, 4096, "h200").stages == 4);  // two rows of A: four steps in flight
    // N odd: vectors of one element, 32 of them a slice, so that a warp's load is 64 bytes of a row
    const family::gemm::policy odd = policy_for(1, 50257, 768, "h200");
    CHECK(odd.width_b == 1);
    CHECK(odd.tile_n == 32);
    CHECK(policy_for(3, 4096, 4096, "h200").tensor);
    CHECK_FALSE(one.tensor);
    const family::gemm::policy five = policy_for(5, 4096, 4096, "h200");  // 64 blocks of 64 columns
    CHECK(five.kind == family::gemm::rung::stream);
    CHECK(five.tensor);
    CHECK(five.width_a == 8);  // a lane's 8 depths of A
    CHECK(five.width_b == 8);  // 64 columns a warp: 8 lane groups of 8
    CHECK(five.stages == 1);
    CHECK(five.split_k == 1);  // the depth split among its 16 warps alone
    CHECK(five.warps_n == 16);
    CHECK(policy_for(16, 3072, 768, "h200").tile_n == 32);  // 48 blocks of 64 columns: 96 of 32
    const family::gemm::policy narrow_tensor = policy_for(8, 3584, 18944, "h100");  // 56 blocks of 64 columns: 112 of 32
    CHECK(narrow_tensor.tile_n == 32);
    CHECK(narrow_tensor.stages == 2);  // half a wide warp's bytes a step: two steps in flight
    // Few columns: the depth split over clusters until there are 64 blocks, of 64 columns where the
    // product is 8192 deep, else of 32
    const family::gemm::policy few_columns = policy_for(8, 1024, 16384, "h100");  // 16 blocks of 64 columns
    CHECK(few_columns.tile_n == 64);
    CHECK(few_columns.split_k == 4);
    CHECK(few_columns.stages == 1);
    const family::gemm::policy shallow_few = policy_for(16, 768, 3072, "h200");  // 24 blocks of 32 columns
    CHECK(shallow_few.tile_n == 32);
    CHECK(shallow_few.split_k == 4);
    CHECK(shallow_few.stages == 2);
    CHECK(policy_for(16, 512, 3584, "h200").split_k == 4);   // 16 blocks of 32 columns
    CHECK(policy_for(8, 2048, 8192, "h200").split_k == 2);   // 32 blocks of 64 columns
    CHECK(policy_for(8, 2048, 4096, "h200").split_k == 1);   // 64 blocks of 32 columns
    CHECK(policy_for(8, 2112, 4096, "h200").split_k == 1);   // 33 blocks of 64 columns: 66 split in two
    CHECK(policy_for(8, 2112, 4096, "h200").tile_n == 32);
    CHECK(policy_for(8, 1024, 16384, "a100").split_k == 1);  // no clusters before sm_90
    CHECK(policy_for(8, 1024, 16384, "a100").tile_n == 32);
    CHECK(policy_for(16, 4096, 4096, "h200").warps_n == 16);  // 4 KiB of sums a warp
    CHECK(policy_for(16, 11008, 4096, "h100").warps_n == 8);  // 172 blocks on 132 SMs: two an SM
    CHECK(policy_for(17, 4096, 4096, "h200").kind == family::gemm::rung::wgmma);
    json on_tensor = gemm_config(64, 4096, 4096, "bfloat16");
    on_tensor["launch"] = {{"rung", "stream"}};
    const family::gemm::policy sixty_four = family::gemm::policy_of(parsed(on_tensor));
    CHECK(sixty_four.tensor);
    CHECK(sixty_four.warps_n == 4);  // 16 KiB of sums a warp: 64 KiB a block
    CHECK(policy_for(16, 4096, 4096, "a100").tensor);  // mma.sync from sm_80
    CHECK(policy_for(16, 4096, 4096, "t4").kind == family::gemm::rung::simt);
    // K odd: rows that vectors of 8 cannot stream; wgmma, A padded first for the TMA unit
    CHECK(policy_for(16, 4096, 4095, "h200").kind == family::gemm::rung::wgmma);
    CHECK(policy_for(16, 4096, 4096, "h200", "float32").kind == family::gemm::rung::simt);
    const family::gemm::policy narrow = policy_for(1, 768, 3072, "h200");  // 12 tiles of 64: 24 of 32, in 4 parts
    CHECK(narrow.tile_n == 32);
    CHECK(narrow.split_k == 4);
    CHECK(policy_for(1, 11008, 4096, "h200").split_k == 1);  // 172 tiles: at most 1.5 blocks a SM already
    CHECK(policy_for(1, 5120, 5120, "h200").split_k == 2);    // 80 tiles, 160 blocks
    CHECK(policy_for(1, 4096, 4096, "a100").split_k == 1);   // no clusters before sm_90
    const family::gemm::policy f32 = policy_for(2, 4096, 4096, "l4", "float32");
    CHECK(f32.kind == family::gemm::rung::stream);
    CHECK(f32.tile_n % f32.width_b == 0);
    CHECK(f32.width_b == 4);
    json j = gemm_config(9, 4096, 4096, "bfloat16");
    j["launch"] = {{"rung", "stream"}, {"cores", "cuda"}};
    CHECK(failure(j) == "g.json: launch.rung: \"stream\" multiplies at most 8 rows (a decode step) on CUDA cores; this product has 9");
    j = gemm_config(65, 4096, 4096, "bfloat16");
    j["launch"] = {{"rung", "stream"}};
    CHECK(failure(j) == "g.json: launch.rung: \"stream\" multiplies at most 64 rows (a decode step) on tensor cores; this product has 65");
    j = gemm_config(16, 4096, 4096, "float32");
    j["launch"] = {{"rung", "stream"}, {"cores", "tensor"}};
    CHECK(failure(j) == "g.json: launch.cores: \"tensor\" multiplies bfloat16 or float16; this pipeline is float32");
    j = gemm_config(8, 1024, 4096, "bfloat16");  // a cluster of 8 splits the stream rung's depth, not wgmma's
    j["launch"] = {{"rung", "stream"}, {"split_k", 8}};
    CHECK(family::gemm::policy_of(parsed(j)).split_k == 8);
    j["launch"] = {{"rung", "wgmma"}, {"split_k", 8}};
    CHECK(failure(j) == "g.json: launch.split_k: expected one of 1, 2, 4 or \"auto\", got 8");
    j = gemm_config(16, 4096, 4100, "bfloat16");
    j["launch"] = {{"rung", "stream"}, {"cores", "tensor"}};
    CHECK(failure(j).find("g.json: launch.cores: \"tensor\" reads A and B in vectors of 8 elements") == 0);
    j["launch"] = {{"rung", "mma"}, {"cores", "tensor"}};
    CHECK(failure(j).find("g.json: launch.cores: a key of the \"stream\" policy") == 0);
    j = gemm_config(16, 4096, 4096, "bfloat16");
    j["launch"] = {{"rung", "stream"}, {"tile_n", 128}};
    CHECK(failure(j) == "g.json: launch.tile_n: expected one of 16, 32, 64 or \"auto\", got 128");
    j = gemm_config(2, 1001, 64, "bfloat16");  // a vector of 1 column: 32 at most a block
    j["launch"] = {{"rung", "stream"}, {"tile_n", 64}};
    CHECK(failure(j).find("g.json: launch.tile_n: a warp's threads take at least one vector of 1 columns each") == 0);
    j["launch"] = {{"rung", "stream"}, {"tile_m", 8}};
    CHECK(failure(j).find("g.json: launch.tile_m: a key of the \"simt\", \"mma\" and \"wgmma\" policies") == 0);
    j["launch"] = {{"rung", "stream"}, {"split_k", 2}};
    j["compile"] = {{"target", "a100"}};
    CHECK(failure(j) == "g.json: launch.split_k: the blocks that split the depth are a cluster, which sm_80 has not (sm_90 and newer)");
    j["launch"] = {{"rung", "stream"}, {"buffers", 2}};  // a key alone starts from the rule's tile, fitted to N
    CHECK(family::gemm::policy_of(parsed(j)).tile_n == 32);  // vectors of 1 column, 32 of them
}

TEST_CASE("gemm: the resolved policy is typed, carried with the pipeline; the launch block stays as written") {
    json j = gemm_config(4096, 4096, 4096, "bfloat16");
    j["launch"] = {{"rung", "auto"}, {"buffers", 2}};
    const auto p = parsed(j);
    CHECK(p.launch.given == config::json_value({{"rung", "auto"}, {"buffers", 2}}));  // no resolved values written back
    const family::gemm::policy& t = family::gemm::policy_of(p);
    CHECK(t.kind == family::gemm::rung::wgmma);
    CHECK(t.stages == 2);
    CHECK(p.policy->label() == " rung=wgmma tile_m=128 tile_n=256 tile_k=64 group_m=16 buffers=2 schedule=cooperative cluster_m=1 split_k=1");
    CHECK(p.policy->columns() == family::family_of(p).policy(p));
    CHECK(*p.policy == *parsed(j).policy);  // the same launch, resolved again
    j["launch"]["buffers"] = 3;
    CHECK_FALSE(*p.policy == *parsed(j).policy);
}

TEST_CASE("gemm: auto by target and shape: wgmma on sm_90, tiles that fill the SMs") {
    const auto policy_at = [](long long m, long long n, long long k, const std::string& target, const json& launch = json::object()) {
        json j = gemm_config(m, n, k, "bfloat16");
        j["compile"] = {{"target", target}};
        if (!launch.empty()) j["launch"] = launch;
        const auto p = parsed(j);
        CHECK(p.target.name == target);
        return family::family_of(p).policy(p);
    };
    const auto llama = policy_at(4096, 11008, 4096, "h200");  // LLaMA-2-7B's up-projection
    CHECK(llama.at("rung") == "wgmma");
    CHECK(llama.at("tile_m") == 128);
    CHECK(llama.at("tile_n") == 256);
    CHECK(llama.at("buffers") == 3);
    // A decode step on wgmma (auto streams it on tensor cores): one tile row, the smallest tiles,
    // most blocks.
    const json on_wgmma = {{"rung", "wgmma"}};
    const auto decode = policy_at(16, 4096, 4096, "h100", on_wgmma);
    CHECK(decode.at("rung") == "wgmma");
    CHECK(decode.at("tile_m") == 64);
    CHECK(decode.at("tile_n") == 64);
    CHECK(decode.at("schedule") == "pingpong");
    CHECK(decode.at("buffers") == 8);   // streams W: more of it in flight
    CHECK(decode.at("split_k") == 2);  // 64 tiles on 132 SMs: two blocks each
    CHECK(decode.at("a_rows_copied") == 16);  // x's 16 rows of the tile's 64
    const auto wide_decode = policy_at(8, 5120, 5120, "h200", on_wgmma);  // 80 tiles: split, they would need 160 SMs
    CHECK(wide_decode.at("tile_n") == 64);
    CHECK(wide_decode.at("split_k") == 1);
    CHECK(wide_decode.at("buffers") == 12);  // no partial tiles: room for more of W in flight
    const auto shallow_decode = policy_at(16, 3072, 768, "h200", on_wgmma);  // GPT-2's up-projection, 12 tiles deep
    CHECK(shallow_decode.at("split_k") == 2);
    CHECK(shallow_decode.at("buffers") == 6);  // each half's 6 tiles
    const auto deep_narrow = policy_at(32, 1024, 8192, "h100");  // 16 tiles, 8192 deep: 4 parts of 2048
    CHECK(deep_narrow.at("rung") == "wgmma");
    CHECK(deep_narrow.at("split_k") == 4);
    CHECK(deep_narrow.at("buffers") == 8);
    CHECK(policy_at(64, 2048, 4096, "h100").at("split_k") == 2);  // 4 parts of 1024 would not fill the ring
    // A thin product (M ≤ 256): the narrowest 64-row tile whose tiles fit one wave.
    const auto thin = policy_at(256, 4096, 4096, "h200");  // 64 × 64 would make 256 tiles, 64 × 128 128
    CHECK(thin.at("tile_m") == 64);
    CHECK(thin.at("tile_n") == 128);
    CHECK(thin.at("split_k") == 1);
    CHECK(thin.at("buffers") == 8);  // as many as shared memory holds beside C
    CHECK(policy_at(256, 11008, 4096, "h200").at("tile_n") == 192);  // 64 × 256 would make 172: the wave model's
    CHECK(policy_at(512, 4096, 4096, "h200").at("split_k") == 1);  // 128 tiles of 128 × 128 fill the SMs
    CHECK(policy_at(4096, 768, 3072, "h200").at("tile_n") == 192);  // 128 tiles where 128 × 256 makes 96
    // At a shallow depth 128 × 192 runs a wave at 1.05 of 128 × 256's rate: 4 waves beat 3 at
    // GPT-2's up-projection, 768 deep; at the same shape 4096 deep, 128 × 256's 3 waves stay.
    CHECK(policy_at(4096, 3072, 768, "h200").at("tile_n") == 192);
    CHECK(policy_at(4096, 3072, 4096, "h200").at("tile_n") == 256);
    CHECK(policy_at(4096, 11008, 4096, "a100").at("rung") == "mma");   // no wgmma before sm_90
    CHECK(policy_at(4096, 11008, 4096, "t4").at("rung") == "simt");    // no cp.async / mbarrier before sm_80
    CHECK(policy_at(4096, 11007, 4096, "h200").at("rung") == "wgmma");  // N odd: B padded first
    CHECK(policy_at(4096, 11007, 4096, "h200").at("copies") == "TMA, B padded first");
    // Padding all of B costs more than a few rows gain by it: 8 rows stream B, up to 64 take mma.
    CHECK(policy_at(8, 50257, 768, "h200").at("rung") == "stream");
    CHECK(policy_at(64, 50257, 768, "h200").at("rung") == "mma");
    CHECK(policy_at(65, 50257, 768, "h200").at("rung") == "wgmma");
    CHECK(policy_at(64, 4096, 4095, "h200").at("rung") == "wgmma");  // A padded: 64 rows of it
    // A cluster given one way leaves the thin rule's split the other way out.
    CHECK(policy_at(16, 4096, 4096, "h200", {{"rung", "wgmma"}}).at("split_k") == 2);
    const auto shared_b = policy_at(16, 4096, 4096, "h200", {{"rung", "wgmma"}, {"cluster_m", 2}});
    CHECK(shared_b.at("cluster_m") == 2);
    CHECK(shared_b.at("split_k") == 1);
    // On an L4's 58 SMs the 64 tiles of 64 × 64 would take two waves: 64 × 128 takes one.
    const auto small_on_l4 = policy_at(16, 4096, 4096, "l4", on_wgmma);
    CHECK(small_on_l4.at("tile_m") == 64);
    CHECK(small_on_l4.at("tile_n") == 128);
    // A launch that gives part of a tile starts from the large-shape launch, not the shape rule's.
    json partial = gemm_config(16, 4096, 4096, "bfloat16");
    partial["launch"] = {{"rung", "wgmma"}, {"tile_n", 128}};
    const auto given = parsed(partial);
    CHECK(family::family_of(given).policy(given).at("tile_m") == 128);
    // The shared-memory limit is the target's: 4 buffers of 256 × 128 × 64 fit an H200, not an L4.
    json deep = gemm_config(8192, 4096, 4096, "bfloat16");
    deep["launch"] = {{"rung", "mma"}, {"tile_k", 64}, {"buffers", 4}};
    CHECK_NOTHROW((void)parsed(deep));
    deep["compile"] = {{"target", "l4"}};
    CHECK(failure(deep).find("g.json: launch.buffers: a block of 256 × 128 × 64 in 4 buffers needs") == 0);
    CHECK(failure(deep).find("more than the 99 KiB a block may have on l4 (sm_89, 58 SMs)") != std::string::npos);
}

TEST_CASE("gemm: wgmma runs on sm_90 alone, its matrices copied by TMA through tensor maps, padded first where rows are not 16-byte aligned") {
    json j = gemm_config(300, 200, 96, "bfloat16");
    j["launch"] = {{"rung", "wgmma"}, {"tile_n", 256}};  // the large-shape launch (the shape rule's would be 64 × 64)
    const auto p = parsed(j);
    const auto policy = family::family_of(p).policy(p);
    CHECK(policy.at("threads") == 384);  // a producer warp group and two consumers
    CHECK(policy.at("copies") == "TMA");
    CHECK(policy.at("tile_n") == 256);
    CHECK(policy.at("buffers") == 3);
    CHECK(policy.at("schedule") == "cooperative");
    const auto prog = family::plan(p, codegen::template_set::embedded());
    CHECK(prog.only_arch == 90);
    CHECK(prog.array_alignment == 16);
    REQUIRE(prog.kernels.size() == 1);
    const auto& k = prog.kernels[0];
    CHECK(k.resident == family::resident_rule::at_most);  // persistent: tile after tile
    CHECK(k.grid == family::dims{3 * 1, 1, 1});              // ⌈300 / 128⌉ × ⌈200 / 256⌉ tiles
    CHECK(k.shared_bytes == 3 * ((128 + 256) * 64 * 2 + 16) + 128 * 256 * 2 + 16 + 1024);  // C staged for TMA
    CHECK(k.args[3].map == family::tensor_map{family::tensor_map::element::bfloat16, 300, 200, 64, 64});  // out
    CHECK(k.args[3].written);
    REQUIRE(k.args.size() >= 2);
    CHECK(k.args[0].cuda == "const __grid_constant__ kjit_tensor_map a_map");
    CHECK(k.args[0].map == family::tensor_map{family::tensor_map::element::bfloat16, 300, 96, 128, 64});
    CHECK(k.args[1].map == family::tensor_map{family::tensor_map::element::bfloat16, 96, 200, 64, 64});
    CHECK(!k.args[2].map);  // b, the epilogue's
    CHECK(prog.source.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") != std::string::npos);
    CHECK(prog.source.find("%127},") != std::string::npos);  // 128 accumulators a thread

    // Two blocks a cluster: the grid holds whole clusters of tiles one under another.
    j["launch"]["cluster_m"] = 2;
    const auto clustered = family::plan(parsed(j), codegen::template_set::embedded());
    CHECK(clustered.kernels[0].grid == family::dims{2 * 1 * 2, 1, 1});  // ⌈300 / 256⌉ pairs × ⌈200 / 256⌉ × 2
    CHECK(clustered.source.find("__cluster_dims__(2, 1, 1)") != std::string::npos);
    CHECK(clustered.kernels[0].resident == family::resident_rule::none);  // a block a tile pair

    // A split of the depth: a cluster of blocks a tile, each its part of the depth; the partial
    // tiles (float) wait in shared memory for the first block.
    j = gemm_config(16, 4096, 4096, "bfloat16");
    j["launch"] = {{"rung", "wgmma"}, {"tile_m", 64}, {"tile_n", 64}, {"schedule", "pingpong"}, {"buffers", 8}, {"split_k", 2}};
    const auto split = family::plan(parsed(j), codegen::template_set::embedded());
    CHECK(split.kernels[0].grid == family::dims{64 * 2, 1, 1});  // 64 tiles of 64 columns, two blocks each
    CHECK(split.source.find("__cluster_dims__(2, 1, 1)") != std::string::npos);
    CHECK(split.source.find("kjit_split = 2,") != std::string::npos);
    CHECK(split.kernels[0].resident == family::resident_rule::none);
    CHECK(split.kernels[0].shared_bytes == 8 * ((64 + 64) * 64 * 2 + 16) + 2 * 64 * 64 * 2 + 2 * 64 * 64 * 4 + 32 + 16 + 1024);
    CHECK(split.kernels[0].args[0].map == family::tensor_map{family::tensor_map::element::bfloat16, 16, 4096, 16, 64});
    j["launch"]["cluster_m"] = 2;
    CHECK(failure(j).find("launch.split_k: a cluster either shares B's tiles (cluster_m) or splits the depth") != std::string::npos);
    // Buffers not given are as many of the rule's as fit beside the partial tiles.
    json wide = gemm_config(16, 4096, 4096, "bfloat16");
    wide["launch"] = {{"rung", "wgmma"}, {"tile_m", 64}, {"tile_n", 192}, {"schedule", "pingpong"}, {"split_k", 2}};
    CHECK(family::family_of(parsed(wide)).policy(parsed(wide)).at("buffers") == 2);  // 3, the large-shape launch's, need 241 KiB
    wide["launch"]["buffers"] = 3;  // given: refused, not changed
    CHECK(failure(wide).find("launch.buffers: a block of 64 × 192 × 64 in 3 buffers needs") != std::string::npos);
    j["launch"].erase("cluster_m");
    j["shape"] = {16, 48};
    j["inputs"]["w"]["shape"] = {48, 4096};
    CHECK(failure(j).find("launch.split_k: each of the 2 parts of the depth takes 64 of it at least; this product is 48 deep") !=
          std::string::npos);
    j["launch"] = {{"rung", "mma"}, {"split_k", 2}};
    CHECK(failure(j).find("launch.split_k: a key of the \"wgmma\" and \"stream\" policies; this one is \"mma\"") != std::string::npos);

    // Rows of 17 elements do not start on 16-byte boundaries: a kernel first copies A to rows 24
    // elements apart, and the TMA unit copies from there; B's and C's 200 columns are aligned.
    j = gemm_config(300, 200, 17, "float16");
    j["launch"] = {{"rung", "wgmma"}, {"tile_n", 64}, {"cluster_m", 2}};
    const auto odd = parsed(j);
    CHECK(family::family_of(odd).policy(odd).at("copies") == "TMA, A padded first");
    CHECK(family::family_of(odd).policy(odd).at("cluster_m") == 2);  // multicast: B's copies are TMA's
    const auto padded = family::plan(odd, codegen::template_set::embedded());
    REQUIRE(padded.kernels.size() == 2);
    const auto& pad = padded.kernels[0];
    CHECK(pad.name == "g_pad_a");
    CHECK(pad.pads_rows_to == 24);
    CHECK(pad.args[0].name == "a");
    CHECK(pad.args[1].name == "kjit_a_padded");
    CHECK(pad.args[1].written);
    CHECK(pad.args[4].size == 24);  // kjit_pitch
    CHECK(pad.bytes_written == 300 * 24 * 2);
    CHECK(padded.buffers[3].name == "kjit_a_padded");  // after the inputs a, w and b
    CHECK(padded.buffers[3].bytes == 300 * 24 * 2);
    CHECK(padded.buffers[3].role == family::buffer_role::temporary);
    const auto& matmul = padded.kernels[1];
    CHECK(matmul.args[0].cuda == "const __grid_constant__ kjit_tensor_map kjit_a_padded_map");
    CHECK(matmul.args[0].map == family::tensor_map{family::tensor_map::element::float16, 300, 17, 128, 64, 0, 24});
    CHECK(matmul.args[1].map == family::tensor_map{family::tensor_map::element::float16, 17, 200, 64, 64});  // w itself
    CHECK(matmul.args[3].map);  // C staged for TMA
    CHECK(matmul.shared_bytes == 3 * ((128 + 64) * 64 * 2 + 16) + 128 * 64 * 2 + 16 + 1024);
    CHECK(padded.source.find("kjit_pad_rows(kjit_from, kjit_to, rows, cols, kjit_pitch);") != std::string::npos);
    CHECK(padded.source.find("kjit_prefetch_map(kjit_a_padded_map);") != std::string::npos);
    CHECK(padded.array_alignment == 16);  // w and out go by TMA

    // 201 columns: B padded too, and C's rows unaligned: the consumers' threads copy its tiles
    // from shared memory, clipped to C, where the TMA unit cannot.
    j["inputs"]["w"]["shape"] = {17, 201};
    const auto both = parsed(j);
    CHECK(family::family_of(both).policy(both).at("copies") == "TMA, A and B padded first");
    const auto padded_both = family::plan(both, codegen::template_set::embedded());
    REQUIRE(padded_both.kernels.size() == 3);
    CHECK(padded_both.kernels[1].name == "g_pad_b");
    CHECK(padded_both.kernels[1].pads_rows_to == 208);
    const auto& direct = padded_both.kernels[2];
    CHECK(direct.args[1].map == family::tensor_map{family::tensor_map::element::float16, 17, 201, 64, 64, 0, 208});
    CHECK(!direct.args[3].map);
    CHECK(direct.args[3].cuda == "store_t* __restrict__ out");
    CHECK(direct.shared_bytes == 3 * ((128 + 64) * 64 * 2 + 16) + 128 * 64 * 2 + 16 + 1024);  // C still staged
    CHECK(padded_both.source.find("kjit_store_box") == std::string::npos);
    CHECK(padded_both.source.find("kjit_c_rows[kjit_r * cols + kjit_c] = *kjit_place(kjit_r, kjit_c);") != std::string::npos);
    CHECK(padded_both.array_alignment == 2);  // the pad kernels read elements; C is stored one at a time
}

TEST_CASE("gemm: fused, one kernel with its epilogue; separate, the product and a kernel per stage after it") {
    json j = gemm_config(300, 200, 100, "bfloat16");
    j["launch"] = {{"rung", "mma"}, {"tile_m", 256}};  // the large-shape launch: 256 × 128 on 8 warps
    j["params"] = {{"alpha", 0.5}};
    j["stages"].push_back({{"op", "map"}, {"expr", "tanh(x) * alpha"}});
    const auto fused = family::plan(parsed(j), codegen::template_set::embedded());
    REQUIRE(fused.kernels.size() == 1);
    const auto& k = fused.kernels[0];
    CHECK(k.name == "g_matmul");
    CHECK(k.grid == family::dims{2 * 2, 1, 1});  // ⌈300 / 256⌉ × ⌈200 / 128⌉ tiles
    CHECK(k.block == family::dims{256, 1, 1});
    std::vector<std::string> order;
    for (const auto& a : k.args) order.push_back(a.cuda);
    CHECK(order == std::vector<std::string>{"const store_t* __restrict__ a", "const store_t* __restrict__ w",
                                            "const store_t* __restrict__ b", "store_t* __restrict__ out", "real alpha",
                                            "long long rows", "long long cols", "long long kjit_depth"});
    CHECK(k.flops == 2.0 * 300 * 200 * 100);
    CHECK(k.bytes_read == (300 * 100 + 100 * 200 + 200) * 2);
    CHECK(k.bytes_written == 300 * 200 * 2);
    CHECK(fused.output_rows == 300);
    CHECK(fused.output_cols == 200);
    CHECK(fused.source.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);

    j["fusion"] = "separate";
    const auto separate = family::plan(parsed(j), codegen::template_set::embedded());
    REQUIRE(separate.kernels.size() == 3);
    CHECK(separate.kernels[0].args[2].name == "kjit_product");  // the product goes to memory
    CHECK(separate.kernels[1].reads_x == "kjit_product");
    CHECK(separate.kernels[1].args.back().name == "cols");
    CHECK(separate.kernels[2].reads_x == "kjit_stage1");
    CHECK(separate.kernels[2].args[0].name == "kjit_stage1");
    CHECK(separate.kernels[2].args[1].name == "out");
    CHECK(separate.kernels[1].flops == 0);
}

TEST_CASE("gemm's reference: every element exact when small, with the dot product's error scale") {
    json j = gemm_config(2, 3, 2, "float64");
    const auto p = parsed(j);
    reference::input_arrays in;
    in.emplace("a", filled(p.type, {1, 2, 3, -4}));                // [[1, 2], [3, -4]]
    in.emplace("w", filled(p.type, {1, 0.5, -1, 2, 0.25, 1}));     // [[1, 0.5, -1], [2, 0.25, 1]]
    in.emplace("b", filled(p.type, {10, 20, 30}));
    const auto ref = family::family_of(p).reference(p, in);
    CHECK(ref.sampled.empty());
    REQUIRE(ref.values.size() == 6);
    const std::vector<double> expected{1 + 4 + 10, 0.5 + 0.5 + 20, -1 + 2 + 30, 3 - 8 + 10, 1.5 - 1 + 20, -3 - 4 + 30};
    for (std::size_t i = 0; i < 6; ++i) CHECK(ref.values[i] == expected[i]);
    CHECK(ref.scales[3] >= 3 * (3 + 8));  // (K + 1) · Σ|a·b| for row 1, column 0
}

TEST_CASE("gemm's reference as TF32: each operand rounded to 10 bits of mantissa, to the nearest, ties away from zero") {
    json j = gemm_config(5, 3, 1);  // (5 rows: mma's, not a decode step's stream)
    j["compile"] = {{"fp32_precision", "tf32"}, {"target", "h200"}};
    const auto p = parsed(j);
    REQUIRE(family::gemm::policy_of(p).tf32);
    reference::input_arrays in;
    in.emplace("a", filled(p.type, {1 + 0x1p-11, 0, 0, 0, 0}));  // halfway between TF32's 1 and 1 + 2^-10: away from zero
    in.emplace("w", filled(p.type, {1 + 0x1p-12, -(1 + 0x1p-11), 0x1p-11 * 3}));  // below half; a negative tie; 1.1b · 2^-10
    in.emplace("b", filled(p.type, {0, 0, 0}));
    const auto ref = family::family_of(p).reference(p, in);
    REQUIRE(ref.values.size() == 15);
    CHECK(ref.values[0] == 1 + 0x1p-10);
    CHECK(ref.values[1] == -(1 + 0x1p-10) * (1 + 0x1p-10));
    CHECK(ref.values[2] == (1 + 0x1p-10) * 0x1p-11 * 3);  // already TF32: as it is
    j["compile"].erase("fp32_precision");
    const auto ieee = parsed(j);
    CHECK(family::family_of(ieee).reference(ieee, in).values[0] == (1 + 0x1p-11) * (1 + 0x1p-12));
}

TEST_CASE("gemm's reference: bias + relu of a pre-activation that sits at 0 keeps the product's error scale") {
    // float16, as the H200 run that found it: out = 8.3e-07 where ref = 0 FAILed, since relu's
    // choice of 0 carried no scale. The kernel may compute the pre-activation a rounding above 0.
    json j = gemm_config(1, 2, 2, "float16");
    j["stages"].push_back({{"op", "relu"}});
    const auto p = parsed(j);
    reference::input_arrays in;
    in.emplace("a", filled(p.type, {1, 1}));
    in.emplace("w", filled(p.type, {0.75, 0.5, -0.25, 0.5}));  // columns: 0.75 − 0.25 = 0.5, 0.5 + 0.5 = 1
    in.emplace("b", filled(p.type, {-0.5, -1}));               // pre-activations exactly 0
    const auto ref = family::family_of(p).reference(p, in);
    REQUIRE(ref.values.size() == 2);
    CHECK(ref.values[0] == 0);
    CHECK(ref.scales[0] >= 0.75 + 0.25 + 0.5);  // the dot product's and the bias's, through relu
    CHECK(ref.scales[1] >= 0.5 + 0.5 + 1);
}

TEST_CASE("gemm's reference, separate: a -inf an epilogue stores between kernels adds no rounding to what follows") {
    // Stored, the -inf's bound was u·|inf|; the choice after it passed that on to the 0 it
    // chose, which then allowed any error at all.
    json j = gemm_config(1, 2, 2, "bfloat16");
    j["fusion"] = "separate";
    j["stages"].push_back({{"op", "map"}, {"expr", "x > 0 ? -inf : x"}});
    j["stages"].push_back({{"op", "map"}, {"expr", "x < -1 ? 0 : x"}});
    const auto p = parsed(j);
    reference::input_arrays in;
    in.emplace("a", filled(p.type, {1, 1}));
    in.emplace("w", filled(p.type, {0.75, 0.5, -0.25, -1}));  // columns: 0.5 and −0.5
    in.emplace("b", filled(p.type, {0, 0}));
    const auto ref = family::family_of(p).reference(p, in);
    REQUIRE(ref.values.size() == 2);
    CHECK(ref.values[0] == 0);
    CHECK(ref.values[1] == doctest::Approx(-0.5));
    for (std::size_t i = 0; i < 2; ++i) {
        CAPTURE(i);
        CHECK(std::isfinite(ref.scales[i]));
    }
}

TEST_CASE("gemm's reference at large sizes: a sample of every row and every column, the same each time") {
    const auto p = parsed(gemm_config(3000, 1000, 2));
    reference::input_arrays in;
    std::vector<double> a(3000 * 2), w(2 * 1000), b(1000, 0.0);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i % 7) - 3;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i % 5) - 2;
    in.emplace("a", filled(p.type, a));
    in.emplace("w", filled(p.type, w));
    in.emplace("b", filled(p.type, b));
    const auto ref = family::family_of(p).reference(p, in);
    REQUIRE_FALSE(ref.sampled.empty());
    CHECK(ref.sampled.size() >= family::gemm::k_sample_elements);
    CHECK(ref.sampled.size() < 3000u * 1000u / 10);
    CHECK(std::is_sorted(ref.sampled.begin(), ref.sampled.end()));
    CHECK(std::adjacent_find(ref.sampled.begin(), ref.sampled.end()) == ref.sampled.end());
    std::set<std::size_t> rows, cols;
    for (std::size_t e : ref.sampled) {
        rows.insert(e / 1000);
        cols.insert(e % 1000);
    }
    CHECK(rows.size() == 3000);
    CHECK(cols.size() == 1000);
    for (std::size_t j = 0; j < ref.sampled.size(); j += 997) {  // each value is its element's dot product
        const std::size_t r = ref.sampled[j] / 1000, c = ref.sampled[j] % 1000;
        CHECK(ref.values[j] == a[r * 2] * w[c] + a[r * 2 + 1] * w[1000 + c]);
    }
    CHECK(family::family_of(p).reference(p, in).sampled == ref.sampled);
}

TEST_CASE("a sampled comparison: a wrong sampled element fails by name, an unwritten one outside the sample too") {
    reference::expected_values ref;
    ref.sampled = {1, 5};
    ref.values.resize(2);
    ref.scales.resize(2);
    ref.values[0] = 1.0;
    ref.values[1] = 2.0;
    ref.scales[0] = ref.scales[1] = 0;
    reference::typed_array out = filled(config::dtype::float32, {9, 1, 9, 9, 9, 2, 9, 9});
    const config::tolerance tol{1e-6, 0, 0};
    auto result = reference::compare(out, ref, tol);
    CHECK(result.pass);  // 9s outside the sample are written: not checked against anything
    out.set(5, 2.5);
    result = reference::compare(out, ref, tol);
    CHECK_FALSE(result.pass);
    CHECK(result.first_bad == 5u);
    CHECK(result.first_bad_entry == 1u);
    out.set(5, 2);
    std::fill_n(static_cast<unsigned char*>(out.data()) + 3 * sizeof(float), sizeof(float), reference::k_poison_byte);
    result = reference::compare(out, ref, tol);
    CHECK_FALSE(result.pass);
    CHECK(result.unwritten == 1);
    CHECK(result.first_bad == 3u);
    CHECK_FALSE(result.first_bad_entry.has_value());
}

TEST_CASE("each family's program says how its arrays must be aligned: its widest vector, cp.async's 16 bytes") {
    const auto alignment = [](const config::pipeline& p) { return family::plan(p, codegen::template_set::embedded()).array_alignment; };
    CHECK(alignment(kjit::testing::pipeline_with([](json&) {})) == 0);  // elementwise: its kernel tests, and falls back
    auto softmax = config::load_document(kjit::testing::config_path("softmax.json"));
    softmax.json.erase("sweep");
    CHECK(alignment(family::load(softmax)) == 16);  // float32 rows in vectors of 4
    CHECK(alignment(parsed(gemm_config(64, 64, 64, "bfloat16"))) == 16);  // cp.async
    CHECK(alignment(parsed(gemm_config(64, 17, 17, "bfloat16"))) == 2);  // element by element, single stores
    CHECK(alignment(parsed(gemm_config(64, 17, 12))) == 16);              // simt: A in vectors of 4 floats
}
