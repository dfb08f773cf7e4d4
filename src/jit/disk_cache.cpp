#include "jit/disk_cache.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/hash.hpp"

namespace kjit::jit {
namespace {

namespace stdfs = std::filesystem;
constexpr const char* k_ptx = "program.ptx";
constexpr const char* k_cubin = "program.cubin";
constexpr const char* k_meta = "meta.json";

bool is_entry_key(const std::string& name) {
    return name.size() == 32 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

/// What a writer leaves when it is killed mid-store (.tmp-KEY-…) or cannot delete a replaced
/// entry (.old-KEY-…).
bool is_leftover(const std::string& name) { return name.starts_with(".tmp-") || name.starts_with(".old-"); }

/// v1, v2, …: a format version's directory. Nothing else under the root is kjit's.
bool is_version_dir(const std::string& name) {
    return name.size() >= 2 && name[0] == 'v' && name.find_first_not_of("0123456789", 1) == std::string::npos;
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

disk_cache::disk_cache(stdfs::path root) : m_root(std::move(root)) {}

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
        result.problem = check_blob(result.entry.meta, result.entry.ptx, "ptx");
        if (result.problem.empty()) result.problem = check_blob(result.entry.meta, result.entry.cubin, "cubin");
    } catch (const std::exception& e) {  // unreadable file, bad JSON, wrong field types
        result.problem = e.what();
    }
    if (result.problem.empty()) result.status = lookup_status::hit;
    else result.entry = {};
    return result;
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
    if (::rename(temp.c_str(), target.c_str()) == 0) return;
    if (errno == ENOTEMPTY || errno == EEXIST) {
        if (replace) {
            const stdfs::path trash = dir / (".old-" + key + "-" + fs::unique_suffix());
            if (::rename(target.c_str(), trash.c_str()) == 0 && ::rename(temp.c_str(), target.c_str()) == 0) {
                stdfs::remove_all(trash, ec);
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

std::vector<entry_summary> disk_cache::list() const {
    std::vector<entry_summary> entries;
    std::error_code ec;
    for (const auto& item : stdfs::directory_iterator(entries_dir(), ec)) {
        const std::string name = item.path().filename().string();
        if (!item.is_directory() || !is_entry_key(name)) continue;
        entry_summary summary{name, nlohmann::json::object(), 0};
        for (const auto& file : stdfs::directory_iterator(item.path(), ec))
            summary.bytes += file.file_size(ec);
        try {
            summary.meta = nlohmann::json::parse(read_entry_file(item.path() / k_meta));
        } catch (const std::exception&) {
            summary.meta = {{"problem", "unreadable meta.json"}};
        }
        entries.push_back(std::move(summary));
    }
    return entries;
}

std::vector<std::filesystem::path> disk_cache::leftovers() const {
    std::vector<stdfs::path> found;
    std::error_code ec;
    for (const auto& item : stdfs::directory_iterator(entries_dir(), ec))
        if (is_leftover(item.path().filename().string())) found.push_back(item.path());
    return found;
}

std::size_t disk_cache::clear() {
    std::size_t removed = 0;
    std::error_code ec;
    for (const auto& version : stdfs::directory_iterator(m_root, ec)) {
        if (!version.is_directory(ec) || version.is_symlink(ec) || !is_version_dir(version.path().filename().string()))
            continue;
        // Only entries and kjit's own leftovers; the version directory goes only if that empties it.
        for (const auto& item : stdfs::directory_iterator(version.path(), ec)) {
            const std::string name = item.path().filename().string();
            if (!is_entry_key(name) && !is_leftover(name)) continue;
            stdfs::remove_all(item.path(), ec);
            if (ec) throw error(error_kind::io, "cache: cannot remove " + item.path().string() + ": " + ec.message());
            removed += is_entry_key(name);
        }
        stdfs::remove(version.path(), ec);  // fails, harmlessly, if something else is in it
    }
    return removed;
}

}  // namespace kjit::jit
