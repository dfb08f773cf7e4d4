// A shippable copy of the cache (`kjit cache export` / `import`): the compiled entries (PTX, cubin,
// meta.json) and the tuning database's records in one file, so that a fresh node, or each worker
// of a cluster, starts warm. The file is CBOR (nlohmann::json's binary form: PTX and cubin travel
// as bytes, not text). Importing checks that the bundle was made by this kjit, cache format and
// NVRTC version (the cache key holds all three, so another's entries would never be found),
// verifies every entry against the sizes and hashes of its meta.json, and adds only what the
// cache lacks: nothing there is replaced. No CUDA headers: the bundle carries bytes.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "jit/disk_cache.hpp"

namespace kjit::jit {

/// What a bundle holds, and what an import of it added.
struct bundle_summary {
    std::size_t entries = 0;                    ///< compiled entries in the bundle
    std::size_t records = 0;                    ///< tuning records in the bundle
    std::map<std::string, std::size_t> arches;  ///< its entries per architecture ("sm_90a")
    std::string nvrtc_version;                  ///< of the NVRTC that compiled its entries
    std::size_t entries_added = 0;              ///< import: entries the cache lacked (the rest it kept)
    std::size_t records_added = 0;              ///< import: records the cache lacked (the rest it kept)
};

/// The cache's entries and tuning records as a bundle's bytes; `summary` (if set) says what it
/// holds. Entries that fail their own hashes are left out. Reads nothing as used: an export does
/// not change what a prune keeps.
[[nodiscard]] std::string export_bundle(const disk_cache& cache, bundle_summary* summary = nullptr);

/// Adds a bundle's entries and records to `cache`, each published atomically. `source` names the
/// bundle in errors: kjit::error(config) for a file that is not a bundle, or one of another kjit,
/// cache format or NVRTC, and for an entry that is not a cache key's or whose bytes do not match
/// its meta.json (nothing of a refused bundle is added); kjit::error(io) when the cache cannot be
/// written.
bundle_summary import_bundle(disk_cache& cache, std::string_view bytes, const std::string& source);

}  // namespace kjit::jit
