// The charts of a comparison of two runs or GPUs (roofline/compare.hpp), as SVG
// text drawn with the axes and legends of the single-run charts (axes.hpp). Each
// side keeps one colour in every chart (kBaseColor, kOtherColor) and the legend
// names it by GPU and run. Everything drawn is read from the comparison and the
// two sides' analyses (roofline::ComparedSide): no bound is computed here.
//
// - roofline_overlay_chart: both sides' hierarchical rooflines on one pair of
//   log axes (arithmetic intensity, FLOP/s): each side's compute roofs of the
//   precision classes its points use, its L1 / L2 / HBM bandwidth roofs (HBM
//   solid, L2 dashed, L1 dotted), and its points, a marker per memory level.
// - compare_time_chart: one series of matched points, the time T each side's
//   model explains (T_stream, else T_call) against the swept parameter with its
//   95% interval as a band, and each side's roof time T_roof dashed.
// - ratio_chart: the series of one sweep, T_other / T_base per point against the
//   swept parameter with its 95% interval as an error bar, the threshold band
//   around 1 (within it: the same) shaded.
#pragma once

#include <string>
#include <vector>

#include "plots/charts.hpp"
#include "roofline/bounds.hpp"
#include "roofline/compare.hpp"
#include "roofline/machine_roofs.hpp"

namespace timeroof::plots {

inline constexpr const char* kBaseColor = "#1f5fa8";   // blue
inline constexpr const char* kOtherColor = "#d95f02";  // dark orange

// How the two sides are named in legends and tooltips ("NVIDIA H100 80GB HBM3").
struct SideLabels {
  std::string base;
  std::string other;
};

// One side of the roofline overlay: its roofs and its points (point_sample).
struct OverlaySide {
  const roofline::MachineRoofs* roofs = nullptr;
  std::vector<PointSample> samples;
};
std::string roofline_overlay_chart(const OverlaySide& base, const OverlaySide& other,
                                   const SideLabels& labels, const std::string& title);

// One matched point along the swept parameter, as each side's analysis saw it.
struct ComparedTimes {
  double x = 0;  // the swept parameter's value
  const roofline::PointComparison* point = nullptr;
  const roofline::PointBounds* base = nullptr;
  const roofline::PointBounds* other = nullptr;
};
// The points of `series`, ascending x, their bounds from both sides' analyses.
std::vector<ComparedTimes> compared_times(const roofline::Comparison& comparison,
                                          const roofline::ComparedSeries& series,
                                          const roofline::ComparedSide& base,
                                          const roofline::ComparedSide& other);

std::string compare_time_chart(const std::vector<ComparedTimes>& points, const SideLabels& labels,
                               const std::string& parameter, const std::string& title);

struct RatioSeries {
  std::string name;  // ComparedSeries::name()
  std::vector<ComparedTimes> points;
};
// `threshold` as CompareOptions::threshold: the band [1 / (1 + t), 1 + t].
std::string ratio_chart(const std::vector<RatioSeries>& series, double threshold,
                        const SideLabels& labels, const std::string& parameter,
                        const std::string& title);

}  // namespace timeroof::plots
