#include "jit/compiler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

#include "jit/compiler_libraries.hpp"
#include "report/trace.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::jit {
namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point start) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

void check_nvrtc(nvrtcResult result, const char* call) {
    if (result != NVRTC_SUCCESS)
        throw error(error_kind::compile, std::string(call) + " failed: " + nvrtc().GetErrorString(result));
}

void check_link(nvJitLinkResult result, const char* call) {
    if (result != NVJITLINK_SUCCESS)
        throw error(error_kind::compile, std::string(call) + " failed: nvJitLinkResult " +
                                             std::to_string(static_cast<int>(result)));
}

struct program_deleter {
    void operator()(nvrtcProgram program) const noexcept { nvrtc().DestroyProgram(&program); }
};
using program_handle = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, program_deleter>;

struct link_deleter {
    void operator()(nvJitLinkHandle handle) const noexcept { nvjitlink().Destroy(&handle); }
};
using link_handle = std::unique_ptr<std::remove_pointer_t<nvJitLinkHandle>, link_deleter>;

std::vector<const char*> c_strings(const std::vector<std::string>& strings) {
    std::vector<const char*> pointers;
    for (const auto& s : strings) pointers.push_back(s.c_str());
    return pointers;
}

std::string program_log(nvrtcProgram program) {
    std::size_t size = 0;
    check_nvrtc(nvrtc().GetProgramLogSize(program, &size), "nvrtcGetProgramLogSize");
    std::string log(size, '\0');
    check_nvrtc(nvrtc().GetProgramLog(program, log.data()), "nvrtcGetProgramLog");
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
}

/// NVRTC's -time report (CSV: file, phase, metric, unit) → the milliseconds of each phase.
std::map<std::string, double> read_phase_times(const std::filesystem::path& file) {
    std::map<std::string, double> phases;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> fields;
        std::istringstream cells(line);
        for (std::string cell; std::getline(cells, cell, ',');) {
            const std::size_t text = cell.find_first_not_of(' ');
            fields.push_back(text == std::string::npos ? std::string() : cell.substr(text));
        }
        if (fields.size() == 4 && fields[3] == "ms") phases[fields[1]] += std::strtod(fields[2].c_str(), nullptr);
    }
    return phases;
}

