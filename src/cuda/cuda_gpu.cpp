#include "cuda/cuda_gpu.hpp"

#include <atomic>
#include <mutex>

#include "cuda/devices.hpp"
#include "cuda/handles.hpp"
#include "cuda/wait.hpp"
#include "cuda/cupti.hpp"
#include "cuda/nvml.hpp"
#include "cuda/launch_arguments.hpp"
#include "report/trace.hpp"
#include "util/error.hpp"
#include "util/units.hpp"

namespace kjit::cuda {
namespace {

nvml_device timed_nvml(const std::string& bus_id, open_times& times) {
    trace::span span("nvml");
    nvml_device device(bus_id);
    times.nvml_ms = span.end();
    return device;
}

class cuda_gpu final : public run::gpu {
public:
    cuda_gpu(const probe_result& driver, int index, open_times& times)
        : cuda_gpu(driver, index, device_at(*driver.api, index, driver.device_count), times) {}

    cuda_gpu(const probe_result& driver, int index, CUdevice device, open_times& times)
        : m_api(driver.api), m_watch(std::make_shared<work_watch>(driver.api, index)),
          m_nvml(timed_nvml(pci_bus_id(*driver.api, device), times)),
          m_info(query_device(*m_api, device, index, driver.driver_version)), m_device(device) {
        trace::span span("context");
        CUcontext context = nullptr;
        m_api->check(m_api->cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain",
                     "device " + std::to_string(index));
        m_context = context_handle(context, primary_context_deleter{m_api, device});
        m_api->check(m_api->cuCtxSetCurrent(context), "cuCtxSetCurrent");
        CUstream stream = nullptr;
        m_api->check(m_api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        m_stream = stream_handle(stream, {m_api});
        m_start = make_event();
        m_stop = make_event();
        wait_for(stream, "first sync");
        times.context_ms = span.end();
    }

    cuda_gpu(const cuda_gpu&) = delete;
    cuda_gpu& operator=(const cuda_gpu&) = delete;

    // Work that never ended is still on the GPU: every destroy call could wait for it for ever.
    ~cuda_gpu() override {
        if (!m_watch->abandoned()) return;
        for (auto& module : m_modules) module.abandon();
        for (auto& buffer : m_buffers) buffer.abandon();
        m_flush.abandon();
        m_start.abandon();
        m_stop.abandon();
        m_stream.abandon();
        m_context.abandon();
    }

    const run::device_info& device() const override { return m_info; }

    run::module_id load_module(const std::string& image) override {
        m_watch->refuse_if_abandoned();
        CUmodule module = nullptr;
        // std::string keeps a terminating NUL, which PTX text needs.
        m_api->check(m_api->cuModuleLoadData(&module, image.c_str()), "cuModuleLoadData",
                     units::bytes(static_cast<double>(image.size())) + " image");
        m_modules.emplace_back(module, api_deleter<CUmodule, &driver_api::cuModuleUnload>{m_api});
        return static_cast<run::module_id>(m_modules.size() - 1);
    }

    void unload_module(run::module_id module) noexcept override {
        if (m_watch->abandoned()) m_modules[module].abandon();
        m_modules[module] = {};
    }

    run::kernel_id get_kernel(run::module_id module, const std::string& name) override {
        CUfunction function = nullptr;
        m_api->check(m_api->cuModuleGetFunction(&function, m_modules.at(module).get(), name.c_str()),
                     "cuModuleGetFunction", "'" + name + "'");
        m_kernels.push_back({function, name});
        return static_cast<run::kernel_id>(m_kernels.size() - 1);
    }

    int max_active_blocks_per_sm(run::kernel_id kernel, int block, std::size_t shared_bytes) override {
        allow_shared_memory(m_kernels.at(kernel), shared_bytes);
        int blocks = 0;
        m_api->check(m_api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, m_kernels.at(kernel).function,
                                                                         block, shared_bytes),
                     "cuOccupancyMaxActiveBlocksPerMultiprocessor", "'" + m_kernels.at(kernel).name + "'");
        return blocks;
    }

    run::buffer_id allocate(std::size_t bytes) override {
        m_watch->refuse_if_abandoned();
        CUdeviceptr pointer = 0;
        m_api->check(m_api->cuMemAlloc(&pointer, bytes), "cuMemAlloc", units::bytes(static_cast<double>(bytes)));
        m_buffers.emplace_back(pointer, api_deleter<CUdeviceptr, &driver_api::cuMemFree>{m_api});
        return static_cast<run::buffer_id>(m_buffers.size() - 1);
    }

