// Human-readable numbers for the console and the report: engineering prefixes
// with three significant digits ("1.98 GHz", "4.45 TB/s"), binary sizes for
// memory capacities ("80.0 GiB").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace timeroof {

// value in base units -> "1.98 G" + unit; "-" when missing.
std::string format_si(double value, const std::string& unit);
std::string format_si(const std::optional<double>& value, const std::string& unit);
std::string format_binary_bytes(double bytes);  // "50.0 MiB"
// Quotes argv the way a POSIX shell would need it, so the line can be pasted back.
std::string shell_join(const std::vector<std::string>& args);

}  // namespace timeroof
