// Host input arrays from the config's fill rules, or read from files (.npy or raw) and converted
// to the pipeline's dtype. Deterministic: the same seed gives the same values on any machine and
// with any number of threads.
#pragma once
#include "config/config.hpp"
#include "reference/reference.hpp"

namespace kjit::run {

/// Every input of `p`, rounded to its dtype. A file that no longer matches its header, or cannot
/// be read, throws kjit::error(config) naming it.
[[nodiscard]] reference::input_arrays make_inputs(const config::pipeline& p);

/// What a run's inputs depend on: n, dtype, seed, the fill rules and the files' content.
[[nodiscard]] std::string inputs_key(const config::pipeline& p);

/// A file input's content, for the key that shares host data: its path and the XXH3 of its
/// bytes (hashed once per size and modification time), so that an edited file is read again.
[[nodiscard]] std::string file_fingerprint(const config::input_spec& in);

/// The file inputs of `p` and how each converts, for the record: "scores ← scores.npy (float64
/// 4 × 5 → float32, rounded to nearest even)"; "" when there are none.
[[nodiscard]] std::string describe_file_inputs(const config::pipeline& p);

}  // namespace kjit::run
