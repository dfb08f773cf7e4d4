// The GPU a pipeline is resolved for: what every "auto" of a family's policy depends on besides the
// shape. `run`, `sweep`, `tune` and Python sessions take it from the device they run on (run::
// target_of); `compile` and `emit` from `--target` (a known GPU or an sm_XX) or the config's
// compile.target / compile.arch, and sm_90 (an H200) when nothing names one.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::config {

struct target {
    std::string name;  ///< "NVIDIA H200", or "h100", "sm_89" as named on the command line
    int arch = 90;     ///< compute capability as major*10 + minor
    int sm_count = 132;
    std::size_t shared_per_block = 227 * 1024;  ///< the most dynamic shared memory one block may opt in to
    std::size_t shared_per_sm = 228 * 1024;
    int registers_per_sm = 65536;
    std::size_t l2_bytes = 0;
    std::string like;  ///< a target named by its architecture: the GPU whose limits it takes ("a100")

    /// "h200 (sm_90, 132 SMs)", "sm_80 (like a100: 108 SMs)" for reports and messages.
    [[nodiscard]] std::string describe() const;
    bool operator==(const target&) const = default;
};

/// The GPUs `--target` knows by name ("h100", "h200", "a100", "l4", "rtx4090", …), for messages.
[[nodiscard]] std::string known_target_list();
/// A known GPU by name, or an architecture ("sm_89", "89") with the limits of a typical GPU of it
/// (its SM count and shared memory); nullopt for anything else.
[[nodiscard]] std::optional<target> named_target(std::string_view text);
/// The target when nothing names one: sm_90, as an H200 (what kjit is measured on).
[[nodiscard]] target default_target();

}  // namespace kjit::config