    void release(run::buffer_id buffer) override {
        if (m_watch->abandoned()) m_buffers.at(buffer).abandon();
        m_buffers.at(buffer) = {};
    }

    void copy_to_device(run::buffer_id buffer, const void* source, std::size_t bytes) override {
        m_watch->refuse_if_abandoned();
        if (!copy_to_device_in(*m_api, m_stream.get(), pointer(buffer), source, bytes, m_watch->limit()))
            m_watch->abandon("copying " + units::bytes(static_cast<double>(bytes)) + " in");
    }

    void copy_to_host(void* destination, run::buffer_id buffer, std::size_t bytes) override {
        // cuMemcpyDtoH is synchronous with respect to the legacy stream only: wait for ours first.
        synchronize();
        m_api->check(m_api->cuMemcpyDtoH(destination, pointer(buffer), bytes), "cuMemcpyDtoH",
                     units::bytes(static_cast<double>(bytes)));
    }

    report::device_state read_state() override { return m_nvml.read(); }

    std::size_t free_memory() override {
        std::size_t free = 0, total = 0;
        m_api->check(m_api->cuMemGetInfo(&free, &total), "cuMemGetInfo");
        return free;
    }

    void fill_bytes(run::buffer_id buffer, std::uint8_t value, std::size_t bytes) override {
        m_watch->refuse_if_abandoned();
        m_api->check(m_api->cuMemsetD8Async(pointer(buffer), value, bytes, m_stream.get()), "cuMemsetD8Async");
    }

    // Portable (pinned for every context), and holding a retain of the primary context of its
    // own, which it makes current to unpin: it may outlive this gpu, so it shares its watch. On a
    // device abandoned by work that never ends it stays pinned and the context retained: unpinning
    // and a last release (which resets the context) could each wait for that work.
    struct cuda_pinned final : pinned_memory {
        std::shared_ptr<const driver_api> api;
        std::shared_ptr<const work_watch> watch;
        context_handle context;
        void* host = nullptr;
        cuda_pinned(std::shared_ptr<const driver_api> a, std::shared_ptr<const work_watch> w, context_handle c, void* h)
            : api(std::move(a)), watch(std::move(w)), context(std::move(c)), host(h) {}
        ~cuda_pinned() override {
            if (watch->abandoned()) {
                context.abandon();
                return;
            }
            if (api->cuCtxPushCurrent(context.get()) != CUDA_SUCCESS) return;
            (void)api->cuMemHostUnregister(host);
            CUcontext popped = nullptr;
            (void)api->cuCtxPopCurrent(&popped);
        }
    };

    std::unique_ptr<pinned_memory> pin(void* host, std::size_t bytes) override {
        m_watch->refuse_if_abandoned();
        CUcontext retained = nullptr;
        m_api->check(m_api->cuDevicePrimaryCtxRetain(&retained, m_device), "cuDevicePrimaryCtxRetain", "to pin host memory");
        context_handle context(retained, primary_context_deleter{m_api, m_device});
        m_api->check(m_api->cuMemHostRegister(host, bytes, CU_MEMHOSTREGISTER_PORTABLE), "cuMemHostRegister",
                     units::bytes(static_cast<double>(bytes)) + " of host memory");
        return std::make_unique<cuda_pinned>(m_api, m_watch, std::move(context), host);
    }

    void launch(run::kernel_id kernel, const run::kernel_launch& launch) override {
        enqueue(kernel, launch, m_stream.get());
    }

    // The caller's thread may not be the one that opened the device: the context is made current
    // there first (the primary context, which PyTorch and CuPy share; a cheap thread-local store).
    void launch_on(std::uintptr_t stream, run::kernel_id kernel, const run::kernel_launch& launch) override {
        m_api->check(m_api->cuCtxSetCurrent(m_context.get()), "cuCtxSetCurrent");
        enqueue(kernel, launch, reinterpret_cast<CUstream>(stream));
    }

