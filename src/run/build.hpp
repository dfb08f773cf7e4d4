// Building a variant: its program planned by its family (codegen), then compiled or taken from
// the cache (or from a sweep's builds made ahead), and what the build says put into a record.
#pragma once
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "family/family.hpp"
#include "jit/jit.hpp"
#include "report/record.hpp"

namespace kjit::run {

/// Builds made ahead of the runs (a sweep's parallel compile), by cache key. The first variant
/// that needs one takes it, so that variant's record reports the compile; with `share` (the cache
/// off or refreshed), later variants of the same source get it too, with no compile of their own.
/// Thread-safe.
class prebuilt_binaries {
public:
    void put(jit::build_output build);
    [[nodiscard]] std::optional<jit::build_output> take(const std::string& key, bool share);

private:
    std::mutex m_mutex;
    std::map<std::string, jit::build_output> m_by_key;
};

/// What building a variant needs besides the pipeline.
struct build_context {
    const codegen::template_set& templates;
    jit::disk_cache* cache = nullptr;  ///< nullptr: no cache at all
    jit::cache_mode mode = jit::cache_mode::use;
    prebuilt_binaries* prebuilt = nullptr;
    bool line_info = false;  ///< compile with -lineinfo, to be read (kjit sass): a cache entry of its own
};

struct built_variant {
    family::program program;
    jit::build_output binary;
};

/// Refuses (kjit::error(config), one line naming why) a program that cannot run on sm_<arch>: one
/// made for another architecture alone, or for newer ones (family::program's only_arch, min_arch).
/// The one check for compile, emit --ptx, run and sweeps.
void check_arch(const config::pipeline& p, const family::program& program, int arch);
/// True when check_arch lets `program` run on sm_<arch>.
[[nodiscard]] bool runs_on(const family::program& program, int arch);

/// The NVRTC request for `program` (the program of `p`) for sm_<arch>: one place decides the
/// options, so a sweep's parallel compile and a run agree on cache keys.
[[nodiscard]] jit::compile_request compile_request_for(const config::pipeline& p, const family::program& program,
                                                       int arch);

/// Codegen and compile-or-load for sm_<arch>, recorded into `rec` (phases, cache, kernels).
/// Throws kjit::error(compile) with NVRTC's log when the source does not compile.
[[nodiscard]] built_variant build_variant(const config::pipeline& p, int arch, const build_context& ctx,
                                          report::record& rec);
/// What build_variant records of a build (all but its codegen time), for a build made earlier
/// into another record.
void record_build(const built_variant& built, int arch, const build_context& ctx, report::record& rec);

}  // namespace kjit::run
