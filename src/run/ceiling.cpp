#include <algorithm>
#include <regex>

#include "run/runner.hpp"
#include "run/stats.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::run {
namespace {

constexpr int k_probe_block = 256;
constexpr int k_probe_samples = 20;
constexpr double k_probe_warmup_ms = 200;
constexpr int k_probe_most_warmups = 1000;  // (a probe of a few µs stops here)
/// The FMA probe's iterations per thread: a few milliseconds on a large GPU.
constexpr int k_fma_iterations = 1 << 14;
/// The tensor probe's loop iterations: a few milliseconds on a large GPU.
constexpr int k_tensor_iterations = 1 << 13;

/// 16 × L2 each way (960 MiB on an H200), so no cache level holds the data, within 64 MiB..1 GiB.
std::size_t probe_bytes(const device_info& info) {
    return std::clamp<std::size_t>(16 * info.l2_bytes, std::size_t{64} << 20, std::size_t{1} << 30) / 16 * 16;
}

/// The median of k_probe_samples timings of `work`, after it has run for k_probe_warmup_ms at
/// least three times: an idle GPU's clock takes that long to rise to what it holds under load.
double median_ms(gpu& device, const std::function<void()>& work) {
    double warm_ms = 0;
    for (int i = 0; i < 3 || (warm_ms < k_probe_warmup_ms && i < k_probe_most_warmups); ++i) warm_ms += device.time_ms(work);
    std::vector<double> samples;
    for (int i = 0; i < k_probe_samples; ++i) samples.push_back(device.time_ms(work));
    return summarize(std::move(samples)).median;
}

/// Blocks of `block` threads of `kernel` that the whole device holds at once.
long long resident_blocks(gpu& device, kernel_id kernel, int block) {
    return static_cast<long long>(device.max_active_blocks_per_sm(kernel, block, 0)) * device.device().sm_count;
}

/// A probe kernel of kjit's own, compiled (through the cache) and loaded for the device.
struct probe_kernel {
    scoped_module module;
    kernel_id kernel;
};
probe_kernel load_probe(gpu& device, const build_context& ctx, const std::string& source, const std::string& name,
                        bool arch_specific = false) {
    jit::compile_request request;
    request.source = source;
    request.program_name = name + ".cu";
    request.arch = device.device().arch;
    request.arch_specific = arch_specific;
    const auto binary = jit::build(request, ctx.cache, ctx.mode, name);
    const module_id module = device.load_module(binary.cubin);
    return {scoped_module(device, module), device.get_kernel(module, name)};
}

double measure_copy(gpu& device, const build_context& ctx) {
    const std::size_t bytes = probe_bytes(device.device());
    const auto probe = load_probe(device, ctx, codegen::copy_probe_source(ctx.templates), codegen::k_copy_probe_kernel);
    const buffer_id in = device.allocate(bytes), out = device.allocate(bytes);
    device.fill_bytes(in, 0x3f, bytes);  // real data, not zeros
    const long long n4 = static_cast<long long>(bytes / 16);
    const long long grid = grid_size(n4, k_probe_block, 1, std::nullopt, resident_blocks(device, probe.kernel, k_probe_block));
    using type = argument_value::type;
    const kernel_launch launch{{grid}, {k_probe_block}, 0, {{type::buffer, in}, {type::buffer, out}, {type::i64, 0, 0, n4}}};
    const double ms = median_ms(device, [&] { device.launch(probe.kernel, launch); });
    device.release(in);
    device.release(out);
    return 2.0 * static_cast<double>(bytes) / (ms * 1e-3);
}

double measure_fma(gpu& device, const build_context& ctx) {
    const auto probe = load_probe(device, ctx, codegen::fma_probe_source(ctx.templates), codegen::k_fma_probe_kernel);
    const long long grid = resident_blocks(device, probe.kernel, k_probe_block);
    const buffer_id out = device.allocate(static_cast<std::size_t>(grid * k_probe_block) * sizeof(float));
    using type = argument_value::type;
    const kernel_launch launch{{grid}, {k_probe_block}, 0,
                               {{type::buffer, out}, {type::f32, 0, 0.999}, {type::f32, 0, 1e-3}, {type::i64, 0, 0, k_fma_iterations}}};
    const double ms = median_ms(device, [&] { device.launch(probe.kernel, launch); });
    device.release(out);
    const double flops = 2.0 * codegen::k_fma_probe_chains * k_fma_iterations * static_cast<double>(grid * k_probe_block);
    return flops / (ms * 1e-3);
}

/// The tensor cores' own bfloat16 ceiling: kjit's tensor probe (codegen::tensor_probe_source)
/// on every SM, timed as the copy and FMA probes are; nullopt before sm_80.
std::optional<double> measure_tensor(gpu& device, const build_context& ctx) {
    const int arch = device.device().arch;
    if (!codegen::has_tensor_probe(arch)) return std::nullopt;
    const auto probe = load_probe(device, ctx, codegen::tensor_probe_source(ctx.templates, arch), codegen::k_tensor_probe_kernel,
                                  codegen::tensor_probe_uses_wgmma(arch));
    const int block = codegen::k_tensor_probe_threads;
    const long long grid = resident_blocks(device, probe.kernel, block);
    const buffer_id out = device.allocate(static_cast<std::size_t>(grid * block) * sizeof(float));
    using type = argument_value::type;
    const kernel_launch launch{{grid}, {block}, 0, {{type::buffer, out}, {type::i64, 0, 0, k_tensor_iterations}}};
    const double ms = median_ms(device, [&] { device.launch(probe.kernel, launch); });
    device.release(out);
    return codegen::tensor_probe_block_flops(arch) * k_tensor_iterations * static_cast<double>(grid) / (ms * 1e-3);
}

/// `key` of the device's ceilings, from the cache directory's file for this device and driver,
/// else measured (and kept there).
std::optional<double> ceiling(gpu& device, const build_context& ctx, const std::string& key,
                              const std::function<std::optional<double>()>& measure) {
    const auto& info = device.device();
    const std::string name = std::regex_replace(info.name, std::regex("[^A-Za-z0-9]+"), "_") + "-driver" + std::to_string(info.driver_version);
    std::filesystem::path file;
    nlohmann::json known = nlohmann::json::object();
    if (ctx.cache) {
        file = ctx.cache->root() / "ceilings" / (name + ".json");
        try {
            if (std::filesystem::exists(file)) known = nlohmann::json::parse(fs::read_file(file));
            if (known.contains(key) && ctx.mode == jit::cache_mode::use) return known.at(key).get<double>();
        } catch (const std::exception&) {
            known = nlohmann::json::object();  // unreadable: measure again and overwrite
        }
    }
    const std::optional<double> value = measure();
    if (ctx.cache && value) {
        known["device"] = info.name;
        known["driver_version"] = info.driver_version;
        known[key] = *value;
        if (key == "copy_bytes_per_s") known["bytes_each_way"] = probe_bytes(info);
        std::filesystem::create_directories(file.parent_path());
        fs::write_file_atomic(file, known.dump(2));
    }
    return value;
}

}  // namespace

double copy_ceiling_bytes_per_s(gpu& device, const build_context& ctx) {
    return *ceiling(device, ctx, "copy_bytes_per_s", [&] { return std::optional<double>(measure_copy(device, ctx)); });
}

std::optional<double> compute_ceiling_flops_per_s(gpu& device, const build_context& ctx, family::math_unit unit) {
    if (unit == family::math_unit::fma)
        return ceiling(device, ctx, "fma_flops_per_s", [&] { return std::optional<double>(measure_fma(device, ctx)); });
    // (Named apart from the GEMM-timed ceiling that earlier versions kept, so that none is served.)
    return ceiling(device, ctx, "tensor_core_flops_per_s", [&] { return measure_tensor(device, ctx); });
}

std::optional<double> flops_ceiling_for(gpu& device, const build_context& ctx, const report::record& rec) {
    if (rec.flops_unit.empty()) return std::nullopt;
    return compute_ceiling_flops_per_s(device, ctx, rec.flops_unit == "tensor" ? family::math_unit::tensor : family::math_unit::fma);
}

}  // namespace kjit::run
