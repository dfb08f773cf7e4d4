// Compile-or-load: looks a program up in the disk cache by a hash of everything that changes its
// output, compiles it on a miss and stores the result. No CUDA headers.
#pragma once
#include <optional>
#include <string>

#include "jit/compiler.hpp"
#include "jit/disk_cache.hpp"

namespace kjit::jit {

enum class cache_mode {
    use,      ///< hit → load; miss → compile and store
    off,      ///< compile, store nothing (--no-cache)
    refresh,  ///< compile and replace the entry (--refresh)
};

struct build_output {
    std::string key;
    std::string ptx;
    std::string cubin;
    std::vector<kernel_resources> kernels;
    std::string cache_status;   ///< "hit", "miss", "off" or "refresh"
    std::string cache_problem;  ///< set when a corrupt entry was found and replaced
    bool compiled = false;      ///< NVRTC and nvJitLink ran in this call
    double lookup_ms = 0;
    compile_method method = compile_method::nvrtc;
    double load_ms = 0;          ///< loading the compiler libraries; 0 unless this compile loaded them
    double nvrtc_ms = 0;         ///< 0 unless compiled
    double ptx_to_cubin_ms = 0;  ///< 0 unless compiled
    double front_end_ms = 0, optimizer_ms = 0;  ///< NVRTC's own split of nvrtc_ms; 0 unless compiled and known
    double store_ms = 0;
    std::string nvrtc_log;
    std::string link_log;
    std::string nvrtc_version;  ///< of the NVRTC that compiled it (this call's, or the cache entry's)
};

/// Hash of source, NVRTC and link options, arch, NVRTC version, cache format and kjit version.
[[nodiscard]] std::string cache_key(const compile_request& request);

/// Builds `request`, through `cache` unless mode is off. `label` goes into the entry's metadata
/// (what `kjit cache list` shows). A compile error throws kjit::error(compile) whose message has
/// the NVRTC log and the generated lines around each error; nothing is cached then.
[[nodiscard]] build_output build(const compile_request& request, disk_cache* cache, cache_mode mode,
                                 const std::string& label);

/// NVRTC's log with the source lines it points at, for error messages.
[[nodiscard]] std::string annotate_log(const std::string& log, const std::string& source,
                                       const std::string& program_name);

}  // namespace kjit::jit
