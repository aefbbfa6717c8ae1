#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "sweeps/family.hpp"

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

const std::vector<OperatorFamily>& operator_families() {
  static const std::vector<OperatorFamily> families = {conv2d_family(), lstm_family()};
  return families;
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
