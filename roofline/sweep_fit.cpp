#include "roofline/sweep_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <tuple>

#include <Eigen/Dense>

namespace timeroof::roofline {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    m = 0.5 * (m + lower);
  }
  return m;
}

// Weighted least squares of y = a + c x with weights w (per squared residual).
Eigen::Vector2d weighted_line(const Eigen::VectorXd& x, const Eigen::VectorXd& y,
                              const Eigen::VectorXd& w) {
  const Eigen::Index n = x.size();
  Eigen::MatrixXd A(n, 2);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double s = std::sqrt(w(i));
    A(i, 0) = s;
    A(i, 1) = s * x(i);
    b(i) = s * y(i);
  }
  return A.colPivHouseholderQr().solve(b);
}

// t(0.975, df): the two-sided 95% quantile of Student's t.
double t975(std::size_t df) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                      2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                      2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                      2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return 0;
  if (df <= std::size(kTable)) return kTable[df - 1];
  if (df <= 40) return 2.021;
  if (df <= 60) return 2.000;
  if (df <= 120) return 1.980;
  return 1.960;
}

}  // namespace

std::string format_value(double x) {
  char buf[32];
  if (x == std::round(x) && std::fabs(x) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", x);
  else
    std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

std::string Series::name() const {
  std::string out = op;
  std::replace(out.begin(), out.end(), '_', ' ');
  return out + " " + precision + (distinct.empty() ? "" : " (" + distinct + ")");
}

std::vector<Series> group_series(const std::vector<Point>& points, const MachineRoofs& roofs,
                                 const SeriesOptions& options) {
  return group_series(
      points,
      [&](std::size_t i) {
        PointBounds b = point_bounds(points[i], roofs, options.bounds);
        Classification c = classify(b, options.thresholds);
        return std::make_pair(std::move(b), std::move(c));
      },
      options);
}

std::vector<Series> group_series(const std::vector<Point>& points, const PointModel& model,
                                 const SeriesOptions& options) {
  return group_series_and_lone(points, model, options).series;
}

GroupedSeries group_series_and_lone(const std::vector<Point>& points, const PointModel& model,
                                    const SeriesOptions& options) {
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  std::map<Key, Series> groups;
  std::vector<Key> order;  // first appearance, so the result follows the run
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    if (p.status != PointStatus::ok || !p.params.is_object()) continue;
    const auto it = p.params.find(options.parameter);
    if (it == p.params.end() || !it->is_number()) continue;
    nlohmann::json fixed = p.params;
    fixed.erase(options.parameter);
    const Key key{p.sweep, p.op, p.precision, p.math_mode, fixed.dump()};
    auto [g, inserted] = groups.try_emplace(key);
    if (inserted) {
      order.push_back(key);
      g->second.sweep = p.sweep;
      g->second.op = p.op;
      g->second.precision = p.precision;
      g->second.math_mode = p.math_mode;
      g->second.parameter = options.parameter;
      g->second.fixed = fixed;
    }
    SeriesPoint sp;
    sp.index = i;
    sp.x = it->get<double>();
    std::tie(sp.bounds, sp.classification) = model(i);
    g->second.points.push_back(std::move(sp));
  }
  GroupedSeries out;
  for (const Key& key : order) {
    Series& s = groups.at(key);
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const SeriesPoint& l, const SeriesPoint& r) { return l.x < r.x; });
    (s.points.size() < options.min_points ? out.lone : out.series).push_back(std::move(s));
  }
  // Only the charted series: lone points keep the plain name, under which
  // lone_point_findings gathers those of one operator.
  name_distinct_series(out.series);
  return out;
}

