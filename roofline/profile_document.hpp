// A profile's analysis (profile_analysis.hpp) as data: the JSON document of
// `timeroof analyze RUN --format json` for profile runs, and the named
// quantities of a model that the JSON and the CSV (src/cli/export_csv) both
// write, so the two spell every number alike. Units are in the names (_s,
// _flop, _bytes, _flop_per_byte); shares and ratios are plain fractions; a value
// the model could not form is null (JSON) or an empty cell (CSV).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "roofline/profile_analysis.hpp"

namespace timeroof::roofline {

using NamedQuantities = std::vector<std::pair<std::string, std::optional<double>>>;

// A model's numbers in a fixed order: launches_covered, launches_measured,
// launches_not_covered, not_covered_kernel_s, launches_timed_by_replay, t_k_s,
// work_flop, <class>_flop (classes with work), <level>_bytes,
// intensity_<level>_flop_per_byte, t_compute_s, t_cuda_s, t_tensor_s,
// t_mem_<level>_s, t_kernel_roof_s, efficiency, tensor_share, lower_bound_s,
// time_s, headroom.
NamedQuantities model_quantities(const KernelModel& model);
// A kernel name's traced numbers: calls, total_s, median_s, min_s, max_s, share_of_busy.
NamedQuantities kernel_quantities(const KernelSummary& kernel);
// A range node's: calls, wall_s, share_of_top, kernels, traced_kernel_s, copies,
// copy_s, api_s, gpu_idle_s. Where `api` traced no API call (--api none), the
// GPU work and API time of a range are not known: none, not zero.
NamedQuantities range_quantities(const RangeNode& node, ApiTracing api);

// {"format": "timeroof-profile-analysis", "schema_version", "analysed_by",
// "runs": [{"run", "roofs_from", "roofs_note", "roofs", "summary", "counters",
// "program", "kernels", "copies", "api", "threads", "iterations", "findings"}]}
// (docs/schemas/profile-analysis.schema.json). A model is {"class": {"label",
// "bottleneck", "rule", "level", "unit", "reason"}, "limiting_roof",
// "extrapolated", "notes", and model_quantities as keys}, or null where none of
// the launches was measured. Times in seconds from the trace; "start_s" of an
// iteration from the trace's first record.
inline constexpr const char* kProfileAnalysisFormat = "timeroof-profile-analysis";
inline constexpr int kProfileAnalysisSchemaVersion = 1;
nlohmann::json profile_analysis_json(const RunRecord& record, const ProfileAnalysis& analysis);
// `analyses[i]` is the analysis of `records[i]`.
nlohmann::json profile_document(const std::vector<RunRecord>& records,
                                const std::vector<ProfileAnalysis>& analyses);

}  // namespace timeroof::roofline
