// The tuning database: what each measured point of a tune took, stored in the cache directory
// (CACHE/tune/<key hash>.json), one file per key. The key is what decides the answer — the config
// without its launch, measure and tune blocks, names and input values, the device and its
// architecture, the driver, NVRTC and kjit's kernels — so a second tune of the same config
// measures nothing again, an interrupted one resumes, and `launch: "tuned"` finds the best point.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "config/config.hpp"
#include "run/gpu.hpp"

namespace kjit::tune {

/// The key of a tune of `doc` on `device`: the config's JSON less "launch", "tune", "sweep",
/// "measure", "name", "description", "tolerance", "seed" and its inputs' values (their "shape"
/// and "per" stay), and the versions that change kernels.
[[nodiscard]] config::json_value key_of(const config::document& doc, const run::device_info& device,
                                        const codegen::template_set& templates);

/// The key of a tune under `cache_root` that differs from `key` only in its device's name: one
/// made on another GPU of the same architecture, driver and kernels; nullopt when there is none.
[[nodiscard]] std::optional<config::json_value> key_on_same_arch(const std::filesystem::path& cache_root,
                                                                 const config::json_value& key);

/// A measured point as stored.
struct stored_point {
    config::json_value values;       ///< key path → value
    std::optional<double> ms;        ///< cold median; nullopt when it failed
    std::optional<double> roofline;  ///< its fraction of the copy ceiling at its bytes
    std::string status;              ///< PASS, FAIL, error
    std::string message;             ///< why it failed
    std::string measured;            ///< when: "2026-12-02T10:11:12Z"
};

class database {
public:
    /// The entry of `key` under `cache_root`, read if it exists. A damaged file is set aside with
    /// `warning` saying so, and replaced at the next save.
    database(const std::filesystem::path& cache_root, config::json_value key);

    [[nodiscard]] const stored_point* find(const config::json_value& values) const;
    void add(stored_point point);
    /// Writes the entry atomically.
    void save() const;

    [[nodiscard]] const std::vector<stored_point>& points() const { return m_points; }
    /// The fastest point that passed; nullptr when none did.
    [[nodiscard]] const stored_point* best() const;
    [[nodiscard]] const std::filesystem::path& file() const { return m_file; }
    [[nodiscard]] const config::json_value& key() const { return m_key; }
    [[nodiscard]] const std::string& warning() const { return m_warning; }

private:
    std::filesystem::path m_file;
    config::json_value m_key;
    std::vector<stored_point> m_points;
    std::string m_warning;
};

/// Now as "2026-12-02T10:11:12Z".
[[nodiscard]] std::string utc_now();

}  // namespace kjit::tune
