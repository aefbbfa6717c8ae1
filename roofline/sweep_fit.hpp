// Fits over a sweep: series of points along one parameter, a robust line
// T(b) = a + c x b through each, its knee, and where the bottleneck class changes.
//
// Series: the points of a run that share the sweep, op, precision, math mode and
// every parameter except one (the varying parameter, default "batch"), with a
// numeric value of that parameter, status ok, sorted by that value (then seq).
// A one-factor-at-a-time sweep (vary batch, then stride, ... around a baseline)
// yields one series per factor along batch and singletons for the rest; series
// shorter than SeriesOptions::min_points are dropped.
//
// Fit (per series, time y against parameter x): T(x) = a + c x.
// - y is T (T_stream, else T_call: bounds.hpp) of each point; SeriesFit also
//   fits T_graph where every point has it, and T_k where every point has it.
// - a, fixed cost per call (s): what a call costs with no work (launch, API,
//   fixed kernel setup); c, marginal cost per unit of x (s per sample).
// - Method: iteratively reweighted least squares (Eigen, QR per step) with Huber
//   weights on *relative* residuals r_i = (y_i - a - c x_i) / y_i. Timing noise is
//   multiplicative and a batch sweep spans 1-1024, so absolute residuals would let
//   the largest batches alone decide a; relative residuals weigh every point alike.
//   Huber: w_i = 1 for |r_i| <= k s, k s / |r_i| beyond, k = 1.345, scale
//   s = 1.4826 x MAD(r) (floored at 1e-3 so an exact line converges). The Huber
//   M-estimate is a convex problem: the start (ordinary least squares on relative
//   residuals) does not change the answer, only the iterations it takes. An
//   outlier's pull on the fit is bounded by k s instead of growing with it.
// - 95% intervals of c and a: from the fit's covariance, the least-squares
//   covariance of the relative-residual line, s2 (X' W X)^-1 with W =
//   diag(1 / y_i^2) and s2 = sum r_i^2 / (n - 2) over every point at full
//   weight; the interval is the estimate +- t(0.975, n - 2) x its standard error
//   (Student t, so 3-5 points get the wide interval they deserve). The Huber
//   weights shape the estimate but not the interval: where the weights discount
//   points (an outlier, or alternating scatter that collapses the MAD scale onto
//   half the points), the interval widens with them instead of hiding them, so
//   a slope the scatter does not support is never claimed. Chosen over a
//   bootstrap over points: a batch sweep has 5-11 points and its few largest
//   batches carry the slope, so resamples that miss them swing the slope widely
//   and with the seed; the covariance is deterministic and exact for a line with
//   normal relative noise. Two points leave no degree of freedom: no interval.
// - Flat: the slope's interval reaches 0 or lies below it (c_low <= 0), or no
//   interval and c <= 0, or the line moves by less than 1e-9 of the median time
//   over the range (a slope at rounding level, as for an exactly flat series). A flat fit is never
//   printed with its slope; it is "flat within +-flat_within", flat_within = max(|c_low|, |c_high|)
//   x (x_max - x_min): the largest change over the measured range the data allow.
// - r2: 1 - SS_res / SS_tot on the data (unweighted); nullopt when SS_tot = 0.
// - spread: 1.4826 x median |r_i|, the robust relative scatter of the points
//   around the line; max_rel_residual: the largest |r_i| (the worst point).
// - Knee b* = a / c: the parameter value where the work (c b) equals the fixed
//   cost (a); above it work dominates. Quoted (knee set) only where the fit
//   explains the data and both terms are resolved: not flat; the fixed cost's
//   interval above 0 (a_low > 0, or a > 0 without an interval) and a >= 1% of
//   the fastest time (a smaller fixed cost is none worth a knee); and
//   r2 >= min_knee_r2 (0.9: the line explains 90% of the variance; below it the
//   series bends or scatters and a / c describes no point of it). Otherwise
//   knee_note says which test failed, with the numbers. A knee outside
//   [x_min, x_max] is kept and noted as an extrapolation.
//
// Class changes: along the sorted series, consecutive points with the same
// Classification::label() form a segment; each new segment is a change, placed
// at the first parameter value of the new class.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/format.hpp"
#include "core/results.hpp"
#include "roofline/bounds.hpp"
#include "roofline/classify.hpp"
#include "roofline/machine_roofs.hpp"

