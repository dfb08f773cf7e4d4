// File helpers: whole-file reads and atomic (temp + rename) writes.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/interrupt.hpp"

namespace kjit::fs {

/// Reads a whole file; throws kjit::error(io) naming the path when it cannot.
[[nodiscard]] std::string read_file(const std::filesystem::path& path);
/// The most bytes a JSON text kjit reads may have (a config, records, a recording, the tuning
/// database): far more than any kjit writes, and read in well under a second.
inline constexpr std::uintmax_t k_max_text_bytes = 64ull << 20;
/// read_file for a JSON text: a regular file (a FIFO, /dev/zero or a directory is refused before
/// it is opened, so nothing waits or reads without end) of at most k_max_text_bytes, read through
/// gzip where it is compressed (a `.json.gz` of results), again to at most k_max_text_bytes.
[[nodiscard]] std::string read_text_file(const std::filesystem::path& path);

/// Writes `bytes` to `path` so that readers see the old file or the new one, never a torn one:
/// a temp file with an unguessable name created (O_EXCL | O_NOFOLLOW) in the same directory,
/// given the replaced file's permissions, fsync'ed, then renamed over `path`.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

/// True when `a` and `b` are one file: the same inode where both exist (links included),
/// otherwise the same path once resolved.
[[nodiscard]] bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

/// Notes that the process read `path` as a config or an input file: no result file of kjit's may
/// replace it later (Python's kjit.trace, whose path is named before the block reads anything).
void note_read(const std::filesystem::path& path);
/// Every path note_read was given, in order.
[[nodiscard]] std::vector<std::filesystem::path> files_read();

/// Refuses (kjit::error(usage)) output files that are one file under two options, or a file
/// kjit reads (`reads`: the config, its input files, templates, merge inputs). `outputs` are (option, path); an
/// empty path is an option not given, and "-" is standard output.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                            const std::vector<std::filesystem::path>& reads);

/// Writes a result file the user named: "-" is standard output; an existing device, FIFO or other
/// non-regular file (/dev/stdout, /dev/full, a pipe) is written in place; a regular file (through
/// any symlink, which stays) or a new one is written atomically. Throws kjit::error(io).
void write_output(const std::filesystem::path& path, std::string_view bytes);

/// Checks, before any work, that write_output(path) can succeed as far as can be known: "-", an
/// existing non-directory, or a new file in an existing, writable directory. Throws
/// kjit::error(usage) naming `option` ("--json").
void check_output_path(const std::filesystem::path& path, const std::string& option);

/// A name no other thread or process uses at the same time: "<pid>.<thread>.<counter>".
[[nodiscard]] std::string unique_suffix();
/// 16 random hex digits: a name nobody can guess, for files in folders others may write.
[[nodiscard]] std::string random_tag();

/// A fresh private (0700) directory with an unguessable name under the system temp dir, removed
/// (with its contents) with the object, or when a signal ends kjit.
class temp_directory {
public:
    explicit temp_directory(const std::string& prefix = "kjit");
    ~temp_directory();
    temp_directory(const temp_directory&) = delete;
    temp_directory& operator=(const temp_directory&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
    std::optional<removed_if_interrupted> m_removed_if_interrupted;
};

}  // namespace kjit::fs
