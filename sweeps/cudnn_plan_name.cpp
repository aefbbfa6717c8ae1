#include "sweeps/cudnn_plan_name.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>

#include "core/error.hpp"

namespace timeroof::cudnn_graph {

namespace {

// CUDNN_KNOB_TYPE_<NAME> in lower case, by value (cudnn_graph.h, 9.19).
constexpr std::array<const char*, kNamedKnobTypes> kKnobNames = {
    "split_k",
    "swizzle",
    "tile_size",
    "use_tex",
    "edge",
    "kblock",
    "ldga",
    "ldgb",
    "chunk_k",
    "split_h",
    "wino_tile",
    "multiply",
    "split_k_buf",
    "tilek",
    "stages",
    "reduction_mode",
    "cta_split_k_mode",
    "split_k_slc",
    "idx_mode",
    "sliced",
    "split_rs",
    "singlebuffer",
    "ldgc",
    "specfilt",
    "kernel_cfg",
    "workspace",
    "tile_cga",
    "tile_cga_m",
    "tile_cga_n",
    "block_size",
    "occupancy",
    "array_size_per_thread",
    "num_c_per_block",
    "split_cols",
    "tile_rows",
    "tile_cols",
    "load_size",
    "cta_count",
    "stream_k",
    "split_p_slc",
    "tile_m",
    "tile_n",
    "warp_spec_cfg",
    "swap_ab",
};

constexpr const char* kPlanNameSyntax =
    "eng<N>, optionally followed by <knob>=<value> pairs as timeroof prints plans, e.g. 'eng28' "
    "or 'eng28 tile_size=3 edge=1'";

[[noreturn]] void bad_plan_name(std::string_view text, const std::string& why) {
  throw usage_error("'" + std::string(text) + "' is not an engine name: " + why +
                    "; allowed: " + kPlanNameSyntax);
}

// A decimal integer filling all of `text` (a leading '-' when `negative_ok`).
bool parse_integer(std::string_view text, std::int64_t& value, bool negative_ok) {
  if (text.empty() || (!negative_ok && text.front() == '-')) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string knob_type_name(std::int64_t type) {
  if (type >= 0 && static_cast<std::size_t>(type) < kKnobNames.size())
    return kKnobNames[static_cast<std::size_t>(type)];
  return "k" + std::to_string(type);
}

ParsedPlanName parse_plan_name_text(std::string_view text, std::int64_t knob_types) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string_view> words;
  const std::string_view all(lower);
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t begin = all.find_first_not_of(" \t", at);
    if (begin == std::string_view::npos) break;
    const std::size_t end = std::min(all.find_first_of(" \t", begin), all.size());
    words.push_back(all.substr(begin, end - begin));
    at = end;
  }
  ParsedPlanName plan;
  if (words.empty() || words.front().substr(0, 3) != "eng" ||
      !parse_integer(words.front().substr(3), plan.engine, false))
    bad_plan_name(text, "it does not start with eng<N> (N the engine's global index)");
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string_view word = words[i];
    const std::size_t equals = word.find('=');
    std::int64_t value = 0;
    if (equals == std::string_view::npos || !parse_integer(word.substr(equals + 1), value, true))
      bad_plan_name(text, "'" + std::string(word) + "' is not <knob>=<integer>");
    const std::string_view knob = word.substr(0, equals);
    std::int64_t type = -1;
    for (std::size_t t = 0; t < kKnobNames.size(); ++t)
      if (knob == kKnobNames[t]) type = static_cast<std::int64_t>(t);
    if (type < 0 && !(knob.substr(0, 1) == "k" && parse_integer(knob.substr(1), type, false) &&
                      type < knob_types))
      bad_plan_name(text, "unknown knob '" + std::string(knob) +
                              "' (cuDNN's CUDNN_KNOB_TYPE_<NAME> in lower case, or k<T>)");
    for (const PlanKnob& earlier : plan.knobs)
      if (earlier.type == type)
        bad_plan_name(text, "knob " + knob_type_name(type) + " is given twice");
    plan.knobs.push_back({type, value});
  }
  std::sort(plan.knobs.begin(), plan.knobs.end(),
            [](const PlanKnob& a, const PlanKnob& b) { return a.type < b.type; });
  return plan;
}

}  // namespace timeroof::cudnn_graph
