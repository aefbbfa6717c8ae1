#include "plots/chart_parts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/format.hpp"

namespace timeroof::plots::detail {

bool positive(double v) {
  return std::isfinite(v) && v > 0;
}

void chart_title(Svg& svg, const std::string& title, const std::string& subtitle) {
  TextStyle t;
  t.size = 16;
  t.bold = true;
  svg.text(16, 24, title, t);
  if (!subtitle.empty()) {
    TextStyle s;
    s.size = 11;
    s.fill = "#555555";
    svg.text(16, 40, subtitle, s);
  }
}

Bound level_bound(Level level) {
  switch (level) {
    case Level::l1:
      return Bound::l1;
    case Level::l2:
      return Bound::l2;
    case Level::dram:
      return Bound::hbm;
  }
  return Bound::hbm;
}

Marker level_marker(Level level) {
  switch (level) {
    case Level::l1:
      return Marker::triangle_up;
    case Level::l2:
      return Marker::square;
    case Level::dram:
      return Marker::circle;
  }
  return Marker::circle;
}

std::string chart_id(const std::string& prefix, const std::string& seed) {
  char hash[16];
  std::snprintf(hash, sizeof hash, "%zx", std::hash<std::string>{}(seed)&0xffffffffu);
  return prefix + "-" + hash;
}

TextStyle label_style() {
  TextStyle t;
  t.size = 11;
  t.halo = true;
  t.bold = true;
  return t;
}

void sample_markers(Svg& svg, const Axes& axes, const PointSample& sample, const std::string& color,
                    double opacity, std::vector<XY>& occupied) {
  for (Level l : kAllLevels) {
    const auto& ai = sample.intensity[static_cast<std::size_t>(l)];
    if (!ai || !positive(*ai) || !std::isfinite(*ai)) continue;
    const double x = axes.px(*ai), y = axes.py(*sample.achieved);
    if (sample.achieved_low && sample.achieved_high && positive(*sample.achieved_low)) {
      // The achieved rate's interval over the traced calls, capped; under the marker.
      const double top = axes.py(*sample.achieved_high), bottom = axes.py(*sample.achieved_low);
      const Style bar{color, "none", 1, "", opacity};
      svg.line(x, top, x, bottom, bar);
      svg.line(x - 3, top, x + 3, top, bar);
      svg.line(x - 3, bottom, x + 3, bottom, bar);
    }
    svg.marker(level_marker(l), x, y, 7, Style{"#ffffff", color, 0.6, "", opacity});
    occupied.push_back({x, y});
  }
}

std::vector<roofline::SeriesPoint> drawable_points(const roofline::Series& series) {
  std::vector<roofline::SeriesPoint> out;
  for (const roofline::SeriesPoint& p : series.points)
    if (positive(p.x)) out.push_back(p);
  std::stable_sort(
      out.begin(), out.end(),
      [](const roofline::SeriesPoint& a, const roofline::SeriesPoint& b) { return a.x < b.x; });
  return out;
}

std::string point_label(const roofline::Series& series, const roofline::SeriesPoint& point) {
  return series.name() + " " + series.parameter + "=" + roofline::format_value(point.x);
}

std::vector<double> spread_labels(std::vector<double> ys, double gap, double top, double bottom) {
  std::vector<std::size_t> idx(ys.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return ys[a] < ys[b]; });
  for (std::size_t k = 1; k < idx.size(); ++k)
    ys[idx[k]] = std::max(ys[idx[k]], ys[idx[k - 1]] + gap);
  // Pushed below the bottom: shift the whole stack up.
  if (!idx.empty() && ys[idx.back()] > bottom) {
    ys[idx.back()] = bottom;
    for (std::size_t k = idx.size() - 1; k-- > 0;)
      ys[idx[k]] = std::min(ys[idx[k]], ys[idx[k + 1]] - gap);
  }
  for (double& y : ys) y = std::max(y, top);
  return ys;
}

