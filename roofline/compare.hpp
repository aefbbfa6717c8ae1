// Comparing runs (issue 19): before and after a driver or library upgrade on one
// GPU, or one GPU against another. Roofs match by ceiling name, sweep points by
// operator and parameters. Each match gets the ratio other / base with a 95%
// interval from both sides' own statistics, and a verdict against a threshold
// that counts only beyond the noise: "worse" when the whole interval lies past
// the threshold on the bad side, so a CI gate on it never fails on noise alone.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"

namespace timeroof::roofline {

struct CompareOptions {
  // A change smaller than this (0.05 = 5%) is "same" whatever the noise says.
  double threshold = 0.05;
  // How the sides are named in the findings; empty: by GPU and run ids.
  std::string base_label;
  std::string other_label;
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
  int base_seq = 0;
  int other_seq = 0;
  double base_time_s = 0;
  double other_time_s = 0;
  Ratio ratio;  // T_other / T_base: above 1, the other side is slower
  std::string base_class;
  std::string other_class;
  Verdict verdict = Verdict::same;
};

// A provenance field that differs between the sides (GPU, driver, libraries,
// clocks, tool version).
struct ProvenanceChange {
  std::string field;
  std::string base;
  std::string other;
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
  std::vector<std::string> points_only_in_base;  // "op {params}"
  std::vector<std::string> points_only_in_other;
  // Points measured but not timed (failed, unsupported, out of memory) on either
  // side are listed here rather than compared.
  std::vector<std::string> points_not_timed;
  // One sentence per group of points that share a sweep, operator, precision
  // and class on both sides: how much faster or slower, and which roof explains it.
  std::vector<std::string> findings;

  // Roofs and points judged worse beyond the noise.
  int worse_count() const;
};

// `base` and `other`: each side's runs (a ceilings run and its sweeps, or one run).
// A side's roofs are the ceilings of its runs' machines, the first of each name;
// its points those of every run, the first of each operator and parameters.
Comparison compare_runs(const std::vector<RunRecord>& base, const std::vector<RunRecord>& other,
                        const CompareOptions& options = {});

// {"format": "timeroof-comparison", "schema_version", "base", "other",
// "threshold", "provenance": [...], "roofs": [...], "points": [...],
// "only_in_base", "only_in_other", "not_timed", "findings", "worse"}; ratios as
// {"value", "low", "high"}, times in seconds.
inline constexpr const char* kComparisonFormat = "timeroof-comparison";
inline constexpr int kComparisonSchemaVersion = 1;
nlohmann::json comparison_json(const Comparison& comparison);

}  // namespace timeroof::roofline
