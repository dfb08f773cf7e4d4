#include "run/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <utility>

#include "expr/expr.hpp"
#include "reference/reference.hpp"
#include "report/trace.hpp"
#include "run/inputs.hpp"
#include "run/stats.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/parallel.hpp"
#include "util/units.hpp"

namespace kjit::run {
namespace {

using report::phase;

/// Runs `work`, records its host-clock time as `which`, and prefixes any kjit::error with the
/// phase so that "cuMemAlloc failed" reads "device alloc: cuMemAlloc(…) failed: …".
template <class Work>
auto timed(report::record& rec, phase which, Work&& work) {
    trace::span span(report::phase_name(which));
    auto finish = [&] { rec.set(which, span.end()); };
    try {
        if constexpr (std::is_void_v<decltype(work())>) {
            work();
            finish();
        } else {
            auto result = work();
            finish();
            return result;
        }
    } catch (const error& e) {
        throw error(e.kind(), std::string(report::phase_title(which)) + ": " + e.what());
    }
}

std::string number(double value) {
    if (std::isnan(value)) return "nan";
    char text[40];
    std::snprintf(text, sizeof text, "%.9g", value);
    return text;
}

/// "element 7: greyscales=3, weights=0.41 → out=nan, ref=0.0048 (|out − ref| 0.1 > 1e-6)"; in a 2-D
/// run "element 7 (row 0, col 7): …", or "row 3: → out=…" where the result is one per row.
std::string describe_element(const config::pipeline& p, std::size_t i, const reference::input_arrays& inputs,
                             const reference::typed_array& out, double ref, double scale,
                             const config::tolerance& tol) {
    const bool per_row = config::result_per_row(p);
    std::string text = (per_row ? "row " : "element ") + std::to_string(i);
    if (p.shape && !per_row) {
        const auto cols = static_cast<std::size_t>(p.shape->cols);
        text += " (row " + std::to_string(i / cols) + ", col " + std::to_string(i % cols) + ")";
    }
    text += ":";
    const char* sep = " ";
    for (const auto& [name, array] : inputs) {
        if (per_row) break;  // a row's value comes from the whole row
        text += sep + name + "=" + number(array.get(i % array.size()));  // a per-column input repeats
        sep = ", ";
    }
    const double value = out.get(i);
    text += " → out=" + number(value) + ", ref=" + number(ref) + " (|out − ref| " + number(std::fabs(value - ref)) +
            " > allowed " + number(reference::allowed_error(tol, ref, scale)) + ")";
    return text;
}

}  // namespace

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

void prebuilt_binaries::put(jit::build_output build) {
    const std::lock_guard lock(m_mutex);
    m_by_key.emplace(build.key, std::move(build));
}

std::optional<jit::build_output> prebuilt_binaries::take(const std::string& key) {
    const std::lock_guard lock(m_mutex);
    auto found = m_by_key.extract(key);
    if (found.empty()) return std::nullopt;
    return std::move(found.mapped());
}

report::record new_record(const std::string& command, const config::pipeline& p, const std::string& source) {
    report::record rec;
    rec.command = command;
    rec.config_source = source;
    rec.name = p.name;
    rec.variant = config::variant_label(p);
    rec.kjit_version = KJIT_VERSION;
    rec.config = {{"n", p.n},
                  {"shape", p.shape ? nlohmann::json{p.shape->rows, p.shape->cols} : nlohmann::json()},
                  {"dtype", config::to_string(p.type)},
                  {"fusion", config::to_string(p.fuse)},
                  {"stages", config::describe_stages(p)},
                  {"block", p.launch.block},
                  {"vector_width", config::effective_vector_width(p)},
                  {"grid", p.launch.grid           ? nlohmann::json(*p.launch.grid)
                           : p.launch.grid_resident ? nlohmann::json("resident")
                                                    : nlohmann::json("auto")},
                  {"fast_math", p.compile.fast_math},
                  {"seed", p.seed}};
    return rec;
}

jit::compile_request compile_request_for(const config::pipeline& p, const codegen::generated_source& generated,
                                         int arch) {
    jit::compile_request request;
    request.source = generated.source;
    request.program_name = p.name + ".cu";
    request.arch = arch;
    request.fast_math = p.compile.fast_math;
    request.extra_options = p.compile.options;
    request.toolkit_headers = !generated.headers.empty();
    request.method = p.compile.path == config::compile_path::nvrtc ? jit::compile_method::nvrtc : jit::compile_method::nvjitlink;
    if (p.compile.effort != config::compile_effort::full) request.fast_compile = config::to_string(p.compile.effort);
    return request;
}

built_variant build_variant(const config::pipeline& p, int arch, const build_context& ctx, report::record& rec) {
    built_variant built;
    built.generated = timed(rec, phase::codegen, [&] { return codegen::generate(p, ctx.templates); });
    const jit::compile_request request = compile_request_for(p, built.generated, arch);
    std::optional<jit::build_output> ready;
    if (ctx.prebuilt) ready = ctx.prebuilt->take(jit::cache_key(request));
    built.binary = ready ? std::move(*ready) : jit::build(request, ctx.cache, ctx.mode, rec.variant);

    const auto& b = built.binary;
    rec.nvrtc_version = b.nvrtc_version;
    rec.arch = "sm_" + std::to_string(arch);
    rec.cache_status = b.cache_status;
    rec.cache_key = b.key;
    rec.cache_problem = b.cache_problem;
    rec.ptx_bytes = b.ptx.size();
    rec.cubin_bytes = b.cubin.size();
    if (ctx.cache && ctx.mode == jit::cache_mode::use) rec.set(phase::cache_lookup, b.lookup_ms);
    rec.compile_method = jit::to_string(b.method);
    if (b.compiled) {
        if (b.load_ms > 0) rec.set(phase::compiler_load, b.load_ms);
        rec.set(phase::nvrtc, b.nvrtc_ms);
        rec.set(phase::ptx_to_cubin, b.ptx_to_cubin_ms);
        if (b.front_end_ms > 0) rec.nvrtc_front_end_ms = b.front_end_ms;
        if (b.optimizer_ms > 0) rec.nvrtc_optimizer_ms = b.optimizer_ms;
    }
    if (ctx.cache && b.compiled && ctx.mode != jit::cache_mode::off) rec.set(phase::cache_store, b.store_ms);
    rec.kernels.clear();
    for (const auto& k : built.generated.kernels) {
        report::kernel_row row{k.name};
        for (const auto& res : b.kernels) {
            if (res.name != k.name) continue;
            row.registers = res.registers;
            row.stack_bytes = res.stack_bytes;
            row.spill_bytes = res.spill_store_bytes < 0 ? -1 : res.spill_store_bytes + res.spill_load_bytes;
        }
        rec.kernels.push_back(row);
    }
    return built;
}

int chains_per_batch(double cold_median_ms, int repeat) {
    if (!(cold_median_ms > 0)) return repeat;
    return static_cast<int>(std::clamp(std::ceil(k_batch_ms / cold_median_ms), 1.0, static_cast<double>(repeat)));
}

namespace {
/// Samples of one chain, L2 flushed before each: at least m.repeat, then more until the median's
/// relative standard error is within m.noise or m.max_ms of sampling is spent. The error is
/// re-estimated every tenth of the samples so far (a sort each time), not after every sample.
std::vector<double> cold_samples(gpu& device, const std::function<void()>& chain, const config::measure_spec& m) {
    constexpr std::size_t k_most = 100000;
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> samples;
    std::size_t next_check = static_cast<std::size_t>(m.repeat);
    for (;;) {
        device.flush_l2();
        samples.push_back(device.time_ms(chain));
        if (samples.size() < next_check) continue;
        if (samples.size() >= k_most || median_relative_error(samples) <= m.noise) break;
        if (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() >= m.max_ms) break;
        next_check = samples.size() + std::max<std::size_t>(1, samples.size() / 10);
    }
    return samples;
}

/// Kernel timing of one chain of launches, after `warmup` untimed chains. Cold: L2 flushed before
/// each sample (see cold_samples), events around one chain. Batch: events around
/// chains_per_batch back-to-back chains, total / chains, k_batches times. Graph: the same chains
/// captured once in a CUDA graph and replayed k_batches times; a replay has no CPU launch gaps, so
/// batch − graph is the launch overhead.
void measure_kernel(gpu& device, const std::function<void()>& chain, const config::measure_spec& m,
                    report::record& rec) {
    int chains = m.repeat;
    const auto repeat_chain = [&] {
        for (int i = 0; i < chains; ++i) chain();
    };
    trace::span all("timed_launches");
    try {
        for (int i = 0; i < m.warmup; ++i) chain();
        device.synchronize();
        rec.state_before = device.read_state();
        trace::span cold_loop("cold loop");
        std::vector<double> cold = cold_samples(device, chain, m), batch;
        cold_loop.note("samples", cold.size());
        cold_loop.end();
        rec.kernel_cold_noise = median_relative_error(cold);
        if (*rec.kernel_cold_noise > m.noise)
            rec.warnings.push_back("cold median noise " + number(100 * *rec.kernel_cold_noise) + " % after " +
                                   std::to_string(cold.size()) + " samples in measure.max_ms = " + number(m.max_ms) +
                                   " ms; the target was " + number(100 * m.noise) + " %");
        rec.kernel_cold = summarize(std::move(cold));
        chains = chains_per_batch(rec.kernel_cold->median, m.repeat);
        trace::span batch_loop("batch loop", {{"chains_per_batch", chains}});
        for (int b = 0; b < k_batches; ++b) batch.push_back(device.time_ms(repeat_chain) / chains);
        batch_loop.end();
        rec.kernel_batch = summarize(std::move(batch));
    } catch (const error& e) {
        throw error(e.kind(), std::string("timed launches: ") + e.what());
    }
    const auto graph = timed(rec, phase::graph_build, [&] { return device.capture_graph(repeat_chain); });
    try {
        trace::span replay_loop("graph replays");
        std::vector<double> replays;
        for (int b = 0; b < k_batches; ++b) replays.push_back(device.time_graph_ms(*graph) / chains);
        rec.kernel_graph = summarize(std::move(replays));
    } catch (const error& e) {
        throw error(e.kind(), std::string("graph launches: ") + e.what());
    }
    rec.state_after = device.read_state();
    rec.set(phase::timed_launches, all.end() - *rec.get(phase::graph_build));
    for (auto& warning : state_warnings(rec.state_before, rec.state_after)) rec.warnings.push_back(std::move(warning));
}

std::string sized(const config::pipeline& p) {
    const std::string size = p.shape ? std::to_string(p.shape->rows) + " × " + std::to_string(p.shape->cols)
                                     : "n = " + std::to_string(p.n);
    return size + " " + std::string(config::to_string(p.type));
}

/// Bytes of each buffer of a run by kind: an input or intermediate array, the output, a row value.
struct buffer_sizes {
    std::size_t array = 0, output = 0, row_value = 0;
};
buffer_sizes sizes_of(const config::pipeline& p) {
    const std::size_t element = config::element_size(p.type);
    const std::size_t rows = p.shape ? static_cast<std::size_t>(p.shape->rows) : 0;
    return {static_cast<std::size_t>(p.n) * element, static_cast<std::size_t>(config::output_count(p)) * element,
            rows * (config::computes_in_double(p.type) ? sizeof(double) : sizeof(float))};
}

/// Refuses a run the host cannot hold, before anything is allocated: the inputs, the result and
/// the float64 reference with its error scales.
void check_host_memory(const config::pipeline& p) {
    const double element = static_cast<double>(config::element_size(p.type));
    double inputs = 0;
    for (const auto& in : p.inputs) inputs += static_cast<double>(config::elements_of(p, in));
    const double outputs = static_cast<double>(config::output_count(p));
    const double host_needed = inputs * element + outputs * (element + 2 * sizeof(double));
    const double host_available = static_cast<double>(available_host_memory());
    if (host_needed > host_available)
        throw error(error_kind::memory, sized(p) + " needs " + units::bytes(host_needed) +
                                            " of host memory (inputs, result, float64 reference); " +
                                            units::bytes(host_available) + " is available");
}

/// The same for the GPU: every buffer of the run.
void check_device_memory(const config::pipeline& p, const codegen::generated_source& generated, gpu& device) {
    const buffer_sizes size = sizes_of(p);
    const std::string what = sized(p);
    double device_needed = static_cast<double>(size.array * generated.temporaries.size() + size.output +
                                               size.row_value * generated.row_values.size());
    for (const auto& in : p.inputs)
        device_needed += static_cast<double>(config::elements_of(p, in) * config::element_size(p.type));
    const double device_free = static_cast<double>(device.free_memory());
    if (device_needed > device_free)
        throw error(error_kind::memory, what + " needs " + units::bytes(device_needed) + " of GPU memory (" +
                                            std::to_string(p.inputs.size() + generated.temporaries.size() + 1 +
                                                           generated.row_values.size()) +
                                            " buffers); " + device.device().name + " has " + units::bytes(device_free) +
                                            " free");
}

}  // namespace

std::string inputs_key(const config::pipeline& p) {
    nlohmann::json key = {{"n", p.n}, {"dtype", config::to_string(p.type)}, {"seed", p.seed}};
    if (p.shape) key["shape"] = {p.shape->rows, p.shape->cols};
    for (const auto& in : p.inputs)
        key["inputs"].push_back({in.name, static_cast<int>(in.fill), in.low, in.high, in.mean, in.std, in.value,
                                 static_cast<int>(in.round), in.per_column});
    return key.dump();
}

std::string reference_key(const config::pipeline& p) {
    nlohmann::json key = {{"fusion", config::to_string(p.fuse)}};
    // A row sum's error bound follows the kernels' order of additions.
    if (config::has_reductions(p)) key["sum_depth"] = config::row_sum_depth(p);
    for (const auto& s : p.stages)
        if (s.reduce != config::reduction::none) key["reduce"].push_back({config::to_string(s.reduce), s.as, s.formula});
    for (const auto& s : p.scalars) key["scalars"].push_back({s.name, s.value});
    for (const auto& s : p.stages) key["stages"].push_back({s.input, expr::to_text(s.exact), expr::to_text(s.kernel)});
    return key.dump();
}

std::shared_ptr<const host_inputs> make_host_inputs(const config::pipeline& p, report::record& rec) {
    check_host_memory(p);
    return timed(rec, phase::host_inputs,
                 [&] { return std::make_shared<const host_inputs>(host_inputs{inputs_key(p), make_inputs(p)}); });
}

std::shared_ptr<const host_reference> make_host_reference(const config::pipeline& p, const host_inputs& inputs,
                                                          report::record& rec) {
    return timed(rec, phase::host_reference, [&] {
        return std::make_shared<const host_reference>(
            host_reference{inputs.key, reference_key(p), reference::compute(p, inputs.arrays)});
    });
}

host_data make_host_data(const config::pipeline& p, report::record& rec) {
    host_data host;
    host.inputs = make_host_inputs(p, rec);
    host.reference = make_host_reference(p, *host.inputs, rec);
    return host;
}

void run_variant(const config::pipeline& p, gpu& device, const build_context& ctx, report::record& rec,
                 const run_options& options) {
    const device_info& info = device.device();
    rec.device_index = info.index;
    rec.device_name = info.name;
    rec.driver_version = std::to_string(info.driver_version / 1000) + "." + std::to_string(info.driver_version % 1000 / 10);
    const built_variant built = build_variant(p, p.compile.arch.value_or(info.arch), ctx, rec);
    const auto& plan = built.generated.kernels;
    host_data local;
    host_data& host = options.reuse ? *options.reuse : local;
    const std::string input_key = inputs_key(p);
    const bool inputs_at_hand = host.inputs && host.inputs->key == input_key;
    if (!inputs_at_hand) check_host_memory(p);  // before anything is loaded or allocated
    check_device_memory(p, built.generated, device);

    rec.module_image = options.load_ptx ? "ptx" : "cubin";
    const scoped_module module(device, timed(rec, phase::module_load, [&] {
        return device.load_module(options.load_ptx ? built.binary.ptx : built.binary.cubin);
    }));
    std::vector<kernel_id> kernels = timed(rec, phase::get_function, [&] {
        std::vector<kernel_id> ids;
        for (const auto& k : plan) ids.push_back(device.get_kernel(module.id(), k.name));
        return ids;
    });
    const int width = built.generated.vector_width;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        auto& row = rec.kernels[i];
        row.block = p.launch.block;
        row.blocks_per_sm = device.max_active_blocks_per_sm(kernels[i], p.launch.block, plan[i].shared_bytes);
        const long long resident = static_cast<long long>(row.blocks_per_sm) * info.sm_count;
        const std::optional<long long> given = p.launch.grid_resident ? std::max(1LL, resident) : p.launch.grid;
        row.grid = plan[i].per_row ? row_grid_size(p.shape->rows, p.launch.cluster, given)
                                   : grid_size(p.n, p.launch.block, width, given, resident);
        if (info.max_threads_per_sm > 0)
            row.occupancy = static_cast<double>(row.blocks_per_sm * p.launch.block) / info.max_threads_per_sm;
    }

