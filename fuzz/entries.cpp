#include "fuzz/entries.hpp"

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace timeroof::fuzz {

std::vector<std::string> targets() {
#if TIMEROOF_FUZZ_HAVE_SPEC
  return {"value_list", "toml_spec", "export_json"};
#else
  return {"export_json"};
#endif
}

void run(const std::string& target, std::string_view data) {
#if TIMEROOF_FUZZ_HAVE_SPEC
  if (target == "value_list") return value_list(data);
  if (target == "toml_spec") return toml_spec(data);
#endif
  if (target == "export_json") return export_json(data);
  throw std::invalid_argument("no fuzz target '" + target + "' in this build");
}

}  // namespace timeroof::fuzz
