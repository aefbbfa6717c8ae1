// Human-readable numbers for the console and the report: engineering prefixes
// with three significant digits ("1.98 GHz", "4.45 TB/s"), binary sizes for
// memory capacities ("80.0 GiB").
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
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

// ---- Names from the data in files, markup and terminals (issue 16) ----------
// Names (sweeps, kernels, hosts, command lines) come from imported files and
// specs; each writer makes them safe for its medium and the data keeps them as
// they were.

// The code point that `text` starts with and how many bytes it takes. A byte
// that does not start a well-formed UTF-8 sequence (truncated, overlong, a
// surrogate, past U+10FFFF) is `valid == false` with length 1, so decoding
// goes on at the next byte.
struct Utf8Char {
  char32_t code_point = 0;
  std::size_t length = 1;
  bool valid = false;
};
Utf8Char decode_utf8(std::string_view text);

// A name as part of a file name: only [A-Za-z0-9._-], never starting with '.'
// or '-', at most `max_bytes` (at least 16). Where that changes the name, "-"
// and 8 hex digits of a stable hash of the original follow, so names that
// differ only in what was replaced or cut off still name different files.
constexpr std::size_t kMaxFileNamePart = 80;
std::string file_name_part(std::string_view name, std::size_t max_bytes = kMaxFileNamePart);

// Text safe to print on a terminal: control characters (C0, DEL, C1) and the
// bidirectional overrides shown as escapes ("\x1b", "\u009b", "\u202e"), bytes
// that are not UTF-8 as "\xff"; the rest of the UTF-8 text kept. Stored names
// can then neither move the cursor nor recolour or retitle the terminal.
// LineBreaks::keep leaves '\n' for a whole multi-line view; escape for one value
// (a table cell, a one-line error).
enum class LineBreaks { escape, keep };
std::string terminal_safe(std::string_view text, LineBreaks line_breaks = LineBreaks::escape);

}  // namespace timeroof
