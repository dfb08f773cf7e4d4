#include "util/fs.hpp"

#include <algorithm>
#include <mutex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "util/error.hpp"
#include "util/gzip.hpp"
#include "util/strings.hpp"

namespace kjit::fs {

std::string read_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw error(error_kind::io, shown_path(path.string()) + ": is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw error(error_kind::io, shown_path(path.string()) + ": cannot open: " + std::strerror(errno));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) throw error(error_kind::io, shown_path(path.string()) + ": read failed");
    return std::move(buffer).str();
}

std::string read_text_file(const std::filesystem::path& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status)) throw error(error_kind::io, shown_path(path.string()) + ": is a directory");
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        throw error(error_kind::io, shown_path(path.string()) + ": not a regular file (a JSON text is read from a file)");
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > k_max_text_bytes)
        throw error(error_kind::io, shown_path(path.string()) + ": " + std::to_string(size) + " bytes; a JSON text kjit reads is at most " +
                                        std::to_string(k_max_text_bytes >> 20) + " MiB");
    std::string bytes = read_file(path);
    if (gzip::is_gzip(bytes)) return gzip::inflate(bytes, shown_path(path.string()), k_max_text_bytes);  // (results kept as .json.gz)
    return bytes;
}

std::string unique_suffix() {
    static std::atomic<unsigned> counter{0};
    return std::to_string(::getpid()) + "." +
           std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000) + "." +
           std::to_string(counter++);
}

std::string random_tag() {
    static thread_local std::random_device random;
    char tag[17];
    std::snprintf(tag, sizeof tag, "%08x%08x", random(), random());
    return tag;
}

temp_directory::temp_directory(const std::string& prefix) {
    // A new directory of this user's only: mkdir fails on a name that exists, a planted one too.
    for (int attempt = 0;; ++attempt) {
        m_path = std::filesystem::temp_directory_path() / (prefix + "-" + random_tag());
        if (::mkdir(m_path.c_str(), 0700) == 0) {
            m_removed_if_interrupted.emplace(m_path);
            return;
        }
        if (errno != EEXIST || attempt == 16)
            throw error(error_kind::io, shown_path(m_path.string()) + ": cannot create a private directory: " + std::strerror(errno));
    }
}

temp_directory::~temp_directory() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
    // The temp file is created, never opened: O_EXCL refuses a name that exists, a planted
    // symlink included, and its name is unguessable, in the target's own directory (one file
    // system, so the rename is atomic).
    const std::filesystem::path temp =
        path.parent_path() / ("." + path.filename().string() + ".kjit-" + random_tag() + ".tmp");
    auto fail = [&](const char* what) {
        const std::string reason = std::strerror(errno);
        std::error_code ec;
        std::filesystem::remove(temp, ec);
        throw error(error_kind::io, shown_path(path.string()) + ": " + what + ": " + reason);
    };
    struct stat replaced {};
    const bool replaces = ::stat(path.c_str(), &replaced) == 0 && S_ISREG(replaced.st_mode);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        const std::string reason = std::strerror(errno);  // nothing of ours to remove
        throw error(error_kind::io, shown_path(path.string()) + ": cannot create temp file: " + reason);
    }
    const removed_if_interrupted removed(temp);  // ours now: a signal before the rename removes it
    // A replaced file keeps its permissions (a private 0600 result stays private).
    if (replaces && ::fchmod(fd, replaced.st_mode & 07777) != 0) {
        ::close(fd);
        fail("cannot keep the file's permissions");
    }
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            ::close(fd);
            fail("write failed");
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) fail("cannot flush temp file");
    if (::rename(temp.c_str(), path.c_str()) != 0) fail("cannot rename temp file into place");
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
    std::error_code ec;
    if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) return std::filesystem::equivalent(a, b, ec);
    const auto resolved = [&](const std::filesystem::path& p) {
        return std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec).lexically_normal();
    };
    return resolved(a) == resolved(b);
}

namespace {
std::mutex g_read_mutex;
std::vector<std::filesystem::path> g_read;  // guarded by g_read_mutex
}  // namespace

void note_read(const std::filesystem::path& path) {
    const std::lock_guard lock(g_read_mutex);
    if (std::find(g_read.begin(), g_read.end(), path) == g_read.end()) g_read.push_back(path);
}

std::vector<std::filesystem::path> files_read() {
    const std::lock_guard lock(g_read_mutex);
    return g_read;
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                            const std::vector<std::filesystem::path>& reads) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const auto& [option, path] = outputs[i];
        if (path.empty() || path == "-") continue;
        for (std::size_t j = 0; j < i; ++j)
            if (outputs[j].second != "-" && !outputs[j].second.empty() && same_file(outputs[j].second, path))
                throw error(error_kind::usage, outputs[j].first + " and " + option + " name the same file " + shown_path(path) +
                                                   ": one would overwrite the other");
        for (const auto& read : reads)
            if (same_file(read, path))
                throw error(error_kind::usage, option + " " + shown_path(path) + ": is " + shown_path(read.string()) +
                                                   ", which kjit reads; results go to a file of their own");
    }
}

namespace {
void write_all(int fd, std::string_view bytes, const std::string& what) {
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw error(error_kind::io, what + ": write failed: " + std::strerror(errno));
        written += static_cast<std::size_t>(n);
    }
}
}  // namespace

void write_output(const std::filesystem::path& path, std::string_view bytes) {
    if (path == "-") {
        write_all(STDOUT_FILENO, bytes, "standard output");
        return;
    }
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);  // follows symlinks
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) throw error(error_kind::io, shown_path(path.string()) + ": cannot open: " + std::strerror(errno));
        try {
            write_all(fd, bytes, path.string());
        } catch (...) {
            ::close(fd);
            throw;
        }
        ::close(fd);
        return;
    }
    // A symlink (even one to a file not there yet): write the file it points to, keep the link.
    std::filesystem::path target = path;
    for (int hops = 0; hops < 40 && std::filesystem::is_symlink(std::filesystem::symlink_status(target, ec)); ++hops) {
        const auto next = std::filesystem::read_symlink(target, ec);
        if (ec) break;
        target = next.is_absolute() ? next : target.parent_path() / next;
    }
    write_file_atomic(target, bytes);
}

void check_output_path(const std::filesystem::path& path, const std::string& option) {
    if (path == "-") return;
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    const auto fail = [&](const std::string& why) {
        throw error(error_kind::usage, option + " " + shown_path(path.string()) + ": " + why);
    };
    if (std::filesystem::is_directory(status)) fail("is a directory");
    if (std::filesystem::exists(status)) {
        if (::access(path.c_str(), W_OK) != 0) fail(std::string("cannot be written: ") + std::strerror(errno));
        return;
    }
    const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    if (!std::filesystem::is_directory(dir, ec)) fail("its directory " + shown_path(dir.string()) + " does not exist");
    if (::access(dir.c_str(), W_OK) != 0) fail("its directory cannot be written: " + std::string(std::strerror(errno)));
}

}  // namespace kjit::fs
