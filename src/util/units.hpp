// Human-readable numbers for the terminal: a unit chosen per value. Standard library only.
#pragma once
#include <cstdint>
#include <string>

namespace kjit::units {

[[nodiscard]] std::string duration_ms(double ms);       ///< 0.0081 → "8.10 µs", 1234 → "1.23 s"
[[nodiscard]] std::string bytes(double count);          ///< 1536 → "1.50 KiB"
[[nodiscard]] std::string byte_rate(double bytes_per_s);  ///< 4.1e12 → "4.10 TB/s"
[[nodiscard]] std::string count(double value);          ///< 1.2e9 → "1.20 G"

}  // namespace kjit::units
