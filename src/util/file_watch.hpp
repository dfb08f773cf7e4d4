// Waiting for a file to be saved again, for `kjit run --watch`: inotify on the folders that hold
// the watched files, so that an editor that saves by writing a new file and renaming it over the
// old one (vim, most IDEs) is seen as well as one that writes in place. Linux; POSIX otherwise.
#pragma once
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kjit {

class file_watch {
public:
    /// Watches `files` (each may be a file or a folder, whose every file counts). Throws
    /// kjit::error(io) when a folder cannot be watched.
    explicit file_watch(const std::vector<std::filesystem::path>& files);
    ~file_watch();
    file_watch(const file_watch&) = delete;
    file_watch& operator=(const file_watch&) = delete;

    /// Blocks until a watched file is written, created or renamed into place, then returns its
    /// path. Returns nullopt once interrupted() is set (checked every `poll`), so Ctrl-C ends it.
    [[nodiscard]] std::optional<std::filesystem::path> wait(std::chrono::milliseconds poll = std::chrono::milliseconds(100));

private:
    int m_fd = -1;
    struct watched {
        int descriptor;
        std::filesystem::path folder;
        std::string name;  ///< empty: any file in the folder
    };
    std::vector<watched> m_watched;
};

}  // namespace kjit
