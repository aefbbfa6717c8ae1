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
// - r2: 1 - SS_res / SS_tot on the data (unweighted); nullopt when SS_tot = 0.
// - spread: 1.4826 x median |r_i|, the robust relative scatter of the points
//   around the line; max_rel_residual: the largest |r_i| (the worst point).
// - Knee b* = a / c: the parameter value where the work (c b) equals the fixed
//   cost (a); above it work dominates. Undefined (nullopt, knee_note says why)
//   when a <= 0 (no fixed cost resolved) or when the series is flat: c <= 0 or the
//   work over the whole range, c (x_max - x_min), is below max(flat_fraction x a,
//   2 x spread x median(y)), i.e. not resolved above the noise. A knee outside
//   [x_min, x_max] is kept and noted as an extrapolation.
//
// Class changes: along the sorted series, consecutive points with the same
// Classification::label() form a segment; each new segment is a change, placed
// at the first parameter value of the new class.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  // "conv2d fwd fp16": the op with spaces, then the precision.
  std::string name() const;
};

// Groups `points` (a run's, indices kept) into series along options.parameter.
std::vector<Series> group_series(const std::vector<Point>& points, const MachineRoofs& roofs,
                                 const SeriesOptions& options = {});

struct FitOptions {
  double huber_k = 1.345;
  int max_iterations = 50;
  double tolerance = 1e-10;        // relative change of (a, c) that stops the iteration
  double flat_fraction = 0.1;      // see "Knee" above
  bool relative_residuals = true;  // false: plain Huber on absolute residuals
};

struct LinearFit {
  std::size_t n = 0;
  double a = 0;  // fixed cost per call (units of y)
  double c = 0;  // marginal cost per unit of x
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
  LinearFit wall;                      // T (wall time) against x
  std::optional<LinearFit> kernel;     // T_k against x, where every point has it
  std::vector<ClassSegment> segments;  // in x order
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
