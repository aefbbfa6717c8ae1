// The model's whole view of a run, in one structure: per point the bounds and the
// class, per series the fit, and the ranked findings. `timeroof analyze` prints it
// as a table, CSV or JSON; the JSON form (analysis_document) carries every field.
//
// Points analysed: status ok or counters_unavailable (timed, so the model has a
// wall time; the bounds fall back to analytic work without counters). Points that
// failed, were unsupported or ran out of memory measured nothing: they are listed
// with their status and reason only.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "roofline/bounds.hpp"
#include "roofline/classify.hpp"
#include "roofline/findings.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/sweep_fit.hpp"

namespace timeroof::roofline {

struct PointAnalysis {
  std::size_t index = 0;  // into RunRecord::points
  bool analysed = false;  // false: nothing measured (see above)
  PointBounds bounds;
  Classification classification;
};

struct SeriesAnalysis {
  Series series;
  SeriesFit fit;
};

struct RunAnalysis {
  MachineRoofs roofs;
  std::vector<PointAnalysis> points;  // one per RunRecord::points, same order
  std::vector<SeriesAnalysis> series;
  std::vector<Finding> findings;  // ranked (findings.hpp)
};

// True for the statuses the model analyses (see above).
bool analysed_status(PointStatus status);

RunAnalysis analyze(const RunRecord& record, const FindingsOptions& options = {});

// {"format": "timeroof-analysis", "schema_version", "options", "runs": [{"run",
// "roofs", "points", "series", "findings"}]}. Times in seconds, rates in SI units;
// a value the model could not form is null (also +infinity intensities).
// "roofs": {"compute": {class: roof}, "memory": {level: roof}, "launch": roof,
// "transfer": {"h2d"|"d2h": {"pinned"|"pageable": roof}}}; a point's "transfer":
// {"host", "t_s", "h2d"|"d2h": {"bytes", "bandwidth", "ceiling", "time_s"}}, the
// roofs its T_xfer was taken on. Version 2: the four transfer roofs replaced
// version 1's "h2d" and "d2h" (the pinned pair only).
inline constexpr int kAnalysisSchemaVersion = 2;
inline constexpr const char* kAnalysisFormat = "timeroof-analysis";
nlohmann::json analysis_json(const RunRecord& record, const RunAnalysis& analysis);
nlohmann::json analysis_document(const std::vector<RunRecord>& records,
                                 const FindingsOptions& options = {});

}  // namespace timeroof::roofline