    if (!inputs_at_hand) {
        host.inputs = nullptr;  // free the old arrays before making new ones
        host.inputs = make_host_inputs(p, rec);
    }
    const reference::input_arrays& inputs = host.inputs->arrays;
    const buffer_sizes size = sizes_of(p);
    const std::size_t bytes = size.array;
    device_arrays owned(device);  // this run's own: outputs and temporaries, and the inputs unless kept
    const bool copied_before = options.keep_inputs_on_device && host.inputs_on_device.device == &device &&
                               host.copied == host.inputs;
    if (options.keep_inputs_on_device && !copied_before) {
        host.inputs_on_device = device_arrays(device);
        host.copied = host.inputs;
    }
    device_arrays& input_copies = options.keep_inputs_on_device ? host.inputs_on_device : owned;
    timed(rec, phase::alloc, [&] {
        if (!copied_before)
            for (const auto& [name, array] : inputs) input_copies.ids[name] = device.allocate(array.bytes());
        for (const auto& name : built.generated.temporaries) owned.ids[name] = device.allocate(bytes);
        for (const auto& name : built.generated.row_values) owned.ids[name] = device.allocate(size.row_value);
        owned.ids[codegen::k_output_buffer] = device.allocate(size.output);
    });
    if (!copied_before)
        timed(rec, phase::h2d, [&] {
            for (const auto& [name, array] : inputs)
                device.copy_to_device(input_copies.ids.at(name), array.data(), array.bytes());
            device.synchronize();
        });
    std::map<std::string, buffer_id> buffers = owned.ids;
    buffers.insert(input_copies.ids.begin(), input_copies.ids.end());

