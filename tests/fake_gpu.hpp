// A run::gpu that keeps buffers in host memory and runs "kernels" through a callback (usually a
// plan_executor, which runs them as the program's plan says), so the runner's phases, argument
// wiring, poisoning and failure handling are tested with no GPU.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "run/gpu.hpp"
#include "run/session.hpp"
#include "plan_executor.hpp"
#include "util/error.hpp"

namespace kjit::testing {

class fake_gpu final : public run::gpu {
public:
    /// Called for each launch with the kernel's name, the memory of its buffer arguments in order,
    /// and the launch.
    using launch_callback =
        std::function<void(const std::string&, const std::vector<std::vector<unsigned char>*>&, const run::kernel_launch&)>;
    launch_callback on_launch;
    launch_callback after_launch;  ///< then this: a test's tampering with the result, or its look at it
    std::function<void(const fake_gpu&)> on_close;  ///< called as the device is destroyed
    std::string fail_call;  ///< a method name: that call throws a driver error
    std::size_t free_bytes = std::size_t{1} << 36;  ///< what free_memory() reports
    /// What read_state() returns, in turn (then empty states): before and after the timed loops.
    std::vector<report::device_state> states;
    /// time_ms varies by up to ± this fraction, deterministically, as a real device's samples do.
    double jitter = 0;
    double launch_ms = 0.001;  ///< device time of one launch
    /// Device time of `launch` instead, where set: a landscape for a tuner to search.
    std::function<double(const run::kernel_launch&)> launch_time;
    int timings = 0;  ///< time_ms calls
    std::vector<std::string> calls;
    int launches = 0;
    int modules_loaded = 0;
    std::vector<run::module_id> unloaded_modules;

    explicit fake_gpu(int index = 0) {
        m_info.index = index;
        m_info.name = "Fake GPU";
        m_info.arch = 90;
        m_info.sm_count = 4;
        m_info.l2_bytes = 1 << 20;
        m_info.driver_version = 13000;
        m_info.max_threads_per_sm = 2048;
    }
    ~fake_gpu() override {
        if (on_close) on_close(*this);
    }
    fake_gpu(const fake_gpu&) = delete;
    fake_gpu& operator=(const fake_gpu&) = delete;

    const run::device_info& device() const override { return m_info; }
    void set_arch(int arch) { m_info.arch = arch; }
    run::module_id load_module(const std::string& cubin) override {
        record("load_module");
        loaded_cubin = cubin;
        return static_cast<run::module_id>(modules_loaded++);
    }
    void unload_module(run::module_id module) noexcept override { unloaded_modules.push_back(module); }
    run::kernel_id get_kernel(run::module_id, const std::string& name) override {
        record("get_kernel");
        m_kernels.push_back(name);
        return static_cast<run::kernel_id>(m_kernels.size() - 1);
    }
    int max_active_blocks_per_sm(run::kernel_id, int, std::size_t) override { return 8; }
    std::size_t free_memory() override { return free_bytes; }
    report::device_state read_state() override {
        if (m_states_read >= states.size()) return {};
        return states[m_states_read++];
    }
    run::buffer_id allocate(std::size_t bytes) override {
        record("allocate");
        m_buffers.emplace_back(bytes, 0);
        return static_cast<run::buffer_id>(m_buffers.size() - 1);
    }
    void release(run::buffer_id id) override {
        ++released;
        m_buffers.at(id).clear();
    }
    void copy_to_device(run::buffer_id id, const void* source, std::size_t bytes) override {
        record("copy_to_device");
        std::memcpy(m_buffers.at(id).data(), source, bytes);
    }
    void copy_to_host(void* destination, run::buffer_id id, std::size_t bytes) override {
        record("copy_to_host");
        last_copied_to = destination;
        std::memcpy(destination, m_buffers.at(id).data(), bytes);
    }
    /// Host memory pinned now: shared with the pins, which may outlive the fake.
    std::shared_ptr<std::set<const void*>> pinned = std::make_shared<std::set<const void*>>();
    std::unique_ptr<pinned_memory> pin(void* host, std::size_t) override {
        record("pin");
        struct fake_pin final : pinned_memory {
            std::shared_ptr<std::set<const void*>> pinned;
            const void* host;
            fake_pin(std::shared_ptr<std::set<const void*>> p, const void* h) : pinned(std::move(p)), host(h) {}
            ~fake_pin() override { pinned->erase(host); }
        };
        pinned->insert(host);
        return std::make_unique<fake_pin>(pinned, host);
    }
    void fill_bytes(run::buffer_id id, std::uint8_t value, std::size_t bytes) override {
        record("fill_bytes");
        std::memset(m_buffers.at(id).data(), value, bytes);
    }
    void launch(run::kernel_id kernel, const run::kernel_launch& launch) override {
        record("launch");
        ++launches;
        m_launched_ms += launch_time ? launch_time(launch) : launch_ms;
        last_grid = launch.grid.x;
        last_block = static_cast<int>(launch.block.x);
        last_launch = launch;
        std::vector<std::vector<unsigned char>*> buffers;
        for (const auto& a : launch.args) {
            if (a.what == run::argument_value::type::buffer) buffers.push_back(&m_buffers.at(a.buffer));
            if (a.what == run::argument_value::type::address) buffers.push_back(caller_memory(a.address));
        }
        launched_names.push_back(m_kernels.at(kernel));
        if (on_launch) on_launch(m_kernels.at(kernel), buffers, launch);
        if (after_launch) after_launch(m_kernels.at(kernel), buffers, launch);
    }
    /// The caller's "device memory" here is a host vector: an address is address_of(vector).
    static std::uintptr_t address_of(std::vector<unsigned char>& memory) { return reinterpret_cast<std::uintptr_t>(&memory); }
    static std::vector<unsigned char>* caller_memory(std::uintptr_t address) {
        return reinterpret_cast<std::vector<unsigned char>*>(address);
    }
    void launch_on(std::uintptr_t stream, run::kernel_id kernel, const run::kernel_launch& launch) override {
        streams.push_back(stream);
        this->launch(kernel, launch);
    }
    void copy_from_address(void* destination, std::uintptr_t address, std::size_t bytes, std::uintptr_t stream) override {
        record("copy_from_address");
        streams.push_back(stream);
        std::memcpy(destination, caller_memory(address)->data(), bytes);
    }
    std::vector<std::uintptr_t> streams;  ///< the caller's streams that launch_on and copy_from_address were given
    void flush_l2() override { ++flushes; }
    void synchronize() override {}
    double time_ms(const std::function<void()>& enqueue) override {
        m_launched_ms = 0;
        enqueue();
        m_noise_state = m_noise_state * 6364136223846793005ULL + 1442695040888963407ULL;
        const double unit = static_cast<double>(m_noise_state >> 11) * 0x1p-53 * 2 - 1;  // in [-1, 1)
        ++timings;
        return m_launched_ms * (1 + jitter * unit);
    }