namespace timeroof::roofline {

struct SeriesOptions {
  std::string parameter = "batch";
  std::size_t min_points = 2;
  BoundsOptions bounds;
  Thresholds thresholds;
};

// One point of a series with the model's view of it.
struct SeriesPoint {
  std::size_t index = 0;  // into the run's points
  double x = 0;           // the varying parameter's value
  PointBounds bounds;
  Classification classification;
};

struct Series {
  std::string sweep;
  std::string op;
  std::string precision;
  std::string math_mode;
  std::string parameter;                            // the varying parameter, e.g. "batch"
  nlohmann::json fixed = nlohmann::json::object();  // every other parameter
  std::vector<SeriesPoint> points;                  // sorted by x
  // Those of `fixed` that tell this series from the others of its sweep,
  // operator and precision ("k=64 m=512 n=512"); empty where it is the only one.
  std::string distinct;
  // "conv2d fwd fp16": the op with spaces, then the precision, then `distinct` in
  // parentheses: unique within a sweep, so a heading, a chart id and a finding's
  // link name one series.
  std::string name() const;
};

// Sets each series' `distinct`: the parameters of `fixed` (and the math mode)
// in which it differs from another series of its sweep, operator and precision.
// For Series and for compare.hpp's ComparedSeries alike.
template <class SeriesType>
void name_distinct_series(std::vector<SeriesType>& series) {
  for (SeriesType& s : series) {
    nlohmann::json differing = nlohmann::json::object();  // its keys, in param_keys order below
    bool math_differs = false;
    for (const SeriesType& t : series) {
      if (&t == &s || t.sweep != s.sweep || t.op != s.op || t.precision != s.precision) continue;
      math_differs = math_differs || t.math_mode != s.math_mode;
      // Either side's keys: a parameter only one of them has tells them apart too.
      const std::array<const nlohmann::json*, 2> sides = {&s.fixed, &t.fixed};
      for (const nlohmann::json* side : sides)
        for (const std::string& key : param_keys(*side))
          if (t.fixed.value(key, nlohmann::json()) != s.fixed.value(key, nlohmann::json()))
            differing[key] = true;
    }
    s.distinct.clear();
    for (const std::string& key : param_keys(differing))
      s.distinct += (s.distinct.empty() ? "" : " ") + key + "=" +
                    (s.fixed.contains(key) ? param_value_text(s.fixed[key]) : "-");
    if (math_differs) s.distinct += (s.distinct.empty() ? "math=" : " math=") + s.math_mode;
  }
}

// Groups `points` (a run's, indices kept) into series along options.parameter.
std::vector<Series> group_series(const std::vector<Point>& points, const MachineRoofs& roofs,
                                 const SeriesOptions& options = {});
// The same with each point's bounds and class from `model(index)`, for a caller
// that has them already (roofline::analyze): nothing is computed twice.
using PointModel = std::function<std::pair<PointBounds, Classification>(std::size_t index)>;
std::vector<Series> group_series(const std::vector<Point>& points, const PointModel& model,
                                 const SeriesOptions& options = {});
// The same grouping with every group kept, split by size: `series` holds those of
// options.min_points or more points (what group_series returns), `lone` the
// smaller ones (lone_point_findings), each in the run's order. One grouping
// serves both, so no point's model is read twice.
struct GroupedSeries {
  std::vector<Series> series;
  std::vector<Series> lone;
};
GroupedSeries group_series_and_lone(const std::vector<Point>& points, const PointModel& model,
                                    const SeriesOptions& options = {});

struct FitOptions {
  double huber_k = 1.345;
  int max_iterations = 50;
  double tolerance = 1e-10;          // relative change of (a, c) that stops the iteration
  double min_knee_r2 = 0.9;          // see "Knee" above
  double min_fixed_fraction = 0.01;  // a >= this x the fastest time, for a knee
  bool relative_residuals = true;    // false: plain Huber on absolute residuals
};

struct LinearFit {
  std::size_t n = 0;
  double a = 0;  // fixed cost per call (units of y)
  double c = 0;  // marginal cost per unit of x
  // 95% intervals of a and c (see above); nullopt with fewer than 3 points.
  std::optional<double> a_low, a_high, c_low, c_high;
  bool flat = false;       // see "Flat" above
  double flat_within = 0;  // +- over the range, where flat
  std::optional<double> r2;
  double spread = 0;            // robust relative scatter (see above)
  double max_rel_residual = 0;  // worst point
  std::vector<double> weights;  // final Huber weights, 1 = fully trusted
  int iterations = 0;
  double x_min = 0, x_max = 0;
  std::optional<double> knee;  // a / c
  std::string knee_note;       // why the knee is undefined, or that it is extrapolated
  double at(double x) const { return a + c * x; }
};

// The robust line through (x_i, y_i); needs >= 2 distinct x values (else a = the
// median of y, c = 0, knee undefined and said so).
LinearFit robust_linear_fit(const std::vector<double>& x, const std::vector<double>& y,
                            const FitOptions& options = {});

// A run of consecutive points of one class.
struct ClassSegment {
  std::size_t first = 0, last = 0;  // indices into Series::points, inclusive
  double x_first = 0, x_last = 0;
  std::string label;  // Classification::label()
};

struct SeriesFit {
  LinearFit time;                             // T against x
  TimeSource time_source = TimeSource::none;  // of every point's T; none: mixed or unmeasured
  std::optional<LinearFit> graph;             // T_graph against x, where every point has it
  std::optional<LinearFit> kernel;            // T_k against x, where every point has it
  std::vector<ClassSegment> segments;         // in x order
  // segments[1..]: the class changes, each at the first x of its new class.
  std::vector<ClassSegment> changes() const {
    return segments.size() > 1 ? std::vector<ClassSegment>(segments.begin() + 1, segments.end())
                               : std::vector<ClassSegment>{};
  }
};

std::vector<ClassSegment> class_segments(const Series& series);
SeriesFit fit_series(const Series& series, const FitOptions& options = {});

// "1024", "0.5": a parameter value as a person writes it.
std::string format_value(double x);

}  // namespace timeroof::roofline
