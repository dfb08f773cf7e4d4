#include "run/first_call.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "report/trace.hpp"
#include "run/stats.hpp"
#include "util/error.hpp"
#include "util/process.hpp"

namespace kjit::run {
namespace {

/// Phase columns grouped the way the explanation speaks of them.
struct phase_group {
    std::string title;
    std::vector<std::string> columns;
    /// Runs on another thread while the driver starts CUDA (session::run), in this order: the
    /// compile, then the host data.
    bool beside_start_up = false;
};

const std::vector<phase_group>& groups() {
    static const std::vector<phase_group> g{
        {"process start and setup", {"process_start_ms", "setup_ms"}},
        {"CUDA start-up and teardown", {"driver_init_ms", "context_ms", "nvml_ms", "teardown_ms"}},
        {"compile",
         {"codegen_ms", "cache_lookup_ms", "compiler_load_ms", "nvrtc_ms", "ptx_to_cubin_ms", "cache_store_ms"},
         true},
        {"module load + first launch", {"module_load_ms", "get_function_ms", "first_launch_ms"}},
        {"copies", {"alloc_ms", "h2d_ms", "d2h_ms"}},
        {"kjit's own checking and timing",
         {"host_inputs_ms", "host_reference_ms", "verify_ms", "graph_build_ms", "timed_launches_ms"},
         true},
        {"writing results and exit", {"process_exit_ms"}},
    };
    return g;
}

std::string percent(double part, double whole) {
    char text[32];
    std::snprintf(text, sizeof text, whole > 0 && part / whole < 0.01 ? "%.2g %%" : "%.0f %%",
                  whole > 0 ? 100 * part / whole : 0.0);
    return text;
}

}  // namespace

std::vector<start_state> first_call_states(bool have_gpu) {
    if (!have_gpu)
        return {{"compile-cold", "no GPU: kjit compile with an empty cache", {"compile"}, {}, true, false, 1},
                {"compile-warm", "no GPU: kjit compile with the entry cached", {"compile"}, {}, false, false, 1}};
    return {
        {"cold", "empty kjit cache: NVRTC + PTX → cubin, then load the cubin", {"run"}, {}, true, false, 1},
        {"warm-ptx-nocache", "PTX cached, driver JIT at load, driver's JIT cache off (CUDA_CACHE_DISABLE=1)",
         {"run", "--load", "ptx"}, {{"CUDA_CACHE_DISABLE", "1"}}, false, false, 1},
        {"warm-ptx-cached", "PTX cached, driver JIT served from the driver's own cache",
         {"run", "--load", "ptx"}, {}, false, true, 1},
        {"warm-cubin", "cubin cached: no compiler at all", {"run"}, {}, false, false, 1},
        {"second-call", "the same variant called again in the same process", {"run", "--calls", "2"}, {}, false,
         false, 2},
    };
}

start_state warm_up_state(bool have_gpu) {
    return {"warm-up", "fills the kjit cache for the warm states", {have_gpu ? "run" : "compile"}, {}, false, false, 1};
}

child_result run_child(const std::string& executable, const std::vector<std::string>& args,
                       std::vector<std::pair<std::string, std::string>> env, const std::string& output_file) {
    // The child's process_start phase runs from here to its main (see trace::spawned_at).
    env.emplace_back("KJIT_SPAWNED_NS", trace::spawn_stamp());
    const auto done = process::run(executable, args, env, output_file);
    return {done.exit_code, done.wall_ms};
}

std::vector<report::row> summarize_first_call(const std::vector<report::row>& rows) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const report::row*>> by_state;
    for (const auto& r : rows) {
        const std::string state = r.value("first_call_state", "");
        if (!by_state.count(state)) order.push_back(state);
        by_state[state].push_back(&r);
    }
    std::vector<report::row> summary;
    for (const auto& state : order) {
        const auto& members = by_state[state];
        report::row out = report::row::object();
        out["first_call_state"] = state;
        out["repeats"] = members.size();
        std::size_t failed = 0;
        for (const auto* r : members) failed += !report::succeeded(*r);
        out["failed"] = failed;
        for (const auto& [column, value] : members.front()->items()) {
            if (column.size() < 3 || column.compare(column.size() - 3, 3, "_ms") != 0 ||
                column.rfind("kernel_", 0) == 0)
                continue;
            std::vector<double> samples;
            for (const auto* r : members)
                if (r->contains(column) && (*r)[column].is_number()) samples.push_back((*r)[column].get<double>());
            if (samples.empty()) continue;
            const auto s = summarize(samples);
            out[column] = s.median;
            out[column.substr(0, column.size() - 3) + "_min_ms"] = s.min;
            out[column.substr(0, column.size() - 3) + "_max_ms"] = s.max;
        }
        summary.push_back(std::move(out));
    }
    return summary;
}

namespace {

/// Each group's part of the wall, and the part of it that ran during CUDA start-up (overlapped_ms,
/// charged to the groups beside start-up in the order they run): the wall counts that time once,
/// as CUDA start-up, so the parts add up to the phases' share of the wall.
struct group_parts {
    std::vector<double> own, during_start_up;
};

group_parts parts_of(const report::row& s) {
    group_parts parts;
    double hidden = s.value("overlapped_ms", 0.0);
    for (const auto& group : groups()) {
        double part = 0;
        for (const auto& c : group.columns) part += s.value(c, 0.0);
        const double during = group.beside_start_up ? std::min(part, hidden) : 0.0;
        hidden -= during;
        parts.own.push_back(part - during);
        parts.during_start_up.push_back(during);
    }
    return parts;
}

}  // namespace

std::string explain_first_call(const std::vector<report::row>& summary) {
    std::string text;
    for (const auto& s : summary) {
        const auto parts = parts_of(s);
        double accounted = 0;
        for (const double part : parts.own) accounted += part;
        // A second call in the same process has no process of its own: its phases are the whole.
        const bool own_process = s.contains("process_wall_ms");
        const double wall = own_process ? s.value("process_wall_ms", 0.0) : accounted;
        text += s.value("first_call_state", "") + ": " + std::to_string(static_cast<long long>(wall + 0.5)) +
                (own_process ? " ms per process" : " ms of phases, in a process already started") + " (median of " +
                std::to_string(s.value("repeats", 0)) + "):";
        const char* sep = " ";
        for (std::size_t g = 0; g < parts.own.size(); ++g) {
            if (parts.own[g] + parts.during_start_up[g] <= 0) continue;
            text += sep + groups()[g].title + " " + percent(parts.own[g], wall);
            if (parts.during_start_up[g] > 0)
                text += " after CUDA start-up (" + percent(parts.during_start_up[g], wall) + " during it)";
            sep = ", ";
        }
        if (own_process)
            text += std::string(sep) + "the rest (between phases) " + percent(std::max(0.0, wall - accounted), wall);
        text += "\n";
    }
    return text;
}

}  // namespace kjit::run
