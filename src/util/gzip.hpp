// gzip text, as kjit's committed results are kept (`.json.gz`): read through zlib.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kjit::gzip {

/// True when `bytes` start as a gzip stream does (the magic bytes 1f 8b).
[[nodiscard]] bool is_gzip(std::string_view bytes) noexcept;

/// The text `compressed` holds, at most `most` bytes of it (more is refused: a small file may
/// expand without end). Throws kjit::error(io) naming `what`: a damaged or truncated stream, or
/// a text past `most`.
[[nodiscard]] std::string inflate(std::string_view compressed, const std::string& what, std::size_t most);

}  // namespace kjit::gzip