Axes roofline_axes(Svg& svg, const std::array<double, 2>& x, const std::array<double, 2>& y,
                   const std::string& clip) {
  const Margins m;
  const Area area{m.left, m.top + 8, svg.width() - m.left - m.right,
                  svg.height() - m.top - 8 - m.bottom};
  Axes axes(area, AxisSpec{Scale::log, x[0], x[1], "Arithmetic intensity (FLOP/byte)", ""},
            AxisSpec{Scale::log, y[0], y[1], "Performance (FLOP/s)", ""});
  axes.draw(svg);
  axes.define_clip(svg, clip);
  return axes;
}

LegendOutsideChart legend_outside_chart(double height, const std::vector<LegendEntry>& legend,
                                        const std::string& title, const std::string& subtitle,
                                        const AxisSpec& x, const AxisSpec& y,
                                        const std::string& clip) {
  const auto box = legend_size(legend);
  const double width = 760 + box[0] + 16;
  Svg svg(width, height);
  chart_title(svg, title, subtitle);
  const Margins m;
  const Area area{m.left, m.top + 8, width - m.left - box[0] - 28, height - m.top - 8 - m.bottom};
  Axes axes(area, x, y);
  axes.draw(svg);
  axes.define_clip(svg, clip);
  return {std::move(svg), area, std::move(axes)};
}

void draw_legend_outside(Svg& svg, const Area& area, const std::vector<LegendEntry>& legend) {
  svg.begin_group({}, "legend outside");
  draw_legend_at(svg, area.right() + 14, area.y, legend);
  svg.end_group();
}

LegendEntry median_band_entry() {
  return {"shaded: 95% interval of the median", "#999999", false, "", true, Marker::square, true};
}

AxisSpec parameter_axis(double lo, double hi, const std::string& parameter) {
  const double a = std::pow(2.0, std::floor(std::log2(lo)));
  const double b = std::pow(2.0, std::ceil(std::log2(hi)));
  AxisSpec x{Scale::log, a / 1.25, (b > a ? b : a * 2) * 1.25, parameter, ""};
  x.powers_of_two = true;
  return x;
}

std::vector<XY> band_outline(const Axes& axes, const std::vector<Interval>& band, std::size_t first,
                             std::size_t last) {
  std::vector<XY> outline;
  for (std::size_t i = first; i < last; ++i)
    outline.push_back({axes.px(band[i].x), axes.py(band[i].low)});
  for (std::size_t i = last; i-- > first;)
    outline.push_back({axes.px(band[i].x), axes.py(band[i].high)});
  return outline;
}

double compute_roof_start(const std::array<double, 2>& x, double peak, double bandwidth_max) {
  return bandwidth_max > 0 ? std::max(x[0], peak / bandwidth_max) : x[0];
}

std::pair<XY, XY> bandwidth_roof_ends(const Axes& axes, const std::array<double, 2>& x,
                                      const std::array<double, 2>& y, double bandwidth,
                                      double top) {
  const double ridge = top > 0 ? top / bandwidth : x[1];
  double ax = x[0], ay = ax * bandwidth;
  if (ay < y[0]) {  // enters through the bottom edge
    ay = y[0];
    ax = ay / bandwidth;
  }
  const double bx = std::min(ridge, x[1]);
  return {{axes.px(ax), axes.py(ay)}, {axes.px(bx), axes.py(bx * bandwidth)}};
}

RoofLabel diagonal_roof_label(const XY& from, const XY& to, std::string text, std::string color) {
  const double f = 0.12;
  return {from.first + f * (to.first - from.first), from.second + f * (to.second - from.second) - 6,
          std::move(text), std::move(color),
          std::atan2(to.second - from.second, to.first - from.first) * 180 / 3.14159265358979};
}

void draw_roof_labels(Svg& svg, const Area& area, const std::vector<RoofLabel>& labels, double gap,
                      Anchor anchor) {
  std::vector<double> ys;
  for (const RoofLabel& l : labels) ys.push_back(l.y);
  ys = spread_labels(ys, gap, area.y + 12, area.bottom() - 4);
  TextStyle lt = label_style();
  lt.anchor = anchor;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    lt.fill = labels[i].color;
    lt.rotate = labels[i].angle;
    svg.text(labels[i].x, ys[i], labels[i].text, lt);
  }
}

}  // namespace timeroof::plots::detail
