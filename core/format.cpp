#include "core/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace timeroof {

namespace {

// The prefix `scale` shows `value` under, and the value shown: times and
// percents multiplied (by 1e6, 1e3, 100), SI prefixes divided (by 1000^k), as
// the formatters this one replaced computed them, to the last bit.
struct Shown {
  std::string_view prefix;
  double value = 0;
};

Shown shown_in(double value, double magnitude_of, NumberScale scale) {
  static const char* const kPrefixes[] = {"p", "n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  constexpr int kUnitIndex = 4;
  const double a = std::fabs(magnitude_of);
  switch (scale) {
    case NumberScale::none:
      return {"", value};
    case NumberScale::percent:
      return {"", value * 100};
    case NumberScale::time:
      if (a < 1e-6 && a > 0) return {"ns", value * 1e9};
      if (a < 1e-3) return {"us", value * 1e6};
      if (a < 1) return {"ms", value * 1e3};
      return {"s", value};
    case NumberScale::si: {
      if (magnitude_of == 0) return {"", value};
      const int exponent = static_cast<int>(std::floor(std::log10(a) / 3));
      const int index = std::clamp(kUnitIndex + exponent, 0, 10);
      return {kPrefixes[index], value / std::pow(1000.0, index - kUnitIndex)};
    }
  }
  return {"", value};
}

}  // namespace

std::string format_number(double value, const NumberHint& hint) {
  if (!std::isfinite(value)) return std::string(hint.missing);
  if (value == 0 && !hint.zero_text.empty()) return std::string(hint.zero_text);
  const auto [prefix, shown] = shown_in(value, value, hint.scale);
  const double m = std::fabs(shown);
  if (m > 0 && m < hint.tiny_below) return std::string(hint.tiny_text);
  char text[64];
  if (m > 0 && m < hint.significant_below) {
    std::snprintf(text, sizeof text, "%.*g", hint.significant, shown);
  } else {
    int decimals = hint.decimals;
    for (const DecimalsTier& tier : hint.tiers) {
      if (m < tier.below) {
        decimals = tier.decimals;
        break;
      }
    }
    std::snprintf(text, sizeof text, "%.*f", decimals, shown);
  }
  std::string out = text;
  std::string unit = std::string(prefix) + std::string(hint.unit);
  if (!unit.empty() || hint.scale == NumberScale::si) out += std::string(hint.separator) + unit;
  return out;
}

std::string format_number(const std::optional<double>& value, const NumberHint& hint) {
  return value ? format_number(*value, hint) : std::string(hint.missing);
}

std::string data_number(double value) {
  if (!std::isfinite(value)) return "";
  if (value == 0) return "0";  // and -0
  char text[64];
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  const bool integral = std::fabs(value) < kExactIntegers && std::trunc(value) == value;
  const auto result =
      integral ? std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, 0)
               : std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

std::string data_number(const std::optional<double>& value) {
  return value ? data_number(*value) : std::string();
}

std::string format_si(double value, const std::string& unit) {
  return format_number(value, unit == "s" ? hint::time_part : hint::si(unit));
}

std::string format_si(const std::optional<double>& value, const std::string& unit) {
  return format_number(value, unit == "s" ? hint::time_part : hint::si(unit));
}

std::string format_time(double seconds) {
  return format_number(seconds, hint::time);
}

std::string format_time_3(double seconds) {
  return format_number(seconds, hint::time_3);
}

std::string format_time_interval(double low, double high) {
  const double larger = std::max(std::fabs(low), std::fabs(high));
  const Shown l = shown_in(low, larger, NumberScale::time);
  const Shown h = shown_in(high, larger, NumberScale::time);
  return format_number(l.value, hint::significant_3) + " to " +
         format_number(h.value, hint::significant_3) + " " + std::string(l.prefix);
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

namespace {

// A C0 control or DEL, or a byte that does not start a well-formed UTF-8 sequence.
bool needs_ansi_c_quoting(const Utf8Char& c) {
  return !c.valid || c.code_point < 0x20 || c.code_point == 0x7F;
}

}  // namespace

std::string join_list(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
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
    bool ansi_c = false;
    for (std::size_t at = 0; at < arg.size() && !ansi_c;) {
      const Utf8Char c = decode_utf8(std::string_view(arg).substr(at));
      ansi_c = needs_ansi_c_quoting(c);
      at += c.length;
    }
    if (!ansi_c) {
      line += '\'';
      for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += '\'';
      continue;
    }
    line += "$'";
    for (std::size_t at = 0; at < arg.size();) {
      const Utf8Char c = decode_utf8(std::string_view(arg).substr(at));
      if (needs_ansi_c_quoting(c)) {
        char escape[8];  // always two hex digits: a hex digit after it stays a character
        std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned char>(arg[at]));
        line += escape;
      } else if (arg[at] == '\'' || arg[at] == '\\') {
        line += '\\';
        line += arg[at];
      } else {
        line.append(arg, at, c.length);
      }
      at += c.length;
    }
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

Utf8Char decode_utf8(std::string_view text) {
  Utf8Char invalid;
  if (text.empty()) return invalid;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1, true};
  std::size_t length = 0;
  char32_t code_point = 0;
  char32_t smallest = 0;  // below it the form is overlong
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code_point = lead & 0x1F;
    smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code_point = lead & 0x0F;
    smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code_point = lead & 0x07;
    smallest = 0x10000;
  } else {
    return invalid;
  }
  if (text.size() < length) return invalid;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return invalid;
    code_point = (code_point << 6) | (byte(i) & 0x3F);
  }
  const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
  if (code_point < smallest || surrogate || code_point > 0x10FFFF) return invalid;
  return {code_point, length, true};
}

