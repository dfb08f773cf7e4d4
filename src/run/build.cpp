#include "run/build.hpp"

#include "run/timed.hpp"
#include "util/error.hpp"

namespace kjit::run {

using detail::timed;
using report::phase;

void prebuilt_binaries::put(jit::build_output build) {
    const std::lock_guard lock(m_mutex);
    m_by_key.emplace(build.key, std::move(build));
}

std::optional<jit::build_output> prebuilt_binaries::take(const std::string& key, bool share) {
    const std::lock_guard lock(m_mutex);
    const auto found = m_by_key.find(key);
    if (found == m_by_key.end()) return std::nullopt;
    jit::build_output build = found->second;
    if (share) found->second.compiled = false;  // the next variant reuses it: no compile of its own
    else m_by_key.erase(found);
    return build;
}

bool runs_on(const family::program& program, int arch) {
    return (program.only_arch == 0 || program.only_arch == arch) && arch >= program.min_arch;
}

void check_arch(const config::pipeline& p, const family::program& program, int arch) {
    if (program.only_arch != 0 && program.only_arch != arch)
        throw error(error_kind::config, p.name + ": this variant runs on sm_" + std::to_string(program.only_arch) + " alone (" +
                                           program.only_arch_why + "), not on sm_" + std::to_string(arch));
    if (program.min_arch != 0 && arch < program.min_arch)
        throw error(error_kind::config, p.name + ": this variant needs sm_" + std::to_string(program.min_arch) + " or newer (" +
                                           program.min_arch_why + "), not sm_" + std::to_string(arch));
}

jit::compile_request compile_request_for(const config::pipeline& p, const family::program& program, int arch) {
    jit::compile_request request;
    request.source = program.source;
    request.program_name = p.name + ".cu";
    request.arch = arch;
    request.arch_specific = program.only_arch != 0;
    request.fast_math = p.compile.fast_math;
    request.extra_options = p.compile.options;
    request.toolkit_headers = !program.headers.empty();
    request.method = p.compile.path == config::compile_path::nvrtc ? jit::compile_method::nvrtc : jit::compile_method::nvjitlink;
    if (p.compile.fast_compile != config::fast_compile::off) request.fast_compile = config::to_string(p.compile.fast_compile);
    return request;
}

built_variant build_variant(const config::pipeline& p, int arch, const build_context& ctx, report::record& rec) {
    built_variant built;
    built.program = timed(rec, phase::codegen, [&] { return family::plan(p, ctx.templates); });
    check_arch(p, built.program, arch);
    jit::compile_request request = compile_request_for(p, built.program, arch);
    request.line_info = ctx.line_info;
    std::optional<jit::build_output> ready;
    // With the cache off or refreshed, later variants of one source would not find it in the
    // cache: they share the sweep's build instead of compiling it again.
    if (ctx.prebuilt) ready = ctx.prebuilt->take(jit::cache_key(request), ctx.mode != jit::cache_mode::use);
    built.binary = ready ? std::move(*ready) : jit::build(request, ctx.cache, ctx.mode, rec.variant);
    record_build(built, arch, ctx, rec);
    return built;
}

void record_build(const built_variant& built, int arch, const build_context& ctx, report::record& rec) {
    const auto& b = built.binary;
    rec.nvrtc_version = b.nvrtc_version;
    rec.arch = "sm_" + std::to_string(arch) + (built.program.only_arch != 0 ? "a" : "");
    rec.cache_status = b.cache_status;
    rec.cache_key = b.key;
    rec.cache_problem = b.cache_problem;
    rec.ptx_bytes = b.ptx.size();
    rec.cubin_bytes = b.cubin.size();
    if (ctx.cache && ctx.mode == jit::cache_mode::use) rec.set(phase::cache_lookup, b.lookup_ms);
    rec.compile_method = jit::to_string(b.method);
    if (b.compiled) {
        if (b.load_ms > 0) rec.set(phase::compiler_load, b.load_ms);
        rec.set(phase::nvrtc, b.nvrtc_ms);
        rec.set(phase::ptx_to_cubin, b.ptx_to_cubin_ms);
        if (b.front_end_ms > 0) rec.nvrtc_front_end_ms = b.front_end_ms;
        if (b.optimizer_ms > 0) rec.nvrtc_optimizer_ms = b.optimizer_ms;
    }
    if (ctx.cache && b.compiled && ctx.mode != jit::cache_mode::off) rec.set(phase::cache_store, b.store_ms);
    // The program's own counts of what a pass moves and computes: known before any run.
    rec.bytes_moved = 0;
    rec.flops = 0;
    rec.flops_unit.clear();
    rec.kernels.clear();
    for (const auto& k : built.program.kernels) {
        rec.bytes_moved += k.bytes_read + k.bytes_written;
        rec.flops += k.flops;
        if (k.flops > 0 && rec.flops_unit != "tensor") rec.flops_unit = family::to_string(k.flops_on);
        report::kernel_row row{k.name};
        for (const auto& res : b.kernels) {
            if (res.name != k.name) continue;
            row.registers = res.registers;
            row.stack_bytes = res.stack_bytes;
            row.spill_bytes = res.spill_store_bytes < 0 ? -1 : res.spill_store_bytes + res.spill_load_bytes;
        }
        rec.kernels.push_back(row);
    }
}

}  // namespace kjit::run
