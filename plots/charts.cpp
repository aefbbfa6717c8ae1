#include "plots/charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "core/ceiling_names.hpp"
#include "core/format.hpp"
#include "plots/axes.hpp"
#include "plots/chart_parts.hpp"
#include "plots/svg.hpp"

namespace timeroof::plots {

using namespace detail;

namespace {
// The measured times besides T_stream (Bound::measured, black): distinct from
// every bound's hue.
constexpr const char* kCallColor = "#393b79";   // indigo
constexpr const char* kGraphColor = "#17becf";  // cyan
}  // namespace

namespace {

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The palette entry of a machine ceiling, by its name.
Bound ceiling_bound(const Ceiling& c) {
  const std::string& n = c.name;
  if (starts_with(n, "tensor_") || starts_with(n, "cublas")) return Bound::compute_tensor;
  if (c.kind == CeilingKind::compute) return Bound::compute_cuda;
  if (starts_with(n, "hbm") || starts_with(n, "dram")) return Bound::hbm;
  if (starts_with(n, "l2")) return Bound::l2;
  if (starts_with(n, "l1") || starts_with(n, "shared")) return Bound::l1;
  if (starts_with(n, "launch")) return Bound::launch;
  if (starts_with(n, "h2d") || starts_with(n, "d2h")) return Bound::transfer;
  if (ceiling::is_interconnect(n)) return Bound::interconnect;
  return c.kind == CeilingKind::latency ? Bound::launch : Bound::measured;
}

}  // namespace

// ---- Samples -----------------------------------------------------------------

PointSample point_sample(const Point& point, const roofline::PointAnalysis& analysis) {
  const roofline::PointBounds& bounds = analysis.bounds;
  PointSample s;
  s.label =
      point.op + " " + point.precision + (point.math_mode.empty() ? "" : "/") + point.math_mode;
  s.params = params_text(point.params);  // every key: the LSTM's are not the conv's
  if (analysis.main_precision) s.precision_class = to_string(*analysis.main_precision);
  for (Level l : kAllLevels) {
    const auto& ai = bounds.level(l).intensity;
    if (ai && positive(*ai)) s.intensity[static_cast<std::size_t>(l)] = ai;
  }
  s.achieved = bounds.achieved;
  s.achieved_low = bounds.achieved_low;
  s.achieved_high = bounds.achieved_high;
  s.time_s = bounds.time_s;
  s.time_name = roofline::to_string(bounds.time_source);
  s.bound = analysis.classification.label();
  s.efficiency = bounds.efficiency;
  return s;
}

std::vector<PointSample> point_samples(const RunRecord& record,
                                       const roofline::RunAnalysis& analysis,
                                       const std::vector<std::size_t>& indices) {
  std::vector<PointSample> out;
  for (std::size_t i : indices) {
    const roofline::PointAnalysis& pa = analysis.points.at(i);
    const Point& p = record.points.at(i);
    if (p.status != PointStatus::ok || !pa.bounds.achieved || !positive(*pa.bounds.achieved))
      continue;
    out.push_back(point_sample(p, pa));
  }
  return out;
}

std::vector<PointSample> point_samples(const RunRecord& record,
                                       const roofline::RunAnalysis& analysis) {
  std::vector<std::size_t> all(record.points.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return point_samples(record, analysis, all);
}

std::string tooltip(const PointSample& s) {
  std::string t = s.label;
  if (!s.params.empty()) t += "\n" + s.params;
  t += "\ntime " + format_si(s.time_s, "s");
  if (s.time_s) t += " (" + s.time_name + ")";
  t += "\nachieved " + format_si(s.achieved, "FLOP/s");
  if (s.achieved_low && s.achieved_high)
    t += " (traced calls " + format_si(*s.achieved_low, "FLOP/s") + " to " +
         format_si(*s.achieved_high, "FLOP/s") + ")";
  for (Level l : kAllLevels) {
    const auto& ai = s.intensity[static_cast<std::size_t>(l)];
    if (ai) t += std::string("\nAI ") + display_name(l) + " " + format_si(*ai, "FLOP/B");
  }
  t += "\nbound " + (s.bound.empty() ? std::string("-") : s.bound);
  t += "\nefficiency " + format_number(s.efficiency, hint::share);
  return t;
}

// ---- Ceilings ----------------------------------------------------------------

std::string ceilings_chart(const Machine& machine) {
  struct Group {
    CeilingKind kind;
    const char* title;
    const char* unit;
    std::vector<const Ceiling*> rows;
  };
  std::vector<Group> groups = {
      {CeilingKind::compute, "Compute", "FLOP/s", {}},
      {CeilingKind::bandwidth, "Bandwidth", "B/s", {}},
      {CeilingKind::latency, "Latency", "s", {}},
  };
  for (const Ceiling& c : machine.ceilings) {
    if (!positive(c.measured) && !(c.theoretical && positive(*c.theoretical))) continue;
    for (Group& g : groups)
      if (g.kind == c.kind) g.rows.push_back(&c);
  }
  // CUDA-core rows before Tensor-Core rows, keeping the machine's order within.
  std::stable_sort(
      groups[0].rows.begin(), groups[0].rows.end(), [](const Ceiling* a, const Ceiling* b) {
        return ceiling_bound(*a) == Bound::compute_cuda && ceiling_bound(*b) != Bound::compute_cuda;
      });

  const double row_h = 17, label_w = 190, value_w = 230, width = 960;
  const double group_head = 26, group_axis = 34;
  double height = 64;
  for (const Group& g : groups)
    if (!g.rows.empty())
      height += group_head + static_cast<double>(g.rows.size()) * row_h + group_axis + 10;
  height += 10;

  Svg svg(width, height);
  chart_title(svg, "Machine ceilings: " + (machine.gpu.name.empty() ? "GPU" : machine.gpu.name),
              "measured (filled) against theoretical (open diamond); % = measured / theoretical");
  // Key, top right.
  {
    TextStyle k;
    k.size = 11;
    k.baseline = "middle";
    const double x = width - 250, y = 30;
    svg.marker(Marker::circle, x, y, 9, Style{"#333333", "#333333", 1, "", 1});
    svg.text(x + 10, y, "measured", k);
    svg.marker(Marker::diamond, x + 90, y, 13, Style{"#333333", "none", 1.5, "", 1});
    svg.text(x + 100, y, "theoretical", k);
    // The spread bar's key, under the other two.
    const Style bar{"#333333", "none", 1.3, "", 1};
    svg.line(x - 6, y + 16, x + 6, y + 16, bar);
    svg.line(x - 6, y + 11, x - 6, y + 21, bar);
    svg.line(x + 6, y + 11, x + 6, y + 21, bar);
    svg.text(x + 10, y + 16, "spread of the repeats (max - min)", k);
  }

  double y = 64;
  for (const Group& g : groups) {
    if (g.rows.empty()) continue;
    double lo = std::numeric_limits<double>::max(), hi = 0;
    for (const Ceiling* c : g.rows) {
      for (double v : {c->measured, c->theoretical.value_or(0)}) {
        if (!positive(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    const auto range = decade_range(lo, hi);
    const Area area{label_w, y + group_head, width - label_w - value_w,
                    static_cast<double>(g.rows.size()) * row_h};
    Axes axes(area, AxisSpec{Scale::log, range[0], range[1], "", g.unit},
              AxisSpec{Scale::linear, 0, 1, "", ""});
    TextStyle head;
    head.size = 13;
    head.bold = true;
    svg.text(16, y + 17,
             std::string(g.title) + " (" + g.unit + ")" +
                 (g.kind == CeilingKind::latency ? ", lower is better" : ""),
             head);
    // Row stripes under the grid.
    for (std::size_t i = 1; i < g.rows.size(); i += 2)
      svg.rect(0, area.y + static_cast<double>(i) * row_h, width, row_h,
               Style{"none", "#f2f2f2", 1, "", 1});

    // Grid and x ticks (no y axis: rows are categories).
    svg.begin_group({}, "axes");
    for (const Tick& t : log_ticks(range[0], range[1], g.unit)) {
      const double x = axes.px(t.value);
      svg.line(x, area.y, x, area.bottom(),
               Style{t.label.empty() ? "#eeeeee" : "#d0d0d0", "none", 1, "", 1});
      if (!t.label.empty()) {
        TextStyle tl;
        tl.size = 11;
        tl.anchor = Anchor::middle;
        tl.fill = "#333333";
        svg.line(x, area.bottom(), x, area.bottom() + 4, Style{"#444444", "none", 1, "", 1});
        svg.text(x, area.bottom() + 17, t.label, tl);
      }
    }
    svg.rect(area.x, area.y, area.w, area.h, Style{"#444444", "none", 1, "", 1});
    svg.end_group();

    double ry = area.y + row_h / 2;
    for (const Ceiling* c : g.rows) {
      const char* col = color(ceiling_bound(*c));
      std::string tip = c->name + ": measured " + format_si(c->measured, c->unit);
      if (c->theoretical) tip += ", theoretical " + format_si(*c->theoretical, c->unit);
      if (!c->theoretical_source.empty()) tip += " (" + c->theoretical_source + ")";
      if (!c->method.empty()) tip += "\n" + c->method;
      if (c->repeats > 0)
        tip += "\n" + std::to_string(c->repeats) + " repeats, spread " +
               format_number(c->spread, hint::percent_1);
      svg.begin_group(tip, "ceiling");
      TextStyle name;
      name.size = 11;
      name.anchor = Anchor::end;
      name.baseline = "middle";
      svg.text(label_w - 8, ry, c->name, name);
      const bool has_m = positive(c->measured);
      const bool has_t = c->theoretical && positive(*c->theoretical);
      if (has_m && has_t)
        svg.line(axes.px(c->measured), ry, axes.px(*c->theoretical), ry,
                 Style{col, "none", 2, "", 0.5});
      // The repeats' spread (max - min, about the median: where the two ends lie
      // is not stored) as a bar with caps under the dot.
      if (has_m && c->repeats > 1 && c->spread > 0) {
        const double bar_lo = c->measured * std::max(1 - c->spread / 2, 1e-3);
        const double bar_hi = c->measured * (1 + c->spread / 2);
        svg.begin_group({}, "spread");
        svg.line(axes.px(bar_lo), ry, axes.px(bar_hi), ry, Style{"#333333", "none", 1.3, "", 1});
        for (double v : {bar_lo, bar_hi})
          svg.line(axes.px(v), ry - 5, axes.px(v), ry + 5, Style{"#333333", "none", 1.3, "", 1});
        svg.end_group();
      }
      // The open diamond over the dot, so both show where they coincide.
      if (has_m) svg.marker(Marker::circle, axes.px(c->measured), ry, 9, Style{col, col, 1, "", 1});
      if (has_t)
        svg.marker(Marker::diamond, axes.px(*c->theoretical), ry, 13,
                   Style{col, "none", 1.5, "", 1});
      std::string value = has_m ? format_si(c->measured, c->unit) : "not measured";
      if (has_m && has_t)
        value += "  (" + format_number(c->measured / *c->theoretical, hint::percent_1) + ")";
      TextStyle vs;
      vs.size = 11;
      vs.baseline = "middle";
      svg.text(area.right() + 10, ry, value, vs);
      svg.end_group();
      ry += row_h;
    }
    y = area.bottom() + group_axis + 10;
  }
  return svg.str();
}

// ---- Working set -------------------------------------------------------------

std::string working_set_chart(const Machine& machine) {
  const double width = 900, height = 560;
  Svg svg(width, height);
  chart_title(
      svg,
      "Bandwidth against working set: " + (machine.gpu.name.empty() ? "GPU" : machine.gpu.name),
      "plateaus are the cache levels; dashed: measured L1 / L2 / HBM roofs");
  std::vector<WorkingSetSample> ws;
  for (const WorkingSetSample& s : machine.working_set)
    if (positive(s.bytes) && positive(s.bytes_per_second)) ws.push_back(s);
  std::sort(ws.begin(), ws.end(),
            [](const WorkingSetSample& a, const WorkingSetSample& b) { return a.bytes < b.bytes; });

  struct RoofLine {
    const char* name;
    Bound bound;
    double value;
  };
  std::vector<RoofLine> roofs;
  auto measured = [&](const char* name) {
    for (const Ceiling& c : machine.ceilings)
      if (c.name == name && positive(c.measured)) return c.measured;
    return 0.0;
  };
  if (const double v = measured(ceiling::kL1Read); v > 0) roofs.push_back({"L1", Bound::l1, v});
  if (const double v = measured(ceiling::kL2Read); v > 0) roofs.push_back({"L2", Bound::l2, v});
  if (const double v = measured(ceiling::kHbmRead); v > 0) roofs.push_back({"HBM", Bound::hbm, v});

  double xlo = std::numeric_limits<double>::max(), xhi = 0;
  double ylo = std::numeric_limits<double>::max(), yhi = 0;
  for (const WorkingSetSample& s : ws) {
    xlo = std::min(xlo, s.bytes);
    xhi = std::max(xhi, s.bytes);
    ylo = std::min(ylo, s.bytes_per_second);
    yhi = std::max(yhi, s.bytes_per_second);
  }
  for (const RoofLine& r : roofs) {
    ylo = std::min(ylo, r.value);
    yhi = std::max(yhi, r.value);
  }
  const double l2 = static_cast<double>(machine.gpu.l2_bytes);
  if (positive(l2)) {
    xlo = std::min(xlo, l2);
    xhi = std::max(xhi, l2);
  }
  if (!(xhi > 0)) xlo = 1e3, xhi = 1e10;
  if (!(yhi > 0)) ylo = 1e11, yhi = 1e14;
  const auto xr = decade_range(xlo, xhi);
  const auto yr = decade_range(ylo / 1.2, yhi * 1.2);
  const Margins m;
  const Area area{m.left, m.top + 8, width - m.left - m.right, height - m.top - 8 - m.bottom};
  Axes axes(area, AxisSpec{Scale::log, xr[0], xr[1], "Working set (bytes)", "B"},
            AxisSpec{Scale::log, yr[0], yr[1], "Bandwidth (B/s)", ""});
  axes.draw(svg);

  std::vector<XY> occupied;
  TextStyle rl;
  rl.size = 11;
  rl.anchor = Anchor::end;
  rl.halo = true;
  for (const RoofLine& r : roofs) {
    const double y = axes.py(r.value);
    svg.line(area.x, y, area.right(), y, Style{color(r.bound), "none", 1.5, "7 4", 1});
    rl.fill = color(r.bound);
    svg.text(area.right() - 6, y - 5, std::string(r.name) + " roof " + format_si(r.value, "B/s"),
             rl);
    sample_polyline({{area.right() - 200, y - 10}, {area.right(), y - 10}}, occupied);
  }
  if (positive(l2)) {
    const double x = axes.px(l2);
    svg.line(x, area.y, x, area.bottom(), Style{color(Bound::l2), "none", 1.5, "3 3", 1});
    TextStyle t;
    t.size = 11;
    t.fill = color(Bound::l2);
    t.halo = true;
    t.anchor = Anchor::end;
    t.rotate = -90;
    svg.text(x - 5, area.y + 6, "L2 size " + format_binary_bytes(l2), t);
  }
  std::vector<XY> pts;
  for (const WorkingSetSample& s : ws)
    pts.push_back({axes.px(s.bytes), axes.py(s.bytes_per_second)});
  const char* black = color(Bound::measured);
  svg.polyline(pts, Style{black, "none", 2, "", 1});
  sample_polyline(pts, occupied);
  for (std::size_t i = 0; i < ws.size(); ++i) {
    svg.begin_group(
        format_binary_bytes(ws[i].bytes) + ": " + format_si(ws[i].bytes_per_second, "B/s"),
        "sample");
    svg.marker(Marker::circle, pts[i].first, pts[i].second, 7, Style{"#ffffff", black, 1, "", 1});
    svg.end_group();
  }
  std::vector<LegendEntry> legend = {
      {"measured (read kernel)", black, true, "", true, Marker::circle, true}};
  for (const RoofLine& r : roofs)
    legend.push_back({std::string(r.name) + " roof", color(r.bound), true, "7 4", false});
  if (positive(l2)) legend.push_back({"L2 size", color(Bound::l2), true, "3 3", false});
  const auto box = legend_size(legend);
  draw_legend(svg, area, emptiest_corner(area, occupied, box), legend);
  return svg.str();
}

// ---- Classic roofline --------------------------------------------------------

std::string classic_roofline_chart(const roofline::MachineRoofs& roofs,
                                   const std::vector<PointSample>& samples,
                                   const std::string& title) {
  const double width = 960, height = 640;
  Svg svg(width, height);

  // Precision classes of the samples, in the model's order; they pick the
  // compute roofs drawn (all available ones when there are no samples).
  std::vector<PrecisionClass> classes;
  for (PrecisionClass p : kAllPrecisionClasses) {
    const bool used = std::any_of(samples.begin(), samples.end(), [&](const PointSample& s) {
      return s.precision_class == to_string(p);
    });
    if (used || samples.empty())
      if (roofs.peak(p).available()) classes.push_back(p);
  }
  std::map<std::string, std::size_t> class_index;
  for (const PointSample& s : samples)
    if (!class_index.count(s.precision_class)) {
      // Colours follow the model's class order so a class keeps its colour.
      std::size_t i = 0;
      for (PrecisionClass p : kAllPrecisionClasses) {
        if (s.precision_class == to_string(p)) break;
        ++i;
      }
      class_index[s.precision_class] = i;
    }

  double top = 0;
  for (PrecisionClass p : classes) top = std::max(top, *roofs.peak(p).value);
  std::vector<Level> levels;
  for (Level l : kAllLevels)
    if (roofs.bandwidth(l).available()) levels.push_back(l);

  double xlo = std::numeric_limits<double>::max(), xhi = 0;
  double ylo = std::numeric_limits<double>::max(), yhi = top;
  for (const PointSample& s : samples) {
    for (const auto& ai : s.intensity) {
      if (!ai || !positive(*ai)) continue;
      xlo = std::min(xlo, *ai);
      xhi = std::max(xhi, *ai);
    }
    if (s.achieved && positive(*s.achieved)) {
      ylo = std::min(ylo, *s.achieved);
      yhi = std::max(yhi, *s.achieved);
    }
  }
  for (Level l : levels) {
    if (top > 0) {
      const double ridge = top / *roofs.bandwidth(l).value;
      xlo = std::min(xlo, ridge / 10);
      xhi = std::max(xhi, ridge * 4);
    }
  }
  for (PrecisionClass p : classes) ylo = std::min(ylo, *roofs.peak(p).value / 10);
  if (!(xhi > 0)) xlo = 0.01, xhi = 1e4;
  if (!(yhi > 0)) ylo = 1e9, yhi = 1e15;
  const auto xr = decade_range(xlo, xhi);
  const auto yr = decade_range(ylo, yhi * 1.5);

  chart_title(svg, title,
              "achieved FLOP/s = W / kernel time; one marker per memory level at AI = W / bytes; "
              "hover a marker for its point");
  const Axes axes = roofline_axes(svg, xr, yr, "roofline-plot");
  const Area& area = axes.area();

  std::vector<XY> occupied;
  // Compute roofs: horizontal from the lowest ridge of the drawn bandwidth roofs.
  svg.begin_group({}, "roofs");
  std::vector<RoofLabel> compute_labels, diagonal_labels;
  double bw_max = 0;
  for (Level l : levels) bw_max = std::max(bw_max, *roofs.bandwidth(l).value);
  for (PrecisionClass p : classes) {
    const double peak = *roofs.peak(p).value;
    const Bound b = is_tensor(p) ? Bound::compute_tensor : Bound::compute_cuda;
    const double x0 = compute_roof_start(xr, peak, bw_max);
    const double y = axes.py(peak);
    svg.begin_group(std::string(to_string(p)) + " peak " + format_si(peak, "FLOP/s") + " (" +
                        roofs.peak(p).ceiling + ", " + roofline::to_string(roofs.peak(p).source) +
                        ")",
                    "compute-roof");
    svg.line(axes.px(x0), y, area.right(), y, Style{color(b), "none", 2, "", 1});
    svg.end_group();
    compute_labels.push_back({area.right() - 6, y - 5,
                              std::string(to_string(p)) + " " + format_si(peak, "FLOP/s"),
                              color(b)});
    sample_polyline({{axes.px(x0), y}, {area.right(), y}}, occupied);
  }
  // Bandwidth roofs: diagonal from the left edge up to their ridge with the top roof;
  // the node's interconnect (runs of --devices) dotted beside the memory levels.
  auto add_diagonal = [&](const std::string& name, const char* col, double bw,
                          const std::string& tooltip_text, const char* dash) {
    const auto [from, to] = bandwidth_roof_ends(axes, xr, yr, bw, top);
    svg.begin_group(tooltip_text, "bandwidth-roof");
    svg.line(from.first, from.second, to.first, to.second, Style{col, "none", 2, dash, 1});
    svg.end_group();
    sample_polyline({from, to}, occupied);
    diagonal_labels.push_back(
        diagonal_roof_label(from, to, name + " " + format_si(bw, "B/s"), col));
  };
  for (Level l : levels) {
    const double bw = *roofs.bandwidth(l).value;
    add_diagonal(display_name(l), color(level_bound(l)), bw,
                 std::string(display_name(l)) + " bandwidth " + format_si(bw, "B/s") + " (" +
                     roofs.bandwidth(l).ceiling + ")",
                 l == Level::dram ? "" : "8 4");
  }
  if (roofs.interconnect.available()) {
    const double bw = *roofs.interconnect.value;
    add_diagonal("interconnect", color(Bound::interconnect), bw,
                 "interconnect (GPU to GPU) " + format_si(bw, "B/s") + " (" +
                     roofs.interconnect.ceiling + ")",
                 "2 4");
  }
  svg.end_group();

  // Samples: one group per sample (its tooltip), a marker per memory level.
  svg.raw("<g class=\"samples\" clip-path=\"url(#roofline-plot)\">\n");
  for (const PointSample& s : samples) {
    if (!s.achieved || !positive(*s.achieved)) continue;
    const char* col = series_color(class_index[s.precision_class]);
    svg.begin_group(tooltip(s), "sample");
    sample_markers(svg, axes, s, col, 0.85, occupied);
    svg.end_group();
  }
  svg.raw("</g>\n");

  // Labels last, on top of the data, with a white halo; the diagonal ones along
  // each roof, near its lower-left end, spread apart where parallel roofs meet.
  draw_roof_labels(svg, area, compute_labels, 13, Anchor::end);
  draw_roof_labels(svg, area, diagonal_labels, 14, Anchor::start);

  // Legend: marker shapes per level, colours per precision class.
  std::vector<LegendEntry> legend;
  for (Level l : kAllLevels)
    legend.push_back({std::string("AI at ") + display_name(l), "#555555", false, "", true,
                      level_marker(l), true});
  for (const auto& [name, index] : class_index)
    legend.push_back(
        {name + " samples", series_color(index), false, "", true, Marker::square, true});
  if (!samples.empty()) {
    const auto box = legend_size(legend);
    draw_legend(svg, area, emptiest_corner(area, occupied, box), legend);
  }
  return svg.str();
}

// ---- Time against the swept parameter ------------------------------------------

namespace {

// One line per measured time and per bound; a measured time carries its 95%
// interval per point (a band where the point has one). A line or band is drawn
// in runs of consecutive points that have it: a point without the value (L1
// left out for TMA loads, a call that could not be graphed) breaks it instead
// of being bridged by a segment that claims a value there.
constexpr const char* kMedianBand = "95% interval of the median";

struct TimeLine {
  std::string name;
  std::string color;
  std::string dash;
  bool markers;
  bool filled;
  std::vector<std::pair<double, double>> xy;  // data
  std::vector<Interval> band;
  std::vector<std::size_t> xy_breaks, band_breaks;  // indices that start a new run
  bool xy_open = false, band_open = false;          // the previous point has one
  std::string band_name = kMedianBand;              // what the band is, where it is not that
};

// The lines of the chart, each with its points in runs; lines without a point
// left out.
std::vector<TimeLine> time_lines(const std::vector<roofline::SeriesPoint>& points) {
  using Line = TimeLine;
  // T_xfer is on the transfer roofs of each point's host memory: named where the
  // series uses one kind (a sweep copies from one).
  std::string xfer_name = "transfer";
  {
    std::vector<HostMemory> hosts;
    for (const roofline::SeriesPoint& p : points)
      if (p.bounds.t_xfer > 0 &&
          std::find(hosts.begin(), hosts.end(), p.bounds.transfer_host) == hosts.end())
        hosts.push_back(p.bounds.transfer_host);
    if (hosts.size() == 1) xfer_name += std::string(" (") + to_string(hosts.front()) + " roofs)";
  }
  std::vector<Line> lines = {
      {"T_stream: calls back to back", color(Bound::measured), "", true, true, {}, {}},
      {"T_call: one synchronized call", kCallColor, "", true, false, {}, {}},
      {"T_graph: CUDA graph replay", kGraphColor, "", true, true, {}, {}},
      {"kernel time T_k", color(Bound::measured), "5 3", true, false, {}, {}},
      {"CUDA-core compute", color(Bound::compute_cuda), "", false, false, {}, {}},
      {"Tensor-Core compute", color(Bound::compute_tensor), "", false, false, {}, {}},
      {"HBM", color(Bound::hbm), "", false, false, {}, {}},
      {"L2", color(Bound::l2), "8 4", false, false, {}, {}},
      {"L1", color(Bound::l1), "8 4", false, false, {}, {}},
      {"launch N x L", color(Bound::launch), "2 3", false, false, {}, {}},
      {xfer_name, color(Bound::transfer), "2 3", false, false, {}, {}},
  };
  lines[3].band_name = "fastest to slowest traced call";
  for (const roofline::SeriesPoint& p : points) {
    const roofline::PointBounds& b = p.bounds;
    // Appends `value` to `to`, starting a new run after a point without one.
    auto append = [](auto& to, std::vector<std::size_t>& breaks, bool& open, bool has,
                     const auto& value) {
      if (has) {
        if (!open && !to.empty()) breaks.push_back(to.size());
        to.push_back(value);
      }
      open = has;
    };
    auto add = [&](std::size_t i, std::optional<double> v) {
      Line& l = lines[i];
      const bool has = v && positive(*v);
      append(l.xy, l.xy_breaks, l.xy_open, has, std::pair{p.x, has ? *v : 0.0});
    };
    auto add_time = [&](std::size_t i, const std::optional<TimeStats>& t) {
      Line& l = lines[i];
      const bool has = t && positive(t->median_s);
      append(l.xy, l.xy_breaks, l.xy_open, has, std::pair{p.x, has ? t->median_s : 0.0});
      const bool interval = has && t->ci_low_s && t->ci_high_s && positive(*t->ci_low_s);
      append(l.band, l.band_breaks, l.band_open, interval,
             interval ? Interval{p.x, *t->ci_low_s, *t->ci_high_s} : Interval{p.x, 0, 0});
    };
    add_time(0, b.stream);
    add_time(1, b.call);
    add_time(2, b.graph);
    add(3, b.kernel_s);
    {  // T_k's band: the fastest to the slowest traced call
      Line& l = lines[3];
      const bool interval = b.kernel_s && positive(*b.kernel_s) && b.kernel_low_s &&
                            b.kernel_high_s && positive(*b.kernel_low_s);
      append(l.band, l.band_breaks, l.band_open, interval,
             interval ? Interval{p.x, *b.kernel_low_s, *b.kernel_high_s} : Interval{p.x, 0, 0});
    }
    add(4, b.t_cuda);
    add(5, b.t_tensor);
    add(6, b.level(Level::dram).time_s);
    add(7, b.level(Level::l2).time_s);
    add(8, b.level(Level::l1).time_s);
    add(9, b.t_launch);
    add(10, b.t_xfer);
  }
  lines.erase(
      std::remove_if(lines.begin(), lines.end(), [](const Line& l) { return l.xy.empty(); }),
      lines.end());
  return lines;
}

}  // namespace

std::string time_vs_parameter_chart(const roofline::Series& series, const std::string& title) {
  const std::vector<roofline::SeriesPoint> points = drawable_points(series);
  const std::string& parameter = series.parameter;

  using Line = TimeLine;
  std::vector<Line> lines = time_lines(points);
  const bool bands =
      std::any_of(lines.begin(), lines.end(), [](const Line& l) { return !l.band.empty(); });

  double xlo = std::numeric_limits<double>::max(), xhi = 0;
  double ylo = std::numeric_limits<double>::max(), yhi = 0;
  for (const Line& l : lines) {
    for (const auto& [x, y] : l.xy) {
      xlo = std::min(xlo, x);
      xhi = std::max(xhi, x);
      ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
    for (const Interval& i : l.band) {
      ylo = std::min(ylo, i.low);
      yhi = std::max(yhi, i.high);
    }
  }
  if (!(xhi > 0)) xlo = 1, xhi = 1000;
  if (!(yhi > 0)) ylo = 1e-6, yhi = 1e-3;
  // Bounds far below the measured time squash the chart: keep 3 decades below
  // the fastest measured time at most.
  double t_min = std::numeric_limits<double>::max();
  for (const Line& l : lines)
    if (l.markers)
      for (const auto& xy : l.xy) t_min = std::min(t_min, xy.second);
  if (t_min < std::numeric_limits<double>::max()) ylo = std::max(ylo, t_min / 1e3);
  const auto yr = decade_range(ylo, yhi);

  std::vector<LegendEntry> legend;
  for (const Line& l : lines)
    legend.push_back({l.name, l.color, true, l.dash, l.markers, Marker::circle, l.filled});
  if (bands) {
    LegendEntry entry = median_band_entry();
    const auto kernel_band = std::find_if(lines.begin(), lines.end(), [](const Line& l) {
      return l.band_name != kMedianBand && !l.band.empty();
    });
    if (kernel_band != lines.end()) entry.label += "; T_k's: " + kernel_band->band_name;
    legend.push_back(entry);
  }
  LegendOutsideChart frame = legend_outside_chart(
      580, legend, title,
      "lines are the time bounds of the model; where the measured time hugs a bound, "
      "that bound is the bottleneck",
      parameter_axis(xlo, xhi, parameter),
      AxisSpec{Scale::log, yr[0], yr[1], "Time per call (s)", "s"}, "time-plot");
  Svg& svg = frame.svg;
  const Axes& axes = frame.axes;

  svg.raw("<g clip-path=\"url(#time-plot)\">\n");
  // [first, last) index ranges of the runs of a line or band.
  const auto runs = [](std::size_t size, const std::vector<std::size_t>& breaks) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t first = 0;
    for (std::size_t b : breaks) out.push_back({first, b}), first = b;
    if (first < size) out.push_back({first, size});
    return out;
  };
  // Bands first, under every line: low edge left to right, high edge back.
  for (const Line& l : lines) {
    if (l.band.empty()) continue;
    svg.begin_group(l.name + ": " + l.band_name, "band");
    for (const auto& [first, last] : runs(l.band.size(), l.band_breaks))
      svg.polygon(band_outline(axes, l.band, first, last), Style{"none", l.color, 1, "", 0.18});
    svg.end_group();
  }
  for (const Line& l : lines) {
    svg.begin_group(l.name, "series");
    for (const auto& [first, last] : runs(l.xy.size(), l.xy_breaks)) {
      std::vector<XY> pts;
      for (std::size_t i = first; i < last; ++i)
        pts.push_back({axes.px(l.xy[i].first), axes.py(l.xy[i].second)});
      svg.polyline(pts, Style{l.color, "none", l.markers ? 2.2 : 1.8, l.dash, 1});
      // A run of one point draws no segment: a dot keeps its value visible.
      if (pts.size() == 1 && !l.markers)
        svg.marker(Marker::circle, pts[0].first, pts[0].second, 4,
                   Style{l.color, l.color, 1, "", 1});
    }
    svg.end_group();
  }
  svg.raw("</g>\n");
  for (const Line& l : lines) {
    if (!l.markers) continue;
    for (std::size_t i = 0; i < l.xy.size(); ++i) {
      const auto [x, y] = l.xy[i];
      std::string tip = l.name + ": " + format_si(y, "s");
      for (const Interval& b : l.band)
        if (b.x == x)
          tip += " (95% interval " + format_si(b.low, "s") + " to " + format_si(b.high, "s") + ")";
      tip += " at " + parameter + " " + si_label(x);
      for (const roofline::SeriesPoint& p : points)
        if (p.x == x) tip = point_label(series, p) + "\n" + tip;
      svg.begin_group(tip, "point");
      svg.marker(Marker::circle, axes.px(x), axes.py(y), 7,
                 Style{l.color, l.filled ? l.color : "#ffffff", 1.3, "", 1});
      svg.end_group();
    }
  }
  draw_legend_outside(svg, frame.area, legend);
  return svg.str();
}

}  // namespace timeroof::plots
