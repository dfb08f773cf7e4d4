// Human-readable numbers for the terminal: a unit chosen per value. Standard library only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::units {

[[nodiscard]] std::string duration_ms(double ms);       ///< 0.0081 → "8.10 µs", 1234 → "1.23 s"
[[nodiscard]] std::string bytes(double count);          ///< 1536 → "1.50 KiB"
[[nodiscard]] std::string byte_rate(double bytes_per_s);  ///< 4.1e12 → "4.10 TB/s"
[[nodiscard]] std::string count(double value);
[[nodiscard]] std::string fixed(double value, int digits);  ///< (2.345, 1) → "2.3"          ///< 1.2e9 → "1.20 G"

/// A size a user typed: "2GiB", "500 MB", "1.5GiB", "4096" (bytes). kB/MB/GB/TB are powers of
/// 1000, KiB/MiB/GiB/TiB powers of 1024 (case-insensitive); nullopt for anything else.
[[nodiscard]] std::optional<std::uintmax_t> parse_bytes(std::string_view text);

}  // namespace kjit::units