    void copy_from_address(void* destination, std::uintptr_t address, std::size_t bytes, std::uintptr_t stream) override {
        m_api->check(m_api->cuCtxSetCurrent(m_context.get()), "cuCtxSetCurrent");
        wait_for(reinterpret_cast<CUstream>(stream), "the caller's stream");
        m_api->check(m_api->cuMemcpyDtoH(destination, static_cast<CUdeviceptr>(address), bytes), "cuMemcpyDtoH",
                     units::bytes(static_cast<double>(bytes)) + " of the caller's array");
    }

    void flush_l2() override {
        m_watch->refuse_if_abandoned();
        if (!m_flush) {
            // Twice the L2 size, so that nothing a kernel touched survives the memset.
            m_flush_bytes = std::max<std::size_t>(2 * m_info.l2_bytes, 1 << 20);
            CUdeviceptr pointer = 0;
            m_api->check(m_api->cuMemAlloc(&pointer, m_flush_bytes), "cuMemAlloc", "L2 flush buffer");
            m_flush = buffer_handle(pointer, {m_api});
        }
        m_api->check(m_api->cuMemsetD8Async(m_flush.get(), 0, m_flush_bytes, m_stream.get()), "cuMemsetD8Async",
                     "L2 flush");
    }

    void synchronize() override { wait_for(m_stream.get(), "kjit's stream"); }

    double time_ms(const std::function<void()>& enqueue) override {
        m_watch->refuse_if_abandoned();
        m_api->check(m_api->cuEventRecord(m_start.get(), m_stream.get()), "cuEventRecord", "start");
        enqueue();
        m_api->check(m_api->cuEventRecord(m_stop.get(), m_stream.get()), "cuEventRecord", "stop");
        m_watch->wait([&] { return m_api->cuEventQuery(m_stop.get()); }, "cuEventQuery", "the timed work");
        float ms = 0;
        m_api->check(m_api->cuEventElapsedTime(&ms, m_start.get(), m_stop.get()), "cuEventElapsedTime");
        return ms;
    }

    struct cuda_graph final : graph {
        graph_handle captured;
        graph_exec_handle exec;
    };

    counter_reading read_counters(const std::vector<std::string>& metrics, const std::function<void()>& enqueue) override {
        // Each pass from a flushed L2, as the cold loop's chains start.
        return cuda::read_counters(m_context.get(), m_info.index, metrics, [&] { flush_l2(); }, enqueue, [&] { synchronize(); });
    }

    std::unique_ptr<graph> capture_graph(const std::function<void()>& enqueue) override {
        // Thread-local capture: other threads (a sweep's other devices) may use CUDA meanwhile.
        m_api->check(m_api->cuStreamBeginCapture(m_stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                     "cuStreamBeginCapture");
        CUgraph captured = nullptr;
        try {
            enqueue();
        } catch (...) {
            (void)m_api->cuStreamEndCapture(m_stream.get(), &captured);
            if (captured) (void)m_api->cuGraphDestroy(captured);
            throw;
        }
        m_api->check(m_api->cuStreamEndCapture(m_stream.get(), &captured), "cuStreamEndCapture");
        auto result = std::make_unique<cuda_graph>();
        result->captured = graph_handle(captured, {m_api});
        CUgraphExec exec = nullptr;
        m_api->check(m_api->cuGraphInstantiateWithFlags(&exec, captured, 0), "cuGraphInstantiateWithFlags");
        result->exec = graph_exec_handle(exec, {m_api});
        return result;
    }

    double time_graph_ms(graph& g) override {
        auto& cg = dynamic_cast<cuda_graph&>(g);
        return time_ms([&] { m_api->check(m_api->cuGraphLaunch(cg.exec.get(), m_stream.get()), "cuGraphLaunch"); });
    }

private:
    void wait_for(CUstream stream, const std::string& what) {
        m_watch->wait([&] { return m_api->cuStreamQuery(stream); }, "cuStreamQuery", what);
    }

    /// cuLaunchKernel on `stream`.
    void enqueue(run::kernel_id kernel, const run::kernel_launch& launch, CUstream stream) {
        m_watch->refuse_if_abandoned();
        void** const args = launch_arguments(*m_api, launch, [this](run::buffer_id b) { return pointer(b); });
        auto& k = m_kernels.at(kernel);
        allow_shared_memory(k, launch.shared_bytes);
        const family::dims &grid = launch.grid, &block = launch.block;
        const auto u = [](long long v) { return static_cast<unsigned>(v); };
        const CUresult launched =
            m_api->cuLaunchKernel(k.function, u(grid.x), u(grid.y), u(grid.z), u(block.x), u(block.y), u(block.z),
                                  static_cast<unsigned>(launch.shared_bytes), stream, args, nullptr);
        if (launched != CUDA_SUCCESS) {  // the message is built only now
            const auto shown = [](const family::dims& d) {
                return std::to_string(d.x) + (d.y > 1 || d.z > 1 ? " × " + std::to_string(d.y) : "") +
                       (d.z > 1 ? " × " + std::to_string(d.z) : "");
            };
            m_api->fail(launched, "cuLaunchKernel", "'" + k.name + "' grid " + shown(grid) + ", block " + shown(block));
        }
    }

    struct loaded_kernel {
        CUfunction function;
        std::string name;
        std::size_t shared_allowed = 0;  ///< dynamic shared memory a launch may ask for
    };

    /// A kernel may take more dynamic shared memory than the 48 KiB every block has only once it is
    /// allowed to, and those 48 KiB hold its static shared memory too: a row kernel asking for
    /// exactly 48 KiB beside its reductions' words failed to launch. So any dynamic amount is
    /// allowed first, once per kernel and size.
    void allow_shared_memory(loaded_kernel& k, std::size_t bytes) {
        if (bytes <= k.shared_allowed) return;
        m_api->check(m_api->cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               static_cast<int>(bytes)),
                     "cuFuncSetAttribute", "'" + k.name + "' " + std::to_string(bytes) + " bytes of shared memory");
        k.shared_allowed = bytes;
    }

