// CUDA C++ → PTX → cubin, timed by phase: by NVRTC alone for the real architecture (one call gives
// both, with NVRTC's own -time split), or NVRTC for the virtual one then nvJitLink. Works with no
// GPU and no driver.
// A failed compile is data (ok = false, with the log), not an exception; only a broken NVRTC or
// nvJitLink invocation throws.
#pragma once
#include <string>
#include <vector>

namespace kjit::jit {

/// How the cubin is made. Part of the cache key: the two give different code (nvJitLink compiles
/// in relocatable mode, keeping some slow paths as calls).
enum class compile_method {
    nvrtc,      ///< one NVRTC program for sm_XX: PTX and cubin, -minimal where the source allows
    nvjitlink,  ///< NVRTC for compute_XX (PTX), then nvJitLink for sm_XX: kjit 0.3's path
};
[[nodiscard]] const char* to_string(compile_method m);

struct compile_request {
    std::string source;
    std::string program_name = "kjit.cu";  ///< appears in NVRTC's messages: "kjit.cu(12): error"
    int arch = 90;                          ///< real architecture: sm_<arch>
    bool arch_specific = false;  ///< sm_<arch>a: with the features of that architecture alone (wgmma)
    bool fast_math = false;
    std::vector<std::string> extra_options;  ///< from the config, passed as given, in order
    bool toolkit_headers = false;  ///< the source includes toolkit headers (cuda_fp16.h): add their path
    compile_method method = compile_method::nvrtc;
    std::string fast_compile;  ///< NVRTC's -Ofc level: "min", "mid", "max"; empty for none
    /// -lineinfo: the cubin maps each instruction to its source line (for `kjit sass`). It changes
    /// no instruction, but it is an option, so such a build is a cache entry of its own.
    bool line_info = false;

    /// "sm_90", or "sm_90a" where arch_specific.
    [[nodiscard]] std::string real_arch() const;
    /// The NVRTC options, in a fixed order. The same list feeds NVRTC and the cache key.
    [[nodiscard]] std::vector<std::string> nvrtc_options() const;
    /// The nvJitLink options for PTX → cubin; none for compile_method::nvrtc.
    [[nodiscard]] std::vector<std::string> link_options() const;
};

/// What ptxas reports per kernel; -1 where the log did not say.
struct kernel_resources {
    std::string name;
    int registers = -1;
    int stack_bytes = -1;
    int spill_store_bytes = -1;
    int spill_load_bytes = -1;
};

struct compile_result {
    bool ok = false;
    bool options_rejected = false;  ///< NVRTC refused an option (a config's compile.options)
    std::string nvrtc_log;  ///< warnings too, fetched even on success
    std::string link_log;   ///< ptxas' info and errors
    std::string ptx;
    std::string cubin;
    double load_ms = 0;          ///< loading NVRTC / nvJitLink: the first compile in a process only
    double nvrtc_ms = 0;         ///< C++ → PTX (for the nvrtc method: NVRTC's whole call less ptxas)
    double ptx_to_cubin_ms = 0;  ///< PTX → SASS (ptxas)
    /// NVRTC's own split of C++ → PTX (its -time report): the C++ front end and the NVVM optimizer.
    double front_end_ms = 0, optimizer_ms = 0;
    /// Whether -minimal stayed on: it is dropped, once, for a source that needs what it omits.
    bool minimal = false;
    std::vector<kernel_resources> kernels;
};

/// Compiles with NVRTC's own cache off (-no-cache), so that the times are honest cold times.
/// Thread-safe: each call owns its program and link handles.
[[nodiscard]] compile_result compile(const compile_request& request);

/// Where the toolkit's headers are: $KJIT_CUDA_INCLUDE, else the toolkit kjit was built with.
[[nodiscard]] std::string toolkit_include_dir();

/// "13.0": the NVRTC that kjit loads to compile (loading it if it is not yet).
[[nodiscard]] std::string nvrtc_version();
/// "13.0": the NVRTC kjit was built against, which the soname it loads pins (part of every cache
/// key, so that a cache hit needs no NVRTC at all).
[[nodiscard]] std::string built_nvrtc_version();

/// Per-kernel registers, stack and spills from ptxas' verbose info log.
[[nodiscard]] std::vector<kernel_resources> parse_ptxas_info(const std::string& log);

}  // namespace kjit::jit
