#include "sweeps/spec.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

// Header-only: the device machine has no libtomlplusplus.so.
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/vocabulary.hpp"

namespace timeroof {

const char* const kValueListSyntax =
    "a value (16), a list (1,2,4), a geometric range A..B:xF (1..1024:x2, F >= 2), an "
    "arithmetic range A..B:+D (16..128:+16, D >= 1) or A..B (step 1); list items may be ranges";

namespace {

using nlohmann::json;
using Flags = std::vector<std::pair<std::string, std::string>>;

const std::vector<std::string> kOptions = {"transfer", "host", "l2", "name", "metrics"};

std::string join(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

std::string trim(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return std::string(text);
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// "--bwd-x" -> "bwd_x": flags and TOML keys may use dashes or underscores.
std::string normalize_key(std::string_view key) {
  if (key.substr(0, 2) == "--") key.remove_prefix(2);
  std::string text(key);
  std::replace(text.begin(), text.end(), '-', '_');
  return text;
}

// Flags and value lists end up in the run's JSON, which holds UTF-8 only.
void require_utf8(std::string_view text, const std::string& where) {
  if (!valid_utf8(text))
    throw usage_error(where + ": '" + terminal_safe(text) +
                      "' is not valid UTF-8; allowed: UTF-8 text");
}

std::vector<std::string> axis_keys(const OperatorFamily& family) {
  std::vector<std::string> keys;
  for (const ParamAxis& axis : family.axes) keys.push_back(axis.key);
  return keys;
}

const ParamAxis* find_axis(const OperatorFamily& family, const std::string& key) {
  for (const ParamAxis& axis : family.axes)
    if (axis.key == key) return &axis;
  return nullptr;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// "<where>unknown key 'bach' for conv2d; allowed: batch, ...; options: ... (did you mean ...)".
Error unknown_key(const std::string& where, const OperatorFamily& family, const std::string& key,
                  bool with_options) {
  std::string message = where + "unknown key '" + key + "' for " + family.name +
                        "; allowed: " + join(axis_keys(family));
  if (with_options) message += "; options: " + join(kOptions);
  std::vector<std::string> candidates = axis_keys(family);
  if (with_options) candidates.insert(candidates.end(), kOptions.begin(), kOptions.end());
  std::string best;
  std::size_t best_distance = 3;
  for (const std::string& candidate : candidates) {
    const std::size_t d = edit_distance(lower(key), candidate);
    if (d < best_distance) best_distance = d, best = candidate;
  }
  if (!best.empty()) message += " (did you mean '" + best + "'?)";
  return usage_error(message);
}

// --- value lists ---

std::string integer_allowed(const ParamAxis& axis) {
  std::string text = kValueListSyntax;
  if (!axis.allowed.empty()) text += "; or the words " + join(axis.allowed);
  return text;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::int64_t require_integer(const ParamAxis& axis, const std::string& where,
                             std::string_view token, const std::string& what) {
  const std::optional<std::int64_t> value = parse_integer(token);
  if (!value)
    throw usage_error(where + ": " + what + "'" + std::string(token) +
                      "' is not an integer; allowed: " + integer_allowed(axis));
  return *value;
}

// A..B[:xF | :+D], values appended to `out`.
void expand_range(const ParamAxis& axis, const std::string& where, const std::string& item,
                  std::vector<json>& out) {
  const std::size_t dots = item.find("..");
  const std::string range = item.substr(dots + 2);
  const std::size_t colon = range.find(':');
  const std::string start_text = trim(item.substr(0, dots));
  const std::string end_text = trim(range.substr(0, colon));
  const std::int64_t start = require_integer(axis, where, start_text, "range start ");
  const std::int64_t end = require_integer(axis, where, end_text, "range end ");
  bool geometric = false;
  std::int64_t step = 1;
  if (colon != std::string::npos) {
    const std::string step_text = trim(range.substr(colon + 1));
    const char kind = step_text.empty() ? '\0' : step_text[0];
    geometric = kind == 'x' || kind == 'X' || kind == '*';
    const std::optional<std::int64_t> number =
        step_text.size() > 1 ? parse_integer(step_text.substr(1)) : std::nullopt;
    if ((!geometric && kind != '+') || !number)
      throw usage_error(where + ": bad step ':" + step_text + "' in '" + item +
                        "'; allowed: :xF (geometric, F >= 2) or :+D (arithmetic, D >= 1), e.g. " +
                        "1..1024:x2, 16..128:+16");
    step = *number;
    if (geometric && step < 2)
      throw usage_error(where + ": bad step ':" + step_text + "' in '" + item +
                        "': a geometric factor must be >= 2; allowed: :xF with F >= 2, e.g. "
                        "1..1024:x2");
    if (!geometric && step < 1)
      throw usage_error(where + ": bad step ':" + step_text + "' in '" + item +
                        "': an arithmetic step must be >= 1; allowed: :+D with D >= 1, e.g. "
                        "16..128:+16");
  }
  if (start > end)
    throw usage_error(where + ": empty range '" + item + "' (start " + std::to_string(start) +
                      " > end " + std::to_string(end) + "); allowed: A..B with A <= B, e.g. " +
                      std::to_string(end) + ".." + std::to_string(start) +
                      (geometric ? ":x" + std::to_string(step) : ""));
  if (geometric && start < 1)
    throw usage_error(where + ": geometric range '" + item +
                      "' must start at >= 1; allowed: A..B:xF with A >= 1");
  for (std::int64_t v = start;;) {
    if (out.size() >= kMaxSweepPoints)
      throw usage_error(where + ": range '" + item + "' has more than " +
                        std::to_string(kMaxSweepPoints) + " values; allowed: at most " +
                        std::to_string(kMaxSweepPoints) + " (a larger step?)");
    out.emplace_back(v);
    // end - v in unsigned arithmetic: exact for any v <= end, where the signed
    // difference of -9223372036854775807..9 would overflow.
    const auto left = static_cast<std::uint64_t>(end) - static_cast<std::uint64_t>(v);
    if (geometric ? v > end / step : left < static_cast<std::uint64_t>(step)) break;
    v = geometric ? v * step : v + step;
  }
}

// --- products ---

// Axis key -> values given; keys the block leaves out take their baseline.
using AxisValues = std::map<std::string, std::vector<json>>;

// The Cartesian product in the family's axis order, the first axis fastest.
std::vector<json> product(const OperatorFamily& family, const AxisValues& given,
                          const std::string& where) {
  std::vector<std::vector<json>> values;
  double count = 1;
  for (const ParamAxis& axis : family.axes) {
    const auto it = given.find(axis.key);
    values.push_back(it != given.end() ? it->second : std::vector<json>{axis.defaults.at(0)});
    count *= static_cast<double>(values.back().size());
  }
  if (count > static_cast<double>(kMaxSweepPoints)) {
    // A double: twenty axes of 100,000 values each are 1e100 points, past any integer.
    char points[32];
    std::snprintf(points, sizeof points, count < 1e15 ? "%.0f" : "%.3g", count);
    throw usage_error(where + "the product has " + points + " points; allowed: at most " +
                      std::to_string(kMaxSweepPoints) + " (fewer values, or explicit points)");
  }
  std::vector<json> points;
  std::vector<std::size_t> index(values.size(), 0);
  for (std::size_t n = 0; n < static_cast<std::size_t>(count); ++n) {
    json point = json::object();
    for (std::size_t a = 0; a < values.size(); ++a) point[family.axes[a].key] = values[a][index[a]];
    points.push_back(std::move(point));
    for (std::size_t a = 0; a < values.size(); ++a) {  // odometer, axis 0 fastest
      if (++index[a] < values[a].size()) break;
      index[a] = 0;
    }
  }
  return points;
}

// Points with their origin (for error messages), identical points kept once.
struct PointList {
  std::vector<json> points;
  std::vector<std::string> origins;
  std::set<std::string> seen;
  void add(json point, const std::string& origin) {
    if (!seen.insert(point.dump()).second) return;
    points.push_back(std::move(point));
    origins.push_back(origin);
  }
};

// "height=4 filter=9": the params that differ from the baseline, in the family's order.
std::string differences(const json& point, const OperatorFamily& family) {
  if (!point.is_object()) return point.dump();
  const json baseline = baseline_point(family);
  std::vector<std::string> keys = axis_keys(family);
  for (const auto& [key, value] : point.items())
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  std::string text;
  for (const std::string& key : keys) {
    if (!point.contains(key)) continue;
    const json& value = point.at(key);
    if (baseline.contains(key) && baseline.at(key) == value) continue;
    text += (text.empty() ? "" : " ") + key + "=" +
            (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return text.empty() ? "the baseline" : text;
}

void validate_all(const std::vector<json>& points, const std::vector<std::string>& origins,
                  const OperatorFamily& family, TransferMode transfer) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    try {
      const std::unique_ptr<Problem> problem = family.problem(points[i]);  // validates it
      const std::string why = transfer_unavailable(*problem, transfer);
      if (!why.empty()) throw usage_error(why);
    } catch (const std::exception& error) {
      const std::string origin = i < origins.size() && !origins[i].empty() ? origins[i] : "";
      throw usage_error(origin + "point " + std::to_string(i) + " (" +
                        differences(points[i], family) + "): " + error.what());
    }
  }
}

// --- options ---

struct Options {
  std::optional<std::string> name;
  TransferMode transfer = TransferMode::none;
  bool pinned_host = true;
  bool cold_l2 = false;
  std::vector<std::string> metrics;
};

void apply_option(Options& options, const std::string& key, const std::string& raw,
                  const std::string& where) {
  const std::string value = trim(raw);
  if (key == "name") {
    if (value.empty()) throw usage_error(where + "name is empty; allowed: any non-empty text");
    options.name = value;
  } else if (key == "transfer") {
    try {
      options.transfer = parse_transfer_mode(value);
    } catch (const Error& error) {
      throw usage_error(where + error.what());
    }
  } else if (key == "host") {
    const std::optional<HostMemory> host = find_host_memory(lower(value));
    if (!host)
      throw usage_error(where + "host: unknown value '" + value + "'; allowed: pinned, pageable");
    options.pinned_host = *host == HostMemory::pinned;
  } else if (key == "l2") {
    const std::string v = lower(value);
    if (v != "warm" && v != "cold")
      throw usage_error(where + "l2: unknown value '" + value + "'; allowed: warm, cold");
    options.cold_l2 = v == "cold";
  } else if (key == "metrics") {
    SweepSpec into;
    into.metrics = std::move(options.metrics);
    add_metrics(into, value, where + "metrics");
    options.metrics = std::move(into.metrics);
  }
}

SweepSpec make_spec(const OperatorFamily& family, const Options& options, PointList list,
                    std::string default_name, json source) {
  validate_all(list.points, list.origins, family, options.transfer);
  SweepSpec spec;
  spec.name = options.name.value_or(std::move(default_name));
  spec.family = family.name;
  spec.points = std::move(list.points);
  spec.transfer = options.transfer;
  spec.pinned_host = options.pinned_host;
  spec.cold_l2 = options.cold_l2;
  spec.metrics = options.metrics;
  spec.source = std::move(source);
  return spec;
}

// --- TOML ---

std::string at(const std::string& path, const toml::source_region& region) {
  return path + ":" + std::to_string(region.begin.line) + ":" +
         std::to_string(region.begin.column) + ": ";
}

const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date/time";
    default:
      return "nothing";
  }
}

// One TOML value (scalar, string value list, or array of them) -> the axis' values.
std::vector<json> toml_values(const ParamAxis& axis, const toml::node& node,
                              const std::string& where) {
  const std::string allowed = axis.kind == ParamAxis::Kind::text
                                  ? join(axis.allowed)
                                  : "integers, strings of " + integer_allowed(axis);
  std::vector<json> values;
  std::set<std::string> seen;  // linear-time dedupe: "1..100000" once took 11 s
  auto one = [&](const toml::node& item) {
    std::vector<json> part;
    if (const auto* integer = item.as_integer())
      part = parse_value_list(axis, std::to_string(integer->get()), where);
    else if (const auto* string = item.as_string())
      part = parse_value_list(axis, string->get(), where);
    else
      throw usage_error(where + ": " + type_name(item) + " is not a value; allowed: " + allowed);
    for (json& value : part)
      if (seen.insert(value.dump()).second) values.push_back(std::move(value));
  };
  if (const auto* array = node.as_array()) {
    if (array->empty()) throw usage_error(where + ": an empty list; allowed: " + allowed);
    for (const toml::node& item : *array) one(item);
  } else {
    one(node);
  }
  return values;
}

// A table of axis keys ([axes] or one [[point]]) -> its product.
std::vector<json> toml_block(const OperatorFamily& family, const toml::table& table,
                             const std::string& path, const std::string& block) {
  AxisValues given;
  for (const auto& [key, node] : table) {
    const std::string name = normalize_key(key.str());
    const ParamAxis* axis = find_axis(family, name);
    if (!axis)
      throw unknown_key(at(path, key.source()) + block + ": ", family, std::string(key.str()),
                        false);
    if (given.count(name))
      throw usage_error(at(path, key.source()) + block + ": " + name +
                        " is given twice (dashes and underscores are the same)");
    given[name] = toml_values(*axis, node, at(path, node.source()) + block + "." + name);
  }
  return product(family, given, at(path, table.source()) + block + ": ");
}

// toml++ 3.3 (Debian 12's) reaches __builtin_unreachable() when it asks whether
// some non-ASCII code points are whitespace (U+00A7, U+FEF9, ...; marzer/tomlplusplus
// #190 and #295, fixed upstream by PR 305): undefined behaviour on input, found by
// fuzz/toml_spec. It asks only outside strings and comments, where any such character
// is a syntax error anyway, and in a multi-line basic string after a backslash; those
// cases are refused here before toml++ reads the text.
bool tomlpp_unreachable(char32_t c) {
  if (c < 0xA0 || c > 0xFEFF) return false;
  const std::uint64_t child = (static_cast<std::uint64_t>(c) - 0xA0) / 0x3FA;  // toml++'s table
  if (((std::uint64_t{1} << child) & 0x7FFFFFFFFFFFF75Eull) != 0) return false;
  return c != 0xA0 && c != 0x3000 && c != 0xFEFF && child != 5 && child != 7;
}

void refuse_tomlpp_unreachable(std::string_view text, const std::string& path) {
  enum class In { code, comment, basic, literal, multi_basic, multi_literal } in = In::code;
  std::size_t line = 1, column = 1;
  // toml++ reads a value up to a space, ']', '}', ',' or '#' before it judges it: a
  // quote starts a string only where a token starts (after a separator, '[' or '{').
  // Elsewhere the scan stays in code, which is stricter than toml++, never looser.
  bool token_start = true, seen_equals = false;
  const auto starts = [&](std::size_t i, std::string_view what) {
    return text.substr(i, what.size()) == what;
  };
  // The code point at i; U+0000 for an invalid byte (toml++ refuses those itself).
  const auto code_point = [&](std::size_t i) { return decode_utf8(text.substr(i)).code_point; };
  const auto refuse = [&](char32_t c, const char* where) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(c));
    return usage_error(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                       ": malformed TOML: the character " + hex + " " + where +
                       "; allowed: non-ASCII characters inside strings and comments only");
  };
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Char decoded = decode_utf8(text.substr(i));
    const char32_t c = decoded.code_point;  // U+0000 for an invalid byte
    std::size_t length = decoded.length;
    switch (in) {
      case In::code:
        if (tomlpp_unreachable(c)) throw refuse(c, "outside a string or comment");
        if (c == '#') in = In::comment;
        if (c == '"' && token_start)
          in = starts(i, "\"\"\"") ? (length = 3, In::multi_basic) : In::basic;
        if (c == '\'' && token_start)
          in = starts(i, "'''") ? (length = 3, In::multi_literal) : In::literal;
        if (c == '\n') seen_equals = false;
        // '=' separates a key from its value once a line; a second one is inside a value.
        if (c < 0x80 && c != 0 && std::strchr(" \t\r\n,]}", static_cast<int>(c)) != nullptr)
          token_start = true;
        else if (c == '=' && !seen_equals)
          token_start = true, seen_equals = true;
        else if (c != '[' && c != '{')
          token_start = false;
        if (in != In::code) token_start = false;  // after the string closes
        break;
      case In::comment:
        if (c == '\n') in = In::code;
        break;
      case In::basic:
        if (c == '\\') length += decode_utf8(text.substr(i + 1)).length;  // the escaped character
        if (c == '"' || c == '\n') in = In::code;
        break;
      case In::literal:
        if (c == '\'' || c == '\n') in = In::code;
        break;
      case In::multi_basic:
        if (c == '\\') {  // an escape, or a line-ending backslash and the whitespace after it
          std::size_t next = i + 1;
          while (next < text.size() && std::strchr(" \t\r\n", text[next]) != nullptr && text[next])
            ++next;
          if (next < text.size() && tomlpp_unreachable(code_point(next)))
            throw refuse(code_point(next), "after a backslash in a multi-line string");
          if (next == i + 1 && next < text.size()) length += decode_utf8(text.substr(next)).length;
        } else if (starts(i, "\"\"\"")) {
          length = 3;
          while (length < 5 && starts(i + length, "\"")) ++length;  // """"" ends with two quotes
          in = In::code;
        }
        break;
      case In::multi_literal:
        if (starts(i, "'''")) {
          length = 3;
          while (length < 5 && starts(i + length, "'")) ++length;
          in = In::code;
        }
        break;
    }
    for (std::size_t k = i; k < i + length && k < text.size(); ++k) {
      if (text[k] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    i += length;
  }
}

std::string read_file(const std::string& path) {
  // A FIFO would block the read forever, a device never end: refuse both.
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw usage_error("the sweep spec '" + path +
                      "' is not a regular file (a directory, FIFO or device); pass a .toml file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error("cannot read the sweep spec '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// --- dry run ---

// A value as the dry run prints it: text from a spec file may hold escape sequences.
std::string cell(const json& value) {
  return terminal_safe(value.is_string() ? value.get<std::string>() : value.dump());
}

double peak_for(const json& point, const DryRunRoofs& roofs) {
  const auto text = [&](const char* key) {
    return point.contains(key) && point.at(key).is_string() ? point.at(key).get<std::string>()
                                                            : std::string();
  };
  const std::string precision = text("precision");
  const std::optional<Precision> p = find_precision(precision);
  if (precision.empty() || p == Precision::fp32 ||
      find_math_mode(text("math")) == MathMode::fma_only)
    return roofs.cuda_core_flops_per_s;
  if (p == Precision::tf32) return roofs.tf32_flops_per_s;
  return roofs.tensor_flops_per_s;
}

std::string number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

const char* to_string(TransferMode mode) {
  switch (mode) {
    case TransferMode::none:
      return "none";
    case TransferMode::h2d_input:
      return "h2d_input";
    case TransferMode::h2d_input_d2h_output:
      return "h2d_input_d2h_output";
  }
  return "?";
}

TransferMode parse_transfer_mode(std::string_view text) {
  const std::string value = lower(normalize_key(trim(text)));
  for (TransferMode mode :
       {TransferMode::none, TransferMode::h2d_input, TransferMode::h2d_input_d2h_output})
    if (value == to_string(mode)) return mode;
  throw usage_error("transfer: unknown value '" + std::string(text) +
                    "'; allowed: none, h2d_input, h2d_input_d2h_output");
}

std::string transfer_unavailable(const Problem& op, TransferMode mode) {
  const std::string head = "transfer " + std::string(to_string(mode)) + ": " + op.op();
  if (mode != TransferMode::none && op.inputs().empty())
    return head + " has no input tensors to copy to the device; allowed: transfer none";
  if (mode == TransferMode::h2d_input_d2h_output && op.outputs().empty())
    return head + " has no output tensors to copy back; allowed: transfer none, h2d_input";
  return "";
}

bool matches_pattern(const std::string& allowed, std::string_view item) {
  const std::size_t open = allowed.find('<');
  if (open == std::string::npos || item.size() < open) return false;
  return lower(allowed.substr(0, open)) == lower(std::string(item.substr(0, open)));
}

std::vector<json> parse_value_list(const ParamAxis& axis, std::string_view text,
                                   const std::string& where_given) {
  const std::string where = where_given.empty() ? axis.key : where_given;
  require_utf8(text, where);
  const bool is_text = axis.kind == ParamAxis::Kind::text;
  const std::string allowed = is_text ? join(axis.allowed) : integer_allowed(axis);
  if (trim(text).empty()) throw usage_error(where + ": no values; allowed: " + allowed);
  std::vector<json> values;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t comma = text.find(',', begin);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string item = trim(text.substr(begin, comma - begin));
    begin = comma + 1;
    if (item.empty())
      throw usage_error(where + ": empty item in '" + std::string(text) + "'; allowed: " + allowed);
    // Words first: a text axis' values, or the words an integer axis accepts.
    const auto word = std::find_if(axis.allowed.begin(), axis.allowed.end(),
                                   [&](const std::string& a) { return lower(a) == lower(item); });
    const auto pattern =
        std::find_if(axis.allowed.begin(), axis.allowed.end(),
                     [&](const std::string& a) { return matches_pattern(a, item); });
    if (word != axis.allowed.end()) {
      values.emplace_back(*word);
    } else if (pattern != axis.allowed.end()) {
      values.emplace_back(item);  // as written: the family's problem checks the rest
    } else if (is_text) {
      throw usage_error(
          where + ": unknown value '" + item + "'" +
          (item.find("..") != std::string::npos ? " (text takes a list, not a range)" : "") +
          "; allowed: " + allowed);
    } else if (item.find("..") != std::string::npos) {
      expand_range(axis, where, item, values);
    } else {
      values.emplace_back(require_integer(axis, where, item, ""));
    }
  }
  std::vector<json> unique;
  std::set<std::string> seen;
  for (json& value : values)
    if (seen.insert(value.dump()).second) unique.push_back(std::move(value));
  return unique;
}

json baseline_point(const OperatorFamily& family) {
  json point = json::object();
  for (const ParamAxis& axis : family.axes) point[axis.key] = axis.defaults.at(0);
  return point;
}

std::vector<std::string> parse_metric_list(std::string_view text, const std::string& where) {
  const std::string fix = "; list a chip's names with `timeroof metrics --filter TEXT`";
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item =
        trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    if (item.empty())
      throw usage_error(where + ": empty metric name in '" + std::string(text) +
                        "'; allowed: NAME,NAME,... e.g. dram__bytes_read.sum" + fix);
    const bool spelled =
        std::all_of(item.begin(), item.end(),
                    [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
                    }) &&
        item.find("__") != std::string::npos && item.front() != '_' && item.front() != '.';
    if (!spelled)
      throw usage_error(where + ": '" + item +
                        "' is not a CUPTI metric name (unit__counter.rollup, e.g. "
                        "dram__bytes_read.sum)" +
                        fix);
    if (std::find(names.begin(), names.end(), item) == names.end()) names.push_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return names;
}

void add_metrics(SweepSpec& spec, std::string_view text, const std::string& where) {
  for (std::string& name : parse_metric_list(text, where))
    if (std::find(spec.metrics.begin(), spec.metrics.end(), name) == spec.metrics.end())
      spec.metrics.push_back(std::move(name));
}

void validate_points(const SweepSpec& spec, const OperatorFamily& family) {
  validate_all(spec.points, {}, family, spec.transfer);
}

json to_json(const SweepSpec& spec) {
  json out = {{"name", spec.name},
              {"family", spec.family},
              {"transfer", to_string(spec.transfer)},
              {"pinned_host", spec.pinned_host},
              {"cold_l2", spec.cold_l2},
              {"point_count", spec.points.size()},
              {"points", spec.points},
              {"source", spec.source}};
  if (!spec.metrics.empty()) out["metrics"] = spec.metrics;
  return out;
}

SweepSpec spec_from_json(const json& in) {
  const auto field = [&](const char* key, bool (json::*is)() const noexcept,
                         const char* type) -> const json& {
    if (!in.is_object() || !in.contains(key) || !(in.at(key).*is)())
      throw usage_error(std::string("sweep spec JSON: field '") + key + "' is missing or not " +
                        type +
                        "; allowed fields: name, family, transfer, pinned_host, cold_l2, "
                        "points, source, metrics");
    return in.at(key);
  };
  SweepSpec spec;
  spec.name = field("name", &json::is_string, "a string").get<std::string>();
  spec.family = field("family", &json::is_string, "a string").get<std::string>();
  spec.transfer =
      parse_transfer_mode(field("transfer", &json::is_string, "a string").get<std::string>());
  spec.pinned_host = field("pinned_host", &json::is_boolean, "a boolean").get<bool>();
  spec.cold_l2 = field("cold_l2", &json::is_boolean, "a boolean").get<bool>();
  for (const json& point : field("points", &json::is_array, "an array"))
    spec.points.push_back(point);
  spec.source = in.value("source", json());
  if (in.contains("metrics")) {
    const json& metrics = in.at("metrics");
    if (!metrics.is_array())
      throw usage_error("sweep spec JSON: field 'metrics' is not an array of metric names");
    for (const json& name : metrics) {
      if (!name.is_string())
        throw usage_error("sweep spec JSON: field 'metrics' holds a non-string; allowed: names");
      add_metrics(spec, name.get<std::string>(), "sweep spec JSON: metrics");
    }
  }
  return spec;
}

SweepSpec spec_from_flags(const OperatorFamily& family, const Flags& flags) {
  AxisValues given;
  Options options;
  std::set<std::string> seen;
  json written = json::array();
  for (const auto& [raw_key, value] : flags) {
    require_utf8(raw_key, "flag");
    require_utf8(value, normalize_key(raw_key));
    written.push_back({raw_key, value});
    const std::string key = normalize_key(raw_key);
    const ParamAxis* axis = find_axis(family, key);
    const bool option = std::find(kOptions.begin(), kOptions.end(), key) != kOptions.end();
    if (!axis && !option)
      throw unknown_key("", family,
                        std::string(raw_key.substr(raw_key.rfind("--", 0) == 0 ? 2 : 0)), true);
    if (!seen.insert(key).second)
      throw usage_error(key + " is given twice; allowed: once, with a list (e.g. 1,2,4)");
    if (axis)
      given[key] = parse_value_list(*axis, value, key);
    else
      apply_option(options, key, value, "");
  }
  PointList list;
  for (json& point : product(family, given, "")) list.add(std::move(point), "");
  return make_spec(family, options, std::move(list), family.name,
                   {{"kind", "flags"}, {"family", family.name}, {"flags", written}});
}

SweepSpec spec_from_toml(const std::string& path, const FamilyLookup& lookup) {
  return spec_from_toml_text(read_file(path), path, lookup);
}

SweepSpec spec_from_toml_text(const std::string& text, const std::string& path,
                              const FamilyLookup& lookup) {
  refuse_tomlpp_unreachable(text, path);
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& error) {
    throw usage_error(at(path, error.source()) +
                      "malformed TOML: " + std::string(error.description()));
  }
  const toml::table* sweep = nullptr;
  const toml::table* axes = nullptr;
  const toml::array* blocks = nullptr;
  for (const auto& [key, node] : root) {
    const std::string where = at(path, key.source());
    if (key == "sweep" && node.is_table()) {
      sweep = node.as_table();
    } else if (key == "axes" && node.is_table()) {
      axes = node.as_table();
    } else if (key == "point" && node.is_array_of_tables()) {
      blocks = node.as_array();
    } else if (key == "sweep" || key == "axes" || key == "point") {
      throw usage_error(where + std::string(key.str()) + " is " + type_name(node) +
                        "; allowed: [sweep] and [axes] tables, [[point]] tables");
    } else {
      throw usage_error(where + "unknown key '" + std::string(key.str()) +
                        "'; allowed: [sweep], [axes], [[point]]");
    }
  }
  if (!sweep)
    throw usage_error(path +
                      ": no [sweep] table; allowed: a [sweep] table with family = "
                      "\"conv2d\" (or another family)");
  Options options;
  const toml::node* family_node = nullptr;
  for (const auto& [raw_key, node] : *sweep) {
    const std::string key = normalize_key(raw_key.str());
    const std::string where = at(path, raw_key.source());
    if (key != "family" && std::find(kOptions.begin(), kOptions.end(), key) == kOptions.end())
      throw usage_error(where + "[sweep]: unknown key '" + std::string(raw_key.str()) +
                        "'; allowed: family, " + join(kOptions));
    if (key == "metrics" && node.is_array()) {
      for (const toml::node& item : *node.as_array()) {
        if (!item.is_string())
          throw usage_error(at(path, item.source()) + "[sweep] metrics holds " + type_name(item) +
                            "; allowed: strings (metric names)");
        apply_option(options, key, item.as_string()->get(), at(path, item.source()) + "[sweep] ");
      }
      continue;
    }
    if (!node.is_string())
      throw usage_error(
          at(path, node.source()) + "[sweep] " + key + " is " + type_name(node) +
          (key == "metrics" ? "; allowed: a string or a list of strings" : "; allowed: a string"));
    if (key == "family")
      family_node = &node;
    else
      apply_option(options, key, node.as_string()->get(), at(path, node.source()) + "[sweep] ");
  }
  if (!family_node)
    throw usage_error(at(path, sweep->source()) +
                      "[sweep] has no family; allowed: family = \"conv2d\" (or another family)");
  const OperatorFamily* family = nullptr;
  try {
    family = &lookup(family_node->as_string()->get());
  } catch (const Error& error) {
    throw usage_error(at(path, family_node->source()) + "[sweep] family: " + error.what());
  }

  PointList list;
  if (axes) {
    const std::string origin = at(path, axes->source()) + "[axes] ";
    for (json& point : toml_block(*family, *axes, path, "[axes]"))
      list.add(std::move(point), origin);
  }
  if (blocks) {
    std::size_t n = 0;
    for (const toml::node& node : *blocks) {
      const toml::table& table = *node.as_table();
      const std::string block = "[[point]] #" + std::to_string(++n);
      const std::string origin = at(path, table.source()) + block + " ";
      for (json& point : toml_block(*family, table, path, block))
        list.add(std::move(point), origin);
    }
  }
  if (!axes && !blocks) list.add(baseline_point(*family), path + ": ");
  if (list.points.size() > kMaxSweepPoints)
    throw usage_error(path + ": " + std::to_string(list.points.size()) +
                      " points; allowed: at most " + std::to_string(kMaxSweepPoints));
  // The file's name may hold any bytes; the run stores UTF-8 text (toml++ has
  // checked the text itself).
  return make_spec(*family, options, std::move(list),
                   replace_invalid_utf8(std::filesystem::path(path).stem().string()),
                   {{"kind", "toml"}, {"path", replace_invalid_utf8(path)}, {"text", text}});
}

SweepSpec default_spec(const OperatorFamily& family) {
  PointList list;
  for (json& point : family.default_points()) list.add(std::move(point), "");
  return make_spec(family, {}, std::move(list), family.name + "-default",
                   {{"kind", "default"}, {"family", family.name}});
}

PointEstimate estimate_point(const json& point, const OperatorFamily& family,
                             const DryRunRoofs& roofs, TransferMode transfer, bool pinned_host) {
  const std::unique_ptr<Problem> op = family.problem(point);
  PointEstimate estimate;
  estimate.flops = op->flops();
  estimate.min_bytes = op->min_bytes();
  if (transfer != TransferMode::none)
    for (const TensorArgument& t : op->inputs()) estimate.h2d_bytes += static_cast<double>(t.bytes);
  if (transfer == TransferMode::h2d_input_d2h_output)
    for (const TensorArgument& t : op->outputs())
      estimate.d2h_bytes += static_cast<double>(t.bytes);
  estimate.transfer_s = estimate.h2d_bytes / (pinned_host ? roofs.h2d_pinned_bytes_per_s
                                                          : roofs.h2d_pageable_bytes_per_s) +
                        estimate.d2h_bytes / (pinned_host ? roofs.d2h_pinned_bytes_per_s
                                                          : roofs.d2h_pageable_bytes_per_s);
  const double roof_s =
      std::max(estimate.flops / peak_for(point, roofs), estimate.min_bytes / roofs.bytes_per_s);
  const double run_s =
      std::max(roof_s / roofs.expected_efficiency, op->expected_launches() * roofs.launch_s) +
      roofs.call_overhead_s;
  estimate.call_s = run_s + estimate.transfer_s;
  const double sample_s = estimate.call_s + roofs.sample_overhead_s;
  const double warmup_s = std::max(roofs.warmup_calls * sample_s, roofs.warmup_s);
  const double stream_sample_s = std::max(estimate.call_s, roofs.stream_sample_s);
  const double stream_s = roofs.convergence * roofs.stream_min_samples * stream_sample_s;
  const double call_timing_s =
      std::min(roofs.convergence * roofs.call_min_samples * sample_s, roofs.call_budget_s);
  const double stream_timing_s = std::min(stream_s, roofs.stream_budget_s);
  const bool host_bound = op->expected_launches() * roofs.launch_s >= 0.02 * estimate.call_s;
  const double revisit_s =
      roofs.setup_s + warmup_s + roofs.revisit_budget_share * (call_timing_s + stream_timing_s);
  const double timing_s = call_timing_s + stream_timing_s + roofs.graph_capture_s +
                          std::min(stream_s, roofs.graph_budget_s) +
                          (host_bound ? std::max(0, roofs.host_windows - 1) * revisit_s : 0);
  const double trace_s = roofs.trace_calls * estimate.call_s + roofs.trace_overhead_s;
  // The counter passes replay the operator alone (its copies are not kernels),
  // after a warm-up call of its own, in a collection shared by counter_batch points.
  const double counters_s =
      roofs.counter_passes *
      (roofs.counter_pass_s / std::max(1, roofs.counter_batch) +
       2 * op->expected_launches() * roofs.counter_range_s + 2 * roofs.profiled_slowdown * run_s);
  estimate.point_s = roofs.setup_s + roofs.check_s + warmup_s + timing_s + trace_s + counters_s;
  return estimate;
}

std::string describe_points(const SweepSpec& spec, const OperatorFamily& family,
                            const DryRunRoofs& roofs, const std::set<int>* only) {
  // Keys in the family's order, then any others the points carry.
  std::vector<std::string> keys = axis_keys(family);
  for (const json& point : spec.points)
    if (point.is_object())
      for (const auto& [key, value] : point.items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  std::vector<std::string> varying, fixed;
  for (const std::string& key : keys) {
    std::set<std::string> seen;
    for (const json& point : spec.points)
      seen.insert(point.contains(key) ? point.at(key).dump() : std::string("-"));
    if (seen.size() > 1)
      varying.push_back(key);
    else if (!spec.points.empty() && spec.points.front().contains(key))
      fixed.push_back(key + "=" + cell(spec.points.front().at(key)));
  }

  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"seq"};
  header.insert(header.end(), varying.begin(), varying.end());
  const bool transfers = spec.transfer != TransferMode::none;
  for (const char* column : {"GFLOP", "MB", "xfer MB", "call", "point"})
    if (transfers || std::string(column) != "xfer MB") header.emplace_back(column);
  rows.push_back(header);
  double total_s = 0;
  std::size_t listed = 0;
  for (std::size_t i = 0; i < spec.points.size(); ++i) {
    if (only && !only->count(static_cast<int>(i))) continue;
    ++listed;
    const json& point = spec.points[i];
    const PointEstimate estimate =
        estimate_point(point, family, roofs, spec.transfer, spec.pinned_host);
    total_s += estimate.point_s;
    std::vector<std::string> row = {std::to_string(i)};
    for (const std::string& key : varying)
      row.push_back(point.contains(key) ? cell(point.at(key)) : "-");
    row.push_back(number("%.4g", estimate.flops / 1e9));
    row.push_back(number("%.4g", estimate.min_bytes / 1e6));
    if (transfers) row.push_back(number("%.4g", (estimate.h2d_bytes + estimate.d2h_bytes) / 1e6));
    row.push_back(format_si(estimate.call_s, "s"));
    row.push_back(format_si(estimate.point_s, "s"));
    rows.push_back(std::move(row));
  }
  // Right-align seq, the numbers of the estimate, and params whose values are all numbers.
  std::vector<bool> right(header.size(), true);
  for (std::size_t v = 0; v < varying.size(); ++v)
    for (const json& point : spec.points)
      if (!point.contains(varying[v]) || !point.at(varying[v]).is_number()) right[v + 1] = false;
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());

  std::ostringstream out;
  out << "sweep '" << terminal_safe(spec.name) << "': " << spec.family << ", " << spec.points.size()
      << (spec.points.size() == 1 ? " point" : " points") << "; transfer "
      << to_string(spec.transfer) << ", "
      << to_string(spec.pinned_host ? HostMemory::pinned : HostMemory::pageable) << " host memory, "
      << (spec.cold_l2 ? "cold" : "warm") << " L2\n";
  if (!spec.metrics.empty()) out << "extra metrics: " << join(spec.metrics) << "\n";
  if (!fixed.empty()) out << "every point: " << join(fixed, " ") << "\n";
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += (c ? "  " : "") + (right[c] ? pad + row[c] : row[c] + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  out << "estimated time: " << format_si(total_s, "s") << " for " << listed
      << (only ? " of " + std::to_string(spec.points.size()) : std::string())
      << (listed == 1 && !only ? " point" : " points") << "\n"
      << "model: per point " << format_si(roofs.setup_s, "s") << " setup + "
      << format_si(roofs.check_s, "s") << " check + warm-up max(" << roofs.warmup_calls
      << " calls, " << format_si(roofs.warmup_s, "s")
      << ") + T_call, T_stream, T_graph until +-1% (at most " << format_si(roofs.call_budget_s, "s")
      << " + " << format_si(roofs.stream_budget_s, "s") << " + "
      << format_si(roofs.graph_budget_s, "s") << "), T_call and T_stream " << roofs.host_windows - 1
      << " more times at " << roofs.revisit_budget_share
      << " of their budgets where launches take >= 2% of the call, + " << roofs.trace_calls
      << " traced calls + "
      << (roofs.counter_passes > 0
              ? std::to_string(roofs.counter_passes) + " counter passes x (" +
                    format_si(roofs.counter_pass_s, "s") + " / " +
                    std::to_string(roofs.counter_batch) + " points + 2 x launches x " +
                    format_si(roofs.counter_range_s, "s") + " + 2 profiled calls)"
              : std::string("no counters"))
      << "; call = max(max(FLOPs / peak, min bytes / " << format_si(roofs.bytes_per_s, "B/s")
      << ") / " << roofs.expected_efficiency << ", launches x " << format_si(roofs.launch_s, "s")
      << ") + " << format_si(roofs.call_overhead_s, "s") << "; peaks: CUDA cores "
      << format_si(roofs.cuda_core_flops_per_s, "FLOP/s") << ", Tensor Cores fp16/bf16 "
      << format_si(roofs.tensor_flops_per_s, "FLOP/s") << ", tf32 "
      << format_si(roofs.tf32_flops_per_s, "FLOP/s");
  if (transfers) {
    const bool pinned = spec.pinned_host;
    out << "; transfers (" << to_string(spec.transfer) << ", "
        << to_string(pinned ? HostMemory::pinned : HostMemory::pageable)
        << ") serial with each call: H2D "
        << format_si(pinned ? roofs.h2d_pinned_bytes_per_s : roofs.h2d_pageable_bytes_per_s, "B/s");
    if (spec.transfer == TransferMode::h2d_input_d2h_output)
      out << ", D2H "
          << format_si(pinned ? roofs.d2h_pinned_bytes_per_s : roofs.d2h_pageable_bytes_per_s,
                       "B/s");
    out << " but not the profiled ones; weights stay on the device";
  }
  out << "; CPU reference checks and exhaustive search not modelled\n";
  return out.str();
}

}  // namespace timeroof
