#include "core/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace timeroof {

std::string format_si(double value, const std::string& unit) {
  static const char* const kPrefixes[] = {"p", "n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  constexpr int kUnitIndex = 4;
  if (!std::isfinite(value)) return "-";
  int index = kUnitIndex;
  double scaled = value;
  if (value != 0) {
    const int exponent = static_cast<int>(std::floor(std::log10(std::fabs(value)) / 3));
    index = std::clamp(kUnitIndex + exponent, 0, 10);
    scaled = value / std::pow(1000.0, index - kUnitIndex);
  }
  char text[64];
  const double magnitude = std::fabs(scaled);
  const int decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : 2;
  std::snprintf(text, sizeof text, "%.*f %s%s", decimals, scaled, kPrefixes[index], unit.c_str());
  return text;
}

std::string format_si(const std::optional<double>& value, const std::string& unit) {
  return value ? format_si(*value, unit) : "-";
}

std::string format_binary_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int index = 0;
  while (std::fabs(bytes) >= 1024 && index < 4) {
    bytes /= 1024;
    ++index;
  }
  char text[64];
  std::snprintf(text, sizeof text, index == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[index]);
  return text;
}

std::string shell_join(const std::vector<std::string>& args) {
  std::string line;
  for (const std::string& arg : args) {
    if (!line.empty()) line += ' ';
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-_./=:,+@%") == std::string::npos;
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

std::string param_value_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::vector<std::string> param_keys(const nlohmann::json& params) {
  std::vector<std::string> keys;
  if (!params.is_object()) return keys;
  for (auto it = params.begin(); it != params.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  const auto batch = std::find(keys.begin(), keys.end(), "batch");
  if (batch != keys.end()) std::rotate(keys.begin(), batch, batch + 1);
  return keys;
}

std::string params_text(const nlohmann::json& params, const std::vector<std::string>& keys) {
  std::string out;
  if (!params.is_object()) return out;
  for (const std::string& key : keys) {
    const auto it = params.find(key);
    if (it == params.end()) continue;
    out += (out.empty() ? "" : " ") + key + "=" + param_value_text(*it);
  }
  return out;
}

std::string params_text(const nlohmann::json& params) {
  return params_text(params, param_keys(params));
}

}  // namespace timeroof
