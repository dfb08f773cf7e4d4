// The on-disk cache of compiled programs: <root>/v<format>/<key>/{program.ptx, program.cubin,
// meta.json}. An entry is written in a private temp directory and published with one rename, so
// readers need no lock and never see half an entry. meta.json records sizes and XXH3 hashes of
// both binaries; an entry that does not match them is reported as corrupt (a miss), never used.
// The cache is bounded: a hit marks its entry used (the directory's mtime), and prune() removes
// the least recently used entries until the cache fits its limit. No CUDA headers: the cache
// stores bytes.
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
    std::filesystem::file_time_type last_used;  ///< published, or last hit
};

/// One entry that does not match its own meta.json.
struct damaged_entry {
    std::string key;
    std::string problem;
};

/// A record another module keeps under the cache's root in a folder of its own, one file each,
/// named <32 hex digits>.json: the tuning database (CACHE/tune/). Counted and bounded with the
/// compiled entries; files of other names there are never touched.
struct record_file {
    std::filesystem::path path;
    std::uintmax_t bytes = 0;
    std::filesystem::file_time_type written;  ///< its last save: a record's last use
};

/// The tuning database's folder under the root; the folders of records.
inline constexpr const char* k_tuning_folder = "tune";
inline constexpr const char* k_record_folders[] = {k_tuning_folder};

struct prune_result {
    std::size_t damaged = 0;       ///< entries removed because they failed verification
    std::size_t least_used = 0;    ///< entries removed to fit the limit
    std::size_t records = 0;       ///< records removed to fit the limit
    std::size_t leftovers = 0;     ///< stale .tmp-* / .old-* removed
    std::uintmax_t bytes_freed = 0;
    std::uintmax_t bytes_kept = 0;  ///< what the entries and records that stay take
};

class disk_cache {
public:
    static constexpr int k_format_version = 1;

    /// The bound when neither KJIT_CACHE_LIMIT nor --cache-limit says otherwise.
    static constexpr std::uintmax_t k_default_limit = std::uintmax_t{1} << 30;

    /// `limit_bytes`: what prune() keeps the entries under; 0 = unbounded.
    explicit disk_cache(std::filesystem::path root, std::uintmax_t limit_bytes = k_default_limit);

    /// KJIT_CACHE_DIR, else $XDG_CACHE_HOME/kjit (if absolute), else $HOME/.cache/kjit, else a
    /// private per-user directory in the temp folder (throws kjit::error(io) if that is not the
    /// user's own).
    [[nodiscard]] static std::filesystem::path default_root();

    /// KJIT_CACHE_LIMIT (a size such as 2GiB or 500MB; 0 = unbounded), else k_default_limit.
    /// Throws kjit::error(usage) naming the variable when it is not a size.
    [[nodiscard]] static std::uintmax_t default_limit();

    [[nodiscard]] const std::filesystem::path& root() const { return m_root; }
    [[nodiscard]] std::uintmax_t limit() const { return m_limit; }
    /// The directory that holds this format version's entries.
    [[nodiscard]] std::filesystem::path entries_dir() const;

    /// Reads and checks an entry; a hit marks it used. An entry removed while it is read (by a
    /// concurrent prune or clear) is a miss.
    [[nodiscard]] lookup_result lookup(const std::string& key) const;
    /// lookup() without marking the entry used (an export).
    [[nodiscard]] lookup_result read(const std::string& key) const;
    /// Whether `name` is a cache key (32 lowercase hex digits), as entries' folders are named.
    [[nodiscard]] static bool is_key(const std::string& name);
    /// Why `entry`'s PTX or cubin does not match the sizes and hashes its meta.json records; "" when both do.
    [[nodiscard]] static std::string mismatch(const cache_entry& entry);

    /// Publishes an entry atomically. An existing valid entry wins (another process compiled the
    /// same thing; both are identical) unless `replace`, which swaps it out (corrupt or --refresh).
    /// Throws kjit::error(io) when the cache directory cannot be written.
    void store(const std::string& key, const cache_entry& entry, bool replace);

    [[nodiscard]] std::vector<entry_summary> list() const;
    /// Every record (k_record_folders) under the root.
    [[nodiscard]] std::vector<record_file> records() const;
    /// Publishes a record into `folder` (one of k_record_folders) as `file_name` (<32 hex>.json)
    /// unless one of that name is there: false then, and the one there is kept. Throws
    /// kjit::error(config) for another folder or name, (io) when it cannot be written.
    bool add_record(const std::string& folder, const std::string& file_name, std::string_view text);
    /// What killed or blocked writers left behind (.tmp-*, .old-*); `clear` removes them.
    [[nodiscard]] std::vector<std::filesystem::path> leftovers() const;
    /// Re-hashes every entry against its meta.json (without marking any used).
    [[nodiscard]] std::vector<damaged_entry> verify() const;
    /// Removes the least recently used entries and records until the rest fit the limit, and leftovers
    /// older than an hour (a younger one may be a writer at work). With `remove_damaged`, also
    /// every entry verify() rejects. Entries are renamed away before they are deleted, so a
    /// concurrent reader sees a whole entry or none. Throws kjit::error(io) if one cannot be removed.
    prune_result prune(bool remove_damaged = false);

    /// Removes every entry of every format version (and the leftovers), nothing else that may
    /// be in the directory; returns how many entries were removed.
    std::size_t clear();

    /// After a failed store, further stores are skipped (shared by copies of this cache).
    [[nodiscard]] bool unwritable() const { return *m_unwritable; }
    void mark_unwritable() { *m_unwritable = true; }
    /// Whether this cache (or a copy) has published an entry: then a prune may be due.
    [[nodiscard]] bool stored_any() const { return *m_stored; }

private:
    /// Every entry with its size and last use; its meta.json too when `with_meta` (list()).
    [[nodiscard]] std::vector<entry_summary> scan(bool with_meta) const;

    std::filesystem::path m_root;
    std::uintmax_t m_limit;
    std::shared_ptr<std::atomic<bool>> m_unwritable = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<std::atomic<bool>> m_stored = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace kjit::jit
