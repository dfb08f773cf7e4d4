// The on-disk cache of compiled programs: <root>/v<format>/<key>/{program.ptx, program.cubin,
// meta.json}. An entry is written in a private temp directory and published with one rename, so
// readers need no lock and never see half an entry. meta.json records sizes and XXH3 hashes of
// both binaries; an entry that does not match them is reported as corrupt (a miss), never used.
// No CUDA headers: the cache stores bytes.
#pragma once
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kjit::jit {

struct cache_entry {
    std::string ptx;
    std::string cubin;
    nlohmann::json meta = nlohmann::json::object();  ///< options, logs, times, kernels, …
};

enum class lookup_status { hit, miss, corrupt };

struct lookup_result {
    lookup_status status = lookup_status::miss;
    cache_entry entry;    ///< filled on a hit
    std::string problem;  ///< why an entry was rejected (status corrupt)
};

struct entry_summary {
    std::string key;
    nlohmann::json meta;
    std::uintmax_t bytes = 0;
};

class disk_cache {
public:
    static constexpr int k_format_version = 1;

    explicit disk_cache(std::filesystem::path root);

    /// KJIT_CACHE_DIR, else $XDG_CACHE_HOME/kjit (if absolute), else $HOME/.cache/kjit, else a
    /// private per-user directory in the temp folder (throws kjit::error(io) if that is not the
    /// user's own).
    [[nodiscard]] static std::filesystem::path default_root();

    [[nodiscard]] const std::filesystem::path& root() const { return m_root; }
    /// The directory that holds this format version's entries.
    [[nodiscard]] std::filesystem::path entries_dir() const;

    [[nodiscard]] lookup_result lookup(const std::string& key) const;

    /// Publishes an entry atomically. An existing valid entry wins (another process compiled the
    /// same thing; both are identical) unless `replace`, which swaps it out (corrupt or --refresh).
    /// Throws kjit::error(io) when the cache directory cannot be written.
    void store(const std::string& key, const cache_entry& entry, bool replace);

    [[nodiscard]] std::vector<entry_summary> list() const;
    /// What killed or blocked writers left behind (.tmp-*, .old-*); `clear` removes them.
    [[nodiscard]] std::vector<std::filesystem::path> leftovers() const;
    /// Removes every entry of every format version (and the leftovers), nothing else that may
    /// be in the directory; returns how many entries were removed.
    std::size_t clear();

    /// After a failed store, further stores are skipped (shared by copies of this cache).
    [[nodiscard]] bool unwritable() const { return *m_unwritable; }
    void mark_unwritable() { *m_unwritable = true; }

private:
    std::filesystem::path m_root;
    std::shared_ptr<std::atomic<bool>> m_unwritable = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace kjit::jit