    std::vector<kernel_args> arguments;
    rec.bytes_moved = 0;
    for (const auto& k : plan) {
        kernel_args args;
        for (const auto& name : k.reads) args.buffers.push_back(buffers.at(name));
        for (const auto& name : k.row_reads) args.buffers.push_back(buffers.at(name));
        args.buffers.push_back(buffers.at(k.writes));
        for (const auto& name : k.also_writes) args.buffers.push_back(buffers.at(name));
        for (const auto& name : k.scalars) {
            const auto found = std::find_if(p.scalars.begin(), p.scalars.end(),
                                            [&](const config::scalar_param& s) { return s.name == name; });
            args.scalars.push_back(found->value);
        }
        args.double_scalars = config::computes_in_double(p.type);
        args.sizes = k.per_row ? std::vector<long long>{p.shape->rows, p.shape->cols} : std::vector<long long>{p.n};
        args.shared_bytes = k.shared_bytes;
        arguments.push_back(std::move(args));
        using result = codegen::kernel_plan::result;
        const std::size_t written = (k.output == result::elements     ? bytes
                                     : k.output == result::row_output ? size.output
                                                                      : size.row_value) +
                                    k.also_writes.size() * size.row_value;
        std::size_t arrays = 0;  // read once per pass over the row
        for (const auto& name : k.reads) arrays += inputs.count(name) ? inputs.at(name).bytes() : bytes;
        const std::size_t read = arrays * static_cast<std::size_t>(k.passes) + k.row_reads.size() * size.row_value;
        rec.bytes_moved += static_cast<double>(read + written);
    }
    auto enqueue_chain = [&] {
        for (std::size_t i = 0; i < plan.size(); ++i)
            device.launch(kernels[i], rec.kernels[i].grid, p.launch.block, arguments[i]);
    };

