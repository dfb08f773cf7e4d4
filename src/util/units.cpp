#include "util/units.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace kjit::units {
namespace {
std::string three_digits(double value, const char* unit) {
    char text[48];
    const char* format = std::fabs(value) >= 100 ? "%.0f %s" : std::fabs(value) >= 10 ? "%.1f %s" : "%.2f %s";
    std::snprintf(text, sizeof text, format, value, unit);
    return text;
}

std::string scaled(double value, double step, const char* const* names, int count) {
    int i = 0;
    while (i + 1 < count && std::fabs(value) >= step) {
        value /= step;
        ++i;
    }
    return three_digits(value, names[i]);
}
}  // namespace

std::string duration_ms(double ms) {
    if (std::isnan(ms)) return "-";
    if (ms >= 1000) return three_digits(ms / 1000, "s");
    if (ms >= 1) return three_digits(ms, "ms");
    if (ms >= 1e-3) return three_digits(ms * 1e3, "µs");
    return three_digits(ms * 1e6, "ns");
}

std::string fixed(double value, int digits) {
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

std::string bytes(double count) {
    static const char* const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (std::fabs(count) < 1024) return std::to_string(static_cast<long long>(count)) + " B";
    return scaled(count, 1024, names, 5);
}

std::string byte_rate(double bytes_per_s) {
    static const char* const names[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
    return scaled(bytes_per_s, 1000, names, 5);
}

std::string count(double value) {
    static const char* const names[] = {"", "k", "M", "G", "T"};
    return scaled(value, 1000, names, 5);
}

std::optional<std::uintmax_t> parse_bytes(std::string_view text) {
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || !std::isfinite(value) || value < 0) return std::nullopt;
    std::string unit(end, text.data() + text.size());
    unit.erase(0, unit.find_first_not_of(' '));
    std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
    static const std::array<std::pair<const char*, double>, 10> k_units{{{"", 1},
                                                                        {"b", 1},
                                                                        {"kb", 1e3},
                                                                        {"mb", 1e6},
                                                                        {"gb", 1e9},
                                                                        {"tb", 1e12},
                                                                        {"kib", 0x1p10},
                                                                        {"mib", 0x1p20},
                                                                        {"gib", 0x1p30},
                                                                        {"tib", 0x1p40}}};
    for (const auto& [name, scale] : k_units) {
        if (unit != name) continue;
        const double total = std::round(value * scale);
        if (total >= 0x1p63) return std::nullopt;
        return static_cast<std::uintmax_t>(total);
    }
    return std::nullopt;
}

}  // namespace kjit::units