LinearFit robust_linear_fit(const std::vector<double>& xs, const std::vector<double>& ys,
                            const FitOptions& options) {
  LinearFit fit;
  fit.n = std::min(xs.size(), ys.size());
  if (fit.n == 0) {
    fit.knee_note = "no points";
    return fit;
  }
  const Eigen::Index n = static_cast<Eigen::Index>(fit.n);
  Eigen::VectorXd x(n), y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    x(i) = xs[static_cast<std::size_t>(i)];
    y(i) = ys[static_cast<std::size_t>(i)];
  }
  fit.x_min = x.minCoeff();
  fit.x_max = x.maxCoeff();
  fit.weights.assign(fit.n, 1.0);
  const double y_median = median(std::vector<double>(ys.begin(), ys.begin() + n));
  if (fit.x_max == fit.x_min) {
    fit.a = y_median;
    fit.knee_note = "knee undefined: one parameter value only";
    return fit;
  }
  // Residual scaling: relative residuals divide by y (where every y > 0).
  const bool relative = options.relative_residuals && y.minCoeff() > 0;
  Eigen::VectorXd scale = relative ? y : Eigen::VectorXd::Ones(n);
  Eigen::VectorXd huber = Eigen::VectorXd::Ones(n);
  Eigen::Vector2d beta = Eigen::Vector2d::Zero();
  Eigen::VectorXd r(n);
  const double floor_scale = relative ? 1e-3 : 1e-3 * std::max(std::fabs(y_median), 1e-300);
  for (int it = 0; it < options.max_iterations; ++it) {
    Eigen::VectorXd w(n);
    for (Eigen::Index i = 0; i < n; ++i) w(i) = huber(i) / (scale(i) * scale(i));
    const Eigen::Vector2d next = weighted_line(x, y, w);
    ++fit.iterations;
    const double change = (next - beta).norm() / std::max(next.norm(), 1e-300);
    beta = next;
    for (Eigen::Index i = 0; i < n; ++i) r(i) = (y(i) - beta(0) - beta(1) * x(i)) / scale(i);
    std::vector<double> abs_r(fit.n);
    for (Eigen::Index i = 0; i < n; ++i) abs_r[static_cast<std::size_t>(i)] = std::fabs(r(i));
    const double s = std::max(1.4826 * median(abs_r), floor_scale);
    const double cut = options.huber_k * s;
    for (Eigen::Index i = 0; i < n; ++i)
      huber(i) = std::fabs(r(i)) <= cut ? 1.0 : cut / std::fabs(r(i));
    if (it > 0 && change < options.tolerance) break;
  }
  fit.a = beta(0);
  fit.c = beta(1);
  for (Eigen::Index i = 0; i < n; ++i) fit.weights[static_cast<std::size_t>(i)] = huber(i);

  // 95% intervals from the least-squares covariance of the relative fit, every
  // point at full weight (header).
  if (fit.n > 2) {
    Eigen::Matrix2d xtwx = Eigen::Matrix2d::Zero();
    double ss = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
      const double w = 1 / (scale(i) * scale(i));
      xtwx(0, 0) += w;
      xtwx(0, 1) += w * x(i);
      xtwx(1, 1) += w * x(i) * x(i);
      ss += r(i) * r(i);
    }
    xtwx(1, 0) = xtwx(0, 1);
    const double s2 = ss / static_cast<double>(fit.n - 2);
    const Eigen::Matrix2d cov = s2 * xtwx.inverse();
    const double t = t975(fit.n - 2);
    const double a_half = t * std::sqrt(std::max(0.0, cov(0, 0)));
    const double c_half = t * std::sqrt(std::max(0.0, cov(1, 1)));
    fit.a_low = fit.a - a_half;
    fit.a_high = fit.a + a_half;
    fit.c_low = fit.c - c_half;
    fit.c_high = fit.c + c_half;
  }

  // Quality: R^2 on the data, relative scatter.
  const double y_mean = y.mean();
  double ss_res = 0, ss_tot = 0;
  std::vector<double> rel(fit.n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double e = y(i) - fit.at(x(i));
    ss_res += e * e;
    ss_tot += (y(i) - y_mean) * (y(i) - y_mean);
    const double denom = y(i) != 0 ? std::fabs(y(i)) : 1.0;
    rel[static_cast<std::size_t>(i)] = std::fabs(e) / denom;
  }
  if (ss_tot > 0) fit.r2 = 1 - ss_res / ss_tot;
  fit.spread = 1.4826 * median(rel);
  fit.max_rel_residual = *std::max_element(rel.begin(), rel.end());

  // Flat, then the knee's tests in order (header).
  const double range = fit.x_max - fit.x_min;
  fit.flat = (fit.c_low ? *fit.c_low <= 0 : fit.c <= 0) ||
             std::fabs(fit.c) * range <= 1e-9 * std::fabs(y_median);
  if (fit.flat) {
    fit.flat_within = range * std::max(std::fabs(fit.c_low.value_or(fit.c)),
                                       std::fabs(fit.c_high.value_or(fit.c)));
    fit.knee_note = "knee undefined: flat series (within +-" + format_time(fit.flat_within) +
                    " over " + format_value(fit.x_min) + "-" + format_value(fit.x_max) + ")";
    return fit;
  }
  const bool fixed_resolved = fit.a_low ? *fit.a_low > 0 : fit.a > 0;
  const double y_min = y.minCoeff();
  if (!fixed_resolved || fit.a < options.min_fixed_fraction * y_min) {
    fit.knee_note = "knee undefined: no fixed cost resolved (a = " + format_time(fit.a) +
                    (fit.a_low ? ", 95% interval " + format_time_interval(*fit.a_low, *fit.a_high)
                               : std::string()) +
                    "), work dominates throughout";
    return fit;
  }
  char buf[200];
  if (!fit.r2 || *fit.r2 < options.min_knee_r2) {
    std::snprintf(buf, sizeof buf,
                  "knee not quoted: the line explains R2 = %.2f of the data (< %.2f)",
                  fit.r2.value_or(0), options.min_knee_r2);
    fit.knee_note = buf;
    return fit;
  }
  fit.knee = fit.a / fit.c;
  if (*fit.knee < fit.x_min || *fit.knee > fit.x_max) {
    std::snprintf(buf, sizeof buf, "knee %.4g extrapolated outside the measured range [%s, %s]",
                  *fit.knee, format_value(fit.x_min).c_str(), format_value(fit.x_max).c_str());
    fit.knee_note = buf;
  }
  return fit;
}