    // All-ones bytes are NaN in float and double: an element no kernel wrote cannot pass the check.
    {
        trace::span span("poison outputs");
        for (const auto& name : built.generated.temporaries) device.fill_bytes(buffers.at(name), 0xFF, bytes);
        for (const auto& name : built.generated.row_values) device.fill_bytes(buffers.at(name), 0xFF, size.row_value);
        device.fill_bytes(buffers.at(codegen::k_output_buffer), 0xFF, size.output);
        device.synchronize();
    }
    // The first launch is checked: it is the result a user's first call produces, after lazy loading.
    timed(rec, phase::first_launch, [&] {
        enqueue_chain();
        device.synchronize();
    });
    // The result's host array is kept with the host data: a fresh one costs a page fault per 4 KiB,
    // taken here on all cores rather than one at a time inside the copy.
    const auto output_count = static_cast<std::size_t>(config::output_count(p));
    if (!host.result || host.result->type() != p.type || host.result->size() != output_count) {
        trace::span span("result array");
        host.result.emplace(p.type, output_count);
        auto* first = static_cast<unsigned char*>(host.result->data());
        const auto touch = [&](std::size_t begin, std::size_t end) { std::memset(first + begin, 0, end - begin); };
        parallel_ranges(size.output, touch, 1 << 20);
    }
    reference::typed_array& out = *host.result;
    timed(rec, phase::d2h, [&] { device.copy_to_host(out.data(), buffers.at(codegen::k_output_buffer), size.output); });

    if (!host.reference || host.reference->inputs_key != input_key || host.reference->key != reference_key(p)) {
        host.reference = nullptr;
        host.reference = make_host_reference(p, *host.inputs, rec);
    }
    const reference::expected_values& expected = host.reference->expected;
    const config::tolerance tol = p.tol.value_or(config::default_tolerance(p));
    const auto result = timed(rec, phase::verify, [&] { return reference::compare(out, expected, tol); });
    report::check_row check{result.pass, result.mismatches, result.nan_count, result.inf_count,
                            result.max_abs_error, result.max_rel_error, result.max_ulp_error, tol.rtol, tol.atol,
                            tol.rounding, {}};
    if (result.first_bad)
        check.first_bad = describe_element(p, *result.first_bad, inputs, out, expected.values[*result.first_bad],
                                           expected.scales[*result.first_bad], tol);
    rec.check = check;
    rec.status = result.pass ? report::outcome::pass : report::outcome::fail;

    measure_kernel(device, enqueue_chain, p.measure, rec);
}

}  // namespace kjit::run
