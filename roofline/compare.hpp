// Comparing runs (issue 19): before and after a driver or library upgrade on one
// GPU, or one GPU against another. Roofs match by ceiling name, sweep points by
// operator and parameters. Each match gets the ratio other / base with a 95%
// interval from both sides' own statistics, and a verdict against a threshold
// that counts only beyond the noise: "worse" when the whole interval lies past
// the threshold on the bad side, so a CI gate on it never fails on noise alone.
//
// Each side's runs are analysed once (roofline::analyze, ComparedSide); the
// comparison, its findings and the compare report's charts (plots/compare_*.hpp)
// all read those analyses and compute no bound again.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "roofline/analysis.hpp"

namespace timeroof::roofline {

struct CompareOptions {
  // A change smaller than this (0.05 = 5%) is "same" whatever the noise says.
  double threshold = 0.05;
  // How the sides are named in the findings; empty: by GPU and run ids.
  std::string base_label;
  std::string other_label;
  // The swept parameter along which matched points form a series, and the
  // findings say where along it a verdict holds ("at batch >= 128").
  std::string parameter = "batch";
};

enum class Verdict { better, same, worse };
const char* to_string(Verdict verdict);

// other / base, with its 95% interval.
struct Ratio {
  double value = 1;
  double low = 1;
  double high = 1;
};

// The ratio other / base of two positive values, each with the relative half-width
// of its 95% interval (0.01 = +-1%; 0 where unknown). The log-widths add in
// quadrature, as for independent errors.
Ratio ratio_of(double base, double base_half_width, double other, double other_half_width);

// better / same / worse for a ratio other / base: with `lower_is_better` (times,
// latencies) a ratio above 1 is worse; otherwise (rates) a ratio below 1 is.
// Worse only when the whole interval is past 1 + threshold on the bad side
// (1 / (1 + threshold) for rates); better alike on the good side.
Verdict verdict_of(const Ratio& ratio, bool lower_is_better, double threshold);

// "1.23x [1.20, 1.26]": a ratio and its 95% interval, for tables.
std::string format_ratio(const Ratio& ratio);

// One side of a comparison: its runs (a ceilings run and its sweeps, or one
// run) and the model of each, computed once.
struct ComparedSide {
  std::vector<RunRecord> runs;
  std::vector<RunAnalysis> analyses;  // one per run, same order
};
ComparedSide analyse_side(std::vector<RunRecord> runs);

// Where a compared point lies in its side: runs[run].points[point] (and
// analyses[run].points[point]).
struct PointRef {
  std::size_t run = 0;
  std::size_t point = 0;
};

// One roof on both sides.
struct RoofComparison {
  std::string name;  // the Ceiling's name: "hbm_copy", "launch_async", ...
  std::string unit;
  double base = 0;
  double other = 0;
  Ratio ratio;                   // other / base
  bool lower_is_better = false;  // latency roofs (unit "s")
  Verdict verdict = Verdict::same;
};

// One sweep point on both sides: its time T (T_stream, else T_call) and class.
struct PointComparison {
  std::string sweep;  // the base side's sweep name
  std::string op;
  nlohmann::json params;
  std::string precision;
  std::string math_mode;
  int base_seq = 0;
  int other_seq = 0;
  PointRef base_ref;
  PointRef other_ref;
  double base_time_s = 0;
  double other_time_s = 0;
  Ratio ratio;  // T_other / T_base: above 1, the other side is slower
  std::string base_class;
  std::string other_class;
  Verdict verdict = Verdict::same;
};

// Matched points that differ only in the swept parameter (CompareOptions::
// parameter): one operator on both sides along batch, as roofline::Series
// groups a run's points (same sweep, operator, precision, math mode and every
// other parameter). At least two points.
struct ComparedSeries {
  std::string sweep;
  std::string op;
  std::string precision;
  std::string math_mode;
  nlohmann::json fixed = nlohmann::json::object();  // every other parameter
  // Those of `fixed` that tell this series from the others of its sweep,
  // operator and precision ("stride=1"); empty where it is the only one.
  std::string distinct;
  std::vector<std::size_t> points;  // into Comparison::points, ascending parameter
  // "conv2d-default conv2d_fwd fp16", then `distinct` in parentheses.
  std::string name() const;
};

// The parameters whose values differ among `points`, in param_keys order (batch
// first): what a table or a sentence about them needs to tell them apart.
std::vector<std::string> varying_params(const std::vector<const PointComparison*>& points);

// A point measured more than once on one side (the same operator and
// parameters in several runs of the side, or twice in one run): it is compared
// once, with the newest measurement the model could time.
struct DuplicatePoint {
  std::string side;                      // "base" or "other"
  std::string point;                     // "op {params}"
  std::vector<std::string> measured_in;  // each measurement's run, oldest first
  std::string kept;                      // the one compared
};

// A provenance field that differs between the sides (GPU, driver, libraries,
// clocks, tool version).
struct ProvenanceChange {
  std::string field;
  std::string base;
  std::string other;
};

// A model run on both sides (`run --model`, model_analysis.hpp), matched by the
// model's name: per batch the model's time T_model and bound, per layer and batch
// (matched by the layer's name and the batch) its time per call, ratio and class.
struct ModelLayerComparison {
  std::string layer;
  std::int64_t batch = 0;
  std::int64_t count = 1;
  double base_time_s = 0;  // per call
  double other_time_s = 0;
  Ratio ratio;  // with the points' intervals
  std::string base_class;
  std::string other_class;
  Verdict verdict = Verdict::same;
};

struct ModelBatchComparison {
  std::int64_t batch = 0;
  double base_time_s = 0;  // T_model
  double other_time_s = 0;
  double ratio = 1;  // T_model other / base (a sum: no interval)
  double base_bound_s = 0;
  double other_bound_s = 0;
  std::optional<double> base_headroom, other_headroom;
  // Layers without a time on either side: the totals leave them out.
  std::size_t missing = 0;
};

struct ModelComparison {
  std::string name;
  std::vector<ModelBatchComparison> batches;  // batches on both sides, base's order
  std::vector<ModelLayerComparison> layers;   // base's layer order, then batch
  std::vector<std::string> only_in_base;      // "layer at batch N"
  std::vector<std::string> only_in_other;
};

struct Comparison {
  std::string base_label;  // "NVIDIA H100 80GB HBM3 (run 3)"
  std::string other_label;
  CompareOptions options;
  std::vector<ProvenanceChange> provenance;
  std::vector<RoofComparison> roofs;  // in the base side's order
  std::vector<std::string> roofs_only_in_base;
  std::vector<std::string> roofs_only_in_other;
  std::vector<PointComparison> points;           // in the base side's order
  std::vector<ComparedSeries> series;            // in the order of their first point
  std::vector<std::string> points_only_in_base;  // "op {params}"
  std::vector<std::string> points_only_in_other;
  // Points measured but not timed (failed, unsupported, out of memory) on either
  // side are listed here rather than compared.
  std::vector<std::string> points_not_timed;
  std::vector<DuplicatePoint> duplicates;
  // Where the sides differ, most time first: per series, how much faster or
  // slower the other side is over which range of the parameter ("at batch >=
  // 128") and which roof explains it, with the ranges where it is the same; per
  // group of points outside a series (same sweep, operator, precision, verdict
  // and classes) one sentence. Nothing where every point is the same.
  std::vector<std::string> findings;
  // The model runs of both sides, by model name (the base side's order).
  std::vector<ModelComparison> models;

