// NumPy's .npy format (versions 1-3, little-endian, C order) and raw little-endian binary: the
// element types kjit reads and writes, headers checked on their own (when a config is loaded)
// and data read when a run needs it. Standard library only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::npy {

/// An element type of a file: NumPy's floats and integers, and bfloat16 (raw files only: NumPy
/// has none).
struct element_type {
    std::string_view name;   ///< "float32", as configs and NumPy name it
    std::string_view descr;  ///< NumPy's little-endian type string, "<f4" ("" for bfloat16)
    std::size_t bytes;
    bool is_float;
    /// Significand bits of a float (with the implicit bit); value bits of an integer (8 for
    /// uint8, 7 for int8): a type converts exactly into one with at least as many.
    int precision;
    int min_exponent;  ///< of a float's smallest normal number (0 for integers)
    /// Element i of data of this type as double: exact for every type but 64-bit integers
    /// beyond 2^53.
    double (*get)(const unsigned char* data, std::size_t i);
};
[[nodiscard]] const std::vector<element_type>& element_types();
/// nullptr when `name` is not one ("float32", "uint8", …).
[[nodiscard]] const element_type* find_type(std::string_view name);
/// "float16, float32, …": for messages.
[[nodiscard]] std::string type_names();

/// What a file holds: its type and shape, and where its data starts.
struct layout {
    const element_type* type = nullptr;
    std::vector<long long> shape;  ///< NumPy's; {count} for a raw file
    std::uint64_t data_offset = 0;
    [[nodiscard]] long long count() const;
};

/// Reads and checks an .npy file's header and size: the magic and version, a little-endian
/// supported type, C order, a shape, and exactly the data it describes. Throws kjit::error(config)
/// of one line naming the file and what is wrong (missing, unreadable, truncated, Fortran order…).
[[nodiscard]] layout read_header(const std::filesystem::path& path);
/// A raw file of `type`'s elements: its size must be a whole number of them.
[[nodiscard]] layout raw_layout(const std::filesystem::path& path, const element_type& type);

/// The file's data (data_offset onwards), checked against `at` again (the file may have changed
/// since its header was read). Throws kjit::error(config) naming the file.
[[nodiscard]] std::string read_data(const std::filesystem::path& path, const layout& at);
/// A shape as messages and reports write it: "1080 × 1920".
[[nodiscard]] std::string shape_text(const std::vector<long long>& shape);

/// An .npy file (version 1.0) of `type` and `shape` around `data`, for fs::write_file_atomic.
[[nodiscard]] std::string encode(const element_type& type, const std::vector<long long>& shape, std::string_view data);

}  // namespace kjit::npy
