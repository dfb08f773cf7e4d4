#include "jit/compiler_libraries.hpp"

#include <dlfcn.h>

#include <atomic>
#include <string>

#include "report/trace.hpp"
#include "util/error.hpp"

#define KJIT_TEXT_(x) #x
#define KJIT_TEXT(x) KJIT_TEXT_(x)

namespace kjit::jit {
namespace {

std::atomic<bool> g_nvrtc_loaded{false}, g_nvjitlink_loaded{false};

/// dlopen of the soname, else of the file kjit was linked against at build time.
void* open_library(const std::string& soname, const char* built_with) {
    trace::span span("load " + soname);
    if (void* handle = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    const char* first = ::dlerror();
    const std::string why = first ? first : soname;
    if (void* handle = ::dlopen(built_with, RTLD_NOW | RTLD_LOCAL)) return handle;
    throw error(error_kind::compile, "cannot load " + soname + " (" + why + ") or " + built_with +
                                         ": kjit needs the CUDA toolkit's NVRTC and nvJitLink to compile");
}

template <class Fn>
void resolve(void* handle, const std::string& library, const std::string& symbol, Fn& slot) {
    slot = reinterpret_cast<Fn>(::dlsym(handle, symbol.c_str()));
    if (!slot) throw error(error_kind::compile, library + " has no " + symbol + ": it is older than the toolkit kjit was built with");
}

nvrtc_api load_nvrtc() {
    const std::string library = "libnvrtc.so." KJIT_TEXT(KJIT_CUDA_MAJOR);
    void* h = open_library(library, KJIT_NVRTC_LIBRARY);
    nvrtc_api api;
    resolve(h, library, "nvrtcGetErrorString", api.GetErrorString);
    resolve(h, library, "nvrtcVersion", api.Version);
    resolve(h, library, "nvrtcCreateProgram", api.CreateProgram);
    resolve(h, library, "nvrtcCompileProgram", api.CompileProgram);
    resolve(h, library, "nvrtcDestroyProgram", api.DestroyProgram);
    resolve(h, library, "nvrtcGetProgramLogSize", api.GetProgramLogSize);
    resolve(h, library, "nvrtcGetProgramLog", api.GetProgramLog);
    resolve(h, library, "nvrtcGetPTXSize", api.GetPTXSize);
    resolve(h, library, "nvrtcGetPTX", api.GetPTX);
    resolve(h, library, "nvrtcGetCUBINSize", api.GetCUBINSize);
    resolve(h, library, "nvrtcGetCUBIN", api.GetCUBIN);
    g_nvrtc_loaded = true;
    return api;
}

nvjitlink_api load_nvjitlink() {
    const std::string library = "libnvJitLink.so." KJIT_TEXT(KJIT_CUDA_MAJOR);
    void* h = open_library(library, KJIT_NVJITLINK_LIBRARY);
    // nvJitLink.h's functions are inline wrappers of versioned symbols: __nvJitLinkCreate_13_0.
    const auto symbol = [](const char* name) { return std::string("__") + name + "_" KJIT_TEXT(KJIT_CUDA_MAJOR) "_0"; };
    nvjitlink_api api;
    resolve(h, library, symbol("nvJitLinkCreate"), api.Create);
    resolve(h, library, symbol("nvJitLinkDestroy"), api.Destroy);
    resolve(h, library, symbol("nvJitLinkAddData"), api.AddData);
    resolve(h, library, symbol("nvJitLinkComplete"), api.Complete);
    resolve(h, library, symbol("nvJitLinkGetLinkedCubinSize"), api.GetLinkedCubinSize);
    resolve(h, library, symbol("nvJitLinkGetLinkedCubin"), api.GetLinkedCubin);
    resolve(h, library, symbol("nvJitLinkGetErrorLogSize"), api.GetErrorLogSize);
    resolve(h, library, symbol("nvJitLinkGetErrorLog"), api.GetErrorLog);
    resolve(h, library, symbol("nvJitLinkGetInfoLogSize"), api.GetInfoLogSize);
    resolve(h, library, symbol("nvJitLinkGetInfoLog"), api.GetInfoLog);
    g_nvjitlink_loaded = true;
    return api;
}

}  // namespace

const nvrtc_api& nvrtc() {
    static const nvrtc_api api = load_nvrtc();
    return api;
}

const nvjitlink_api& nvjitlink() {
    static const nvjitlink_api api = load_nvjitlink();
    return api;
}

double load_compilers(bool with_nvjitlink) {
    if (g_nvrtc_loaded && (g_nvjitlink_loaded || !with_nvjitlink)) return 0;
    trace::span span("load compilers");
    (void)nvrtc();
    if (with_nvjitlink) (void)nvjitlink();
    return span.end();
}

}  // namespace kjit::jit
