// The narrow interface between the runner and a GPU: load a cubin, own buffers, launch, time.
// src/cuda implements it with the Driver API; tests implement it with a fake, so the runner's
// logic is tested on machines with no GPU. No CUDA headers here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/target.hpp"
#include "family/program.hpp"
#include "report/device_state.hpp"
#include "report/trace.hpp"

namespace kjit::run {

struct device_info {
    int index = 0;
    std::string name;
    int arch = 0;  ///< compute capability as major*10 + minor: 90 for sm_90
    int sm_count = 0;
    std::size_t memory_bytes = 0;
    std::size_t l2_bytes = 0;
    int clock_mhz = 0;
    int memory_clock_mhz = 0;
    int memory_bus_bits = 0;
    int max_threads_per_sm = 0;
    std::size_t shared_per_block = 0;  ///< the most dynamic shared memory a block may opt in to
    std::size_t shared_per_sm = 0;
    int registers_per_sm = 0;
    int driver_version = 0;  ///< e.g. 13000
};

/// The GPU `d` is, as the target a pipeline is resolved for: its own limits where it gave them,
/// else those of a typical GPU of its architecture (config::named_target).
[[nodiscard]] config::target target_of(const device_info& d);

using module_id = std::uint32_t;
using kernel_id = std::uint32_t;
using buffer_id = std::uint32_t;

/// One argument of a launch, typed, in the kernel's parameter order (the program's
/// family::argument list): a device buffer, the caller's device memory (an array from Python,
/// which kjit neither owns nor frees), a scalar in the compute type (float or double), or a
/// 64-bit size. A buffer or address with a map is passed as a TMA tensor map of that memory.
struct argument_value {
    enum class type { buffer, address, f32, f64, i64 } what = type::buffer;
    buffer_id buffer = 0;
    double number = 0;      ///< f32 and f64
    long long integer = 0;  ///< i64
    std::uintptr_t address = 0;
    std::optional<family::tensor_map> map = std::nullopt;
};

/// A kernel's launch: its shape and its arguments, bound once and launched as often as timing needs.
struct kernel_launch {
    family::dims grid, block;
    std::size_t shared_bytes = 0;  ///< dynamic shared memory per block
    std::vector<argument_value> args;
};

/// One device, one context and one stream. Calls that enqueue work return at once; copies to the
/// host and time_ms wait. Every call that fails throws kjit::error(driver) naming the call.
class gpu {
public:
    virtual ~gpu() = default;

    [[nodiscard]] virtual const device_info& device() const = 0;

    /// Loads a cubin, or PTX text (which the driver then JIT-compiles).
    [[nodiscard]] virtual module_id load_module(const std::string& image) = 0;
    /// Unloads a module and with it its kernels, which may not be used again. Never throws (it
    /// runs as a run ends, also one that failed).
    virtual void unload_module(module_id module) noexcept = 0;
    [[nodiscard]] virtual kernel_id get_kernel(module_id module, const std::string& name) = 0;
    /// Resident blocks per SM for `block` threads and `shared_bytes` of dynamic shared memory
    /// each (the occupancy API).
    [[nodiscard]] virtual int max_active_blocks_per_sm(kernel_id kernel, int block, std::size_t shared_bytes) = 0;

    /// Clocks, temperature, power and clock limits now (NVML); empty fields where it cannot tell.
    [[nodiscard]] virtual report::device_state read_state() = 0;

    /// Device memory free now, in bytes.
    [[nodiscard]] virtual std::size_t free_memory() = 0;
    [[nodiscard]] virtual buffer_id allocate(std::size_t bytes) = 0;
    virtual void release(buffer_id buffer) = 0;
    virtual void copy_to_device(buffer_id buffer, const void* source, std::size_t bytes) = 0;
    virtual void copy_to_host(void* destination, buffer_id buffer, std::size_t bytes) = 0;
    virtual void fill_bytes(buffer_id buffer, std::uint8_t value, std::size_t bytes) = 0;
    /// Host memory page-locked (pinned) until the handle goes, also after the gpu has gone.
    class pinned_memory {
    public:
        virtual ~pinned_memory() = default;
    };
    /// Pins `bytes` at `host`: copies to it then go at the bus's speed instead of through the
    /// driver's staging buffers. Pinning costs about one such copy: worth it for memory that
    /// copies go to again and again (a warm session's result).
    [[nodiscard]] virtual std::unique_ptr<pinned_memory> pin(void* host, std::size_t bytes) = 0;

    /// Enqueues kernel(args…) on launch.grid blocks of launch.block threads. The message of a
    /// failed launch is built only when it fails: back-to-back launches do no host work between them.
    virtual void launch(kernel_id kernel, const kernel_launch& launch) = 0;
    /// The same on the caller's `stream` (a CUstream as an integer, as PyTorch and CuPy give it;
    /// 0 is the legacy default stream), not the gpu's own: kernels called on the caller's arrays.
    virtual void launch_on(std::uintptr_t stream, kernel_id kernel, const kernel_launch& launch) = 0;
    /// Copies the caller's device memory at `address` to the host after the work on `stream`; waits.
    virtual void copy_from_address(void* destination, std::uintptr_t address, std::size_t bytes,
                                   std::uintptr_t stream) = 0;
    /// Enqueues a write over a buffer larger than L2, evicting whatever a kernel left there.
    virtual void flush_l2() = 0;
    virtual void synchronize() = 0;
    /// Device time of the work `enqueue` puts on the stream, between two events; waits for it.
    [[nodiscard]] virtual double time_ms(const std::function<void()>& enqueue) = 0;

    /// Hardware counters (CUPTI's metric names) of each kernel `enqueue` launches, read after the
    /// timed loops: the chain run as often as its counters need, each time from a flushed L2, as
    /// the cold loop runs it. One (kernel name, metric → value) per launch, in order.
    struct counter_reading {
        std::vector<std::pair<std::string, std::map<std::string, double>>> launches;
        std::vector<std::string> unavailable;  ///< metrics this GPU does not count: left out
        std::string problem;  ///< why no counter could be read (no CUPTI, no permission); empty when read
    };
    [[nodiscard]] virtual counter_reading read_counters(const std::vector<std::string>& metrics,
                                                        const std::function<void()>& enqueue) = 0;

    /// A CUDA graph of the work `enqueue` puts on the stream, captured once and replayed by
    /// time_graph_ms; building it (capture + instantiate) is the caller's one-off cost to time.
    class graph {
    public:
        virtual ~graph() = default;
    };
    [[nodiscard]] virtual std::unique_ptr<graph> capture_graph(const std::function<void()>& enqueue) = 0;
    /// Device time of one replay of `g`, between two events; waits for it.
    [[nodiscard]] virtual double time_graph_ms(graph& g) = 0;
};

/// A module loaded for one run and unloaded when the run ends: a watch loop or a sweep, which
/// load one module per run in one context, would otherwise hold every module they ever loaded.
class scoped_module {
public:
    scoped_module(gpu& device, module_id module) : m_device(device), m_module(module) {}
    ~scoped_module() {
        trace::span span("unload module");
        m_device.unload_module(m_module);
    }
    scoped_module(const scoped_module&) = delete;
    scoped_module& operator=(const scoped_module&) = delete;
    [[nodiscard]] module_id id() const { return m_module; }

private:
    gpu& m_device;
    module_id m_module;
};

}  // namespace kjit::run
