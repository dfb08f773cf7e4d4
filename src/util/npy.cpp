#include "util/npy.hpp"

#include <cstring>
#include <fstream>
#include <limits>

#include "util/bytes.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/half.hpp"

namespace kjit::npy {
namespace {

constexpr std::string_view k_magic = "\x93NUMPY";
constexpr std::size_t k_max_header = 1 << 16;  // NumPy writes a few hundred bytes

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
    throw error(error_kind::config, shown_path(path.string()) + ": " + what);
}

std::uint64_t checked_size(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
    if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, expected a file");
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) fail(path, "cannot read: " + ec.message());
    return size;
}

/// The value of `key` in the header's Python dict literal, as text up to the next top-level
/// comma or the closing brace: "'<f4'", "False", "(3, 4)".
std::string dict_value(const std::filesystem::path& path, std::string_view header, std::string_view key) {
    const std::string quoted = "'" + std::string(key) + "'";
    const auto at = header.find(quoted);
    if (at == std::string_view::npos) fail(path, "the .npy header has no " + quoted);
    auto colon = header.find_first_not_of(' ', at + quoted.size());
    if (colon == std::string_view::npos || header[colon] != ':') fail(path, "the .npy header is not a dict");
    std::size_t begin = header.find_first_not_of(' ', colon + 1), end = begin;
    if (begin == std::string_view::npos) fail(path, "the .npy header is not a dict");
    const char close = header[begin] == '(' ? ')' : header[begin] == '\'' ? '\'' : '\0';
    if (close) end = header.find(close, begin + 1);
    else end = header.find_first_of(",}", begin) - 1;
    if (end == std::string_view::npos) fail(path, "the .npy header is not a dict");
    return std::string(header.substr(begin, end - begin + 1));
}

std::vector<long long> parse_shape(const std::filesystem::path& path, const std::string& text) {
    std::vector<long long> shape;
    std::size_t at = 1;  // after '('
    while (at < text.size()) {
        at = text.find_first_not_of(" ,", at);
        if (at == std::string::npos || text[at] == ')') break;
        long long extent = 0;
        std::size_t digits = 0;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
            if (extent > (1LL << 40)) fail(path, "a dimension of " + text + " is too large");
            extent = extent * 10 + (text[at++] - '0');
            ++digits;
        }
        if (digits == 0) fail(path, "the .npy shape " + text + " is not a tuple of sizes");
        shape.push_back(extent);
    }
    return shape;
}

template <class T>
double get(const unsigned char* data, std::size_t i) {
    return static_cast<double>(load_element<T>(data, i));
}
double get_float16(const unsigned char* data, std::size_t i) { return float16_to_double(load_element<std::uint16_t>(data, i)); }
double get_bfloat16(const unsigned char* data, std::size_t i) { return bfloat16_to_float(load_element<std::uint16_t>(data, i)); }

}  // namespace

const std::vector<element_type>& element_types() {
    static const std::vector<element_type> types{
        {"float16", "<f2", 2, true, 11, -14, get_float16},
        {"float32", "<f4", 4, true, 24, -126, get<float>},
        {"float64", "<f8", 8, true, 53, -1022, get<double>},
        {"bfloat16", "", 2, true, 8, -126, get_bfloat16},
        {"int8", "|i1", 1, false, 7, 0, get<std::int8_t>},
        {"uint8", "|u1", 1, false, 8, 0, get<std::uint8_t>},
        {"int16", "<i2", 2, false, 15, 0, get<std::int16_t>},
        {"uint16", "<u2", 2, false, 16, 0, get<std::uint16_t>},
        {"int32", "<i4", 4, false, 31, 0, get<std::int32_t>},
        {"uint32", "<u4", 4, false, 32, 0, get<std::uint32_t>},
        {"int64", "<i8", 8, false, 63, 0, get<std::int64_t>},
        {"uint64", "<u8", 8, false, 64, 0, get<std::uint64_t>},
    };
    return types;
}

const element_type* find_type(std::string_view name) {
    for (const auto& t : element_types())
        if (t.name == name) return &t;
    return nullptr;
}

std::string type_names() {
    std::string names;
    for (const auto& t : element_types()) names += (names.empty() ? "" : ", ") + std::string(t.name);
    return names;
}

std::string shape_text(const std::vector<long long>& shape) {
    std::string text;
    for (const long long extent : shape) text += (text.empty() ? "" : " × ") + std::to_string(extent);
    return text;
}

long long layout::count() const {
    long long n = 1;
    for (long long extent : shape) n *= extent;
    return n;
}

