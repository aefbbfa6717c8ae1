// The charts of a run, as SVG text built from the model (roofline/) and the
// machine (core/results.hpp). Each function returns a complete SVG document.
//
// - ceilings_chart: every measured ceiling of the machine against its
//   theoretical value, one row per ceiling, grouped by kind (compute FLOP/s,
//   bandwidth B/s, latency s), each group on its own log axis.
// - working_set_chart: bandwidth against working-set bytes (log-log); the cache
//   levels show as plateaus, drawn against the L1 / L2 / HBM roofs, with the L2
//   size marked.
// - classic_roofline_chart: the hierarchical roofline, log-log arithmetic
//   intensity against FLOP/s; compute roofs horizontal, bandwidth roofs diagonal
//   up to the highest compute roof drawn, each labelled with its value; one
//   marker shape per memory level, one colour per precision class, a <title>
//   tooltip per sample.
// - time_vs_parameter_chart: one series (e.g. a batch sweep), the measured
//   times T_stream, T_call and T_graph, each with its 95% interval as a shaded
//   band (where measured: older runs have T_call only, without an interval),
//   and T_k against the swept parameter, with each time bound as a line.
// - time_complexity_chart (time_charts.cpp): the time-based roofline's complexity
//   chart drawn from roofline::ComplexityChart, log-log HBM bytes (x) and FLOPs
//   (y); the same axes in seconds at the top (bytes / B) and right (FLOPs / P)
//   with the iso-time contours as the grid; the machine-balance diagonal; per
//   point its complexity point (filled) and run-time point (open) joined along
//   its iso-AI line, coloured by bottleneck class; dashed launch floors. The
//   report draws one per sweep and compute roof (the time axes on that roof's
//   P), as small multiples: a panel per operator and precision.
// - time_decomposition_chart (time_charts.cpp): one series, a stacked bar per
//   point of the measured parts of T (roofline::decompose): kernel time within
//   the roof (coloured by the roof that bounds the kernels) and lost to it,
//   transfer, device gaps, host overhead on top ("host overhead + device gaps"
//   where not measured separately), and a not-explained part where one is left;
//   in seconds above, with T marked, and as shares of T below. Where measured
//   parts exceed T (kernel overlap, passes that differ) the bar rises above the
//   T mark and its tooltip says by how much and why.
// - tensor_core_chart (time_charts.cpp): one series, Tensor-Core share of the
//   FLOPs and Tensor-Core utilisation (T_tensor / T_k) against the swept
//   parameter, 0-100%.
// Legends sit outside the plot area or in its emptiest corner: never on data.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "roofline/analysis.hpp"
#include "roofline/bounds.hpp"
#include "roofline/charts_data.hpp"
#include "roofline/classify.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/sweep_fit.hpp"

namespace timeroof::plots {

// One sample of the classic roofline chart, built from roofline::PointBounds.
struct PointSample {
  std::string label;            // operator and precision, e.g. "conv2d_fwd fp16/tensor"
  std::string params;           // "batch=16 filter=3 ..."
  std::string precision_class;  // the class with the most work, e.g. "tensor_fp16"
  std::array<std::optional<double>, kLevelCount> intensity;  // AI_l, FLOP/B
  std::optional<double> achieved;                            // W / T_k, FLOP/s
  std::optional<double> achieved_low, achieved_high;         // over the traced calls
  std::optional<double> time_s;                              // T
  std::string time_name;             // which time T is: "T_stream", "T_call"
  std::string bound;                 // classification label
  std::optional<double> efficiency;  // T_kernel_roof / T_k
};

// The sample of one point, from its analysis (roofline::analyze).
PointSample point_sample(const Point& point, const roofline::PointAnalysis& analysis);
// Samples of the ok points among `indices` (into record.points) with work and
// kernel time; of every point of the run without `indices`.
std::vector<PointSample> point_samples(const RunRecord& record,
                                       const roofline::RunAnalysis& analysis,
                                       const std::vector<std::size_t>& indices);
std::vector<PointSample> point_samples(const RunRecord& record,
                                       const roofline::RunAnalysis& analysis);
// "operator, params, time, bound, efficiency": the hover text of a sample.
std::string tooltip(const PointSample& sample);

std::string ceilings_chart(const Machine& machine);
std::string working_set_chart(const Machine& machine);
std::string classic_roofline_chart(const roofline::MachineRoofs& roofs,
                                   const std::vector<PointSample>& samples,
                                   const std::string& title = "Hierarchical Roofline");

// The series charts draw one series of the analysis (roofline::Series: its
// points with the bounds and class the model computed, along series.parameter);
// each point's tooltip starts "<series name> <parameter>=<x>".
std::string time_vs_parameter_chart(const roofline::Series& series,
                                    const std::string& title = "Time against batch size");
std::string time_decomposition_chart(const roofline::Series& series,
                                     const std::string& title = "Where the time goes");
std::string tensor_core_chart(const roofline::Series& series,
                              const std::string& title = "Tensor Cores");

// What the complexity chart shows of each roofline::ComplexityPoint besides its
// geometry: the hover text and the bottleneck class (Classification::label())
// that picks its colour.
struct ComplexityMark {
  std::string tooltip;
  std::string bound;
};
// `marks` parallels chart.points (missing marks: no tooltip, grey).
std::string time_complexity_chart(const roofline::ComplexityChart& chart,
                                  const std::vector<ComplexityMark>& marks,
                                  const std::string& title = "Time-based roofline");
// The chart of a sweep of the analysis (SweepAnalysis::complexity), each point's
// mark from its bounds and class there.
std::string time_complexity_chart(const RunRecord& record, const roofline::RunAnalysis& analysis,
                                  const roofline::SweepAnalysis& sweep,
                                  const std::string& title = "Time-based roofline");
// Small multiples of one chart on shared axes (its P, B and ranges), two
// panels a row, each with its title and its points (indices into chart.points),
// the launch floors of its points' launch counts, one legend below; one panel
// or none: time_complexity_chart.
struct ComplexityPanel {
  std::string title;
  std::vector<std::size_t> points;
};
std::string time_complexity_panels(const roofline::ComplexityChart& chart,
                                   const std::vector<ComplexityMark>& marks,
                                   const std::vector<ComplexityPanel>& panels,
                                   const std::string& title = "Time-based roofline");
// The charts of the points of a sweep on one compute roof (SweepAnalysis::per_roof),
// their time axes on that roof's P, a panel per operator and precision: one
// chart of up to kPanelsPerFigure panels, or several on the same axes (their
// titles end ", operators 5-6 of 6"), each of which fits an A4 page.
inline constexpr std::size_t kPanelsPerFigure = 4;
std::vector<std::string> time_complexity_charts(const RunRecord& record,
                                                const roofline::RunAnalysis& analysis,
                                                const roofline::RoofComplexity& roof,
                                                const std::string& title = "Time-based roofline");
// The colour of a bottleneck class label ("memory_bound(l2)" -> the L2 colour).
const char* bound_color(const std::string& bound_label);

}  // namespace timeroof::plots
