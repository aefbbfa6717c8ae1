#include "roofline/charts_data.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace timeroof::roofline {

ComplexityChart complexity_chart(const std::vector<Point>& points, const MachineRoofs& roofs,
                                 const ComplexityOptions& options) {
  std::vector<PointBounds> bounds;
  for (const Point& p : points)
    bounds.push_back(p.status == PointStatus::ok ? point_bounds(p, roofs, options.bounds)
                                                 : PointBounds{});
  std::vector<BoundedPoint> bounded;
  for (std::size_t i = 0; i < points.size(); ++i) bounded.push_back({i, &points[i], &bounds[i]});
  return complexity_chart(bounded, roofs, options);
}

ComplexityChart complexity_chart(const std::vector<BoundedPoint>& points, const MachineRoofs& roofs,
                                 const ComplexityOptions& options) {
  ComplexityChart chart;
  const Roof& dram = roofs.bandwidth(Level::dram);
  if (!dram.available() || *dram.value <= 0) {
    chart.notes.push_back("no DRAM bandwidth roof: " + dram.note);
    return chart;
  }
  chart.bandwidth = *dram.value;
  if (roofs.launch.available()) chart.launch_cost_s = *roofs.launch.value;

  for (const BoundedPoint& bp : points) {
    const Point& p = *bp.point;
    if (p.status != PointStatus::ok) continue;
    const PointBounds& b = *bp.bounds;
    const std::string who = p.op + " " + p.precision + " seq " + std::to_string(p.seq);
    const auto& q = b.level(Level::dram).bytes;
    const std::optional<double> t = options.use_kernel_time ? b.kernel_s : b.time_s;
    if (!q || !b.peak_effective || b.total_work <= 0 || !t) {
      chart.notes.push_back(who + ": left out (" +
                            (!q   ? "no DRAM bytes"
                             : !t ? "no time"
                                  : "no work or no peak") +
                            ")");
      continue;
    }
    ComplexityPoint cp;
    cp.index = bp.index;
    cp.bytes = *q;
    cp.flops = b.total_work;
    cp.intensity = cp.bytes > 0 ? cp.flops / cp.bytes : std::numeric_limits<double>::infinity();
    cp.peak = *b.peak_effective;
    cp.time_s = *t;
    cp.compute_side = cp.intensity >= cp.peak / chart.bandwidth;
    if (cp.compute_side) {
      cp.runtime_flops = cp.time_s * cp.peak;
      cp.runtime_bytes = cp.bytes > 0 ? cp.runtime_flops / cp.intensity : 0;
    } else {
      cp.runtime_bytes = cp.time_s * chart.bandwidth;
      cp.runtime_flops = cp.runtime_bytes * cp.intensity;
    }
    cp.lost_s = cp.time_s - std::max(cp.bytes / chart.bandwidth, cp.flops / cp.peak);
    if (const std::optional<TimeStats>& st = b.time_stats();
        !options.use_kernel_time && st && st->ci_low_s && st->ci_high_s && cp.time_s > 0) {
      const double lo = *st->ci_low_s / cp.time_s, hi = *st->ci_high_s / cp.time_s;
      cp.time_low_s = *st->ci_low_s;
      cp.time_high_s = *st->ci_high_s;
      cp.interval = Segment{cp.runtime_bytes * lo, cp.runtime_flops * lo, cp.runtime_bytes * hi,
                            cp.runtime_flops * hi};
    }
    cp.launches = b.launches;
    cp.drawable = cp.bytes > 0 && cp.flops > 0;
    if (!cp.drawable) chart.notes.push_back(who + ": 0 DRAM bytes, not drawable on log axes");
    chart.points.push_back(cp);
  }

  // The chart's peak.
  if (options.precision) {
    const Roof& r = roofs.peak(*options.precision);
    if (r.available()) {
      chart.peak = *r.value;
      chart.peak_name = r.ceiling;
    } else {
      chart.notes.push_back(std::string("no ") + to_string(*options.precision) +
                            " peak: " + r.note + "; using the largest P_eff");
    }
  }
  if (chart.peak <= 0) {
    for (const ComplexityPoint& cp : chart.points) chart.peak = std::max(chart.peak, cp.peak);
    chart.peak_name = "largest P_eff of the points";
  }
  if (chart.peak <= 0) return chart;
  chart.balance = chart.peak / chart.bandwidth;

  // Launch floors.
  std::set<std::int64_t> counts;
  for (const ComplexityPoint& cp : chart.points)
    if (cp.launches && *cp.launches > 0) counts.insert(*cp.launches);
  if (chart.launch_cost_s) {
    for (std::int64_t n : counts) {
      LaunchFloor f;
      f.launches = n;
      f.time_s = static_cast<double>(n) * *chart.launch_cost_s;
      chart.launch_floors.push_back(f);
    }
  }

  // Range over everything drawn.
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = 0;
  double y_lo = std::numeric_limits<double>::infinity(), y_hi = 0;
  auto take = [&](double x, double y) {
    if (x > 0) x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
    if (y > 0) y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
  };
  for (const ComplexityPoint& cp : chart.points) {
    take(cp.bytes, cp.flops);
    take(cp.runtime_bytes, cp.runtime_flops);
    if (cp.interval) {
      take(cp.interval->x0, cp.interval->y0);
      take(cp.interval->x1, cp.interval->y1);
    }
  }
  for (const LaunchFloor& f : chart.launch_floors)
    take(f.time_s * chart.bandwidth, f.time_s * chart.peak);
  if (x_hi <= 0 || y_hi <= 0) return chart;
  chart.x_min = x_lo / 2;
  chart.x_max = x_hi * 2;
  chart.y_min = y_lo / 2;
  chart.y_max = y_hi * 2;
  chart.balance_line = {chart.x_min, chart.balance * chart.x_min, chart.x_max,
                        chart.balance * chart.x_max};
  for (LaunchFloor& f : chart.launch_floors) {
    const double x = f.time_s * chart.bandwidth, y = f.time_s * chart.peak;
    f.vertical = {x, chart.y_min, x, y};
    f.horizontal = {chart.x_min, y, x, y};
  }
  return chart;
}

}  // namespace timeroof::roofline
