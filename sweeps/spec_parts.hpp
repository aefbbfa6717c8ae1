// The sweep spec reader's shared parts, private to spec.cpp (flags, value lists,
// products), spec_toml.cpp (TOML files) and spec_dry_run.cpp (--dry-run's estimate):
// the option keys, the product of axis values, and a spec made from validated points.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sweeps/spec.hpp"

namespace timeroof::spec_detail {

using nlohmann::json;

// The [sweep] / flag options beside the axes.
extern const std::vector<std::string> kOptions;

std::string join(const std::vector<std::string>& items, const char* separator = ", ");
std::string trim(std::string_view text);
std::string lower(std::string text);
// "--bwd-x" -> "bwd_x": flags and TOML keys may use dashes or underscores.
std::string normalize_key(std::string_view key);
std::vector<std::string> axis_keys(const OperatorFamily& family);
const ParamAxis* find_axis(const OperatorFamily& family, const std::string& key);
// "<where>unknown key 'bach' for conv2d; allowed: batch, ...; options: ... (did you mean ...)".
Error unknown_key(const std::string& where, const OperatorFamily& family, const std::string& key,
                  bool with_options);
// What an integer axis accepts, for error messages.
std::string integer_allowed(const ParamAxis& axis);

// Axis key -> values given; keys the block leaves out take their baseline.
using AxisValues = std::map<std::string, std::vector<json>>;

std::vector<json> product(const OperatorFamily& family, const AxisValues& given,
                          const std::string& where);

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

struct Options {
  std::optional<std::string> name;
  TransferMode transfer = TransferMode::none;
  bool pinned_host = true;
  bool cold_l2 = false;
  std::vector<std::string> metrics;
};

// Applies one option (`key` one of kOptions) to `options`; a usage error at `where`.
void apply_option(Options& options, const std::string& key, const std::string& raw,
                  const std::string& where);

// The spec of `list`'s points, each validated (a usage error naming its origin).
SweepSpec make_spec(const OperatorFamily& family, const Options& options, PointList list,
                    std::string default_name, json source);

}  // namespace timeroof::spec_detail
