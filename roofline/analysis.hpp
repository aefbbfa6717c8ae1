// The model's whole view of a run, in one structure, computed once per run by
// analyze(): per point the bounds and the class, per sweep its complexity chart,
// per series the fit, and the ranked findings. Every printer formats from it and
// computes no bound itself: `timeroof analyze` (table, CSV, JSON; the JSON form,
// analysis_document, carries every per-point field) and `timeroof report` (the
// HTML and Markdown report and its charts, plots/).
//
// Points analysed: status ok or counters_unavailable (timed, so the model has a
// time; the bounds fall back to analytic work without counters). Points that
// failed, were unsupported or ran out of memory measured nothing: they are listed
// with their status and reason only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "roofline/bounds.hpp"
#include "roofline/charts_data.hpp"
#include "roofline/classify.hpp"
#include "roofline/findings.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/model_analysis.hpp"
#include "roofline/roof_energy.hpp"
#include "roofline/sweep_fit.hpp"

namespace timeroof::roofline {

struct PointAnalysis {
  std::size_t index = 0;  // into RunRecord::points
  bool analysed = false;  // false: nothing measured (see above)
  PointBounds bounds;
  Classification classification;
  // The precision class with the most work (the first of equals, in
  // kAllPrecisionClasses order); nullopt without work.
  std::optional<PrecisionClass> main_precision;
};

// The complexity chart of the points of one sweep whose main precision class
// is `roof`, with that class's peak as the chart's P: its right time axis
// (W / P) then reads the time of its own points, not of the sweep's highest
// roof (13x off for FP32 points beside Tensor-Core ones on one chart).
struct RoofComplexity {
  PrecisionClass roof = PrecisionClass::fp32;
  ComplexityChart chart;  // its ComplexityPoint::index: into RunRecord::points
};

// The points of one sweep and the time-based roofline's complexity chart of
// them (charts_data.hpp, default ComplexityOptions), from the points' bounds
// above; and the same points split per compute roof (what the report draws).
struct SweepAnalysis {
  std::string name;
  std::vector<std::size_t> points;       // into RunRecord::points, in run order
  ComplexityChart complexity;            // its ComplexityPoint::index: into RunRecord::points
  std::vector<RoofComplexity> per_roof;  // in kAllPrecisionClasses order
};

struct SeriesAnalysis {
  Series series;
  SeriesFit fit;
};

struct RunAnalysis {
  MachineRoofs roofs;
  std::vector<PointAnalysis> points;  // one per RunRecord::points, same order
  std::vector<SweepAnalysis> sweeps;  // in the order of their first point
  std::vector<SeriesAnalysis> series;
  std::vector<Finding> findings;           // ranked (findings.hpp)
  std::vector<RoofFinding> roof_findings;  // the machine's roofs flagged (findings.hpp)
  std::vector<RoofEnergy> energy;          // roof_energy.hpp
  std::vector<EnergyRoof> energy_roofs;
  std::vector<LibraryReference> library_references;
  // A model run's whole-model view (model_analysis.hpp), from the points above.
  std::optional<ModelAnalysis> model;
};

// True for the statuses the model analyses (see above).
bool analysed_status(PointStatus status);

RunAnalysis analyze(const RunRecord& record, const FindingsOptions& options = {});

// {"format": "timeroof-analysis", "schema_version", "options", "runs": [{"run",
// "roofs", "roof_energy", "library_references", "points", "series",
// "findings"}]}. "roof_energy": {"roofs": [RoofEnergy], "energy_roofs":
// [EnergyRoof]}, "library_references": [LibraryReference] (roof_energy.hpp). Times in seconds,
// rates in SI units; a value the model could not form is null (also +infinity intensities).
// "roofs": {"compute": {class: roof}, "memory": {level: roof}, "launch": roof,
// "transfer": {"h2d"|"d2h": {"pinned"|"pageable": roof}}}; a point's "transfer":
// {"host", "t_s", "h2d"|"d2h": {"bytes", "bandwidth", "ceiling", "time_s"}}, the
// roofs its T_xfer was taken on.
// A point's times: "times": {"call"|"stream"|"graph"|"issue": {"median_s",
// "ci_low_s", "ci_high_s", "spread", "min_s", "max_s", "samples",
// "calls_per_sample", "converged"} or null, "graph_unavailable"}; "time_s" (T),
// "time_source" ("T_stream", "T_call", "none"), "kernel_s", "kernel_busy_s".
// "decomposition" (classify.hpp): {"time_s", "time_source", "separated",
// "host_overhead_s", "device_gaps_s", "transfer_s", "kernel_s", "within_roof_s",
// "lost_to_roof_s", "kernel_overlap_s", "not_explained_s", "graph_above_time_s",
// "kernels_above_device_s", "graph_vs_time" ("apart", "overlapping", "unknown"),
// "call_premium_s", "stream_above_call_s", "stream_vs_call" (as graph_vs_time),
// "notes"}; "class": {"label", "bottleneck", "rule", "level",
// "unit", "reason"}. A series' "fit": {"time_source", "time", "graph", "kernel"},
// each fit {"n", "a_s", "a_low_s", "a_high_s", "c_s", "c_low_s", "c_high_s",
// "flat", "flat_within_s", "r2", ...}. Findings in rank order (most "explained_s"
// first). "roof_findings": [{"ceiling", "label", "value", "limit", "text"}], the
// machine's roofs flagged (findings.hpp), not ranked.
// Added within version 3 (new keys and values only; a reader of version 3
// ignores keys it does not know): finding labels "redundant_work", "tile_padding",
// "kernel_switch", "helper_kernels" and "off_fit" with options
// "redundant_min_ratio", "tile_padding_min_ratio", "switch_min_step", "helper_min_share" and
// "outlier_min_residual"; "roof_findings" with labels "roof_above_peak" and
// "roof_spread" and options "roof_max_of_peak" and "roof_max_spread"; a model
// run's "model" (model_analysis.hpp's model_json; absent for other runs).
// Version 3: the three measured times with their intervals and the issue time;
// "wall_s" became "time_s" with "time_source"; the decomposition on measured
// parts (its "wall_s" / "overhead_s" became "time_s" / "host_overhead_s", plus
// device gaps, overlap and the labelled remainder, T_stream above T_call flagged
// beside it); the class's "rule"; the fits'
// "wall" became "time", with "graph", slope and fixed-cost intervals and "flat";
// findings ranked by explained seconds; options "issue_ratio", "min_knee_r2",
// "min_fixed_fraction", "graph_min_gain" and "pass_tolerance" ("flat_fraction"
// gone). Version 2: the four transfer roofs replaced version 1's "h2d" and "d2h"
// (the pinned pair only).
inline constexpr int kAnalysisSchemaVersion = 3;
// The document's "roofs" and a point's "class" (also in the profile document).
nlohmann::json roofs_json(const MachineRoofs& roofs);
nlohmann::json classification_json(const Classification& classification);
inline constexpr const char* kAnalysisFormat = "timeroof-analysis";
nlohmann::json analysis_json(const RunRecord& record, const RunAnalysis& analysis);
nlohmann::json analysis_document(const std::vector<RunRecord>& records,
                                 const FindingsOptions& options = {});

}  // namespace timeroof::roofline
