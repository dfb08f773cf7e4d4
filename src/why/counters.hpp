// Hardware counters named for a learner: the sets `kjit run --metrics SET` takes, the CUPTI metric
// behind each column, and how a variant's kernels add up to one figure per column. No CUDA here:
// the GPU reads them through run::gpu::read_counters.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace kjit::why {

/// One column of counters: a record's `metric_<column>`, read as CUPTI's `metric`.
struct counter {
    const char* column;   ///< "dram_read_bytes"
    const char* metric;   ///< "dram__bytes_read.sum"
    const char* meaning;  ///< "bytes read from DRAM (HBM)"
    /// How the kernels of a variant combine: summed (bytes, time), or averaged weighted by each
    /// kernel's time (rates and percentages).
    enum class combined { summed, time_weighted } how;
};

/// The column every set reads: each kernel's time under the profiler, which weighs the others.
inline constexpr const char* k_duration_column = "duration_ns";

/// "memory", "compute", "stalls" or "all" (the memory and compute sets and the warp stalls).
[[nodiscard]] const std::vector<std::string>& counter_set_names();
/// The counters of a set, duration first. Throws kjit::error(usage) naming the sets for another.
[[nodiscard]] std::vector<counter> counters_of(const std::string& set);

/// Per column, the variant's figure from its kernels' (each column → value, as read; a column a
/// kernel lacks is left out of that column's figure).
[[nodiscard]] std::map<std::string, double> combine(const std::vector<counter>& counters,
                                                    const std::vector<std::map<std::string, double>>& kernels);

/// The stall columns of `values` with the most cycles per issued instruction, largest first: at
/// most `count` of them, as ("long_scoreboard", cycles).
[[nodiscard]] std::vector<std::pair<std::string, double>> top_stalls(const std::map<std::string, double>& values,
                                                                     std::size_t count);

}  // namespace kjit::why
