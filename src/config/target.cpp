#include "config/target.hpp"

#include <algorithm>
#include <array>

#include "config/config.hpp"

namespace kjit::config {
namespace {

constexpr std::size_t k_kib = 1024, k_mib = 1024 * 1024;

/// A GPU by its name on the command line, from its vendor's data sheet and the CUDA programming
/// guide's table of limits per compute capability: (name, arch, SMs, shared memory a block may
/// opt in to, shared memory per SM, L2). Each architecture's first entry is what "sm_XX" means.
struct known_gpu {
    std::string_view name;
    int arch, sm_count;
    std::size_t shared_per_block, shared_per_sm, l2_bytes;
};
constexpr std::array k_known{
        known_gpu{"t4", 75, 40, 64 * k_kib, 64 * k_kib, 4 * k_mib},
        known_gpu{"a100", 80, 108, 163 * k_kib, 164 * k_kib, 40 * k_mib},
        known_gpu{"a10", 86, 72, 99 * k_kib, 100 * k_kib, 6 * k_mib},
        known_gpu{"rtx3090", 86, 82, 99 * k_kib, 100 * k_kib, 6 * k_mib},
        known_gpu{"orin", 87, 16, 163 * k_kib, 164 * k_kib, 4 * k_mib},
        known_gpu{"l4", 89, 58, 99 * k_kib, 100 * k_kib, 48 * k_mib},
        known_gpu{"rtx4090", 89, 128, 99 * k_kib, 100 * k_kib, 72 * k_mib},
        known_gpu{"h200", 90, 132, 227 * k_kib, 228 * k_kib, 60 * k_mib},
        known_gpu{"h100", 90, 132, 227 * k_kib, 228 * k_kib, 50 * k_mib},
        known_gpu{"b200", 100, 148, 227 * k_kib, 228 * k_kib, 126 * k_mib},
        known_gpu{"rtx5090", 120, 170, 99 * k_kib, 100 * k_kib, 96 * k_mib},
};

target from_known(const known_gpu& gpu, std::string name) {
    target t;
    t.name = std::move(name);
    t.arch = gpu.arch;
    t.sm_count = gpu.sm_count;
    t.shared_per_block = gpu.shared_per_block;
    t.shared_per_sm = gpu.shared_per_sm;
    t.l2_bytes = gpu.l2_bytes;
    return t;
}

/// The architectures NVRTC compiles for that no GPU above stands for: the nearest older one's
/// limits (sm_88 as sm_86, sm_103 and sm_110 as sm_100, sm_121 as sm_120).
int represented_by(int arch) {
    if (arch == 88) return 86;
    if (arch == 103 || arch == 110) return 100;
    if (arch == 121) return 120;
    return arch;
}

}  // namespace

std::string target::describe() const {
    const std::string sms = std::to_string(sm_count) + " SMs)";
    return name + (like.empty() ? " (sm_" + std::to_string(arch) + ", " + sms : " (like " + like + ": " + sms);
}

std::string known_target_list() {
    std::string text;
    for (const auto& gpu : k_known) text += (text.empty() ? "" : ", ") + std::string(gpu.name);
    return text + ", or sm_XX";
}

std::optional<target> named_target(std::string_view text) {
    for (const auto& gpu : k_known)
        if (gpu.name == text) return from_known(gpu, std::string(text));
    const std::optional<int> parsed = parse_arch(text);
    if (!parsed) return std::nullopt;
    const int arch = *parsed;
    const auto typical = std::find_if(k_known.begin(), k_known.end(), [&](const known_gpu& g) { return g.arch == represented_by(arch); });
    target t = from_known(*typical, "sm_" + std::to_string(arch));
    t.arch = arch;
    t.like = std::string(typical->name);
    return t;
}

target default_target() { return *named_target("h200"); }

}  // namespace kjit::config