  // Roofs and points judged worse beyond the noise (the model layers are points).
  int worse_count() const;
};

// A side's roofs are the ceilings of its runs' machines, each name from the
// newest run that has it; its points those of every run, each operator and
// parameters once (DuplicatePoint). The newest run is the one started last
// (Run::started_at), the later in the side's order among equals.
Comparison compare_runs(const ComparedSide& base, const ComparedSide& other,
                        const CompareOptions& options = {});
// The same, analysing each side first.
Comparison compare_runs(const std::vector<RunRecord>& base, const std::vector<RunRecord>& other,
                        const CompareOptions& options = {});

// The index into side.runs of the run whose roofs a side is judged on: the
// newest with ceilings, else the newest; nullopt for an empty side.
std::optional<std::size_t> roofs_run(const ComparedSide& side);

// {"format": "timeroof-comparison", "schema_version", "base", "other",
// "threshold", "parameter", "provenance": [...], "roofs": [...], "points": [...],
// "series": [{"name", "sweep", "op", "precision", "math_mode", "fixed",
// "points": [indices into "points"]}], "roofs_only_in_base",
// "roofs_only_in_other", "points_only_in_base", "points_only_in_other",
// "points_not_timed", "duplicates": [{"side", "point", "measured_in", "kept"}],
// "findings", "worse", "models": [{"name", "batches": [{"batch", "base_time_s",
// "other_time_s", "ratio", "base_lower_bound_s", "other_lower_bound_s",
// "base_headroom", "other_headroom", "missing"}], "layers": [{"layer", "batch",
// "count", "base_time_s", "other_time_s", "ratio", "base_class", "other_class",
// "verdict"}], "only_in_base", "only_in_other"}]}; ratios as {"value", "low",
// "high"} ("models"' batch ratios a plain number), times in seconds.
// Version 2: "series", "duplicates", "parameter" and each point's "math_mode";
// findings per series over ranges of the parameter, none where all is the same.
inline constexpr const char* kComparisonFormat = "timeroof-comparison";
inline constexpr int kComparisonSchemaVersion = 2;
nlohmann::json comparison_json(const Comparison& comparison);

}  // namespace timeroof::roofline
