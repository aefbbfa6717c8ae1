#include "fuzz/entries.hpp"

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace timeroof::fuzz {

std::vector<std::string> targets() {
  return {"value_list", "toml_spec", "export_json"};
}

void run(const std::string& target, std::string_view data) {
  if (target == "value_list") return value_list(data);
  if (target == "toml_spec") return toml_spec(data);
  if (target == "export_json") return export_json(data);
  throw std::invalid_argument("no fuzz target '" + target + "' in this build");
}

}  // namespace timeroof::fuzz
