#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "sweeps/family.hpp"
#include "sweeps/spec.hpp"

namespace timeroof {

ParamAxis integer_axis(std::string key, std::string help, nlohmann::json defaults,
                       std::vector<std::string> words) {
  return {std::move(key), ParamAxis::Kind::integer, std::move(help), std::move(words),
          std::move(defaults)};
}

ParamAxis text_axis(std::string key, std::string help, std::vector<std::string> allowed,
                    nlohmann::json defaults) {
  return {std::move(key), ParamAxis::Kind::text, std::move(help), std::move(allowed),
          std::move(defaults)};
}

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::vector<std::string> keys(const std::vector<ParamAxis>& axes) {
  std::vector<std::string> names;
  for (const ParamAxis& axis : axes) names.push_back(axis.key);
  return names;
}

const nlohmann::json& value_of(const nlohmann::json& point, const ParamAxis& axis) {
  return point.contains(axis.key) ? point.at(axis.key) : axis.defaults.at(0);
}

}  // namespace

void require_known_keys(const std::string& family, const nlohmann::json& point,
                        const std::vector<ParamAxis>& axes) {
  if (!point.is_object())
    throw usage_error(family + ": a point is an object of keys, not " + point.dump() +
                      "; allowed keys: " + join(keys(axes)));
  for (const auto& [key, value] : point.items()) {
    bool known = false;
    for (const ParamAxis& a : axes) known = known || a.key == key;
    if (!known)
      throw usage_error(family + ": unknown key '" + key + "'; allowed: " + join(keys(axes)));
  }
}

std::int64_t axis_integer(const std::string& family, const nlohmann::json& point,
                          const ParamAxis& axis, std::int64_t low) {
  const nlohmann::json& value = value_of(point, axis);
  if (!value.is_number_integer())
    throw usage_error(family + ": " + axis.key + " = " + value.dump() +
                      " is not an integer; allowed: integers " + std::to_string(low) + " .. " +
                      std::to_string(INT_MAX) +
                      (axis.allowed.empty() ? "" : " or " + join(axis.allowed)));
  const std::int64_t number =
      value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t{INT64_MAX}
          ? INT64_MAX
          : value.get<std::int64_t>();
  if (number < low || number > INT_MAX)
    throw usage_error(family + ": " + axis.key + " = " + value.dump() +
                      " is out of range; allowed: " + std::to_string(low) + " .. " +
                      std::to_string(INT_MAX));
  return number;
}

std::string axis_text(const std::string& family, const nlohmann::json& point,
                      const ParamAxis& axis) {
  const nlohmann::json& value = value_of(point, axis);
  if (value.is_string()) {
    const std::string given = value.get<std::string>();
    for (const std::string& allowed : axis.allowed) {
      if (given == allowed) return allowed;
      if (matches_pattern(allowed, given)) return given;  // the problem validates the rest
    }
  }
  throw usage_error(family + ": " + axis.key + " = " + value.dump() +
                    " is not a known value; allowed: " + join(axis.allowed));
}

const ParamAxis& axis_of(const std::string& family, const std::vector<ParamAxis>& axes,
                         const std::string& key) {
  for (const ParamAxis& a : axes)
    if (a.key == key) return a;
  throw std::logic_error(family + ": no axis " + key);
}

const std::vector<OperatorFamily>& operator_families() {
  static const std::vector<OperatorFamily> families = {
      conv2d_family(),    lstm_family(),      gemm_family(),
      attention_family(), layernorm_family(), batchnorm_family(),
      pointwise_family(), softmax_family(),   pool_family()};
  return families;
}

nlohmann::json with_algorithm_pinned(const OperatorFamily& family, const nlohmann::json& params,
                                     const std::string& algorithm) {
  const std::string selection = params.value("algorithm", std::string());
  if (selection != "heuristic" && selection != "exhaustive") return params;
  nlohmann::json pinned = params;
  pinned["algorithm"] = algorithm;
  try {
    (void)family.problem(pinned);
  } catch (const Error&) {  // not a value of the family's algorithm axis
    return params;
  }
  return pinned;
}

const OperatorFamily& find_family(const std::string& name) {
  std::string known;
  for (const OperatorFamily& family : operator_families()) {
    if (family.name == name) return family;
    known += (known.empty() ? "" : ", ") + family.name;
  }
  throw usage_error("unknown operator '" + name + "' (operators: " + known +
                    "), or pass a sweep file (.toml)");
}

}  // namespace timeroof
