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

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/vocabulary.hpp"
#include "sweeps/spec_parts.hpp"

namespace timeroof {

const char* const kValueListSyntax =
    "a value (16), a list (1,2,4), a geometric range A..B:xF (1..1024:x2, F >= 2), an "
    "arithmetic range A..B:+D (16..128:+16, D >= 1) or A..B (step 1); list items may be ranges";

using namespace spec_detail;

namespace {

using Flags = std::vector<std::pair<std::string, std::string>>;

// Flags and value lists end up in the run's JSON, which holds UTF-8 only.
void require_utf8(std::string_view text, const std::string& where) {
  if (!valid_utf8(text))
    throw usage_error(where + ": '" + terminal_safe(text) +
                      "' is not valid UTF-8; allowed: UTF-8 text");
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

}  // namespace

namespace spec_detail {

const std::vector<std::string> kOptions = {"transfer", "host", "l2", "name", "metrics"};

std::string join(const std::vector<std::string>& items, const char* separator) {
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

std::string normalize_key(std::string_view key) {
  if (key.substr(0, 2) == "--") key.remove_prefix(2);
  std::string text(key);
  std::replace(text.begin(), text.end(), '-', '_');
  return text;
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

std::string integer_allowed(const ParamAxis& axis) {
  std::string text = kValueListSyntax;
  if (!axis.allowed.empty()) text += "; or the words " + join(axis.allowed);
  return text;
}

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

}  // namespace spec_detail

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

SweepSpec default_spec(const OperatorFamily& family) {
  PointList list;
  for (json& point : family.default_points()) list.add(std::move(point), "");
  return make_spec(family, {}, std::move(list), family.name + "-default",
                   {{"kind", "default"}, {"family", family.name}});
}

}  // namespace timeroof
