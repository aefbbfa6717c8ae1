#include "plots/compare_charts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/format.hpp"
#include "plots/axes.hpp"
#include "plots/chart_parts.hpp"
#include "plots/svg.hpp"

namespace timeroof::plots {

using namespace detail;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Range {
  double lo = kInf, hi = 0;
  void add(double v) {
    if (!positive(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(hi > 0); }
};

// The swept parameter's axis over the points of both sides (1..1024 for none).
AxisSpec parameter_axis(const Range& x, const std::string& parameter) {
  return x.empty() ? detail::parameter_axis(1, 1024, parameter)
                   : detail::parameter_axis(x.lo, x.hi, parameter);
}

std::string point_label(const roofline::PointComparison& p) {
  return p.op + " " + p.precision + (p.math_mode.empty() ? "" : "/" + p.math_mode) + " " +
         params_text(p.params);
}

// "NVIDIA H200: T_stream 45.1 us (95% interval 44.9 to 45.3 us), T_roof 12 us,
// memory_bound(dram)": one side of a point's hover text.
std::string side_tooltip(const std::string& label, const roofline::PointBounds& b,
                         const std::string& bound) {
  std::string t = label + ": " + roofline::to_string(b.time_source) + " " +
                  format_number(b.time_s, hint::time_3);
  const auto& stats = b.time_stats();
  if (stats && stats->ci_low_s && stats->ci_high_s)
    t += " (95% interval " + format_time_interval(*stats->ci_low_s, *stats->ci_high_s) + ")";
  return t + ", T_roof " + format_number(b.t_roof, hint::time_3) + ", " + bound;
}

std::string compared_tooltip(const ComparedTimes& c, const SideLabels& labels) {
  const roofline::PointComparison& p = *c.point;
  return point_label(p) + "\n" + side_tooltip(labels.base, *c.base, p.base_class) + "\n" +
         side_tooltip(labels.other, *c.other, p.other_class) + "\nother/base " +
         roofline::format_ratio(p.ratio) + ": " + roofline::to_string(p.verdict);
}

const char* level_dash(Level level) {
  switch (level) {
    case Level::l1:
      return "2 3";
    case Level::l2:
      return "8 4";
    case Level::dram:
      return "";
  }
  return "";
}

}  // namespace

// ---- Roofline overlay ----------------------------------------------------------

std::string roofline_overlay_chart(const OverlaySide& base, const OverlaySide& other,
                                   const SideLabels& labels, const std::string& title) {
  struct Side {
    const OverlaySide* data;
    std::string label;
    const char* color;
    std::vector<PrecisionClass> classes;  // compute roofs drawn
    std::vector<Level> levels;            // bandwidth roofs drawn
    double top = 0;                       // its highest compute roof drawn
  };
  std::vector<Side> sides = {{&base, labels.base, kBaseColor, {}, {}, 0},
                             {&other, labels.other, kOtherColor, {}, {}, 0}};
  // The precision classes of either side's points pick the compute roofs of
  // both, so each roof has its counterpart; every available one without points.
  std::vector<PrecisionClass> used;
  for (PrecisionClass p : kAllPrecisionClasses)
    for (const Side& s : sides)
      for (const PointSample& sample : s.data->samples)
        if (sample.precision_class == to_string(p) &&
            std::find(used.begin(), used.end(), p) == used.end())
          used.push_back(p);
  const bool no_samples = used.empty();
  Range x, y;
  for (Side& s : sides) {
    if (!s.data->roofs) continue;
    const roofline::MachineRoofs& roofs = *s.data->roofs;
    for (PrecisionClass p : kAllPrecisionClasses)
      if (roofs.peak(p).available() &&
          (no_samples || std::find(used.begin(), used.end(), p) != used.end())) {
        s.classes.push_back(p);
        s.top = std::max(s.top, *roofs.peak(p).value);
        y.add(*roofs.peak(p).value);
        y.add(*roofs.peak(p).value / 10);
      }
    for (Level l : kAllLevels)
      if (roofs.bandwidth(l).available() && positive(*roofs.bandwidth(l).value)) {
        s.levels.push_back(l);
        if (s.top > 0) {
          const double ridge = s.top / *roofs.bandwidth(l).value;
          x.add(ridge / 10);
          x.add(ridge * 4);
        }
      }
    for (const PointSample& sample : s.data->samples) {
      for (const auto& ai : sample.intensity)
        if (ai && std::isfinite(*ai)) x.add(*ai);
      if (sample.achieved) y.add(*sample.achieved);
    }
  }
  if (x.empty()) x = {0.01, 1e4};
  if (y.empty()) y = {1e9, 1e15};
  const auto xr = decade_range(x.lo, x.hi);
  const auto yr = decade_range(y.lo, y.hi * 1.5);

  const double width = 960, height = 660;
  Svg svg(width, height);
  chart_title(svg, title,
              "each side in its colour: compute roofs flat, bandwidth roofs diagonal; achieved "
              "FLOP/s = W / kernel time, one marker per memory level");
  const std::string clip = chart_id("overlay", title);
  const Axes axes = roofline_axes(svg, xr, yr, clip);
  const Area& area = axes.area();

  std::vector<RoofLabel> flat_labels, diagonal_labels;
  std::vector<XY> occupied;
  svg.raw("<g class=\"roofs\" clip-path=\"url(#" + escape(clip) + ")\">\n");
  for (const Side& s : sides) {
    if (!s.data->roofs) continue;
    const roofline::MachineRoofs& roofs = *s.data->roofs;
    double bw_max = 0;
    for (Level l : s.levels) bw_max = std::max(bw_max, *roofs.bandwidth(l).value);
    for (PrecisionClass p : s.classes) {
      const roofline::Roof& roof = roofs.peak(p);
      const double peak = *roof.value;
      const double x0 = compute_roof_start(xr, peak, bw_max);
      const double py = axes.py(peak);
      svg.begin_group(s.label + ": " + to_string(p) + " peak " + format_si(peak, "FLOP/s") + " (" +
                          roof.ceiling + ")",
                      "compute-roof");
      svg.line(axes.px(x0), py, area.right(), py, Style{s.color, "none", 2, "", 1});
      svg.end_group();
      sample_polyline({{axes.px(x0), py}, {area.right(), py}}, occupied);
      flat_labels.push_back({area.right() - 6, py - 5,
                             std::string(to_string(p)) + " " + format_si(peak, "FLOP/s"), s.color});
    }
    for (Level l : s.levels) {
      const roofline::Roof& roof = roofs.bandwidth(l);
      const double bw = *roof.value;
      const auto [from, to] = bandwidth_roof_ends(axes, xr, yr, bw, s.top);
      svg.begin_group(s.label + ": " + display_name(l) + " bandwidth " + format_si(bw, "B/s") +
                          " (" + roof.ceiling + ")",
                      "bandwidth-roof");
      svg.line(from.first, from.second, to.first, to.second,
               Style{s.color, "none", 2, level_dash(l), 1});
      svg.end_group();
      sample_polyline({from, to}, occupied);
      diagonal_labels.push_back(diagonal_roof_label(
          from, to, std::string(display_name(l)) + " " + format_si(bw, "B/s"), s.color));
    }
  }
  svg.raw("</g>\n");

  svg.raw("<g class=\"samples\" clip-path=\"url(#" + escape(clip) + ")\">\n");
  for (const Side& s : sides) {
    for (const PointSample& sample : s.data->samples) {
      if (!sample.achieved || !positive(*sample.achieved)) continue;
      svg.begin_group(s.label + "\n" + tooltip(sample), "sample");
      sample_markers(svg, axes, sample, s.color, 0.8, occupied);
      svg.end_group();
    }
  }
  svg.raw("</g>\n");

  // Labels on top of the data, with a white halo, spread apart where they meet.
  draw_roof_labels(svg, area, flat_labels, 13, Anchor::end);
  draw_roof_labels(svg, area, diagonal_labels, 13, Anchor::start);

  std::vector<LegendEntry> legend;
  for (const Side& s : sides)
    legend.push_back(
        {s.label + ": roofs and points", s.color, true, "", true, Marker::circle, true});
  for (Level l : kAllLevels)
    legend.push_back({std::string(display_name(l)) + " roof and AI at " + display_name(l),
                      "#555555", true, level_dash(l), true, level_marker(l), true});
  draw_legend(svg, area, emptiest_corner(area, occupied, legend_size(legend)), legend);
  return svg.str();
}

// ---- Time against the parameter, both sides --------------------------------------

std::vector<ComparedTimes> compared_times(const roofline::Comparison& comparison,
                                          const roofline::ComparedSeries& series,
                                          const roofline::ComparedSide& base,
                                          const roofline::ComparedSide& other) {
  std::vector<ComparedTimes> out;
  for (std::size_t i : series.points) {
    const roofline::PointComparison& p = comparison.points.at(i);
    const auto x = p.params.find(comparison.options.parameter);
    if (x == p.params.end() || !x->is_number()) continue;
    out.push_back({x->get<double>(), &p,
                   &base.analyses.at(p.base_ref.run).points.at(p.base_ref.point).bounds,
                   &other.analyses.at(p.other_ref.run).points.at(p.other_ref.point).bounds});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ComparedTimes& a, const ComparedTimes& b) { return a.x < b.x; });
  return out;
}

std::string compare_time_chart(const std::vector<ComparedTimes>& points, const SideLabels& labels,
                               const std::string& parameter, const std::string& title) {
  struct Line {
    std::string label;
    const char* color;
    Marker marker;
    std::vector<XY> time;  // (x, T), data
    std::vector<Interval> band;
    std::vector<XY> roof;  // (x, T_roof)
  };
  Line lines[2] = {{labels.base, kBaseColor, Marker::circle, {}, {}, {}},
                   {labels.other, kOtherColor, Marker::square, {}, {}, {}}};
  std::string time_names[2];
  Range x, y;
  double t_min = kInf;
  for (const ComparedTimes& c : points) {
    if (!positive(c.x)) continue;
    const roofline::PointBounds* bounds[2] = {c.base, c.other};
    for (int side = 0; side < 2; ++side) {
      const roofline::PointBounds& b = *bounds[side];
      Line& line = lines[side];
      if (!b.time_s || !positive(*b.time_s)) continue;
      const std::string name = roofline::to_string(b.time_source);
      // Named once per side; "T" where the side's points mix T_stream and T_call.
      time_names[side] = time_names[side].empty() || time_names[side] == name ? name : "T";
      x.add(c.x);
      y.add(*b.time_s);
      t_min = std::min(t_min, *b.time_s);
      line.time.push_back({c.x, *b.time_s});
      const auto& stats = b.time_stats();
      if (stats && stats->ci_low_s && stats->ci_high_s && positive(*stats->ci_low_s)) {
        line.band.push_back({c.x, *stats->ci_low_s, *stats->ci_high_s});
        y.add(*stats->ci_low_s);
        y.add(*stats->ci_high_s);
      }
      if (positive(b.t_roof)) line.roof.push_back({c.x, b.t_roof});
    }
  }
  // Roof times far below the measured ones squash the chart: 3 decades at most.
  for (const Line& line : lines)
    for (const auto& [rx, ry] : line.roof) y.add(std::max(ry, t_min / 1e3));
  if (y.empty()) y = {1e-6, 1e-3};
  const auto yr = decade_range(y.lo, y.hi);

  std::vector<LegendEntry> legend;
  bool bands = false;
  for (int side = 0; side < 2; ++side) {
    const Line& line = lines[side];
    bands = bands || !line.band.empty();
    legend.push_back({line.label + ": " + (time_names[side].empty() ? "T" : time_names[side]),
                      line.color, true, "", true, line.marker, true});
    if (!line.roof.empty())
      legend.push_back(
          {line.label + ": T_roof, the bound of its roofs", line.color, true, "6 4", false});
  }
  if (bands) legend.push_back(median_band_entry());
  const std::string clip = chart_id("compare-time", title);
  LegendOutsideChart frame = legend_outside_chart(
      520, legend, title,
      "the time each side's model explains, with its 95% interval; dashed: the time its "
      "roofs allow",
      parameter_axis(x, parameter), AxisSpec{Scale::log, yr[0], yr[1], "Time per call (s)", "s"},
      clip);
  Svg& svg = frame.svg;
  const Axes& axes = frame.axes;

  svg.raw("<g clip-path=\"url(#" + escape(clip) + ")\">\n");
  for (const Line& line : lines) {
    if (line.band.empty()) continue;
    svg.begin_group(line.label + ": 95% interval of the median", "band");
    svg.polygon(band_outline(axes, line.band, 0, line.band.size()),
                Style{"none", line.color, 1, "", 0.2});
    svg.end_group();
  }
  for (const Line& line : lines) {
    auto pixels = [&](const std::vector<XY>& data) {
      std::vector<XY> out;
      for (const auto& [dx, dy] : data) out.push_back({axes.px(dx), axes.py(dy)});
      return out;
    };
    svg.begin_group(line.label + ": T_roof", "roof");
    svg.polyline(pixels(line.roof), Style{line.color, "none", 1.5, "6 4", 1});
    svg.end_group();
    svg.begin_group(line.label, "series");
    svg.polyline(pixels(line.time), Style{line.color, "none", 2.2, "", 1});
    svg.end_group();
  }
  svg.raw("</g>\n");
  // Markers with the hover text of the point on both sides.
  for (const ComparedTimes& c : points) {
    const roofline::PointBounds* bounds[2] = {c.base, c.other};
    const std::string tip = compared_tooltip(c, labels);
    for (int side = 0; side < 2; ++side) {
      const roofline::PointBounds& b = *bounds[side];
      if (!positive(c.x) || !b.time_s || !positive(*b.time_s)) continue;
      svg.begin_group(tip, "point");
      svg.marker(lines[side].marker, axes.px(c.x), axes.py(*b.time_s), 7,
                 Style{lines[side].color, lines[side].color, 1.3, "", 1});
      svg.end_group();
    }
  }
  draw_legend_outside(svg, frame.area, legend);
  return svg.str();
}

// ---- Ratio against the parameter ---------------------------------------------------

namespace {

// Ratio ticks: the first ladder whose steps inside [lo, hi] are few enough to
// label, "0.5x", "1x", "1.25x".
std::vector<Tick> ratio_ticks(double lo, double hi) {
  static const std::vector<std::vector<double>> kLadders = {
      {0.5, 0.67, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2},
      {0.1, 0.2, 0.33, 0.5, 0.67, 1, 1.5, 2, 3, 5, 10},
      {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100},
      {1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1e3, 1e4}};
  std::vector<Tick> ticks;
  for (const std::vector<double>& ladder : kLadders) {
    ticks.clear();
    for (double v : ladder)
      if (v >= lo && v <= hi) ticks.push_back({v, format_number(v, hint::significant_3) + "x"});
    // Enough labels to read, and the ladder covers the range.
    if (ticks.size() >= 3 && ladder.front() <= lo * 1.5 && ladder.back() >= hi / 1.5) break;
  }
  return ticks;
}

}  // namespace

std::string ratio_chart(const std::vector<RatioSeries>& series, double threshold,
                        const SideLabels& labels, const std::string& parameter,
                        const std::string& title) {
  const double band_high = 1 + threshold, band_low = 1 / (1 + threshold);
  Range x, y;
  y.add(band_low);
  y.add(band_high);
  for (const RatioSeries& s : series)
    for (const ComparedTimes& c : s.points) {
      x.add(c.x);
      y.add(c.point->ratio.low);
      y.add(c.point->ratio.high);
    }
  const double ylo = y.lo / 1.08, yhi = y.hi * 1.08;

  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < series.size(); ++i)
    legend.push_back({series[i].name, series_color(i), true, "", true, Marker::circle, true});
  legend.push_back({"filled: faster or slower beyond noise and threshold", "#555555", false, "",
                    true, Marker::circle, true});
  legend.push_back({"open: the same", "#555555", false, "", true, Marker::circle, false});
  legend.push_back({"bar: 95% interval of the ratio", "#555555", true, "", false});
  legend.push_back({"shaded: within the threshold, +-" + format_number(threshold, hint::percent_1),
                    "#999999", false, "", true, Marker::square, true});
  AxisSpec yspec{Scale::log, ylo, yhi, "T other / T base", ""};
  yspec.ticks = ratio_ticks(ylo, yhi);
  const std::string clip = chart_id("ratio", title);
  LegendOutsideChart frame =
      legend_outside_chart(520, legend, title,
                           "T(" + labels.other + ") / T(" + labels.base +
                               ") per point; below 1 the other side is faster",
                           parameter_axis(x, parameter), yspec, clip);
  Svg& svg = frame.svg;
  const Area& area = frame.area;
  const Axes& axes = frame.axes;