std::vector<ClassSegment> class_segments(const Series& series) {
  std::vector<ClassSegment> out;
  for (std::size_t i = 0; i < series.points.size(); ++i) {
    const SeriesPoint& p = series.points[i];
    const std::string label = p.classification.label();
    if (out.empty() || out.back().label != label) {
      ClassSegment s;
      s.first = s.last = i;
      s.x_first = s.x_last = p.x;
      s.label = label;
      out.push_back(s);
    } else {
      out.back().last = i;
      out.back().x_last = p.x;
    }
  }
  return out;
}

SeriesFit fit_series(const Series& series, const FitOptions& options) {
  SeriesFit out;
  std::vector<double> x, time, graph, kernel;
  bool one_source = true;
  for (const SeriesPoint& p : series.points) {
    const PointBounds& b = p.bounds;
    if (b.time_s) {
      x.push_back(p.x);
      time.push_back(*b.time_s);
      if (out.time_source == TimeSource::none && time.size() == 1) out.time_source = b.time_source;
      one_source = one_source && b.time_source == out.time_source;
    }
    if (const auto g = b.graph_s()) graph.push_back(*g);
    if (b.kernel_s) kernel.push_back(*b.kernel_s);
  }
  if (!one_source) out.time_source = TimeSource::none;
  out.time = robust_linear_fit(x, time, options);
  std::vector<double> all_x;
  for (const SeriesPoint& p : series.points) all_x.push_back(p.x);
  if (!graph.empty() && graph.size() == series.points.size())
    out.graph = robust_linear_fit(all_x, graph, options);
  if (!kernel.empty() && kernel.size() == series.points.size())
    out.kernel = robust_linear_fit(all_x, kernel, options);
  out.segments = class_segments(series);
  return out;
}

}  // namespace timeroof::roofline
