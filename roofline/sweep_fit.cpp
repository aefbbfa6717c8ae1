#include "roofline/sweep_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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
  return out + " " + precision;
}

std::vector<Series> group_series(const std::vector<Point>& points, const MachineRoofs& roofs,
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
    sp.bounds = point_bounds(p, roofs, options.bounds);
    sp.classification = classify(sp.bounds, options.thresholds);
    g->second.points.push_back(std::move(sp));
  }
  std::vector<Series> out;
  for (const Key& key : order) {
    Series& s = groups.at(key);
    if (s.points.size() < options.min_points) continue;
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const SeriesPoint& l, const SeriesPoint& r) { return l.x < r.x; });
    out.push_back(std::move(s));
  }
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

  // Knee.
  const double work_over_range = fit.c * (fit.x_max - fit.x_min);
  const double resolvable =
      std::max(options.flat_fraction * std::fabs(fit.a), 2 * fit.spread * std::fabs(y_median));
  char buf[200];
  if (fit.c <= 0 || work_over_range < resolvable) {
    std::snprintf(buf, sizeof buf,
                  "knee undefined: flat series (c x range = %.3g, below the resolvable %.3g)",
                  work_over_range, resolvable);
    fit.knee_note = buf;
  } else if (fit.a <= 0) {
    fit.knee_note = "knee undefined: no fixed cost resolved (a <= 0), work dominates throughout";
  } else {
    fit.knee = fit.a / fit.c;
    if (*fit.knee < fit.x_min || *fit.knee > fit.x_max) {
      std::snprintf(buf, sizeof buf, "knee %.4g extrapolated outside the measured range [%s, %s]",
                    *fit.knee, format_value(fit.x_min).c_str(), format_value(fit.x_max).c_str());
      fit.knee_note = buf;
    }
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
  std::vector<double> x, wall, xk, kernel;
  for (const SeriesPoint& p : series.points) {
    if (p.bounds.wall_s) {
      x.push_back(p.x);
      wall.push_back(*p.bounds.wall_s);
    }
    if (p.bounds.kernel_s) {
      xk.push_back(p.x);
      kernel.push_back(*p.bounds.kernel_s);
    }
  }
  out.wall = robust_linear_fit(x, wall, options);
  if (!kernel.empty() && kernel.size() == series.points.size())
    out.kernel = robust_linear_fit(xk, kernel, options);
  out.segments = class_segments(series);
  return out;
}

}  // namespace timeroof::roofline
