// Human-readable numbers for the console and the report: engineering prefixes
// with three significant digits ("1.98 GHz", "4.45 TB/s"), binary sizes for
// memory capacities ("80.0 GiB").
#pragma once

#include <nlohmann/json.hpp>
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

// An operator parameter's value as text: strings unquoted, numbers as JSON
// writes them ("fp16", 1024, 0.5).
std::string param_value_text(const nlohmann::json& value);
// The keys of a point's params in the order people read them: "batch" (the usual
// swept one) first, then alphabetical. Empty for a non-object.
std::vector<std::string> param_keys(const nlohmann::json& params);
// "key=value key=value" for those of `keys` that `params` has, in that order.
std::string params_text(const nlohmann::json& params, const std::vector<std::string>& keys);
// Every parameter, in param_keys order.
std::string params_text(const nlohmann::json& params);

}  // namespace timeroof