/// One nvrtcCompileProgram with `options`: false (with the log) when the source does not compile.
/// Fills the PTX, and the cubin when the options name a real architecture.
bool run_nvrtc(const compile_request& request, const std::vector<std::string>& options, compile_result& result) {
    nvrtcProgram raw = nullptr;
    check_nvrtc(nvrtc().CreateProgram(&raw, request.source.c_str(), request.program_name.c_str(), 0,
                                   nullptr, nullptr),
                "nvrtcCreateProgram");
    program_handle program(raw);
    const auto argv = c_strings(options);
    const nvrtcResult compiled = nvrtc().CompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
    result.nvrtc_log = program_log(program.get());
    if (compiled == NVRTC_ERROR_COMPILATION || compiled == NVRTC_ERROR_INVALID_OPTION) {
        if (result.nvrtc_log.empty()) result.nvrtc_log = nvrtc().GetErrorString(compiled);
        result.options_rejected = compiled == NVRTC_ERROR_INVALID_OPTION;
        return false;
    }
    check_nvrtc(compiled, "nvrtcCompileProgram");
    std::size_t size = 0;
    check_nvrtc(nvrtc().GetPTXSize(program.get(), &size), "nvrtcGetPTXSize");
    result.ptx.assign(size, '\0');
    check_nvrtc(nvrtc().GetPTX(program.get(), result.ptx.data()), "nvrtcGetPTX");
    if (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
    if (request.method == compile_method::nvrtc) {
        check_nvrtc(nvrtc().GetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
        result.cubin.assign(size, '\0');
        check_nvrtc(nvrtc().GetCUBIN(program.get(), result.cubin.data()), "nvrtcGetCUBIN");
    }
    return true;
}

/// C++ → PTX and cubin in one NVRTC call for sm_XX, with ptxas' info in the log and NVRTC's own
/// phase times. A source that fails with -minimal is compiled again without it, once: -minimal
/// omits texture types, device-side runtime calls and the like, which a user template may use.
void compile_with_nvrtc(const compile_request& request, compile_result& result) {
    std::vector<std::string> options = request.nvrtc_options();
    result.minimal = std::find(options.begin(), options.end(), "-minimal") != options.end();
    // NVRTC writes its -time report to a file: one in a private directory of this compile's own.
    const fs::temp_directory scratch("kjit-nvrtc");
    const std::filesystem::path times = scratch.path() / "time.csv";
    // -no-cache: NVRTC ≥ 12.9 may serve a recompile from the driver's cache (no honest cold time).
    options.insert(options.end(), {"-no-cache", "--ptxas-options=-v", "--time=" + times.string()});
    std::error_code ec;
    const auto start = clock_type::now();  // a retry's first attempt counts too: it was paid for
    result.ok = run_nvrtc(request, options, result);
    if (!result.ok && result.minimal && !result.options_rejected) {
        std::erase(options, "-minimal");
        result.minimal = false;
        std::filesystem::remove(times, ec);
        result.ok = run_nvrtc(request, options, result);
    }
    const double total_ms = ms_since(start);
    auto phases = read_phase_times(times);
    std::filesystem::remove(times, ec);
    result.front_end_ms = phases["CUDA C++ Frontend"];
    result.optimizer_ms = phases["NVVM Optimizer"];
    result.ptx_to_cubin_ms = phases["PTX Translation"];
    result.nvrtc_ms = std::max(0.0, total_ms - result.ptx_to_cubin_ms);
    // One call did both; NVRTC's own report splits it, with ptxas last.
    const auto ptxas_start = start + std::chrono::duration_cast<clock_type::duration>(
                                         std::chrono::duration<double, std::milli>(result.nvrtc_ms));
    trace::add("nvrtc", start, ptxas_start,
               {{"front_end_ms", result.front_end_ms}, {"optimizer_ms", result.optimizer_ms}, {"minimal", result.minimal}});
    trace::add("ptx_to_cubin", ptxas_start, clock_type::now(), {{"from", "NVRTC's -time report"}});
    // ptxas' lines are what nvJitLink's info log holds in the other method: keep them there.
    std::istringstream lines(result.nvrtc_log);
    std::string compiler_lines;
    for (std::string line; std::getline(lines, line);)
        (line.starts_with("ptxas") ? result.link_log : compiler_lines) += line + "\n";
    while (!result.link_log.empty() && result.link_log.back() == '\n') result.link_log.pop_back();
    while (!compiler_lines.empty() && compiler_lines.back() == '\n') compiler_lines.pop_back();
    if (result.ok) result.nvrtc_log = compiler_lines;  // a failure keeps the whole log for the message
}

std::string link_log_text(nvJitLinkHandle handle, bool errors) {
    std::size_t size = 0;
    check_link(errors ? nvjitlink().GetErrorLogSize(handle, &size) : nvjitlink().GetInfoLogSize(handle, &size),
               errors ? "nvJitLinkGetErrorLogSize" : "nvJitLinkGetInfoLogSize");
    std::string log(size, '\0');
    if (size > 0)
        check_link(errors ? nvjitlink().GetErrorLog(handle, log.data()) : nvjitlink().GetInfoLog(handle, log.data()),
                   errors ? "nvJitLinkGetErrorLog" : "nvJitLinkGetInfoLog");
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
}

/// PTX → cubin for the real architecture (ptxas inside nvJitLink).
bool ptx_to_cubin(const compile_request& request, compile_result& result) {
    auto options = request.link_options();
    // nvJitLink, like NVRTC, may answer from the driver's compute cache on a GPU machine: a
    // cached answer takes under a millisecond and prints no ptxas info (registers, spills).
    options.emplace_back("-no-cache");
    auto argv = c_strings(options);
    nvJitLinkHandle raw = nullptr;
    check_link(nvjitlink().Create(&raw, static_cast<std::uint32_t>(argv.size()), argv.data()), "nvJitLinkCreate");
    link_handle link(raw);
    const nvJitLinkResult added = nvjitlink().AddData(link.get(), NVJITLINK_INPUT_PTX, result.ptx.data(),
                                                  result.ptx.size(), request.program_name.c_str());
    const nvJitLinkResult completed = added == NVJITLINK_SUCCESS ? nvjitlink().Complete(link.get()) : added;
    result.link_log = link_log_text(link.get(), false);
    if (completed != NVJITLINK_SUCCESS) {
        const std::string errors = link_log_text(link.get(), true);
        result.link_log += (result.link_log.empty() ? "" : "\n") + errors;
        return false;
    }
    std::size_t size = 0;
    check_link(nvjitlink().GetLinkedCubinSize(link.get(), &size), "nvJitLinkGetLinkedCubinSize");
    result.cubin.assign(size, '\0');
    check_link(nvjitlink().GetLinkedCubin(link.get(), result.cubin.data()), "nvJitLinkGetLinkedCubin");
    return true;
}

}  // namespace

std::string toolkit_include_dir() {
    // NVRTC has no built-in cuda_fp16.h / cuda_bf16.h: they come from the toolkit kjit was built
    // with, or from $KJIT_CUDA_INCLUDE where the toolkit lives elsewhere at run time.
    const char* override = std::getenv("KJIT_CUDA_INCLUDE");
    return override && *override ? override : KJIT_CUDA_INCLUDE_DIR;
}

const char* to_string(compile_method m) { return m == compile_method::nvrtc ? "nvrtc" : "nvjitlink"; }

std::string compile_request::real_arch() const { return "sm_" + std::to_string(arch) + (arch_specific ? "a" : ""); }

std::vector<std::string> compile_request::nvrtc_options() const {
    const bool real = method == compile_method::nvrtc;
    const std::string virtual_arch = "compute_" + std::to_string(arch) + (arch_specific ? "a" : "");
    std::vector<std::string> options{"--gpu-architecture=" + (real ? real_arch() : virtual_arch), "--std=c++17"};
    if (real) options.emplace_back("-minimal");  // no texture or device-runtime declarations to parse
    if (fast_math) options.emplace_back("--use_fast_math");
    if (!fast_compile.empty()) options.emplace_back("-Ofc=" + fast_compile);
    if (line_info) options.emplace_back("-lineinfo");
    if (toolkit_headers) options.emplace_back("--include-path=" + toolkit_include_dir());
    options.insert(options.end(), extra_options.begin(), extra_options.end());
    return options;
}

std::vector<std::string> compile_request::link_options() const {
    if (method == compile_method::nvrtc) return {};
    std::vector<std::string> options{"-arch=" + real_arch(), "-verbose"};
    if (line_info) options.emplace_back("-lineinfo");
    return options;
}

compile_result compile(const compile_request& request) {
    compile_result result;
    result.load_ms = load_compilers(request.method == compile_method::nvjitlink);
    if (request.method == compile_method::nvrtc) {
        compile_with_nvrtc(request, result);
    } else {
        auto options = request.nvrtc_options();
        options.emplace_back("-no-cache");
        trace::span nvrtc_span("nvrtc");
        const bool have_ptx = run_nvrtc(request, options, result);
        result.nvrtc_ms = nvrtc_span.end();
        if (!have_ptx) return result;
        trace::span link_span("ptx_to_cubin");
        result.ok = ptx_to_cubin(request, result);
        result.ptx_to_cubin_ms = link_span.end();
    }
    result.kernels = parse_ptxas_info(result.link_log);
    return result;
}

std::string nvrtc_version() {
    int major = 0, minor = 0;
    check_nvrtc(nvrtc().Version(&major, &minor), "nvrtcVersion");
    return std::to_string(major) + "." + std::to_string(minor);
}

std::string built_nvrtc_version() { return KJIT_NVRTC_VERSION; }

std::vector<kernel_resources> parse_ptxas_info(const std::string& log) {
    static const std::regex entry(R"(Compiling entry function '([A-Za-z_][A-Za-z0-9_]*)')");
    static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
    static const std::regex used(R"(Used (\d+) registers)");
    std::vector<kernel_resources> kernels;
    std::istringstream lines(log);
    std::string line;
    std::smatch match;
    while (std::getline(lines, line)) {
        if (std::regex_search(line, match, entry)) {
            kernels.push_back({match[1].str()});
        } else if (kernels.empty()) {
            continue;
        } else if (std::regex_search(line, match, frame)) {
            kernels.back().stack_bytes = std::stoi(match[1]);
            kernels.back().spill_store_bytes = std::stoi(match[2]);
            kernels.back().spill_load_bytes = std::stoi(match[3]);
        } else if (std::regex_search(line, match, used)) {
            kernels.back().registers = std::stoi(match[1]);
        }
    }
    return kernels;
}

}  // namespace kjit::jit