std::size_t display_width(std::string_view text) {
  std::size_t columns = 0;
  for (std::size_t at = 0; at < text.size(); at += decode_utf8(text.substr(at)).length) ++columns;
  return columns;
}

namespace {

// Where each `separator` outside parentheses ends in `text`: the cut points after it.
std::vector<std::size_t> top_level_ends(std::string_view text, std::string_view separator) {
  std::vector<std::size_t> ends;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && depth > 0) --depth;
    if (depth == 0 && text.compare(i, separator.size(), separator) == 0)
      ends.push_back(i + separator.size());
  }
  return ends;
}

}  // namespace

std::string shortened_method(std::string_view method, std::size_t max_chars) {
  if (method.size() <= max_chars) return std::string(method);
  // The whole clauses that fit, then as many whole items of the next as fit.
  std::size_t kept = 0;
  for (std::size_t end : top_level_ends(method, "; ")) {
    if (end - 2 > max_chars) break;
    kept = end - 2;
  }
  std::string cut = "; ...";
  const std::size_t clause_start = kept == 0 ? 0 : kept + 2;
  for (std::size_t end : top_level_ends(method.substr(clause_start), ", ")) {
    if (clause_start + end - 2 > max_chars) break;
    kept = clause_start + end - 2;
    cut = ", ...";
  }
  if (kept == 0) {  // not even one item fits: cut at the last space that does
    const std::size_t space = method.rfind(' ', max_chars);
    kept = space == std::string_view::npos || space == 0 ? max_chars : space;
    cut = " ...";
  }
  return std::string(method.substr(0, kept)) + cut + " [+" + std::to_string(method.size() - kept) +
         " characters: the whole method is in the export]";
}

std::vector<std::string> wrap_words(std::string_view text, std::size_t width) {
  if (width == 0) return {std::string(text)};
  std::vector<std::string> lines(1);
  std::size_t line_width = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t word_at = std::min(text.find_first_not_of(' ', at), text.size());
    const std::string_view spaces = text.substr(at, word_at - at);
    const std::size_t word_end = std::min(text.find(' ', word_at), text.size());
    std::string_view word = text.substr(word_at, word_end - word_at);
    if (word.empty()) break;  // spaces that end the text
    at = word_end;
    if (line_width > 0 && line_width + spaces.size() + display_width(word) > width) {
      lines.emplace_back();  // the break swallows the spaces before the word
      line_width = 0;
    } else if (line_width + spaces.size() <= width) {
      lines.back() += spaces;
      line_width += spaces.size();
    }
    // A word wider than a line is cut, a line's worth at a time.
    while (line_width + display_width(word) > width) {
      std::size_t cut = 0;
      for (std::size_t columns = line_width; columns < width; ++columns)
        cut += decode_utf8(word.substr(cut)).length;
      lines.back() += word.substr(0, cut);
      word.remove_prefix(cut);
      lines.emplace_back();
      line_width = 0;
    }
    lines.back() += word;
    line_width += display_width(word);
  }
  return lines;
}

bool valid_utf8(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    const Utf8Char c = decode_utf8(text.substr(at));
    if (!c.valid) return false;
    at += c.length;
  }
  return true;
}

std::string replace_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const Utf8Char c = decode_utf8(text.substr(at));
    out.append(c.valid ? text.substr(at, c.length) : std::string_view("\xEF\xBF\xBD"));
    at += c.length;
  }
  return out;
}

namespace {

// FNV-1a, 64 bits: stable across runs, platforms and tool versions.
std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

bool file_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

std::string file_name_part(std::string_view name, std::size_t max_bytes) {
  constexpr std::size_t kHashPart = 9;  // "-" and 8 hex digits
  max_bytes = std::max<std::size_t>(max_bytes, 16);
  std::string safe = name.empty() ? "unnamed" : std::string(name);
  for (char& c : safe)
    if (!file_name_char(c)) c = '_';
  // A leading '.' hides the file (or names "." / ".."); a leading '-' reads as a flag.
  if (safe.front() == '.' || safe.front() == '-') safe.front() = '_';
  if (safe == name && safe.size() <= max_bytes) return safe;
  safe.resize(std::min(safe.size(), max_bytes - kHashPart));
  char hash[kHashPart + 1];
  std::snprintf(hash, sizeof hash, "-%08llx",
                static_cast<unsigned long long>(stable_hash(name) >> 32));
  return safe + hash;
}

std::string terminal_safe(std::string_view text, LineBreaks line_breaks) {
  std::string out;
  out.reserve(text.size());
  char escape[16];
  for (std::size_t at = 0; at < text.size();) {
    const Utf8Char c = decode_utf8(text.substr(at));
    const char32_t cp = c.code_point;
    const bool control = cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
    const bool bidi = (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
    if (!c.valid) {
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned char>(text[at]));
      out += escape;
    } else if (cp == '\n' && line_breaks == LineBreaks::keep) {
      out += '\n';
    } else if (cp < 0x80 && control) {
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(cp));
      out += escape;
    } else if (control || bidi) {
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(cp));
      out += escape;
    } else {
      out.append(text.substr(at, c.length));
    }
    at += c.length;
  }
  return out;
}

}  // namespace timeroof
