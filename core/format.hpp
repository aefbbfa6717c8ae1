// Human-readable numbers for the console and the report: engineering prefixes
// with three significant digits ("1.98 GHz", "4.45 TB/s"), binary sizes for
// memory capacities ("80.0 GiB").
#pragma once

#include <cstddef>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timeroof {

// ---- Numbers: one formatter, a hint per quantity (as nvbench's summaries) ----
// A hint says how a quantity prints: the scale its value is shown in, the unit
// after it, and how many decimals by the size of the shown value. Every number
// the console, the report and the charts print goes through format_number with
// the hint of its quantity (hint:: below), so one quantity reads the same
// wherever it appears.

enum class NumberScale {
  none,     // the value as it is
  si,       // engineering prefixes p..E in steps of 1000 ("4.45 TB/s")
  time,     // seconds as us, ms or s ("187 us", "1.2 ms")
  percent,  // a fraction x 100 ("46%")
};

// One tier of decimals: a shown magnitude below `below` gets `decimals`.
struct DecimalsTier {
  double below = 0;
  int decimals = 0;
};

struct NumberHint {
  NumberScale scale = NumberScale::none;
  std::string_view unit;             // after the prefix: "B/s", "%", "x"
  std::string_view separator = " ";  // between the number and its prefix and unit
  // Decimals of the fixed-point form by the magnitude m of the shown value: the
  // first tier with m < below, else `decimals`.
  DecimalsTier tiers[2] = {};
  int decimals = 0;
  // %g with this many significant digits for 0 < m < significant_below (0: never).
  int significant = 0;
  double significant_below = 0;
  // 0 < m < tiny_below prints tiny_text ("<0.1%"), so a small share is not 0.
  double tiny_below = 0;
  std::string_view tiny_text;
  std::string_view zero_text;      // an exact zero as this text ("0"); empty: formatted
  std::string_view missing = "-";  // nullopt or not finite
};

namespace hint {
inline constexpr double kAlways = std::numeric_limits<double>::infinity();
// "15 ns", "3.0 us", "187 us", "1.2 ms", "2.1 s": every time the tool prints (one
// format: tables, findings, reports, charts), its unit chosen by the magnitude.
inline constexpr NumberHint time{NumberScale::time, "", " ", {{10, 1}}, 0, 2, 0.1};
// time, with an exact zero as "0": a part of a time that is not there.
inline constexpr NumberHint time_part{NumberScale::time, "", " ", {{10, 1}}, 0, 2, 0.1, 0, "", "0"};
// "10.1 us": three significant digits, for two close times side by side.
inline constexpr NumberHint time_3{NumberScale::time, "", " ", {}, 0, 3, kAlways};
// "46%", "5%", "0.4%", "<0.1%", "0%": a share or fraction of a whole in every
// printer (console, CSV aside, report, charts, findings): efficiency, Tensor-Core
// share and utilisation, a part's share of a call, a finding's share of its
// series' time, a fit's scatter. One decimal only below 0.95%, so a small share
// is not shown as 0, and an exact zero is "0%".
inline constexpr NumberHint share{
    NumberScale::percent, "%", "", {{0.95, 1}}, 0, 0, 0, 0.05, "<0.1%", "0%"};
// "+-1.2%", "+-0.0%": the half width of a 95% interval relative to its median
// (one decimal below 10%: intervals are compared at that resolution).
inline constexpr NumberHint relative_interval{NumberScale::percent, "%", "", {{10, 1}}};
// "46%": whole percents, in the class reasons and the charts' axes.
inline constexpr NumberHint percent_whole{NumberScale::percent, "%", ""};
// "93.7%": a measured roof against its theoretical value, and a roof's spread, in
// every printer; compare's threshold.
inline constexpr NumberHint percent_1{NumberScale::percent, "%", "", {}, 1};
// "1.26x", "12.3x", "1169x": how many times.
inline constexpr NumberHint ratio{NumberScale::none, "x", "", {{10, 2}, {100, 1}}};
// "0.00123": three significant digits, no unit.
inline constexpr NumberHint significant_3{NumberScale::none, "", "", {}, 0, 3, kAlways};
// "0.0001234567891": ten significant digits, for CSV; a missing value is empty.
inline constexpr NumberHint exact{NumberScale::none, "", "", {}, 0, 10, kAlways, 0, "", "", ""};
// "4.45 T" + unit: three significant digits under an engineering prefix.
constexpr NumberHint si(std::string_view unit) {
  return {NumberScale::si, unit, " ", {{10, 2}, {100, 1}}};
}
}  // namespace hint

std::string format_number(double value, const NumberHint& hint);
std::string format_number(const std::optional<double>& value, const NumberHint& hint);

// A number in a data file (the CSV export): the shortest text that reads back
// as the same double, an integral value below 2^53 in plain digits ("602112",
// never "602112.0" or "6.02112e+05": pandas reads a column of them as integers),
// no "-0"; empty when missing or not finite (pandas: NaN).
std::string data_number(double value);
std::string data_number(const std::optional<double>& value);

// value in base units -> "1.98 G" + unit; "-" when missing: hint::si. Seconds
// ("s") read as every other time does (hint::time_part): "785 ns", "3.6 us", "0".
std::string format_si(double value, const std::string& unit);
std::string format_si(const std::optional<double>& value, const std::string& unit);
// "3.0 us", "187 us", "1.2 ms", "2.1 s": hint::time.
std::string format_time(double seconds);
// "10.1 us": hint::time_3.
std::string format_time_3(double seconds);
// "0.592 to 0.618 us": an interval, both ends in the unit of the larger one, to
// three significant digits.
std::string format_time_interval(double low, double high);
std::string format_binary_bytes(double bytes);  // "50.0 MiB"
// Quotes argv the way a POSIX shell would need it, so the line can be pasted back.
// An argument with control characters or bytes that are not UTF-8 is written
// $'...' with those as \xHH (bash, zsh, ksh, POSIX.1-2024 sh): the line is
// UTF-8 text without controls, as the store and its JSON export need.
std::string shell_join(const std::vector<std::string>& args);

// "a, b, c": a list for a message (the choices of an error, a summary line).
std::string join_list(const std::vector<std::string>& items);

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

// ---- Text for a terminal of limited width (issue 20) -------------------------

// Columns `text` takes on a terminal: one per code point (what timeroof prints has
// no wide or combining characters), so "µs" is two, not three bytes' worth.
std::size_t display_width(std::string_view text);
// `text` broken at spaces into lines of at most `width` columns; a word longer
// than `width` is cut across lines. Runs of spaces inside a line are kept (aligned
// text stays aligned); those at a break are dropped. At least one line, maybe empty;
// width 0: no limit.
std::vector<std::string> wrap_words(std::string_view text, std::size_t width);

// A roof's method at most about `max_chars` long, for a table a reader scans:
// whole "; "-separated clauses while they fit (outside parentheses, so a clause's
// own aside stays whole), then the next clause cut after its last ", " item that
// fits, then where the rest is ("[+N characters: the whole method is in the
// export]"). The l2_read search lists every variant it ran (~14,000 characters
// on an H200); the stored method keeps them all. Shorter methods come back as
// they are.
std::string shortened_method(std::string_view method, std::size_t max_chars);

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
// Whether all of `text` decodes (decode_utf8) as well-formed UTF-8.
bool valid_utf8(std::string_view text);
// `text` with each byte that does not decode replaced by U+FFFD: text from the
// system (a host name, a file name) made storable, since JSON holds UTF-8 only.
std::string replace_invalid_utf8(std::string_view text);

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
