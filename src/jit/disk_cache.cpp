#include "jit/disk_cache.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/hash.hpp"
#include "util/units.hpp"

namespace kjit::jit {
namespace {

namespace stdfs = std::filesystem;
constexpr const char* k_ptx = "program.ptx";
constexpr const char* k_cubin = "program.cubin";
constexpr const char* k_meta = "meta.json";

bool is_entry_key(const std::string& name) {
    return name.size() == 32 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

/// A record's file name: <key>.json, with no folder.
bool is_record_name(const stdfs::path& name) {
    return !name.has_parent_path() && name.extension() == ".json" && is_entry_key(name.stem().string());
}

/// What a writer leaves when it is killed mid-store (.tmp-KEY-…) or cannot delete a replaced
/// entry (.old-KEY-…).
bool is_leftover(const std::string& name) { return name.starts_with(".tmp-") || name.starts_with(".old-"); }

/// v1, v2, …: a format version's directory. Nothing else under the root is kjit's.
bool is_version_dir(const std::string& name) {
    return name.size() >= 2 && name[0] == 'v' && name.find_first_not_of("0123456789", 1) == std::string::npos;
}

/// An entry kjit wrote: a real directory (not a link to one) named by a key, holding kjit's files
/// and nothing else. Only such directories are deleted: a folder that merely has a key's name
/// stays, whatever holds it.
bool is_own_entry(const stdfs::directory_entry& item) {
    std::error_code ec;
    if (!is_entry_key(item.path().filename().string()) || !stdfs::is_directory(item.symlink_status(ec))) return false;
    bool any = false;
    for (const auto& file : stdfs::directory_iterator(item.path(), ec)) {
        const std::string name = file.path().filename().string();
        if (name != k_ptx && name != k_cubin && name != k_meta) return false;
        any = true;
    }
    return any && !ec;
}

/// The entries of a version's directory, or none where that directory is a link: kjit deletes
/// nothing it reaches through a link out of its own root.
std::vector<stdfs::directory_entry> own_items(const stdfs::path& dir) {
    std::error_code ec;
    std::vector<stdfs::directory_entry> items;
    if (stdfs::is_symlink(stdfs::symlink_status(dir, ec))) return items;
    for (const auto& item : stdfs::directory_iterator(dir, ec)) items.push_back(item);
    return items;
}

/// Reads a file of an entry; anything but a regular file (a FIFO would block) is a problem.
std::string read_entry_file(const stdfs::path& path) {
    std::error_code ec;
    if (!stdfs::is_regular_file(stdfs::symlink_status(path, ec)))
        throw error(error_kind::io, path.filename().string() + " is not a regular file");
    return fs::read_file(path);
}

/// A directory under the system's temp folder is shared by every user: kjit uses its own per
/// user, created private, and only if it really is the user's.
stdfs::path private_temp_root() {
    const stdfs::path root = stdfs::temp_directory_path() / ("kjit-cache-" + std::to_string(::getuid()));
    ::mkdir(root.c_str(), 0700);
    struct stat info {};
    if (::lstat(root.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid() ||
        (info.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        throw error(error_kind::io, "cache: " + root.string() +
                                        " is not a private directory of this user; set KJIT_CACHE_DIR or HOME");
    return root;
}

/// Moves `path` out of the way (to .old-…, which readers never open) and deletes it.
void remove_entry(const stdfs::path& path, const std::string& key) {
    const stdfs::path trash = path.parent_path() / (".old-" + key + "-" + fs::unique_suffix());
    std::error_code ec;
    if (::rename(path.c_str(), trash.c_str()) != 0) {
        if (errno == ENOENT) return;  // someone else removed it first
        throw error(error_kind::io, "cache: cannot remove " + path.string() + ": " + std::strerror(errno));
    }
    stdfs::remove_all(trash, ec);
}

std::uintmax_t directory_bytes(const stdfs::path& dir) {
    std::uintmax_t total = 0;
    std::error_code ec;
    for (const auto& file : stdfs::directory_iterator(dir, ec)) {
        const auto size = file.file_size(ec);
        if (!ec) total += size;
    }
    return total;
}

std::string check_blob(const nlohmann::json& meta, const std::string& bytes, const std::string& field) {
    if (!meta.contains(field + "_bytes") || !meta.contains(field + "_xxh3"))
        return "meta.json lacks " + field + " size/hash";
    if (meta[field + "_bytes"].get<std::size_t>() != bytes.size())
        return field + " is " + std::to_string(bytes.size()) + " bytes, expected " +
               std::to_string(meta[field + "_bytes"].get<std::size_t>()) + " (truncated?)";
    if (meta[field + "_xxh3"].get<std::string>() != xxh3_128_hex(bytes)) return field + " hash mismatch";
    return {};
}

}  // namespace

disk_cache::disk_cache(stdfs::path root, std::uintmax_t limit_bytes) : m_root(std::move(root)), m_limit(limit_bytes) {}

std::uintmax_t disk_cache::default_limit() {
    const char* text = std::getenv("KJIT_CACHE_LIMIT");
    if (!text || !*text) return k_default_limit;
    const auto bytes = units::parse_bytes(text);
    if (!bytes)
        throw error(error_kind::usage, std::string("KJIT_CACHE_LIMIT=") + text +
                                           ": expected a size such as 2GiB or 500MB (0: unbounded)");
    return *bytes;
}

stdfs::path disk_cache::default_root() {
    if (const char* dir = std::getenv("KJIT_CACHE_DIR"); dir && *dir) return dir;
    // The XDG spec: a relative XDG_CACHE_HOME is invalid and must be ignored.
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && stdfs::path(xdg).is_absolute())
        return stdfs::path(xdg) / "kjit";
    if (const char* home = std::getenv("HOME"); home && *home) return stdfs::path(home) / ".cache" / "kjit";
    return private_temp_root();
}

stdfs::path disk_cache::entries_dir() const { return m_root / ("v" + std::to_string(k_format_version)); }

lookup_result disk_cache::lookup(const std::string& key) const {
    lookup_result result = read(key);
    // Marks the entry used for prune(); a read-only cache just keeps its order.
    if (result.status == lookup_status::hit) ::utimensat(AT_FDCWD, (entries_dir() / key).c_str(), nullptr, 0);
    return result;
}

lookup_result disk_cache::read(const std::string& key) const {
    const stdfs::path dir = entries_dir() / key;
    std::error_code ec;
    if (!stdfs::is_directory(dir, ec)) return {};
    lookup_result result;
    result.status = lookup_status::corrupt;
    try {
        result.entry.meta = nlohmann::json::parse(read_entry_file(dir / k_meta));
        if (result.entry.meta.value("format_version", 0) != k_format_version) {
            result.problem = "format version differs";
            return result;
        }
        result.entry.ptx = read_entry_file(dir / k_ptx);
        result.entry.cubin = read_entry_file(dir / k_cubin);
        result.problem = mismatch(result.entry);
    } catch (const std::exception& e) {  // unreadable file, bad JSON, wrong field types
        if (!stdfs::exists(dir, ec)) return {};  // pruned or cleared while we read it
        result.problem = e.what();
    }
    if (result.problem.empty()) result.status = lookup_status::hit;
    else result.entry = {};
    return result;
}

bool disk_cache::is_key(const std::string& name) { return is_entry_key(name); }

std::string disk_cache::mismatch(const cache_entry& entry) {
    std::string problem = check_blob(entry.meta, entry.ptx, "ptx");
    return problem.empty() ? check_blob(entry.meta, entry.cubin, "cubin") : problem;
}

void disk_cache::store(const std::string& key, const cache_entry& entry, bool replace) {
    const stdfs::path dir = entries_dir();
    const stdfs::path target = dir / key;
    const stdfs::path temp = dir / (".tmp-" + key + "-" + fs::unique_suffix());
    std::error_code ec;
    stdfs::create_directories(temp, ec);
    if (ec) throw error(error_kind::io, "cache: cannot create " + temp.string() + ": " + ec.message());
    nlohmann::json meta = entry.meta;
    meta["format_version"] = k_format_version;
    meta["key"] = key;
    meta["ptx_bytes"] = entry.ptx.size();
    meta["ptx_xxh3"] = xxh3_128_hex(entry.ptx);
    meta["cubin_bytes"] = entry.cubin.size();
    meta["cubin_xxh3"] = xxh3_128_hex(entry.cubin);
    try {
        fs::write_file_atomic(temp / k_ptx, entry.ptx);
        fs::write_file_atomic(temp / k_cubin, entry.cubin);
        fs::write_file_atomic(temp / k_meta, meta.dump(2));
    } catch (...) {
        stdfs::remove_all(temp, ec);
        throw;
    }
    // rename(2) onto a non-empty directory fails: that is how a concurrent writer finds out that
    // another one published first.
    if (::rename(temp.c_str(), target.c_str()) == 0) {
        *m_stored = true;
        return;
    }
    if (errno == ENOTEMPTY || errno == EEXIST) {
        if (replace) {
            const stdfs::path trash = dir / (".old-" + key + "-" + fs::unique_suffix());
            if (::rename(target.c_str(), trash.c_str()) == 0 && ::rename(temp.c_str(), target.c_str()) == 0) {
                stdfs::remove_all(trash, ec);
                *m_stored = true;
                return;
            }
            stdfs::remove_all(trash, ec);
        }
        stdfs::remove_all(temp, ec);
        return;
    }
    const std::string reason = std::strerror(errno);
    stdfs::remove_all(temp, ec);
    throw error(error_kind::io, "cache: cannot publish " + target.string() + ": " + reason);
}

std::vector<entry_summary> disk_cache::scan(bool with_meta) const {
    std::vector<entry_summary> entries;
    std::error_code ec;
    for (const auto& item : own_items(entries_dir())) {
        const std::string name = item.path().filename().string();
        if (!is_own_entry(item)) continue;
        entry_summary summary{name, nlohmann::json::object(), directory_bytes(item.path()),
                              stdfs::last_write_time(item.path(), ec)};
        if (with_meta) {
            try {
                summary.meta = nlohmann::json::parse(read_entry_file(item.path() / k_meta));
            } catch (const std::exception&) {
                summary.meta = {{"problem", "unreadable meta.json"}};
            }
        }
        entries.push_back(std::move(summary));
    }
    return entries;
}

std::vector<entry_summary> disk_cache::list() const { return scan(true); }

std::vector<std::filesystem::path> disk_cache::leftovers() const {
    std::vector<stdfs::path> found;
    for (const auto& item : own_items(entries_dir()))
        if (is_leftover(item.path().filename().string())) found.push_back(item.path());
    return found;
}

std::vector<damaged_entry> disk_cache::verify() const {
    std::vector<damaged_entry> damaged;
    for (const auto& entry : scan(false)) {
        const auto found = read(entry.key);
        if (found.status == lookup_status::corrupt) damaged.push_back({entry.key, found.problem});
    }
    return damaged;
}

std::vector<record_file> disk_cache::records() const {
    std::vector<record_file> found;
    std::error_code ec;
    for (const char* folder : k_record_folders)
        for (const auto& item : stdfs::directory_iterator(m_root / folder, ec)) {
            const std::filesystem::path& name = item.path().filename();
            if (!is_record_name(name) || !item.is_regular_file(ec) || item.is_symlink(ec)) continue;
            found.push_back({item.path(), item.file_size(ec), item.last_write_time(ec)});
        }
    return found;
}

bool disk_cache::add_record(const std::string& folder, const std::string& file_name, std::string_view text) {
    const stdfs::path name(file_name);
    const bool known_folder = std::find(std::begin(k_record_folders), std::end(k_record_folders), folder) !=
                              std::end(k_record_folders);
    if (!known_folder || !is_record_name(name))
        throw error(error_kind::config, "cache: " + folder + "/" + file_name + ": expected a record of " +
                                            k_tuning_folder + "/ named <32 hex digits>.json");
    const stdfs::path dir = m_root / folder;
    std::error_code ec;
    stdfs::create_directories(dir, ec);
    const stdfs::path temp = dir / (".tmp-" + file_name + "-" + fs::unique_suffix());
    fs::write_file_atomic(temp, text);
    // link(2) publishes the whole file under its name, or fails where one of that name exists:
    // a record already there (the tuner's own, or an earlier import's) is never replaced.
    const bool added = ::link(temp.c_str(), (dir / name).c_str()) == 0;
    const int why = errno;
    stdfs::remove(temp, ec);
    if (!added && why != EEXIST)
        throw error(error_kind::io, "cache: cannot publish " + (dir / name).string() + ": " + std::strerror(why));
    return added;
}

prune_result disk_cache::prune(bool remove_damaged) {
    prune_result result;
    const stdfs::path dir = entries_dir();
    // Sizes and times only: the prune after every storing command must not parse every meta.json.
    std::vector<entry_summary> entries = scan(false);
    if (remove_damaged)
        std::erase_if(entries, [&](const entry_summary& e) {
            if (read(e.key).status != lookup_status::corrupt) return false;
            remove_entry(dir / e.key, e.key);
            result.bytes_freed += e.bytes;
            ++result.damaged;
            return true;
        });
    // Entries and records in one order, most recently used first: kept while they fit.
    struct candidate {
        stdfs::file_time_type used;
        std::uintmax_t bytes;
        const entry_summary* entry;  ///< or a record:
        const record_file* record;
    };
    const std::vector<record_file> kept_records = records();
    std::vector<candidate> candidates;
    for (const auto& e : entries) candidates.push_back({e.last_used, e.bytes, &e, nullptr});
    for (const auto& r : kept_records) candidates.push_back({r.written, r.bytes, nullptr, &r});
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.used > b.used; });
    std::error_code ec;
    for (const auto& c : candidates) {
        if (m_limit == 0 || result.bytes_kept + c.bytes <= m_limit) {
            result.bytes_kept += c.bytes;
            continue;
        }
        if (c.entry) {
            remove_entry(dir / c.entry->key, c.entry->key);
            ++result.least_used;
        } else if (stdfs::remove(c.record->path, ec)) {
            ++result.records;
        }
        result.bytes_freed += c.bytes;
    }
    const auto stale = stdfs::file_time_type::clock::now() - std::chrono::hours(1);
    for (const auto& path : leftovers()) {
        const auto changed = stdfs::last_write_time(path, ec);
        if (ec || changed > stale) continue;
        result.bytes_freed += directory_bytes(path);
        if (stdfs::remove_all(path, ec) > 0 && !ec) ++result.leftovers;
    }
    return result;
}

std::size_t disk_cache::clear() {
    std::size_t removed = 0;
    std::error_code ec;
    for (const auto& version : stdfs::directory_iterator(m_root, ec)) {
        if (!version.is_directory(ec) || version.is_symlink(ec) || !is_version_dir(version.path().filename().string()))
            continue;
        // Only entries and kjit's own leftovers; the version directory goes only if that empties it.
        // An entry is renamed away before it is deleted: an interrupted clear leaves a leftover
        // (which prune removes), never half an entry.
        for (const auto& item : own_items(version.path())) {
            const std::string name = item.path().filename().string();
            if (is_own_entry(item)) {
                remove_entry(item.path(), name);
                ++removed;
            } else if (is_leftover(name)) {
                stdfs::remove_all(item.path(), ec);
                if (ec) throw error(error_kind::io, "cache: cannot remove " + item.path().string() + ": " + ec.message());
            }
        }
        stdfs::remove(version.path(), ec);  // fails, harmlessly, if something else is in it
    }
    return removed;
}

}  // namespace kjit::jit
