#include "why/counters.hpp"

#include <algorithm>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace kjit::why {
namespace {

using enum counter::combined;

constexpr const char* k_stall_prefix = "stall_";

const std::vector<counter>& memory_counters() {
    static const std::vector<counter> c{
        {"dram_read_bytes", "dram__bytes_read.sum", "bytes read from DRAM (HBM)", summed},
        {"dram_write_bytes", "dram__bytes_write.sum", "bytes written to DRAM", summed},
        {"dram_throughput_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM busy, % of its peak", time_weighted},
        {"l2_hit_rate_pct", "lts__t_sector_hit_rate.pct", "L2 sectors that hit, %", time_weighted},
        {"l2_throughput_pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 busy, % of its peak", time_weighted},
        {"l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct", "L1 sectors that hit, %", time_weighted},
    };
    return c;
}

const std::vector<counter>& compute_counters() {
    static const std::vector<counter> c{
        {"achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", "warps resident, % of the SM's most",
         time_weighted},
        {"sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM busy (its busiest unit), % of peak",
         time_weighted},
        {"issue_active_pct", "sm__inst_issued.avg.pct_of_peak_sustained_active", "cycles an instruction issued, %",
         time_weighted},
        {"fma_pipe_pct", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "FMA pipe busy, %", time_weighted},
        // On the H200 (CUPTI 13.0) this pipe counts wgmma's HGMMA as well as mma.sync's HMMA.
        {"tensor_pipe_pct", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
         "tensor pipe busy (HMMA and HGMMA), %", time_weighted},
    };
    return c;
}

const std::vector<counter>& stall_counters() {
    // Cycles a warp spent on each reason per instruction it issued (Nsight Compute's warp state
    // statistics), for the reasons a learner's kernels meet.
    static const std::vector<counter> c{
        {"stall_long_scoreboard", "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
         "waiting for global or local memory", time_weighted},
        {"stall_short_scoreboard", "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
         "waiting for shared memory or the SFU", time_weighted},
        {"stall_barrier", "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "waiting at __syncthreads",
         time_weighted},
        {"stall_math_pipe_throttle", "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
         "a math pipe busy", time_weighted},
        {"stall_mio_throttle", "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
         "the shared-memory / special-function queue full", time_weighted},
        {"stall_lg_throttle", "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
         "the global-memory queue full", time_weighted},
        {"stall_wait", "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "a fixed latency", time_weighted},
        {"stall_not_selected", "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
         "ready, another warp issued", time_weighted},
        {"stall_dispatch_stall", "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
         "the dispatcher held", time_weighted},
        {"stall_no_instruction", "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
         "no instruction fetched", time_weighted},
        {"stall_branch_resolving", "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
         "a branch resolving", time_weighted},
        {"stall_membar", "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio", "a memory barrier",
         time_weighted},
        {"stall_sleeping", "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio", "sleeping or an mbarrier wait",
         time_weighted},
    };
    return c;
}

/// The sets `--metrics` names, "all" aside, in the order "all" reads them.
const std::vector<std::pair<std::string, const std::vector<counter>*>>& named_sets() {
    static const std::vector<std::pair<std::string, const std::vector<counter>*>> sets{
        {"memory", &memory_counters()}, {"compute", &compute_counters()}, {"stalls", &stall_counters()}};
    return sets;
}

}  // namespace

const std::vector<std::string>& counter_set_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const auto& [name, group] : named_sets()) n.push_back(name);
        n.emplace_back("all");
        return n;
    }();
    return names;
}

std::vector<counter> counters_of(const std::string& set) {
    std::vector<counter> chosen{{k_duration_column, "gpu__time_duration.sum", "the kernel's time under the profiler", summed}};
    for (const auto& [name, group] : named_sets())
        if (set == "all" || set == name) chosen.insert(chosen.end(), group->begin(), group->end());
    if (chosen.size() == 1)
        throw error(error_kind::usage, "--metrics " + set + ": expected one of " + join(counter_set_names(), ", "));
    return chosen;
}

std::map<std::string, double> combine(const std::vector<counter>& counters,
                                      const std::vector<std::map<std::string, double>>& kernels) {
    std::map<std::string, double> figures;
    for (const auto& c : counters) {
        double sum = 0, weight = 0;
        bool any = false;
        for (const auto& values : kernels) {
            const auto found = values.find(c.column);
            if (found == values.end()) continue;
            any = true;
            const auto time = values.find(k_duration_column);
            const double w = c.how == summed ? 1.0 : time == values.end() ? 1.0 : time->second;
            sum += w * found->second;
            weight += w;
        }
        if (any) figures[c.column] = c.how == summed ? sum : weight > 0 ? sum / weight : 0;
    }
    return figures;
}

std::vector<std::pair<std::string, double>> top_stalls(const std::map<std::string, double>& values, std::size_t count) {
    std::vector<std::pair<std::string, double>> stalls;
    for (const auto& [column, value] : values)
        if (column.starts_with(k_stall_prefix)) stalls.emplace_back(column.substr(std::string(k_stall_prefix).size()), value);
    std::stable_sort(stalls.begin(), stalls.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (stalls.size() > count) stalls.resize(count);
    return stalls;
}

}  // namespace kjit::why