    std::string counters_problem;               ///< read_counters reads nothing and says this
    std::vector<std::string> counters_missing;  ///< metrics read_counters calls unavailable
    /// read_counters' value of `metric` for the i-th launch of its pass: 1000 (ns) for the
    /// duration, else 10 · (i + 1).
    static double counter_value(const std::string& metric, std::size_t i) {
        return metric == "gpu__time_duration.sum" ? 1000.0 : 10.0 * static_cast<double>(i + 1);
    }
    counter_reading read_counters(const std::vector<std::string>& metrics, const std::function<void()>& enqueue) override {
        record("read_counters");
        counter_reading reading;
        if (!counters_problem.empty()) {
            reading.problem = counters_problem;
            return reading;
        }
        const std::size_t before = launched_names.size();
        enqueue();
        for (std::size_t i = before; i < launched_names.size(); ++i) {
            std::map<std::string, double> values;
            for (const auto& m : metrics)
                if (std::find(counters_missing.begin(), counters_missing.end(), m) == counters_missing.end())
                    values[m] = counter_value(m, i - before);
            reading.launches.emplace_back(launched_names[i], std::move(values));
        }
        reading.unavailable = counters_missing;
        return reading;
    }
    std::vector<std::string> launched_names;  ///< every launch's kernel, in order

    struct fake_graph final : graph {
        std::function<void()> work;
    };
    std::unique_ptr<graph> capture_graph(const std::function<void()>& enqueue) override {
        record("capture_graph");
        auto g = std::make_unique<fake_graph>();
        g->work = enqueue;
        return g;
    }
    double time_graph_ms(graph& g) override {
        const int before = launches;
        dynamic_cast<fake_graph&>(g).work();
        return 0.0005 * (launches - before);  // graphs hide the launch gaps: 0.5 µs per launch
    }

    std::string loaded_cubin;
    run::kernel_launch last_launch;
    long long last_grid = 0;
    int last_block = 0;
    int flushes = 0;
    int released = 0;
    const void* last_copied_to = nullptr;  ///< copy_to_host's last destination

private:
    void record(const std::string& call) {
        calls.push_back(call);
        if (call == fail_call)
            throw error(error_kind::driver, call + " failed: CUDA_ERROR_OUT_OF_MEMORY: out of memory");
    }
    run::device_info m_info;
    std::size_t m_states_read = 0;
    std::uint64_t m_noise_state = 1;
    double m_launched_ms = 0;  ///< device time of the launches since time_ms began
    std::vector<std::string> m_kernels;
    std::vector<std::vector<unsigned char>> m_buffers;
};

/// Fake GPUs for a run::session: `count` devices, each set up by `setup` when opened.
class fake_provider final : public run::gpu_provider {
public:
    std::string why_not;  ///< what unavailable() says; empty: the fakes are there
    int count = 1;
    std::function<void(fake_gpu&)> setup;
    std::atomic<int> opened{0};
    std::chrono::milliseconds probe_time{0};  ///< the first unavailable() takes this long, as cuInit

    std::string unavailable() override {
        if (!m_probed.exchange(true)) std::this_thread::sleep_for(probe_time);
        return why_not;
    }
    std::vector<run::device_info> devices() override {
        std::vector<run::device_info> list;
        for (int i = 0; i < count; ++i) list.push_back(fake_gpu(i).device());
        return list;
    }
    std::unique_ptr<run::gpu> open(int index, report::record& startup) override {
        if (opened++ == 0) startup.set(report::phase::driver_init, 100);
        startup.set(report::phase::context, 50);
        auto gpu = std::make_unique<fake_gpu>(index);
        if (setup) setup(*gpu);
        return gpu;
    }

private:
    std::atomic<bool> m_probed{false};
};

}  // namespace kjit::testing
