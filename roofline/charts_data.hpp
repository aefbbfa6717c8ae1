// The geometry of the two time-based roofline charts, as data (plots/ draws it).
//
// 1. Complexity chart (Wang et al., DLS 2020), log-log: x = Q, DRAM (HBM) bytes of
//    the call; y = W, its FLOPs (all precision classes). The chart has one peak P
//    and one bandwidth B = B_dram; secondary time axes read seconds = bytes / B
//    (top) and seconds = FLOPs / P (right).
//    - Chart P: ComplexityOptions::precision's peak if set, else the largest
//      P_eff of the points (P_eff = W / T_compute, bounds.hpp). Each point is put
//      on the roof of its *own* P_eff (the peak its precision mix can reach) and
//      carries it, so a Tensor-Core point and an FP32 point on one chart are each
//      judged against their own roof.
//    - Machine-balance line: AI = P / B, i.e. y = (P / B) x, drawn over the
//      chart's x range. A point with AI = W / Q >= P / B is compute-side.
//    - Complexity point: (Q, W).
//    - Run-time point: where the point would sit if it ran at the roof for its
//      measured time T (T_stream, else T_call; T_k with use_kernel_time), along its
//      iso-AI line y = AI x: AI >= P_eff / B: W' = T P_eff, Q' = W' / AI (Q' = 0
//      when Q = 0); else Q' = T B, W' = Q' AI. So W' / P_eff = T on the compute
//      side and Q' / B = T on the memory side: the run-time point lies on the
//      roof-time contour of T. For honest data (T >= max(Q/B, W/P_eff)) it is never
//      below or left of the complexity point; the segment between the two is the
//      time lost to the roof: lost_s = T - max(Q / B, W / P_eff).
//    - Launch floor for N launches: time t = N x L. The points with roof time t
//      form an L: a vertical segment x = t B from y_min up to y = t P and a
//      horizontal segment y = t P from x_min to x = t B; the corner (t B, t P) sits
//      on the balance line. One dashed floor per distinct N among the points.
//    - Interval: the run-time point at the ends of T's 95% interval, on the same
//      iso-AI line (error bar of the run-time point).
//    - Range: the min / max over every complexity point, run-time point, interval
//      end and floor corner (positive values only; log axes), widened by a factor 2 each way.
// 2. Time vs parameter needs no geometry of its own: plots/ draws it from the
//    series of the analysis (sweep_fit.hpp), each point with its bounds and class.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "roofline/bounds.hpp"
#include "roofline/machine_roofs.hpp"

namespace timeroof::roofline {

struct Segment {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct ComplexityPoint {
  std::size_t index = 0;      // into the points given
  double bytes = 0;           // Q (DRAM)
  double flops = 0;           // W
  double intensity = 0;       // AI = W / Q, +inf when Q = 0
  double peak = 0;            // P_eff of this point
  double time_s = 0;          // T used for the run-time point
  bool compute_side = false;  // AI >= P_eff / B
  double runtime_bytes = 0;   // Q'
  double runtime_flops = 0;   // W'
  double lost_s = 0;          // T - max(Q / B, W / P_eff)
  std::optional<std::int64_t> launches;
  bool drawable = false;  // Q > 0 and W > 0 (log axes)
  // The run-time point at the two ends of T's 95% interval (PointBounds::
  // time_stats(), where measured; none with use_kernel_time): both scale with T
  // along the iso-AI line, so (Q', W') x T_low / T to (Q', W') x T_high / T.
  std::optional<Segment> interval;
  std::optional<double> time_low_s, time_high_s;
};

struct LaunchFloor {
  std::int64_t launches = 0;
  double time_s = 0;   // N x L
  Segment vertical;    // x = t B, y from y_min to t P
  Segment horizontal;  // y = t P, x from x_min to t B
};

struct ComplexityChart {
  double peak = 0;                      // P (FLOP/s), for the balance line and the right axis
  std::string peak_name;                // the ceiling, e.g. "tensor_fp16"
  double bandwidth = 0;                 // B_dram (B/s)
  double balance = 0;                   // P / B (FLOP/B)
  std::optional<double> launch_cost_s;  // L
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  Segment balance_line;  // y = balance x from x_min to x_max
  std::vector<ComplexityPoint> points;
  std::vector<LaunchFloor> launch_floors;  // ascending N
  std::vector<std::string> notes;          // points left out and why
  // Secondary axes.
  double bytes_to_seconds(double bytes) const { return bytes / bandwidth; }
  double flops_to_seconds(double flops) const { return flops / peak; }
};

struct ComplexityOptions {
  std::optional<PrecisionClass> precision;  // the chart's P; default: largest P_eff
  bool use_kernel_time = false;             // T_k instead of the wall time T
  BoundsOptions bounds;
};

// A point and its bounds as the model computed them (roofline::analyze): the
// chart reads them and computes none. `index` is what ComplexityPoint::index
// reports.
struct BoundedPoint {
  std::size_t index = 0;
  const Point* point = nullptr;
  const PointBounds* bounds = nullptr;
};

// Points that are not ok, without work, without DRAM bytes and W, without the
// time used, or on a machine without B_dram are left out and noted (a chart needs
// B and some P). options.bounds is not read: the bounds are given.
ComplexityChart complexity_chart(const std::vector<BoundedPoint>& points, const MachineRoofs& roofs,
                                 const ComplexityOptions& options = {});
// The same for points without an analysis (tests, one-off callers): their bounds
// on `roofs` with options.bounds, index = position in `points`.
ComplexityChart complexity_chart(const std::vector<Point>& points, const MachineRoofs& roofs,
                                 const ComplexityOptions& options = {});

}  // namespace timeroof::roofline
