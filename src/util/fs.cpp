#include "util/fs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "util/error.hpp"

namespace kjit::fs {

std::string read_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw error(error_kind::io, path.string() + ": is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw error(error_kind::io, path.string() + ": cannot open: " + std::strerror(errno));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) throw error(error_kind::io, path.string() + ": read failed");
    return std::move(buffer).str();
}

std::string unique_suffix() {
    static std::atomic<unsigned> counter{0};
    return std::to_string(::getpid()) + "." +
           std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000) + "." +
           std::to_string(counter++);
}

temp_directory::temp_directory(const std::string& prefix)
    : m_path(std::filesystem::temp_directory_path() / (prefix + "-" + unique_suffix())) {
    std::filesystem::create_directories(m_path);
}

temp_directory::~temp_directory() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
    const std::filesystem::path temp = path.string() + ".tmp." + unique_suffix();
    auto fail = [&](const char* what) {
        const std::string reason = std::strerror(errno);
        std::filesystem::remove(temp);
        throw error(error_kind::io, path.string() + ": " + what + ": " + reason);
    };
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("cannot create temp file");
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

}  // namespace kjit::fs
