// cuDNN graph plan names as text, host only (no cuDNN header): "eng<N>" and a
// configuration's knobs as " <knob>=<value>", knob names cuDNN's
// CUDNN_KNOB_TYPE_<NAME> in lower case, "k<T>" for a type this build does not
// name. The conv2d problem validates a fixed engine with it in any build;
// sweeps/cudnn_graph.hpp reads and prints the same names with cuDNN's types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace timeroof::cudnn_graph {

// The knob types this build names (cuDNN 9.19's CUDNN_KNOB_TYPE_COUNTS).
inline constexpr std::int64_t kNamedKnobTypes = 44;
// "tile_size" for a type this build names, "k<T>" otherwise.
std::string knob_type_name(std::int64_t type);

struct PlanKnob {
  std::int64_t type = -1;  // cudnnBackendKnobType_t's value
  std::int64_t value = 0;
};
struct ParsedPlanName {
  std::int64_t engine = -1;
  std::vector<PlanKnob> knobs;  // sorted by type
};
// Reads a plan name case-insensitively, knobs in any order, "k<T>" for any type
// T < `knob_types` (cuDNN's CUDNN_KNOB_TYPE_COUNTS where its header is at hand);
// throws a usage error saying what is wrong with `text`.
ParsedPlanName parse_plan_name_text(std::string_view text,
                                    std::int64_t knob_types = kNamedKnobTypes);

}  // namespace timeroof::cudnn_graph
