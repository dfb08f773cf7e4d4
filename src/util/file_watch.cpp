#include "util/file_watch.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"
#include "util/interrupt.hpp"

namespace kjit {

file_watch::file_watch(const std::vector<std::filesystem::path>& files) : m_fd(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    if (m_fd < 0) throw error(error_kind::io, std::string("inotify_init1 failed: ") + std::strerror(errno));
    for (const auto& file : files) {
        const auto absolute = std::filesystem::absolute(file);
        const bool folder = std::filesystem::is_directory(absolute);
        const auto dir = folder ? absolute : absolute.parent_path();
        // Completed writes and files moved or created in place: not every modify of a half-written file.
        const int wd = ::inotify_add_watch(m_fd, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO);
        if (wd < 0) {
            const std::string why = std::strerror(errno);
            ::close(m_fd);
            throw error(error_kind::io, "cannot watch " + dir.string() + ": " + why);
        }
        m_watched.push_back({wd, dir, folder ? std::string() : absolute.filename().string()});
    }
}

file_watch::~file_watch() {
    if (m_fd >= 0) ::close(m_fd);
}

std::optional<std::filesystem::path> file_watch::wait(std::chrono::milliseconds poll) {
    alignas(inotify_event) char buffer[16384];
    while (!interrupted()) {
        pollfd ready{m_fd, POLLIN, 0};
        const int got = ::poll(&ready, 1, static_cast<int>(poll.count()));
        if (got < 0 && errno != EINTR) throw error(error_kind::io, std::string("poll failed: ") + std::strerror(errno));
        if (got <= 0) continue;
        const ssize_t length = ::read(m_fd, buffer, sizeof buffer);
        if (length <= 0) continue;
        std::optional<std::filesystem::path> changed;
        for (ssize_t at = 0; at < length;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
            at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
            if (event->len == 0) continue;
            const std::string name = event->name;
            for (const auto& w : m_watched)
                if (w.descriptor == event->wd && (w.name.empty() || w.name == name) && !name.starts_with("."))
                    changed = w.folder / name;
        }
        if (changed) return changed;
    }
    return std::nullopt;
}

}  // namespace kjit
