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

/// 16 × L2 each way (960 MiB on an H200), so no cache level holds the data, within 64 MiB..1 GiB.
std::size_t probe_bytes(const device_info& info) {
    return std::clamp<std::size_t>(16 * info.l2_bytes, std::size_t{64} << 20, std::size_t{1} << 30) / 16 * 16;
}

double measure(gpu& device, const build_context& ctx) {
    const std::size_t bytes = probe_bytes(device.device());
    jit::compile_request request;
    request.source = codegen::copy_probe_source(ctx.templates);
    request.program_name = "kjit_copy_probe.cu";
    request.arch = device.device().arch;
    const auto binary = jit::build(request, ctx.cache, ctx.mode, "copy probe");
    const scoped_module module(device, device.load_module(binary.cubin));
    const kernel_id kernel = device.get_kernel(module.id(), codegen::k_copy_probe_kernel);
    const buffer_id in = device.allocate(bytes), out = device.allocate(bytes);
    device.fill_bytes(in, 0x3f, bytes);  // real data, not zeros
    const long long n4 = static_cast<long long>(bytes / 16);
    const long long grid = grid_size(n4, k_probe_block, 1, std::nullopt,
                                     static_cast<long long>(device.max_active_blocks_per_sm(kernel, k_probe_block, 0)) *
                                         device.device().sm_count);
    using type = argument_value::type;
    const kernel_launch launch{{grid}, {k_probe_block}, 0, {{type::buffer, in}, {type::buffer, out}, {type::i64, 0, 0, n4}}};
    const auto copy = [&] { device.launch(kernel, launch); };
    for (int i = 0; i < 3; ++i) copy();
    std::vector<double> samples;
    for (int i = 0; i < k_probe_samples; ++i) samples.push_back(device.time_ms(copy));
    device.release(in);
    device.release(out);
    return 2.0 * static_cast<double>(bytes) / (summarize(std::move(samples)).median * 1e-3);
}

}  // namespace

double copy_ceiling_bytes_per_s(gpu& device, const build_context& ctx) {
    const auto& info = device.device();
    std::filesystem::path file;
    if (ctx.cache) {
        const std::string name = std::regex_replace(info.name, std::regex("[^A-Za-z0-9]+"), "_");
        file = ctx.cache->root() / "ceilings" / (name + "-driver" + std::to_string(info.driver_version) + ".json");
        try {
            if (std::filesystem::exists(file) && ctx.mode == jit::cache_mode::use)
                return nlohmann::json::parse(fs::read_file(file)).at("copy_bytes_per_s").get<double>();
        } catch (const std::exception&) {
            // unreadable: measure again and overwrite
        }
    }
    const double ceiling = measure(device, ctx);
    if (ctx.cache) {
        std::filesystem::create_directories(file.parent_path());
        fs::write_file_atomic(file, nlohmann::json{{"device", info.name},
                                                   {"driver_version", info.driver_version},
                                                   {"copy_bytes_per_s", ceiling},
                                                   {"bytes_each_way", probe_bytes(info)}}
                                        .dump(2));
    }
    return ceiling;
}

}  // namespace kjit::run
