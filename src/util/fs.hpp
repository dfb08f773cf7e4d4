// File helpers: whole-file reads and atomic (temp + rename) writes. Standard library only.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace kjit::fs {

/// Reads a whole file; throws kjit::error(io) naming the path when it cannot.
[[nodiscard]] std::string read_file(const std::filesystem::path& path);

/// Writes `bytes` to `path` so that readers see the old file or the new one, never a torn one:
/// a unique temp file in the same directory, fsync'ed, then renamed over `path`.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

/// A name no other thread or process uses at the same time: "<pid>.<thread>.<counter>".
[[nodiscard]] std::string unique_suffix();

}  // namespace kjit::fs