    event_handle make_event() {
        CUevent event = nullptr;
        m_api->check(m_api->cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
        return {event, {m_api}};
    }

    CUdeviceptr pointer(run::buffer_id buffer) const {
        const CUdeviceptr p = m_buffers.at(buffer).get();
        if (p == 0) throw error(error_kind::driver, "internal: buffer " + std::to_string(buffer) + " was released");
        return p;
    }

    // Member order is destruction order, reversed: everything made in the context goes before it.
    std::shared_ptr<const driver_api> m_api;
    std::shared_ptr<work_watch> m_watch;  ///< its waits, and whether work it waited for never finished
    nvml_device m_nvml;
    run::device_info m_info;
    CUdevice m_device;
    context_handle m_context;
    stream_handle m_stream;
    event_handle m_start, m_stop;
    std::vector<module_handle> m_modules;
    std::vector<loaded_kernel> m_kernels;
    std::vector<buffer_handle> m_buffers;
    buffer_handle m_flush;
    std::size_t m_flush_bytes = 0;
};

}  // namespace

std::unique_ptr<run::gpu> open_gpu(const probe_result& driver, int index, open_times& times) {
    if (driver.state != availability::ok) throw error(error_kind::driver, driver.detail);
    return std::make_unique<cuda_gpu>(driver, index, times);
}

namespace {
class driver_provider final : public run::gpu_provider {
public:
    std::string unavailable() override {
        const probe_result& d = driver();
        return d.state == availability::ok ? std::string() : std::string(to_string(d.state)) + ": " + d.detail;
    }
    std::vector<run::device_info> devices() override {
        // What a process sees does not change while it runs; a warm session's run asks each time.
        std::call_once(m_listed, [this] { m_devices = list_devices(driver()); });
        return m_devices;
    }
    std::unique_ptr<run::gpu> open(int index, report::record& startup) override {
        if (!m_init_reported.exchange(true)) startup.set(report::phase::driver_init, driver().init_ms);
        open_times times;
        auto gpu = open_gpu(driver(), index, times);
        startup.set(report::phase::context, times.context_ms);
        startup.set(report::phase::nvml, times.nvml_ms);
        return gpu;
    }

private:
    const probe_result& driver() {
        std::call_once(m_probed, [this] { m_driver = probe_driver(); });
        return m_driver;
    }
    std::once_flag m_probed;
    probe_result m_driver;
    std::once_flag m_listed;
    std::vector<run::device_info> m_devices;
    std::atomic<bool> m_init_reported{false};
};
}  // namespace

std::unique_ptr<run::gpu_provider> driver_gpus() { return std::make_unique<driver_provider>(); }

}  // namespace kjit::cuda