  svg.raw("<g clip-path=\"url(#" + escape(clip) + ")\">\n");
  svg.begin_group("within the threshold: the same", "threshold-band");
  svg.rect(area.x, axes.py(band_high), area.w, axes.py(band_low) - axes.py(band_high),
           Style{"none", "#999999", 1, "", 0.2});
  svg.end_group();
  svg.line(area.x, axes.py(1), area.right(), axes.py(1), Style{"#444444", "none", 1.2, "", 1});
  // Offsets along x keep the bars of several series at one value apart; each
  // series' line goes through its own offset markers.
  const double spread = 4, first = -spread * (static_cast<double>(series.size()) - 1) / 2;
  auto offset = [&](std::size_t i) { return first + spread * static_cast<double>(i); };
  for (std::size_t i = 0; i < series.size(); ++i) {
    std::vector<XY> line;
    for (const ComparedTimes& c : series[i].points)
      line.push_back({axes.px(c.x) + offset(i), axes.py(c.point->ratio.value)});
    svg.begin_group(series[i].name, "series");
    svg.polyline(line, Style{series_color(i), "none", 1.5, "", 0.8});
    svg.end_group();
  }
  svg.raw("</g>\n");
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* color = series_color(i);
    const double dx = offset(i);
    for (const ComparedTimes& c : series[i].points) {
      const roofline::PointComparison& p = *c.point;
      const double px = axes.px(c.x) + dx;
      svg.begin_group(series[i].name + " " + parameter + "=" +
                          format_number(c.x, hint::significant_3) + "\nT other / T base " +
                          roofline::format_ratio(p.ratio) + ": " + roofline::to_string(p.verdict) +
                          "\n" + labels.base + " " + format_number(p.base_time_s, hint::time_3) +
                          " (" + p.base_class + ")\n" + labels.other + " " +
                          format_number(p.other_time_s, hint::time_3) + " (" + p.other_class + ")",
                      "point");
      const double top = axes.py(p.ratio.high), bottom = axes.py(p.ratio.low);
      const Style bar{color, "none", 1.2, "", 1};
      svg.line(px, top, px, bottom, bar);
      svg.line(px - 3, top, px + 3, top, bar);
      svg.line(px - 3, bottom, px + 3, bottom, bar);
      const bool differs = p.verdict != roofline::Verdict::same;
      svg.marker(Marker::circle, px, axes.py(p.ratio.value), 7,
                 Style{color, differs ? color : "#ffffff", 1.4, "", 1});
      svg.end_group();
    }
  }
  TextStyle note;
  note.size = 11;
  note.fill = "#555555";
  note.halo = true;
  svg.text(area.x + 8, area.y + 16, labels.other + " slower", note);
  svg.text(area.x + 8, area.bottom() - 8, labels.other + " faster", note);
  draw_legend_outside(svg, frame.area, legend);
  return svg.str();
}

}  // namespace timeroof::plots
