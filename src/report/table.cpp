#include "report/table.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <limits>
#include <numeric>

#include "util/strings.hpp"
#include "util/units.hpp"
#include "why/counters.hpp"

namespace kjit::report {
namespace {

using units::fixed;

std::string sci(double value) {
    char text[48];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
}

std::string kernel_note(const kernel_row& k) {
    std::string note = k.name;
    if (k.registers >= 0) note += "  " + std::to_string(k.registers) + " regs";
    if (k.spill_bytes > 0) note += ", " + std::to_string(k.spill_bytes) + " B spilled";
    if (k.stack_bytes > 0) note += ", " + std::to_string(k.stack_bytes) + " B stack";
    const auto shown = [](const std::array<long long, 3>& d) {
        return d[1] > 1 || d[2] > 1 ? "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) +
                                          (d[2] > 1 ? ", " + std::to_string(d[2]) : "") + ")"
                                    : std::to_string(d[0]);
    };
    if (k.grid > 0)
        note += "  grid " + shown(k.grid_dims) + " × " + shown(k.block_dims) + " (" +
                std::to_string(k.blocks_per_sm) + " blocks/SM resident, occupancy " + fixed(100 * k.occupancy, 0) + " %)";
    return note;
}

/// "SM 1980 MHz, memory 2619 MHz, 41 → 47 °C, 95 → 410 W": each quantity once when it did not change.
std::string describe_states(const device_state& before, const device_state& after) {
    std::string text;
    const auto item = [&](const char* label, const auto& a, const auto& b, const char* unit, int digits) {
        if (!a && !b) return;
        const auto shown = [&](const auto& v) { return v ? fixed(static_cast<double>(*v), digits) : std::string("?"); };
        text += (text.empty() ? "" : ", ") + std::string(label) + shown(a);
        if (a != b) text += " → " + shown(b);
        text += unit;
    };
    item("SM ", before.sm_clock_mhz, after.sm_clock_mhz, " MHz", 0);
    item("memory ", before.memory_clock_mhz, after.memory_clock_mhz, " MHz", 0);
    item("", before.temperature_c, after.temperature_c, " °C", 0);
    item("", before.power_w, after.power_w, " W", 0);
    return text + " (NVML, before → after the timed loops)";
}

/// A counter's value as its column's unit says: bytes, nanoseconds, percent, or cycles.
std::string counter_text(const std::string& column, double value) {
    if (column.ends_with("_bytes")) return units::bytes(value);
    if (column.ends_with("_ns")) return units::duration_ms(value * 1e-6);
    if (column.ends_with("_pct")) return fixed(value, 1) + " %";
    return fixed(value, 2);
}

/// The counter pass: one row per counter read, one column per kernel, then what they say together.
void print_counters(std::ostream& out, const record& r) {
    out << "\n  " << padded("hardware counters (CUPTI, after the timed loops)", 50);
    for (const auto& k : r.kernels) out << padded(bounded(k.name, 17), 19);
    out << "\n";
    for (const auto& c : why::counters_of("all")) {
        if (!r.counters.contains(c.column)) continue;
        out << "    " << padded(c.meaning, 48);
        for (const auto& k : r.kernels) {
            const auto found = k.counters.find(c.column);
            out << padded(found == k.counters.end() ? "-" : counter_text(c.column, found->second), 19);
        }
        out << "\n";
    }
    if (const auto ratio = r.dram_bytes_over_model())
        out << "  DRAM bytes counted: " << fixed(100 * *ratio, 1) << " % of the " << units::bytes(r.bytes_moved)
            << " kjit's model says the pass moves\n";
    if (const auto stalls = why::top_stalls(r.counters, 3); !stalls.empty()) {
        out << "  warps stalled most on:";
        for (const auto& [reason, cycles] : stalls) out << " " << reason << " (" << fixed(cycles, 2) << ")";
        out << " cycles per issued instruction\n";
    }
}

/// What ran: the variant, target, inputs, device, compile and kernels.
void print_heading(std::ostream& out, const record& r) {
    out << "kjit " << r.command << " · " << r.name << " (" << r.config_source << ")\n";
    out << "  variant  " << r.variant << "\n";
    if (const std::string target = r.config.value("target", ""); !target.empty()) out << "  target   " << target << "\n";
    if (!r.tuned_launch.empty()) out << "  launch   " << r.tuned_launch << "\n";
    if (const std::string files = r.config.value("input_files", ""); !files.empty()) out << "  inputs   " << files << "\n";
    if (!r.device_name.empty())
        out << "  device   " << r.device_name << " [" << r.device_index << "], driver " << r.driver_version << "\n";
    out << "  compile  " << r.arch << ", NVRTC " << r.nvrtc_version
        << (r.compile_method == "nvjitlink" ? " + nvJitLink" : "") << ", cache " << r.cache_status
        << (r.cache_key.empty() ? "" : " (" + r.cache_key.substr(0, 12) + "…)") << ", PTX "
        << units::bytes(static_cast<double>(r.ptx_bytes)) << ", cubin " << units::bytes(static_cast<double>(r.cubin_bytes))
        << (r.module_image.empty() ? "" : ", loaded the " + r.module_image) << "\n";
    if (!r.cache_problem.empty()) out << "  warning  " << r.cache_problem << "\n";
    for (const auto& k : r.kernels) out << "  kernel   " << kernel_note(k) << "\n";
}

/// Each phase's time and share; returns their total.
double print_phases(std::ostream& out, const record& r) {
    double total = 0;
    for (const auto& ms : r.phases) total += ms.value_or(0);
    out << "\n  " << padded("phase", 34) << padded("time", 12) << "share\n";
    for (std::size_t i = 0; i < k_phase_count; ++i) {
        const auto ms = r.phases[i];
        if (!ms) continue;
        out << "  " << padded(phase_title(static_cast<phase>(i)), 34) << padded(units::duration_ms(*ms), 12)
            << (total > 0 ? fixed(100.0 * *ms / total, 1) + " %" : "") << "\n";
        if (static_cast<phase>(i) == phase::nvrtc && r.nvrtc_front_end_ms && r.nvrtc_optimizer_ms)
            out << "    of which C++ front end " << units::duration_ms(*r.nvrtc_front_end_ms) << ", NVVM optimizer "
                << units::duration_ms(*r.nvrtc_optimizer_ms) << " (NVRTC's -time)\n";
    }
    out << "  " << padded("total of the phases above", 34) << units::duration_ms(total) << "\n";
    if (r.overlapped_ms && *r.overlapped_ms > 0)
        out << "  " << padded("  less overlap with CUDA start-up", 34) << padded(units::duration_ms(*r.overlapped_ms), 12)
            << "compile and host data ran on another thread meanwhile\n"
            << "  " << padded("  time they took", 34) << units::duration_ms(total - *r.overlapped_ms) << "\n";
    return total;
}

/// The kernel's times, cold, batched and in a graph, and a call with its copies.
void print_times(std::ostream& out, const record& r) {
    out << "\n  " << padded("kernel time (CUDA events)", 34) << padded("median", 11) << padded("min", 11) << padded("max", 11)
        << padded("stdev", 11) << "samples\n";
    auto line = [&](const char* title, const std::optional<sample_stats>& s) {
        if (!s) return;
        out << "  " << padded(title, 34) << padded(units::duration_ms(s->median), 11) << padded(units::duration_ms(s->min), 11)
            << padded(units::duration_ms(s->max), 11) << padded(units::duration_ms(s->stdev), 11) << s->count << "\n";
    };
    line("cold: L2 flushed, one chain", r.kernel_cold);
    line("batch: back-to-back, per chain", r.kernel_batch);
    line("graph: one CUDA graph, per chain", r.kernel_graph);
    if (r.per_call) {
        out << "  " << padded("per call, copies included", 34) << "(measure.transfers \"per_call\": host clock; "
            << r.per_call->copies << " copies, " << units::bytes(r.per_call->bytes) << ")\n";
        line("  copies in (pageable)", r.per_call->h2d);
        line("  kernels, to completion", r.per_call->kernels);
        line("  copies out", r.per_call->d2h);
        line("  the whole call", r.per_call->total);
    }
    if (r.kernel_cold_noise)
        out << "  cold median ± " << fixed(100 * *r.kernel_cold_noise, 2)
            << " % (its relative standard error, from the spread of " << r.kernel_cold->count << " samples)\n";
    if (r.kernel_batch && r.kernel_graph && r.kernel_batch->median > r.kernel_graph->median)
        out << "  launch overhead ≈ batch − graph = " << units::duration_ms(r.kernel_batch->median - r.kernel_graph->median)
            << " per chain\n";
}

/// What the times mean: bytes and FLOPs per second, the place on the roofline, and the kernel's
/// share of all the phases (`total`).
void print_rates(std::ostream& out, const record& r, double total) {
    if (const auto rate = r.effective_bytes_per_s()) {
        out << "  throughput: " << units::bytes(r.bytes_moved) << " moved per pass → " << units::byte_rate(*rate)
            << " effective (cold median)";
        if (r.copy_ceiling_bytes_per_s)
            out << ", " << fixed(100.0 * *rate / *r.copy_ceiling_bytes_per_s, 0) << " % of the measured copy ceiling ("
                << units::byte_rate(*r.copy_ceiling_bytes_per_s) << ")";
        out << "; " << units::count(r.config.value("n", 0.0) / (r.kernel_cold->median * 1e-3)) << " elements/s\n";
    }
    if (const auto rate = r.flops_per_s())
        out << "  compute: " << units::count(r.flops) << " floating-point operations per pass → " << fixed(*rate / 1e12, 1)
            << " TFLOP/s (cold median)\n";
    if (const auto place = r.roofline(); place && r.flops > 0)
        out << "  roofline: " << fixed(place->intensity, 2) << " flops per byte, under the "
            << (place->memory_bound ? "memory roof (" + fixed(place->roof_flops_per_s / 1e12, 1) + " TFLOP/s at this intensity)"
                                    : std::string(r.flops_unit == "tensor" ? "tensor-core" : "FMA") + " ceiling (" +
                                          fixed(place->roof_flops_per_s / 1e12, 1) + " TFLOP/s)")
            << ": " << fixed(100 * place->fraction, 0) << " % of it\n";
    if (total > 0 && r.kernel_cold)
        out << "  the kernel itself is " << sci(100.0 * r.kernel_cold->median / total)
            << " % of the time above: the rest is start-up, compilation, copies and checking\n";
}

/// The check against the reference.
void print_check(std::ostream& out, const check_row& c) {
    out << "\n  check    " << (c.pass ? "PASS" : "FAIL") << "  max abs " << sci(c.max_abs_error) << ", max rel "
        << sci(c.max_rel_error) << ", max " << sci(c.max_ulp_error) << " ulp, NaN " << c.nan_count << ", Inf "
        << c.inf_count << (c.nonfinite_as_reference ? ", NaN/Inf as the reference " + std::to_string(c.nonfinite_as_reference) : "")
        << ", outside tolerance " << c.mismatches << "  (|out − ref| ≤ atol " << sci(c.atol)
        << " + rtol " << sci(c.rtol) << "·|ref| + " << sci(c.rounding) << "·error scale)\n";
    if (c.compared < c.elements)
        out << "           compared with the reference: a sample of " << c.compared << " elements covering every row and "
            << "column; every other element was checked for having been written (and, where the sample has no "
            << "NaN or Inf, for being finite)\n";
    if (!c.first_bad.empty()) out << "  first bad " << c.first_bad << "\n";
}

}  // namespace

void print_record(std::ostream& out, const record& r) {
    print_heading(out, r);
    const double total = print_phases(out, r);
    if (r.kernel_cold || r.kernel_batch) {
        print_times(out, r);
        print_rates(out, r, total);
    }
    if (!r.counters.empty()) print_counters(out, r);
    if (r.check) print_check(out, *r.check);
    for (const auto& file : r.saved) out << "  saved    " << file << "\n";
    if (!r.state_before.empty() || !r.state_after.empty()) out << "\n  device   " << describe_states(r.state_before, r.state_after) << "\n";
    for (const auto& warning : r.warnings) out << "  warning  " << warning << "\n";
    if (!r.error.empty()) out << "\n  error    " << r.error << "\n";
}

void print_change(std::ostream& out, const record& before, const record& after) {
    out << "  change from the previous run\n";
    if (before.variant != after.variant) out << "    variant  " << before.variant << "\n          → " << after.variant << "\n";
    if (before.kernel_cold && after.kernel_cold) {
        const double was = before.kernel_cold->median, now = after.kernel_cold->median;
        out << "    kernel   " << units::duration_ms(was) << " → " << units::duration_ms(now) << " ("
            << (now >= was ? "+" : "") << fixed(100 * (now - was) / was, 1) << " %, cold median)\n";
    }
    if (before.check && after.check)
        out << "    error    max " << sci(before.check->max_ulp_error) << " → " << sci(after.check->max_ulp_error)
            << " ulp, " << to_string(before.status) << " → " << to_string(after.status) << "\n";
    std::string only_now, only_before;
    for (std::size_t i = 0; i < k_phase_count; ++i) {
        const auto name = std::string(phase_name(static_cast<phase>(i)));
        if (after.phases[i] && !before.phases[i]) only_now += (only_now.empty() ? "" : ", ") + name + " " + units::duration_ms(*after.phases[i]);
        if (before.phases[i] && !after.phases[i]) only_before += (only_before.empty() ? "" : ", ") + name;
    }
    if (!only_now.empty()) out << "    ran now  " << only_now << "\n";
    if (!only_before.empty()) out << "    skipped  " << only_before << " (cached or reused)\n";
}

void print_summary(std::ostream& out, const std::vector<row>& rows) {
    const auto number = [](const row& r, const char* column) {
        const auto it = r.find(column);
        return it != r.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
    };
    std::vector<const row*> sorted;
    for (const auto& r : rows) sorted.push_back(&r);
    const auto key = [&](const row* r) {
        return number(*r, "kernel_cold_median_ms").value_or(std::numeric_limits<double>::infinity());
    };
    std::stable_sort(sorted.begin(), sorted.end(), [&](auto a, auto b) { return key(a) < key(b); });
    // Merged rows come from files: their text is shown with its control characters escaped.
    const auto label_of = [](const row& r) {
        const std::string label = r.value("sweep_point", "");
        return printable(label.empty() ? r.value("variant", "") : label);
    };
    std::size_t width = 8;
    for (const auto& r : rows) width = std::max(width, label_of(r).size() + 2);
    // A column of whole calls with their copies where some point measured them (measure.transfers).
    const bool calls = std::any_of(rows.begin(), rows.end(), [&](const row& r) { return number(r, "per_call_total_median_ms"); });
    out << "    " << padded("#", 5) << padded("point", width) << padded("cold median", 13) << padded("batch", 11) << padded("GB/s", 8)
        << (calls ? padded("per call", 11) : "") << padded("compile", 11) << "status\n";
    bool best_marked = false;
    for (const row* r : sorted) {
        const std::string status = printable(r->value("status", ""));
        const auto cold = number(*r, "kernel_cold_median_ms");
        const bool best = !best_marked && cold && parse_outcome(status) == outcome::pass;
        best_marked = best_marked || best;
        const auto batch = number(*r, "kernel_batch_median_ms");
        const auto rate = number(*r, "effective_gbps");
        const auto call = number(*r, "per_call_total_median_ms");
        const double compile = number(*r, "nvrtc_ms").value_or(0) + number(*r, "ptx_to_cubin_ms").value_or(0);
        const auto index = r->find("sweep_index");
        const std::string error = r->value("error", "");
        const std::string first_line = printable(error.substr(0, error.find('\n')));
        out << "  " << padded(best ? "*" : "", 2) << padded(index != r->end() && !index->is_null() ? index->dump() : "-", 5)
            << padded(label_of(*r), width) << padded(cold ? units::duration_ms(*cold) : "-", 13)
            << padded(batch ? units::duration_ms(*batch) : "-", 11) << padded(rate ? fixed(*rate, 0) : "-", 8)
            << (calls ? padded(call ? units::duration_ms(*call) : "-", 11) : "") << padded(compile > 0 ? units::duration_ms(compile) : printable(r->value("cache", "")), 11) << status
            << (error.empty() ? "" : ": " + first_line) << "\n";
    }
}

void print_warnings(std::ostream& out, const record& r) {
    if (!r.cache_problem.empty()) out << "kjit: warning: " << r.cache_problem << "\n";
    for (const auto& warning : r.warnings) out << "kjit: warning: " << warning << "\n";
}

}  // namespace kjit::report
