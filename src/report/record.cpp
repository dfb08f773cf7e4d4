#include "report/record.hpp"

#include "util/strings.hpp"

namespace kjit::report {
namespace {
struct phase_names {
    const char* column;
    const char* title;
};
constexpr std::array<phase_names, k_phase_count> k_names{{
    {"process_start", "process start (exec, libraries)"},
    {"setup", "setup (options, config)"},
    {"driver_init", "CUDA driver init (cuInit)"},
    {"context", "context + stream"},
    {"nvml", "NVML open (clock readings)"},
    {"codegen", "codegen"},
    {"cache_lookup", "cache lookup"},
    {"compiler_load", "load NVRTC / nvJitLink"},
    {"nvrtc", "NVRTC: C++ → PTX"},
    {"ptx_to_cubin", "PTX → cubin (ptxas)"},
    {"cache_store", "cache store"},
    {"module_load", "module load"},
    {"get_function", "get function"},
    {"host_inputs", "host: fill inputs"},
    {"alloc", "device alloc"},
    {"h2d", "copy H2D"},
    {"first_launch", "first launch (to completion)"},
    {"d2h", "copy D2H"},
    {"host_reference", "host: float64 reference"},
    {"verify", "verify"},
    {"graph_build", "CUDA graph capture + instantiate"},
    {"timed_launches", "timed loops (cold, batch, graph)"},
    {"teardown", "GPU release (context)"},
}};

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

}  // namespace

const char* to_string(outcome o) {
    switch (o) {
        case outcome::compiled: return "ok";
        case outcome::pass: return "PASS";
        case outcome::fail: return "FAIL";
        case outcome::error: return "error";
    }
    return "?";
}

std::optional<outcome> parse_outcome(const std::string& text) {
    for (const outcome o : {outcome::compiled, outcome::pass, outcome::fail, outcome::error})
        if (text == to_string(o)) return o;
    return std::nullopt;
}

bool succeeded(const row& r) {
    const auto it = r.find("status");
    if (it == r.end() || !it->is_string()) return false;
    const auto o = parse_outcome(it->get<std::string>());
    return o && succeeded(*o);
}

std::string slowdown_names(std::uint64_t clock_limits) {
    // NVML's nvmlClocksEventReason* bits that slow a running kernel down.
    static const std::pair<std::uint64_t, const char*> k_slowdowns[] = {
        {0x4, "power cap"},           {0x8, "hardware slowdown"},          {0x20, "thermal (software)"},
        {0x40, "thermal (hardware)"}, {0x80, "power brake (hardware)"}};
    std::vector<std::string> names;
    for (const auto& [bit, name] : k_slowdowns)
        if (clock_limits & bit) names.emplace_back(name);
    return join(names, ", ");
}

const char* phase_name(phase p) { return k_names[static_cast<std::size_t>(p)].column; }
const char* phase_title(phase p) { return k_names[static_cast<std::size_t>(p)].title; }

std::optional<double> record::effective_bytes_per_s() const {
    if (!kernel_cold || kernel_cold->median <= 0 || bytes_moved <= 0) return std::nullopt;
    return bytes_moved / (kernel_cold->median * 1e-3);
}

std::optional<double> record::flops_per_s() const {
    if (!kernel_cold || kernel_cold->median <= 0 || flops <= 0) return std::nullopt;
    return flops / (kernel_cold->median * 1e-3);
}

std::optional<double> record::dram_bytes_over_model() const {
    const auto read = counters.find("dram_read_bytes"), written = counters.find("dram_write_bytes");
    if (read == counters.end() || written == counters.end() || bytes_moved <= 0) return std::nullopt;
    return (read->second + written->second) / bytes_moved;
}

std::optional<record::roofline_place> record::roofline() const {
    const auto moved = effective_bytes_per_s();
    if (!moved || !copy_ceiling_bytes_per_s) return std::nullopt;
    if (flops <= 0) return roofline_place{0, 0, true, *moved / *copy_ceiling_bytes_per_s};
    if (!flops_ceiling_per_s) return std::nullopt;
    const double intensity = flops / bytes_moved, memory_roof = intensity * *copy_ceiling_bytes_per_s;
    const double roof = std::min(memory_roof, *flops_ceiling_per_s);
    return roofline_place{intensity, roof, memory_roof < *flops_ceiling_per_s, *flops_per_s() / roof};
}

namespace {

using column_list = std::vector<std::pair<std::string, nlohmann::json>>;

/// What ran: the config, its variant and sweep point, its choices.
void add_what(const record& r, column_list& columns) {
    columns.insert(columns.end(), {
        {"schema_version", k_schema_version},
        {"command", r.command},
        {"config_source", r.config_source},
        {"name", r.name},
        {"variant", r.variant},
        {"sweep_index", r.sweep_index ? nlohmann::json(*r.sweep_index) : nlohmann::json()},
        {"sweep_point", r.sweep_point},
    });
    for (const char* key : {"n", "dtype", "fusion", "stages", "block", "vector_width", "grid", "fast_math", "seed", "family",
                            "target", "input_files"})
        columns.emplace_back(key, r.config.contains(key) ? r.config[key] : nlohmann::json());
    for (const auto& [key, value] : r.policy.items()) columns.emplace_back("policy_" + key, nlohmann::json(value));
    for (const auto& [name, value] : r.params.items()) columns.emplace_back("param_" + name, nlohmann::json(value));
    for (const auto& [path, value] : r.sweep_values.items()) columns.emplace_back("sweep_" + path, nlohmann::json(value));
    const nlohmann::json shape = r.config.value("shape", nlohmann::json());  // "4096x1024": one CSV cell
    columns.emplace_back("shape", shape.is_array() ? nlohmann::json(shape[0].dump() + "x" + shape[1].dump()) : nlohmann::json());
}

/// Where and how it was built and started: versions, device, cache, phases.
void add_build(const record& r, column_list& columns) {
    columns.insert(columns.end(), {{"kjit_version", r.kjit_version},
                           {"nvrtc_version", r.nvrtc_version},
                           {"arch", r.arch},
                           {"host", r.host},
                           {"device_index", r.device_index < 0 ? nlohmann::json() : nlohmann::json(r.device_index)},
                           {"device_name", r.device_name},
                           {"driver_version", r.driver_version},
                           {"cache", r.cache_status},
                           {"cache_key", r.cache_key},
                           {"cache_problem", r.cache_problem},
                           {"ptx_bytes", r.ptx_bytes},
                           {"cubin_bytes", r.cubin_bytes},
                           {"compile_method", r.compile_method},
                           {"nvrtc_front_end_ms", optional_number(r.nvrtc_front_end_ms)},
                           {"nvrtc_optimizer_ms", optional_number(r.nvrtc_optimizer_ms)},
                           {"module_image", r.module_image},
                           {"tuned_launch", r.tuned_launch},
                           {"call_index", r.call_index ? nlohmann::json(*r.call_index) : nlohmann::json()},
                           {"first_call_state", r.first_call_state},
                           {"process_wall_ms", optional_number(r.process_wall_ms)},
                           {"process_elapsed_ms", optional_number(r.process_elapsed_ms)},
                           {"process_exit_ms", optional_number(r.process_exit_ms)}});
    for (std::size_t i = 0; i < k_phase_count; ++i)
        columns.emplace_back(std::string(k_names[i].column) + "_ms", optional_number(r.phases[i]));
    columns.emplace_back("overlapped_ms", optional_number(r.overlapped_ms));

}

/// The kernels: names, registers, spills, and the first one's launch.
void add_kernels(const record& r, column_list& columns) {
    std::string names, registers, spills;
    std::optional<int> most_registers;  // null where no kernel's count is known (not compiled)
    // The launch's shape and residency are known once it ran (a run's blocks_per_sm is at least 1).
    const bool launched = !r.kernels.empty() && r.kernels.front().blocks_per_sm > 0;
    for (const auto& k : r.kernels) {
        const char* sep = names.empty() ? "" : ";";
        names += sep + k.name;
        registers += sep + std::to_string(k.registers);
        spills += sep + std::to_string(k.spill_bytes);
        if (k.registers >= 0) most_registers = std::max(most_registers.value_or(0), k.registers);
    }
    columns.insert(columns.end(), {{"kernels", names}, {"registers", registers},
                           {"registers_max", most_registers ? nlohmann::json(*most_registers) : nlohmann::json()},
                           {"spill_bytes", spills},
                           {"launch_grid", launched ? nlohmann::json(r.kernels.front().grid) : nlohmann::json()},
                           {"blocks_per_sm", launched ? nlohmann::json(r.kernels.front().blocks_per_sm) : nlohmann::json()},
                           {"occupancy", launched ? nlohmann::json(r.kernels.front().occupancy) : nlohmann::json()}});

}

/// The timed loops' statistics, and a call with its copies.
void add_times(const record& r, column_list& columns) {
    auto stats = [&](const std::string& mode, const std::optional<sample_stats>& s) {
        const auto value = [&](double sample_stats::*field) { return s ? nlohmann::json((*s).*field) : nlohmann::json(); };
        columns.emplace_back("kernel_" + mode + "_median_ms", value(&sample_stats::median));
        columns.emplace_back("kernel_" + mode + "_min_ms", value(&sample_stats::min));
        columns.emplace_back("kernel_" + mode + "_max_ms", value(&sample_stats::max));
        columns.emplace_back("kernel_" + mode + "_mean_ms", value(&sample_stats::mean));
        columns.emplace_back("kernel_" + mode + "_stdev_ms", value(&sample_stats::stdev));
        columns.emplace_back("kernel_" + mode + "_count", s ? nlohmann::json(s->count) : nlohmann::json());
    };
    stats("cold", r.kernel_cold);
    stats("batch", r.kernel_batch);
    stats("graph", r.kernel_graph);
    columns.emplace_back("kernel_cold_noise", optional_number(r.kernel_cold_noise));
    const auto& call = r.per_call;
    columns.emplace_back("per_call_copies", call ? nlohmann::json(call->copies) : nlohmann::json());
    columns.emplace_back("per_call_bytes", call ? nlohmann::json(call->bytes) : nlohmann::json());
    for (const auto& [part, field] : {std::pair{"h2d", &report::per_call_times::h2d}, {"kernels", &report::per_call_times::kernels},
                                      {"d2h", &report::per_call_times::d2h}, {"total", &report::per_call_times::total}})
        columns.emplace_back(std::string("per_call_") + part + "_median_ms", call ? nlohmann::json(((*call).*field).median) : nlohmann::json());
}

/// The device's clocks, temperature and power before and after the timed loops.
void add_states(const record& r, column_list& columns) {
    for (const auto& [when, state] : {std::pair{"before", &r.state_before}, std::pair{"after", &r.state_after}}) {
        const auto whole = [](const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
        const std::string suffix = std::string("_") + when;
        columns.emplace_back("sm_clock_mhz" + suffix, whole(state->sm_clock_mhz));
        columns.emplace_back("memory_clock_mhz" + suffix, whole(state->memory_clock_mhz));
        columns.emplace_back("temperature_c" + suffix, whole(state->temperature_c));
        columns.emplace_back("power_w" + suffix, optional_number(state->power_w));
        columns.emplace_back("clock_limits" + suffix,
                             state->clock_limits ? nlohmann::json(*state->clock_limits) : nlohmann::json());
    }
}

/// Bytes and FLOPs per second, the ceilings and the roofline, and the counters.
void add_rates(const record& r, column_list& columns) {
    const auto rate = r.effective_bytes_per_s();
    columns.insert(columns.end(),
               {{"bytes_moved", r.bytes_moved},
                {"effective_gbps", rate ? nlohmann::json(*rate / 1e9) : nlohmann::json()},
                {"elements_per_s", r.kernel_cold && r.kernel_cold->median > 0
                                       ? nlohmann::json(r.config.value("n", 0.0) / (r.kernel_cold->median * 1e-3))
                                       : nlohmann::json()},
                {"copy_ceiling_gbps", r.copy_ceiling_bytes_per_s ? nlohmann::json(*r.copy_ceiling_bytes_per_s / 1e9)
                                                                 : nlohmann::json()},
                {"percent_of_ceiling", rate && r.copy_ceiling_bytes_per_s
                                           ? nlohmann::json(100.0 * *rate / *r.copy_ceiling_bytes_per_s)
                                           : nlohmann::json()},
                {"dram_bytes_over_model", optional_number(r.dram_bytes_over_model())},
                {"flops", r.flops},
                {"tflops", r.flops_per_s() ? nlohmann::json(*r.flops_per_s() / 1e12) : nlohmann::json()}});
    const auto place = r.roofline();
    columns.insert(columns.end(),
                   {{"flops_unit", r.flops_unit},
                    {"flops_ceiling_tflops", r.flops_ceiling_per_s ? nlohmann::json(*r.flops_ceiling_per_s / 1e12) : nlohmann::json()},
                    {"arithmetic_intensity", r.flops > 0 && r.bytes_moved > 0 ? nlohmann::json(r.flops / r.bytes_moved) : nlohmann::json()},
                    {"roof_bound", place ? nlohmann::json(place->memory_bound ? "memory" : "compute") : nlohmann::json()},
                    {"percent_of_roof", place ? nlohmann::json(100 * place->fraction) : nlohmann::json()}});
    for (const auto& [column, value] : r.counters) columns.emplace_back("metric_" + column, value);
}

/// The check against the reference, the outcome and what was said.
void add_check(const record& r, column_list& columns) {
    const bool checked = r.check.has_value();
    const check_row c = r.check.value_or(check_row{});
    auto when_checked = [&](nlohmann::json v) { return checked ? v : nlohmann::json(); };
    columns.insert(columns.end(), {{"max_abs_error", when_checked(c.max_abs_error)},
                           {"max_rel_error", when_checked(c.max_rel_error)},
                           {"max_ulp_error", when_checked(c.max_ulp_error)},
                           {"nan_count", when_checked(c.nan_count)},
                           {"inf_count", when_checked(c.inf_count)},
                           {"nonfinite_as_reference", when_checked(c.nonfinite_as_reference)},
                           {"mismatches", when_checked(c.mismatches)},
                           {"compared", when_checked(c.compared)},
                           {"rtol", when_checked(c.rtol)},
                           {"atol", when_checked(c.atol)},
                           {"rounding", when_checked(c.rounding)},
                           {"first_bad", c.first_bad},
                           {"status", to_string(r.status)},
                           {"partial", r.partial},
                           {"warnings", join(r.warnings, "; ")},
                           {"saved", join(r.saved, "; ")},
                           {"error", r.error}});
}

}  // namespace

std::vector<std::pair<std::string, nlohmann::json>> flatten(const record& r) {
    column_list all;
    for (const auto add : {add_what, add_build, add_kernels, add_times, add_states, add_rates, add_check}) add(r, all);
    return all;
}

}  // namespace kjit::report
