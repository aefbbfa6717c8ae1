#include <string>

#include "core/error.hpp"
#include "sweeps/family.hpp"

namespace timeroof {

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
