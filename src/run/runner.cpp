#include "run/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <thread>
#include <utility>

#include "reference/reference.hpp"
#include "report/trace.hpp"
#include "run/check.hpp"
#include "run/inputs.hpp"
#include "run/per_call.hpp"
#include "run/stats.hpp"
#include "run/timed.hpp"
#include "util/error.hpp"
#include "util/parallel.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"
#include "why/counters.hpp"

namespace kjit::run {

using detail::timed;
using report::phase;

device_arrays::device_arrays(device_arrays&& other) noexcept
    : device(std::exchange(other.device, nullptr)), ids(std::move(other.ids)) {
    other.ids.clear();
}

device_arrays& device_arrays::operator=(device_arrays&& other) noexcept {
    if (this != &other) {
        release();
        device = std::exchange(other.device, nullptr);
        ids = std::move(other.ids);
        other.ids.clear();
    }
    return *this;
}

device_arrays::~device_arrays() { release(); }

void device_arrays::release() noexcept {
    if (!device || ids.empty()) return;
    trace::span span("release buffers");
    for (const auto& [name, id] : ids) {
        try {
            device->release(id);
        } catch (const std::exception&) {
            // a destructor must not throw: what could not be freed goes with the context
        }
    }
    ids.clear();
}

report::record new_record(const std::string& command, const config::pipeline& p, const std::string& source) {
    report::record rec;
    rec.command = command;
    rec.config_source = source;
    rec.name = p.name;
    rec.variant = config::variant_label(p);
    rec.kjit_version = KJIT_VERSION;
    rec.host = process::host_name();
    rec.config = {{"n", p.n},
                  {"shape", p.shape ? nlohmann::json{p.shape->rows, p.shape->cols} : nlohmann::json()},
                  {"dtype", config::to_string(p.type)},
                  {"fusion", config::to_string(p.fuse)},
                  {"stages", config::describe_stages(p)},
                  {"block", p.launch.block},
                  {"vector_width", p.launch.vector_width},
                  {"grid", config::grid_value(p.launch)},
                  {"fast_math", p.compile.fast_math},
                  {"seed", p.seed},
                  {"family", p.family},
                  {"target", p.target.describe()},
                  {"input_files", describe_file_inputs(p)}};
    rec.policy = family::family_of(p).policy(p);
    for (const auto& s : p.scalars) rec.params[s.name] = s.value;
    return rec;
}

namespace {

/// The buffers a program writes (outputs, temporaries), by name and size: kept ones fit a
/// program whose layout is the same.
std::string own_layout(const family::program& prog) {
    std::string layout;
    for (const auto& b : prog.buffers)
        if (b.role != family::buffer_role::input) layout += b.name + ":" + std::to_string(b.bytes) + ";";
    return layout;
}

/// The counter pass: the chain under the profiler, once per pass its counters need, each from a
/// flushed L2 (gpu::read_counters); each kernel's counters into its row, and the chain's into the
/// record.
void read_counters(gpu& device, const std::string& set, const std::function<void()>& enqueue_chain,
                   report::record& rec) {
    trace::span span("hardware counters");
    const auto counters = why::counters_of(set);
    std::vector<std::string> metrics;
    for (const auto& c : counters) metrics.emplace_back(c.metric);
    const auto reading = device.read_counters(metrics, enqueue_chain);
    if (!reading.problem.empty()) {
        rec.warnings.push_back("no hardware counters: " + reading.problem);
        return;
    }
    if (reading.launches.size() != rec.kernels.size()) {
        rec.warnings.push_back("no hardware counters: the profiler saw " + std::to_string(reading.launches.size()) +
                               " launches of a chain of " + std::to_string(rec.kernels.size()) + " kernels");
        return;
    }
    std::vector<std::map<std::string, double>> per_kernel;
    for (std::size_t i = 0; i < rec.kernels.size(); ++i) {
        auto& row = rec.kernels[i];
        for (const auto& c : counters)
            if (const auto found = reading.launches[i].second.find(c.metric); found != reading.launches[i].second.end())
                row.counters[c.column] = found->second;
        per_kernel.push_back(row.counters);
    }
    rec.counters = why::combine(counters, per_kernel);
    if (!reading.unavailable.empty())
        rec.warnings.push_back("this GPU does not count " + join(reading.unavailable, ", ") + " (their columns are left out)");
}

}  // namespace

family::dims grid_on_device(const family::kernel& k, long long resident) {
    family::dims grid = k.grid;
    resident = std::max(1LL, resident);
    if (k.resident == family::resident_rule::at_most) grid.x = std::min(grid.x, resident);
    if (k.resident == family::resident_rule::exactly) grid.x = resident;
    return grid;
}

kernel_launch launch_of(const config::pipeline& p, const family::program& prog, const family::kernel& k,
                        family::dims grid, const std::function<argument_value(const family::argument&)>& buffer) {
    kernel_launch launch{grid, k.block, k.shared_bytes, {}};
    for (const auto& a : k.args) {
        using kind = family::argument::kind;
        using type = argument_value::type;
        if (a.what == kind::buffer) {
            launch.args.push_back(buffer(a));
            launch.args.back().map = a.map;
        }
        if (a.what == kind::scalar)
            launch.args.push_back({.what = prog.double_scalars ? type::f64 : type::f32,
                                   .number = config::find_scalar(p, a.name)->value});
        if (a.what == kind::size) launch.args.push_back({.what = type::i64, .integer = a.size});
    }
    return launch;
}

namespace {

void record_device(const device_info& info, report::record& rec) {
    rec.device_index = info.index;
    rec.device_name = info.name;
    rec.driver_version = std::to_string(info.driver_version / 1000) + "." + std::to_string(info.driver_version % 1000 / 10);
}

/// What a run finds on its device from the last run (run_options::keep_on_device): the inputs'
/// copies while the inputs are the same, and its own buffers while the program's are.
struct kept_buffers {
    bool inputs = false;
    bool own = false;
    std::string layout;  ///< own_layout of this run's program
};

kept_buffers kept_from(const host_data& host, const gpu& device, const family::program& prog, bool inputs_at_hand,
                       bool keep_on_device) {
    kept_buffers kept{.layout = own_layout(prog)};
    kept.inputs = inputs_at_hand && keep_on_device && host.inputs_on_device.device == &device && host.copied == host.inputs;
    kept.own = keep_on_device && host.own_on_device.device == &device && host.own_layout == kept.layout;
    return kept;
}

/// Each kernel's grid on this device (its resident blocks known only here), and its record row's
/// launch shape and occupancy.
std::vector<family::dims> fit_grids(gpu& device, const family::program& prog, const std::vector<kernel_id>& kernels,
                                    report::record& rec) {
    const device_info& info = device.device();
    std::vector<family::dims> grids;
    for (std::size_t i = 0; i < prog.kernels.size(); ++i) {
        const family::kernel& k = prog.kernels[i];
        auto& row = rec.kernels[i];
        const int threads = static_cast<int>(k.block.count());
        row.block = threads;
        row.blocks_per_sm = device.max_active_blocks_per_sm(kernels[i], threads, k.shared_bytes);
        grids.push_back(grid_on_device(k, static_cast<long long>(row.blocks_per_sm) * info.sm_count));
        row.grid = grids.back().count();
        row.grid_dims = {grids.back().x, grids.back().y, grids.back().z};
        row.block_dims = {k.block.x, k.block.y, k.block.z};
        if (info.max_threads_per_sm > 0)
            row.occupancy = static_cast<double>(row.blocks_per_sm * threads) / info.max_threads_per_sm;
    }
    return grids;
}

/// A run's buffers on the device, every one by its name: the kept ones live in the host data
/// (run_options::keep_on_device), the others in `owned`, released with the run.
struct run_buffers {
    device_arrays owned;
    std::map<std::string, buffer_id> ids;
};

/// Allocates what is not kept, and copies the inputs in where their copies are not.
run_buffers place_buffers(gpu& device, const family::program& prog, const reference::input_arrays& inputs,
                          host_data& host, const kept_buffers& kept, bool keep_on_device, report::record& rec) {
    run_buffers placed{device_arrays(device), {}};
    if (keep_on_device && !kept.inputs) {
        host.inputs_on_device = device_arrays(device);
        host.copied = host.inputs;
    }
    if (keep_on_device && !kept.own) {
        host.own_on_device = device_arrays(device);
        host.own_layout.clear();  // set once all are allocated
    }
    device_arrays& input_copies = keep_on_device ? host.inputs_on_device : placed.owned;
    device_arrays& own = keep_on_device ? host.own_on_device : placed.owned;
    timed(rec, phase::alloc, [&] {
        for (const auto& b : prog.buffers) {
            if (b.role != family::buffer_role::input && !kept.own) own.ids[b.name] = device.allocate(b.bytes);
            if (b.role == family::buffer_role::input && !kept.inputs)
                input_copies.ids[b.name] = device.allocate(inputs.at(b.name).bytes());
        }
    });
    if (keep_on_device) host.own_layout = kept.layout;
    if (!kept.inputs)
        timed(rec, phase::h2d, [&] {
            for (const auto& [name, array] : inputs) device.copy_to_device(input_copies.ids.at(name), array.data(), array.bytes());
            device.synchronize();
        });
    placed.ids = own.ids;
    placed.ids.insert(input_copies.ids.begin(), input_copies.ids.end());
    return placed;
}

/// Fills every buffer the kernels write with all-ones bytes, NaN in float and double: an element
/// no kernel wrote cannot pass the check. Returns the output buffer.
const family::buffer& poison_outputs(gpu& device, const family::program& prog,
                                     const std::map<std::string, buffer_id>& buffers) {
    trace::span span("poison outputs");
    const family::buffer* output = nullptr;
    for (const auto& b : prog.buffers) {
        if (b.role == family::buffer_role::input) continue;
        device.fill_bytes(buffers.at(b.name), reference::k_poison_byte, b.bytes);
        if (b.role == family::buffer_role::output) output = &b;
    }
    device.synchronize();
    return *output;
}

/// The output, copied back into the host data's result array (made, or kept from the last run).
reference::typed_array& copy_result(gpu& device, const config::pipeline& p, const family::buffer& output,
                                    buffer_id on_device, host_data& host, bool keep_on_device, report::record& rec) {
    // A fresh array costs a page fault per 4 KiB, taken here on all cores rather than one at a
    // time inside the copy.
    const std::size_t output_count = output.bytes / config::element_size(p.type);
    if (!host.result || host.result->type() != p.type || host.result->size() != output_count) {
        trace::span span("result array");
        host.result_pinned = nullptr;  // before the memory it pins goes
        host.result.emplace(p.type, output_count);
        auto* first = static_cast<unsigned char*>(host.result->data());
        const auto touch = [&](std::size_t begin, std::size_t end) { std::memset(first + begin, 0, end - begin); };
        parallel_ranges(output.bytes, touch, 1 << 20);
    }
    reference::typed_array& out = *host.result;
    if (keep_on_device && !host.result_pinned) {  // kept: the next run copies here too
        trace::span span("pin result");
        host.result_pinned = device.pin(out.data(), out.bytes());
    }
    timed(rec, phase::d2h, [&] { device.copy_to_host(out.data(), on_device, output.bytes); });
    return out;
}

/// The timed loops, with the check of `out` beside them. The check reads only host memory: it
/// runs on other cores while the GPU runs the loops, whose thread mostly waits on events. It
/// takes half the cores (or the caller's limit), so that no launch waits for a core; its phase is
/// its own time, on its own thread. A failed loop's record keeps the check.
void measure_while_checking(gpu& device, const std::function<void()>& enqueue_chain, const config::pipeline& p,
                            const family::program& prog, const reference::input_arrays& inputs,
                            const reference::typed_array& out, const reference::expected_values& expected,
                            report::record& rec) {
    report::record checked;
    auto check = std::async(std::launch::async, [&, limit = t_parallel_limit] {
        trace::name_thread("check");
        const parallel_limit cap(limit > 0 ? limit : std::max(1u, std::thread::hardware_concurrency() / 2));
        return timed(checked, phase::verify, [&] { return check_output(p, prog, inputs, out, expected); });
    });
    const auto take_check = [&] {
        rec.check = check.get();
        rec.set(phase::verify, *checked.get(phase::verify));
        rec.status = rec.check->pass ? report::outcome::pass : report::outcome::fail;
    };
    try {
        measure_kernel(device, enqueue_chain, p.measure, rec);
    } catch (const error&) {
        take_check();
        throw;
    }
    take_check();
}

}  // namespace

void run_variant(const config::pipeline& p, gpu& device, const build_context& ctx, report::record& rec,
                 const run_options& options) {
    record_device(device.device(), rec);
    const int arch = p.compile.arch.value_or(device.device().arch);
    std::optional<built_variant> own_build;
    const built_variant& built = options.built ? *options.built : own_build.emplace(build_variant(p, arch, ctx, rec));
    if (options.built) record_build(built, arch, ctx, rec);
    const family::program& prog = built.program;
    host_data local;
    host_data& host = options.reuse ? *options.reuse : local;
    const std::string input_key = inputs_key(p);
    const bool inputs_at_hand = host.inputs && host.inputs->key == input_key;
    const kept_buffers kept = kept_from(host, device, prog, inputs_at_hand, options.keep_on_device);
    {
        trace::span span("check memory");
        if (!inputs_at_hand) check_host_memory(p);  // before anything is loaded or allocated
        check_device_memory(p, prog, device, [&](const family::buffer& b) {
            return b.role == family::buffer_role::input ? !kept.inputs : !kept.own;
        });
    }

    rec.module_image = options.load_ptx ? "ptx" : "cubin";
    const scoped_module module(device, timed(rec, phase::module_load, [&] {
        return device.load_module(options.load_ptx ? built.binary.ptx : built.binary.cubin);
    }));
    const std::vector<kernel_id> kernels = timed(rec, phase::get_function, [&] {
        std::vector<kernel_id> ids;
        for (const auto& k : prog.kernels) ids.push_back(device.get_kernel(module.id(), k.name));
        return ids;
    });
    const std::vector<family::dims> grids = fit_grids(device, prog, kernels, rec);

    if (!inputs_at_hand) {
        host.inputs = nullptr;  // free the old arrays before making new ones
        host.inputs = make_host_inputs(p, rec);
    }
    const reference::input_arrays& inputs = host.inputs->arrays;
    const run_buffers buffers = place_buffers(device, prog, inputs, host, kept, options.keep_on_device, rec);
    // Each kernel's launch, bound once: its shape and its arguments in its parameter order.
    std::vector<kernel_launch> launches;
    for (std::size_t i = 0; i < prog.kernels.size(); ++i)
        launches.push_back(launch_of(p, prog, prog.kernels[i], grids[i], [&](const family::argument& a) {
            return argument_value{.what = argument_value::type::buffer, .buffer = buffers.ids.at(a.name)};
        }));
    auto enqueue_chain = [&] {
        for (std::size_t i = 0; i < prog.kernels.size(); ++i) device.launch(kernels[i], launches[i]);
    };

    const family::buffer& output = poison_outputs(device, prog, buffers.ids);
    // The first launch is checked: it is the result a user's first call produces, after lazy loading.
    timed(rec, phase::first_launch, [&] {
        enqueue_chain();
        device.synchronize();
    });
    const reference::typed_array& out =
        copy_result(device, p, output, buffers.ids.at(output.name), host, options.keep_on_device, rec);
    if (!host.reference || host.reference->inputs_key != input_key || host.reference->key != reference_key(p)) {
        host.reference = nullptr;
        host.reference = make_host_reference(p, *host.inputs, rec);
    }
    const reference::expected_values& expected = host.reference->expected;
    measure_while_checking(device, enqueue_chain, p, prog, inputs, out, expected, rec);
    if (options.save) rec.saved = save_result(*options.save, p, prog, rec.sweep_index, out, expected);
    if (p.measure.per_call_transfers) measure_per_call(device, prog, kernels, launches, buffers.ids, inputs, p.measure, rec);
    if (!options.counter_set.empty()) read_counters(device, options.counter_set, enqueue_chain, rec);
}

}  // namespace kjit::run
