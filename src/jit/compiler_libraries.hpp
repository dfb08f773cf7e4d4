// NVRTC and nvJitLink, loaded with dlopen the first time something compiles: a run served from the
// cache never maps them (together ~10–30 ms of every process start when linked). The headers give
// the types; the soname is the toolkit's major version (libnvrtc.so.13), then the file kjit was
// built against, so an installed toolkit outside the loader's path still works.
#pragma once
#include <nvJitLink.h>
#include <nvrtc.h>

namespace kjit::jit {

struct nvrtc_api {
    decltype(&::nvrtcGetErrorString) GetErrorString = nullptr;
    decltype(&::nvrtcVersion) Version = nullptr;
    decltype(&::nvrtcCreateProgram) CreateProgram = nullptr;
    decltype(&::nvrtcCompileProgram) CompileProgram = nullptr;
    decltype(&::nvrtcDestroyProgram) DestroyProgram = nullptr;
    decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
    decltype(&::nvrtcGetProgramLog) GetProgramLog = nullptr;
    decltype(&::nvrtcGetPTXSize) GetPTXSize = nullptr;
    decltype(&::nvrtcGetPTX) GetPTX = nullptr;
    decltype(&::nvrtcGetCUBINSize) GetCUBINSize = nullptr;
    decltype(&::nvrtcGetCUBIN) GetCUBIN = nullptr;
};

struct nvjitlink_api {
    decltype(&::nvJitLinkCreate) Create = nullptr;
    decltype(&::nvJitLinkDestroy) Destroy = nullptr;
    decltype(&::nvJitLinkAddData) AddData = nullptr;
    decltype(&::nvJitLinkComplete) Complete = nullptr;
    decltype(&::nvJitLinkGetLinkedCubinSize) GetLinkedCubinSize = nullptr;
    decltype(&::nvJitLinkGetLinkedCubin) GetLinkedCubin = nullptr;
    decltype(&::nvJitLinkGetErrorLogSize) GetErrorLogSize = nullptr;
    decltype(&::nvJitLinkGetErrorLog) GetErrorLog = nullptr;
    decltype(&::nvJitLinkGetInfoLogSize) GetInfoLogSize = nullptr;
    decltype(&::nvJitLinkGetInfoLog) GetInfoLog = nullptr;
};

/// Loaded on first call (thread-safe); throws kjit::error(compile) naming the library and why.
[[nodiscard]] const nvrtc_api& nvrtc();
[[nodiscard]] const nvjitlink_api& nvjitlink();

/// Loads NVRTC, and nvJitLink when `with_nvjitlink`, if this process has not yet: the ms this
/// call spent on it (waiting for another thread's load included), 0 when they were there.
[[nodiscard]] double load_compilers(bool with_nvjitlink);

}  // namespace kjit::jit