layout read_header(const std::filesystem::path& path) {
    const std::uint64_t size = checked_size(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
    char start[12] = {};
    in.read(start, sizeof start);
    if (size < 10 || std::string_view(start, k_magic.size()) != k_magic)
        fail(path, "not a .npy file (it does not start with \\x93NUMPY)");
    const int major = static_cast<unsigned char>(start[6]);
    if (major < 1 || major > 3) fail(path, ".npy format version " + std::to_string(major) + " (kjit reads 1, 2 and 3)");
    const auto byte = [&](int i) { return static_cast<std::uint64_t>(static_cast<unsigned char>(start[i])); };
    const std::uint64_t header_bytes = major == 1 ? byte(8) | byte(9) << 8 : byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    const std::uint64_t header_start = major == 1 ? 10 : 12;
    if (header_bytes > k_max_header) fail(path, "the .npy header claims " + std::to_string(header_bytes) + " bytes");
    if (size < header_start + header_bytes) fail(path, "truncated: the file ends inside its .npy header");
    std::string header(header_bytes, '\0');
    in.seekg(static_cast<std::streamoff>(header_start));
    in.read(header.data(), static_cast<std::streamsize>(header_bytes));
    if (!in) fail(path, "cannot read the .npy header");

    layout at;
    at.data_offset = header_start + header_bytes;
    const std::string descr = dict_value(path, header, "descr");
    const std::string stripped = descr.size() >= 2 ? descr.substr(1, descr.size() - 2) : descr;
    if (stripped.size() >= 2 && stripped[0] == '>' && stripped != ">i1" && stripped != ">u1")
        fail(path, "big-endian data (" + stripped + "); save it little-endian, e.g. a.astype(a.dtype.newbyteorder('<'))");
    for (const auto& t : element_types()) {
        if (t.descr.empty()) continue;
        // One-byte types are written with '|'; NumPy also accepts '<' and '=' for them.
        if (stripped == t.descr || (t.bytes == 1 && !stripped.empty() && stripped.substr(1) == t.descr.substr(1))) at.type = &t;
    }
    if (!at.type)
        fail(path, "element type " + descr + " is not supported; kjit reads " + type_names() + " (bfloat16 as raw files)");
    if (dict_value(path, header, "fortran_order") != "False")
        fail(path, "Fortran order; save it in C order, e.g. np.save(path, np.ascontiguousarray(a))");
    const std::string shape = dict_value(path, header, "shape");
    if (shape.empty() || shape.front() != '(') fail(path, "the .npy shape " + shape + " is not a tuple");
    at.shape = parse_shape(path, shape);
    if (at.shape.empty()) at.shape = {1};  // a 0-d array: one element
    long long elements = 1;  // counted without overflow: kjit's bound on n, whatever the header says
    for (const long long extent : at.shape) {
        if (extent > 0 && elements > (1LL << 40) / extent) fail(path, "its .npy shape " + shape + " holds more than 2^40 elements");
        elements *= extent;
    }
    const auto bytes = static_cast<std::uint64_t>(at.count()) * at.type->bytes;
    if (size - at.data_offset < bytes)
        fail(path, "truncated: its header says " + std::to_string(at.count()) + " elements (" + std::to_string(bytes) +
                       " bytes), the file has " + std::to_string(size - at.data_offset));
    if (size - at.data_offset > bytes)
        fail(path, "has " + std::to_string(size - at.data_offset - bytes) + " bytes after the data its header describes");
    return at;
}

layout raw_layout(const std::filesystem::path& path, const element_type& type) {
    const std::uint64_t size = checked_size(path);
    if (size % type.bytes != 0)
        fail(path, std::to_string(size) + " bytes is not a whole number of " + std::string(type.name) + " elements");
    return {&type, {static_cast<long long>(size / type.bytes)}, 0};
}

std::string read_data(const std::filesystem::path& path, const layout& at) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(at.count()) * at.type->bytes;
    if (checked_size(path) != at.data_offset + bytes) fail(path, "changed size since its header was read");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
    in.seekg(static_cast<std::streamoff>(at.data_offset));
    std::string data(bytes, '\0');
    in.read(data.data(), static_cast<std::streamsize>(bytes));
    if (!in) fail(path, "truncated: cannot read its " + std::to_string(bytes) + " bytes of data");
    return data;
}

std::string encode(const element_type& type, const std::vector<long long>& shape, std::string_view data) {
    std::string dims;  // (3,) for one dimension, (3, 4) for two
    for (std::size_t d = 0; d < shape.size(); ++d) dims += (d ? ", " : "") + std::to_string(shape[d]);
    if (shape.size() == 1) dims += ",";
    std::string header = "{'descr': '" + std::string(type.descr) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
    // Padded with spaces and a newline so that the data starts at a multiple of 64 bytes.
    const std::size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string file(k_magic);
    file += '\x01';
    file += '\x00';
    file += static_cast<char>(header.size() & 0xFF);
    file += static_cast<char>(header.size() >> 8);
    file += header;
    file.append(data);
    return file;
}

}  // namespace kjit::npy
