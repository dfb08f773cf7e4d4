#include "util/gzip.hpp"

#include <zlib.h>

#include <memory>

#include "util/error.hpp"

namespace kjit::gzip {

bool is_gzip(std::string_view bytes) noexcept {
    return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string inflate(std::string_view compressed, const std::string& what, std::size_t most) {
    z_stream stream{};
    constexpr int k_gzip_window = 15 + 16;  // the largest window, with a gzip header and trailer
    if (inflateInit2(&stream, k_gzip_window) != Z_OK) throw error(error_kind::memory, what + ": zlib could not start");
    const std::unique_ptr<z_stream, int (*)(z_stream*)> end(&stream, inflateEnd);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    stream.avail_in = static_cast<uInt>(compressed.size());
    std::string text;
    char chunk[1 << 16];
    for (int status = Z_OK; status != Z_STREAM_END;) {
        stream.next_out = reinterpret_cast<Bytef*>(chunk);
        stream.avail_out = sizeof chunk;
        status = ::inflate(&stream, Z_NO_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END)
            throw error(error_kind::io, what + ": a damaged gzip stream (" + (stream.msg ? stream.msg : "zlib error " + std::to_string(status)) + ")");
        text.append(chunk, sizeof chunk - stream.avail_out);
        if (text.size() > most)
            throw error(error_kind::io, what + ": expands past " + std::to_string(most >> 20) + " MiB; a JSON text kjit reads is at most that");
        if (status == Z_OK && stream.avail_in == 0 && stream.avail_out != 0)
            throw error(error_kind::io, what + ": a gzip stream cut short");
    }
    return text;
}

}  // namespace kjit::gzip
