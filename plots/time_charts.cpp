// The time-based charts: the complexity chart of the time-based roofline, the
// decomposition of each call's time, and the Tensor-Core share and utilisation.
// Geometry and numbers come from roofline/ (charts_data, bounds, classify); this
// file only maps them to pixels.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/format.hpp"
#include "plots/axes.hpp"
#include "plots/chart_parts.hpp"
#include "plots/charts.hpp"
#include "plots/svg.hpp"
#include "roofline/classify.hpp"
#include "roofline/sweep_fit.hpp"

namespace timeroof::plots {

using namespace detail;

namespace {

constexpr const char* kGrey = "#7f7f7f";         // a class without a bound colour
constexpr const char* kIsoTime = "#9fb3c8";      // iso-time contours
constexpr const char* kBalance = "#333333";      // machine-balance line
constexpr const char* kNeutral = "#555555";      // legend samples of shapes
constexpr const char* kDeviceGaps = "#c49c94";   // device gaps: the host overhead's hue, light
constexpr const char* kUnexplained = "#bdbdbd";  // a part nothing measured explains
constexpr double kLegendFont = 11;

// A second grey subtitle line under chart_title()'s.
void subtitle2(Svg& svg, const std::string& text) {
  TextStyle s;
  s.size = 11;
  s.fill = "#555555";
  svg.text(16, 55, text, s);
}

// "operator params, time, kernel time, bound, efficiency": the first lines of
// every hover text of a series chart.
std::string series_tooltip(const roofline::Series& series, const roofline::SeriesPoint& p) {
  std::string t = point_label(series, p);
  t += "\ntime " + format_si(p.bounds.time_s, "s");
  if (p.bounds.time_s) t += std::string(" (") + roofline::to_string(p.bounds.time_source) + ")";
  const auto with_interval = [&](const char* name, const std::optional<TimeStats>& s) {
    if (!s) return;
    t += std::string("\n") + name + " " + format_si(s->median_s, "s");
    if (s->ci_low_s && s->ci_high_s)
      t += " (95% interval " + format_si(*s->ci_low_s, "s") + " to " +
           format_si(*s->ci_high_s, "s") + ")";
  };
  with_interval("T_call", p.bounds.call);
  with_interval("T_stream", p.bounds.stream);
  with_interval("T_graph", p.bounds.graph);
  with_interval("issue", p.bounds.issue);
  if (!p.bounds.graph && !p.bounds.graph_unavailable.empty())
    t += "\nno T_graph: " + p.bounds.graph_unavailable;
  t += "\nkernel time " + format_si(p.bounds.kernel_s, "s");
  t += "\nbound " + p.classification.label();
  t += "\nefficiency " + format_number(p.bounds.efficiency, hint::share);
  return t;
}

// Classes in a fixed, readable order for legends.
int class_rank(const std::string& label) {
  static const char* const kOrder[] = {"launch_bound",
                                       "transfer_bound",
                                       "memory_bound(l1)",
                                       "memory_bound(l2)",
                                       "memory_bound(dram)",
                                       "compute_bound(cuda_core)",
                                       "compute_bound(tensor_core)",
                                       "latency_bound",
                                       "unknown"};
  for (int i = 0; i < static_cast<int>(std::size(kOrder)); ++i)
    if (label == kOrder[i]) return i;
  return static_cast<int>(std::size(kOrder));
}

// The roof the kernels of a point are held to (the largest of T_compute and
// T_mem,l), as a palette entry and a name.
std::pair<Bound, std::string> kernel_roof(const roofline::PointBounds& b) {
  if (b.limiting_roof == "l1") return {Bound::l1, "L1 roof"};
  if (b.limiting_roof == "l2") return {Bound::l2, "L2 roof"};
  if (b.limiting_roof == "dram") return {Bound::hbm, "HBM roof"};
  if (b.t_tensor >= b.t_cuda && b.t_tensor > 0) return {Bound::compute_tensor, "Tensor-Core roof"};
  return {Bound::compute_cuda, "CUDA-core roof"};
}

// A diagonal-hatch pattern in `colour`: kernel time lost to that roof.
std::string hatch_pattern(const std::string& id, const std::string& colour) {
  return "<pattern id=\"" + escape(id) +
         "\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
         "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#ffffff\"/>"
         "<line x1=\"1.5\" y1=\"0\" x2=\"1.5\" y2=\"6\" stroke=\"" +
         escape(colour) + "\" stroke-width=\"2.2\"/></pattern>";
}

void centred_message(Svg& svg, const Area& area, const std::string& text) {
  TextStyle t;
  t.size = 13;
  t.anchor = Anchor::middle;
  t.fill = "#555555";
  svg.text(area.x + area.w / 2, area.y + area.h / 2, text, t);
}

}  // namespace

const char* bound_color(const std::string& label) {
  if (label == "launch_bound") return color(Bound::launch);
  if (label == "transfer_bound") return color(Bound::transfer);
  if (label == "memory_bound(dram)") return color(Bound::hbm);
  if (label == "memory_bound(l2)") return color(Bound::l2);
  if (label == "memory_bound(l1)") return color(Bound::l1);
  if (label == "compute_bound(tensor_core)") return color(Bound::compute_tensor);
  if (label == "compute_bound(cuda_core)") return color(Bound::compute_cuda);
  return kGrey;  // latency_bound, unknown: far from every bound
}

// ---- Complexity chart ----------------------------------------------------------

namespace {

// The log ranges of a complexity chart widened to equal pixels per decade on
// both axes for a plot of w x h pixels, so iso-AI lines (and the balance line)
// run at 45 degrees and the launch floors are square: the shorter range is
// widened about its centre.
std::array<double, 4> equal_decades(const roofline::ComplexityChart& chart, bool usable, double w,
                                    double h) {
  double xlo = chart.x_min, xhi = chart.x_max, ylo = chart.y_min, yhi = chart.y_max;
  if (!usable) xlo = 1e6, xhi = 1e10, ylo = 1e8, yhi = 1e13;
  const double dx = std::log10(xhi / xlo), dy = std::log10(yhi / ylo);
  const double per_decade = std::min(w / dx, h / dy);
  const double wx = w / per_decade, wy = h / per_decade;
  const double cx = std::log10(xlo) + dx / 2, cy = std::log10(ylo) + dy / 2;
  return {std::pow(10.0, cx - wx / 2), std::pow(10.0, cx + wx / 2), std::pow(10.0, cy - wy / 2),
          std::pow(10.0, cy + wy / 2)};
}

// Iso-time contours: the points whose roof time is t form an L with its
// corner (t B, t P) on the balance line. One per labelled time tick.
// `range`: the axes' x lo, x hi, y lo, y hi.
void draw_iso_time(Svg& svg, const Axes& axes, const std::string& clip,
                   const std::array<double, 4>& range, double B, double P) {
  const auto [xlo, xhi, ylo, yhi] = range;
  const Area& area = axes.area();
  const std::vector<Tick> top = log_ticks(xlo / B, xhi / B, "s");
  const std::vector<Tick> right = log_ticks(ylo / P, yhi / P, "s");
  svg.raw("<g class=\"iso-time\" clip-path=\"url(#" + clip + ")\">\n");
  std::vector<double> times;
  for (const Tick& t : top)
    if (!t.label.empty()) times.push_back(t.value);
  for (const Tick& t : right)
    if (!t.label.empty() && std::none_of(times.begin(), times.end(), [&](double v) {
          return std::fabs(v / t.value - 1) < 1e-6;
        }))
      times.push_back(t.value);
  for (double t : times) {
    const double x = axes.px(t * B), y = axes.py(t * P);
    svg.polyline({{x, area.bottom()}, {x, y}, {area.x, y}}, Style{kIsoTime, "none", 1, "", 1});
  }
  svg.raw("</g>\n");
}

// Secondary axes: seconds = bytes / B on top, FLOPs / P on the right.
void draw_time_axes(Svg& svg, const Axes& axes, const std::array<double, 4>& range, double B,
                    double P) {
  const auto [xlo, xhi, ylo, yhi] = range;
  const Area& area = axes.area();
  TextStyle tl;
  tl.size = 11;
  tl.fill = "#333333";
  svg.begin_group({}, "time-axes");
  tl.anchor = Anchor::middle;
  for (const Tick& t : log_ticks(xlo / B, xhi / B, "s")) {
    if (t.label.empty()) continue;
    const double x = axes.px(t.value * B);
    svg.line(x, area.y - 5, x, area.y, Style{"#444444", "none", 1, "", 1});
    svg.text(x, area.y - 9, t.label, tl);
  }
  tl.anchor = Anchor::start;
  tl.baseline = "middle";
  for (const Tick& t : log_ticks(ylo / P, yhi / P, "s")) {
    if (t.label.empty()) continue;
    const double y = axes.py(t.value * P);
    svg.line(area.right(), y, area.right() + 5, y, Style{"#444444", "none", 1, "", 1});
    svg.text(area.right() + 8, y, t.label, tl);
  }
  TextStyle at;
  at.size = 13;
  at.anchor = Anchor::middle;
  svg.text(area.x + area.w / 2, area.y - 28, "Time at the HBM roof: Q / B (s)", at);
  at.rotate = 90;
  svg.text(area.right() + 62, area.y + area.h / 2, "Time at the compute roof: W / P (s)", at);
  svg.end_group();
}

// One plot of the complexity chart in `area`: the iso-time grid, the four axes,
// the balance line, the launch floors of `drawn`'s launch counts, and `drawn`'s
// points (indices into chart.points), with `range` {xlo, xhi, ylo, yhi}.
void complexity_panel(Svg& svg, const Area& area, const roofline::ComplexityChart& chart,
                      const std::array<double, 4>& range, bool usable,
                      const std::vector<std::size_t>& drawn,
                      const std::vector<ComplexityMark>& marks, const std::string& clip) {
  const double B = chart.bandwidth, P = chart.peak;
  const auto [xlo, xhi, ylo, yhi] = range;
  auto mark = [&](std::size_t i) { return i < marks.size() ? marks[i] : ComplexityMark{}; };
  AxisSpec xs{Scale::log, xlo, xhi, "HBM bytes Q", "B"};
  AxisSpec ys{Scale::log, ylo, yhi, "FLOPs W", ""};  // "100 G": short labels beside the title
  xs.grid = ys.grid = false;                         // the iso-time contours are the grid
  Axes axes(area, xs, ys);
  axes.define_clip(svg, clip);

  if (usable) draw_iso_time(svg, axes, clip, {xlo, xhi, ylo, yhi}, B, P);
  axes.draw(svg);

  if (usable) draw_time_axes(svg, axes, {xlo, xhi, ylo, yhi}, B, P);

  if (!usable || drawn.empty()) {
    std::string why =
        chart.notes.empty() ? "no point has HBM bytes, FLOPs and a time" : chart.notes.front();
    centred_message(svg, area, "nothing to draw: " + why);
    return;
  }
  svg.raw("<g class=\"roofs\" clip-path=\"url(#" + clip + ")\">\n");
  // Machine balance: y = (P / B) x across the whole plot.
  const double bx0 = std::max(xlo, ylo / chart.balance);
  const double bx1 = std::min(xhi, yhi / chart.balance);
  const bool balance_shown = bx1 > bx0;  // else the line misses the plot
  if (balance_shown) {
    svg.begin_group("machine balance P / B = " + format_si(chart.balance, "FLOP/B") +
                        ": points above it are compute-side",
                    "balance");
    svg.line(axes.px(bx0), axes.py(bx0 * chart.balance), axes.px(bx1), axes.py(bx1 * chart.balance),
             Style{kBalance, "none", 1.6, "", 1});
    svg.end_group();
  }
  // Launch floors of this plot's points: the L of roof time N x L, drawn to the
  // plot's edges.
  std::vector<const roofline::LaunchFloor*> floors;
  for (const roofline::LaunchFloor& f : chart.launch_floors)
    if (std::any_of(drawn.begin(), drawn.end(),
                    [&](std::size_t i) { return chart.points[i].launches == f.launches; }))
      floors.push_back(&f);
  for (const roofline::LaunchFloor* f : floors) {
    const double x = axes.px(f->vertical.x0), y = axes.py(f->horizontal.y0);
    svg.begin_group("launch floor: " + std::to_string(f->launches) + " launch" +
                        (f->launches == 1 ? "" : "es") + " x " +
                        format_si(chart.launch_cost_s, "s") + " = " + format_si(f->time_s, "s"),
                    "launch-floor");
    svg.polyline({{x, area.bottom()}, {x, y}, {area.x, y}},
                 Style{color(Bound::launch), "none", 1.4, "6 3", 0.85});
    svg.end_group();
  }
  svg.raw("</g>\n");

  // Points: segment, run-time point (open), complexity point (filled).
  svg.raw("<g class=\"points\" clip-path=\"url(#" + clip + ")\">\n");
  for (std::size_t i : drawn) {
    const roofline::ComplexityPoint& cp = chart.points[i];
    const ComplexityMark m = mark(i);
    const char* col = bound_color(m.bound.empty() ? "unknown" : m.bound);
    const double x0 = axes.px(cp.bytes), y0 = axes.py(cp.flops);
    const double x1 = axes.px(cp.runtime_bytes), y1 = axes.py(cp.runtime_flops);
    svg.begin_group(m.tooltip, "point");
    svg.line(x0, y0, x1, y1, Style{col, "none", 1.4, "", 0.6});
    if (cp.interval) {
      // T's 95% interval: a bar along the iso-AI line with caps across it, so
      // an interval narrower than the marker still shows as its caps.
      const double ix0 = axes.px(cp.interval->x0), iy0 = axes.py(cp.interval->y0);
      const double ix1 = axes.px(cp.interval->x1), iy1 = axes.py(cp.interval->y1);
      const double len = std::hypot(x1 - x0, y1 - y0);
      const double nx = len > 0 ? -(y1 - y0) / len : 0, ny = len > 0 ? (x1 - x0) / len : 1;
      svg.begin_group({}, "interval");
      svg.line(ix0, iy0, ix1, iy1, Style{col, "none", 3.5, "", 0.8});
      for (const auto& [ex, ey] : {std::pair{ix0, iy0}, std::pair{ix1, iy1}})
        svg.line(ex - 6 * nx, ey - 6 * ny, ex + 6 * nx, ey + 6 * ny,
                 Style{col, "none", 1.4, "", 0.9});
      svg.end_group();
    }
    svg.marker(Marker::circle, x1, y1, 7, Style{col, "#ffffff", 1.3, "", 0.9});
    svg.marker(Marker::circle, x0, y0, 7, Style{"#ffffff", col, 0.6, "", 0.9});
    svg.end_group();
  }
  svg.raw("</g>\n");

  // Labels last, with a halo. The balance line's: along it, at the place and on
  // the side (compute points sit above it) where it covers the fewest points.
  TextStyle lt = label_style();
  if (balance_shown) {
    std::vector<XY> markers;
    for (std::size_t i : drawn) {
      const roofline::ComplexityPoint& cp = chart.points[i];
      markers.push_back({axes.px(cp.bytes), axes.py(cp.flops)});
      markers.push_back({axes.px(cp.runtime_bytes), axes.py(cp.runtime_flops)});
      // and its segment: parallel to the balance line, it can lie under the label too
      sample_polyline({markers[markers.size() - 2], markers.back()}, markers, 5);
    }
    const std::string text = "balance " + format_si(chart.balance, "FLOP/B");
    const double length = 6.5 * static_cast<double>(text.size());
    const double x0 = axes.px(bx0), y0 = axes.py(bx0 * chart.balance);
    const double x1 = axes.px(bx1), y1 = axes.py(bx1 * chart.balance);
    const double span = std::hypot(x1 - x0, y1 - y0);
    const double dx = (x1 - x0) / span, dy = (y1 - y0) / span;  // along, up the line
    const double nx = dy, ny = -dx;                             // across, to its upper side
    double best_x = 0, best_y = 0;
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (int step = 0; 0.93 - 0.05 * step >= (length + 10) / span; ++step) {
      const double f = 0.93 - 0.05 * step;
      for (double side : {1.0, -1.0}) {
        // The label's end on the line, moved off it: its baseline 6 px above, or
        // its top 6 px below.
        const double off = side > 0 ? 6 : 16;
        const double ex = x0 + f * (x1 - x0) + side * off * nx;
        const double ey = y0 + f * (y1 - y0) + side * off * ny;
        std::size_t covered = 0;
        for (int k = 0; k <= 10; ++k) {  // the text's band, every tenth of its length
          // The glyphs rise from the baseline towards the line's upper side.
          const double cx = ex - 0.1 * k * length * dx + 5.5 * nx;
          const double cy = ey - 0.1 * k * length * dy + 5.5 * ny;
          for (const auto& [mx, my] : markers) covered += std::hypot(mx - cx, my - cy) < 10;
        }
        if (covered < fewest) fewest = covered, best_x = ex, best_y = ey;
      }
    }
    if (fewest == std::numeric_limits<std::size_t>::max())  // a short line: its upper end
      best_x = x0 + 0.93 * (x1 - x0) + 6 * nx, best_y = y0 + 0.93 * (y1 - y0) + 6 * ny;
    lt.fill = kBalance;
    lt.anchor = Anchor::end;
    lt.rotate = std::atan2(dy, dx) * 180 / 3.14159265358979;
    svg.text(best_x, best_y, text, lt);
  }
  // Launch floors: "N=33" up the vertical part, skipping floors too close to
  // the previous label to be told apart (their tooltips still say).
  lt.fill = color(Bound::launch);
  lt.anchor = Anchor::start;
  lt.rotate = -90;
  lt.bold = false;
  double last_x = -1e9;
  for (const roofline::LaunchFloor* f : floors) {
    const double x = axes.px(f->vertical.x0);
    if (x - last_x < 14 || x < area.x + 10 || x > area.right() - 2) continue;
    last_x = x;
    svg.text(x - 3, area.bottom() - 6,
             (f->launches == 1 ? std::string("floor, N=1") : "N=" + std::to_string(f->launches)),
             lt);
  }
}

// The legend of a complexity chart: the shapes, then one colour per class of
// `drawn`.
std::vector<LegendEntry> complexity_legend(const roofline::ComplexityChart& chart,
                                           const std::vector<std::size_t>& drawn,
                                           const std::vector<ComplexityMark>& marks) {
  std::vector<LegendEntry> legend = {
      {"complexity point (Q, W)", kNeutral, false, "", true, Marker::circle, true},
      {"run-time point (at the roof for T)", kNeutral, false, "", true, Marker::circle, false},
      {"segment: time lost to the roof", kNeutral, true, "", false},
      {"machine balance P / B", kBalance, true, "", false},
      {"iso-time (top, right axes)", kIsoTime, true, "", false},
  };
  if (std::any_of(drawn.begin(), drawn.end(),
                  [&](std::size_t i) { return chart.points[i].interval.has_value(); }))
    legend.insert(legend.begin() + 3,
                  {"bar with caps: T's 95% interval", kNeutral, true, "", false});
  if (!chart.launch_floors.empty())
    legend.insert(legend.end() - 1,
                  {"launch floor N x L", color(Bound::launch), true, "6 3", false});
  std::vector<std::string> classes;
  for (std::size_t i : drawn) {
    const std::string b =
        i < marks.size() && !marks[i].bound.empty() ? marks[i].bound : std::string("unknown");
    if (std::find(classes.begin(), classes.end(), b) == classes.end()) classes.push_back(b);
  }
  std::stable_sort(classes.begin(), classes.end(), [](const std::string& a, const std::string& b) {
    return class_rank(a) < class_rank(b);
  });
  for (const std::string& c : classes)
    legend.push_back({c, bound_color(c), false, "", true, Marker::square, true});
  return legend;
}

// The chart's subtitle: what the axes are, with the one P of the right axis.
std::string complexity_subtitle(const roofline::ComplexityChart& chart, bool usable) {
  if (!usable) return "x: HBM bytes Q, y: FLOPs W";
  return "x: HBM bytes Q, y: FLOPs W; top and right: the same in seconds at B = " +
         format_si(chart.bandwidth, "B/s") + " (HBM) and P = " + format_si(chart.peak, "FLOP/s") +
         " (" + chart.peak_name + ")";
}

// The footnotes under the plots: points not drawn, and points whose own peak
// P_eff (a mix of precision classes) is not the chart's P, for which the right
// axis reads W / P rather than their own compute time W / P_eff.
std::vector<std::string> complexity_footnotes(const roofline::ComplexityChart& chart,
                                              const std::vector<std::size_t>& drawn) {
  std::vector<std::string> out;
  std::size_t left_out = 0;
  for (const std::string& n : chart.notes)
    if (n.find("left out") != std::string::npos || n.find("not drawable") != std::string::npos)
      ++left_out;
  if (left_out > 0 && !drawn.empty())
    out.push_back(std::to_string(left_out) + " point" + (left_out == 1 ? "" : "s") +
                  " not drawn: no HBM bytes, no time or no work");
  std::size_t mixed = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (std::size_t i : drawn) {
    const double r = chart.points[i].peak / chart.peak;
    if (std::fabs(r - 1) <= 0.05) continue;
    ++mixed;
    lo = std::min(lo, r), hi = std::max(hi, r);
  }
  if (mixed > 0 && positive(chart.peak))
    out.push_back(std::to_string(mixed) + " of " + std::to_string(drawn.size()) +
                  " points mix in work of other classes: their own peak P_eff is " +
                  format_number(lo, hint::ratio) +
                  (hi > lo * 1.001 ? " to " + format_number(hi, hint::ratio) : std::string()) +
                  " P;");
  if (mixed > 0 && positive(chart.peak))
    out.push_back(
        "for them the right axis (W / P) reads that fraction of their compute time "
        "W / P_eff (in each tooltip)");
  return out;
}

void footnotes(Svg& svg, double x, double y, const std::vector<std::string>& lines) {
  TextStyle ft;
  ft.size = 11;
  ft.fill = "#555555";
  for (const std::string& line : lines) svg.text(x, y, line, ft), y += 15;
}

std::vector<std::size_t> drawn_points(const roofline::ComplexityChart& chart) {
  std::vector<std::size_t> drawn;  // indices into chart.points
  for (std::size_t i = 0; i < chart.points.size(); ++i) {
    const roofline::ComplexityPoint& cp = chart.points[i];
    if (cp.drawable && positive(cp.runtime_bytes) && positive(cp.runtime_flops)) drawn.push_back(i);
  }
  return drawn;
}

bool usable_chart(const roofline::ComplexityChart& chart) {
  return positive(chart.bandwidth) && positive(chart.peak) && positive(chart.x_min) &&
         chart.x_max > chart.x_min && positive(chart.y_min) && chart.y_max > chart.y_min;
}

}  // namespace

std::string time_complexity_chart(const roofline::ComplexityChart& chart,
                                  const std::vector<ComplexityMark>& marks,
                                  const std::string& title) {
  const std::vector<std::size_t> drawn = drawn_points(chart);
  const bool usable = usable_chart(chart);
  const std::vector<LegendEntry> legend = complexity_legend(chart, drawn, marks);
  const auto box = legend_size(legend, kLegendFont);
  const double plot_w = 580, plot_h = 470;
  const Area area{96, 112, plot_w, plot_h};
  const std::vector<std::string> notes = complexity_footnotes(chart, drawn);
  const double width = area.right() + 78 + box[0] + 16,
               height = area.bottom() + 64 +
                        15 * (notes.empty() ? 0.0 : static_cast<double>(notes.size()) - 1.0);
  Svg svg(width, height);
  chart_title(svg, title, complexity_subtitle(chart, usable));
  subtitle2(svg,
            "each point is joined along its arithmetic intensity to where it would sit if it ran "
            "at the roof for its measured time");
  const std::string clip = chart_id("complexity", title + std::to_string(chart.points.size()));
  complexity_panel(svg, area, chart, equal_decades(chart, usable, plot_w, plot_h), usable, drawn,
                   marks, clip);
  footnotes(svg, area.x, area.bottom() + 56, notes);
  svg.begin_group({}, "legend outside");
  draw_legend_at(svg, area.right() + 78, area.y, legend, kLegendFont);
  svg.end_group();
  return svg.str();
}

std::string time_complexity_panels(const roofline::ComplexityChart& chart,
                                   const std::vector<ComplexityMark>& marks,
                                   const std::vector<ComplexityPanel>& panels,
                                   const std::string& title) {
  if (panels.size() <= 1) return time_complexity_chart(chart, marks, title);
  const std::vector<std::size_t> all = drawn_points(chart);
  const bool usable = usable_chart(chart);
  const std::vector<LegendEntry> legend = complexity_legend(chart, all, marks);
  const auto box = legend_size(legend, kLegendFont);
  // Small multiples on shared axes, two a row: each panel has its own four
  // axes, so a panel reads alone, and the margins hold the tick labels of both
  // neighbours.
  const double plot_w = 330, plot_h = 280, left = 96, right = 86, above = 84, below = 62;
  const std::size_t columns = 2, rows = (panels.size() + columns - 1) / columns;
  const double cell_w = left + plot_w + right, cell_h = above + plot_h + below;
  const double top = 64;
  const std::vector<std::string> notes = complexity_footnotes(chart, all);
  const double width = std::max(static_cast<double>(columns) * cell_w, box[0] + 32);
  const double legend_y = top + static_cast<double>(rows) * cell_h + 8;
  const double height = legend_y + box[1] + 16 + 15 * static_cast<double>(notes.size());
  Svg svg(width, height);
  chart_title(svg, title, complexity_subtitle(chart, usable));
  subtitle2(svg,
            "one panel per operator, on shared axes: each point is joined along its arithmetic "
            "intensity to where it would sit if it ran at the roof for its measured time");
  const std::array<double, 4> range = equal_decades(chart, usable, plot_w, plot_h);
  TextStyle pt;
  pt.size = 13;
  pt.bold = true;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const double cx = static_cast<double>(k % columns) * cell_w;
    const double cy = top + static_cast<double>(k / columns) * cell_h;
    const Area area{cx + left, cy + above, plot_w, plot_h};
    svg.begin_group({}, "panel");
    svg.text(area.x, cy + 18, panels[k].title, pt);
    // Only this panel's points; the rest of the chart is the same in every panel.
    std::vector<std::size_t> drawn;
    for (std::size_t i : panels[k].points)
      if (std::find(all.begin(), all.end(), i) != all.end()) drawn.push_back(i);
    complexity_panel(svg, area, chart, range, usable, drawn, marks,
                     chart_id("complexity", title + panels[k].title + std::to_string(k)));
    svg.end_group();
  }
  svg.begin_group({}, "legend outside");
  draw_legend_at(svg, 16, legend_y, legend, kLegendFont);
  svg.end_group();
  footnotes(svg, 16, legend_y + box[1] + 18, notes);
  return svg.str();
}

namespace {

// What the chart shows of each of its points besides the geometry: the point's
// hover text (with its own peak and compute time) and its class.
std::vector<ComplexityMark> complexity_marks(const RunRecord& record,
                                             const roofline::RunAnalysis& analysis,
                                             const roofline::ComplexityChart& chart) {
  std::vector<ComplexityMark> marks;
  for (const roofline::ComplexityPoint& cp : chart.points) {
    const roofline::PointAnalysis& pa = analysis.points.at(cp.index);
    std::string tip = tooltip(point_sample(record.points.at(cp.index), pa));
    tip += "\nHBM bytes " + format_si(cp.bytes, "B") + ", FLOPs " + format_si(cp.flops, "FLOP");
    tip += "\nown peak P_eff " + format_si(cp.peak, "FLOP/s") +
           ": W / P_eff = " + format_si(cp.flops / cp.peak, "s") +
           ", Q / B = " + format_si(cp.bytes / chart.bandwidth, "s");
    tip += "\nat the roof for " + format_si(cp.time_s, "s") + ": " +
           format_si(cp.runtime_bytes, "B") + ", " + format_si(cp.runtime_flops, "FLOP") + " (" +
           (cp.compute_side ? "compute" : "memory") + " side)";
    tip += "\nlost to the roof " + format_si(cp.lost_s, "s");
    if (cp.time_low_s && cp.time_high_s)
      tip += "\nT's 95% interval " + format_si(*cp.time_low_s, "s") + " to " +
             format_si(*cp.time_high_s, "s");
    if (const auto& st = pa.bounds.time_stats())
      tip += "\nspread of T's samples " + format_number(st->spread, hint::percent_1) +
             " ((p90 - p10) / median)";
    marks.push_back({tip, pa.classification.label()});
  }
  return marks;
}

}  // namespace

std::string time_complexity_chart(const RunRecord& record, const roofline::RunAnalysis& analysis,
                                  const roofline::SweepAnalysis& sweep, const std::string& title) {
  return time_complexity_chart(sweep.complexity,
                               complexity_marks(record, analysis, sweep.complexity), title);
}

std::vector<std::string> time_complexity_charts(const RunRecord& record,
                                                const roofline::RunAnalysis& analysis,
                                                const roofline::RoofComplexity& roof,
                                                const std::string& title) {
  const roofline::ComplexityChart& chart = roof.chart;
  // A panel per operator and precision (a series group), in the order of their
  // first point.
  std::vector<ComplexityPanel> panels;
  for (std::size_t i = 0; i < chart.points.size(); ++i) {
    const Point& p = record.points.at(chart.points[i].index);
    const std::string name =
        p.op + " " + p.precision + (p.math_mode.empty() ? "" : "/" + p.math_mode);
    auto it = std::find_if(panels.begin(), panels.end(),
                           [&](const ComplexityPanel& g) { return g.title == name; });
    if (it == panels.end()) it = panels.insert(panels.end(), ComplexityPanel{name, {}});
    it->points.push_back(i);
  }
  for (ComplexityPanel& g : panels)
    g.title +=
        " (" + std::to_string(g.points.size()) + " point" + (g.points.size() == 1 ? "" : "s") + ")";
  const std::vector<ComplexityMark> marks = complexity_marks(record, analysis, chart);
  if (panels.size() <= kPanelsPerFigure)
    return {time_complexity_panels(chart, marks, panels, title)};
  // Two rows of two at most: three rows of 426 px and the legend, at the printed
  // width (186 mm, 0.69 of the chart's 1024 px), would overflow an A4 page.
  std::vector<std::string> out;
  for (std::size_t first = 0; first < panels.size(); first += kPanelsPerFigure) {
    const std::size_t last = std::min(first + kPanelsPerFigure, panels.size());
    const std::vector<ComplexityPanel> part(panels.begin() + static_cast<std::ptrdiff_t>(first),
                                            panels.begin() + static_cast<std::ptrdiff_t>(last));
    out.push_back(time_complexity_panels(chart, marks, part,
                                         title + ", operators " + std::to_string(first + 1) +
                                             (last == first + 1 ? "" : "-" + std::to_string(last)) +
                                             " of " + std::to_string(panels.size())));
  }
  return out;
}

// ---- Decomposition of the time per call -------------------------------------------

namespace {

// A bar of the decomposition chart: one point's parts of T.
struct DecompositionBar {
  const roofline::SeriesPoint* point;
  roofline::Decomposition parts;
  Bound roof;
  std::string roof_name;
  double total;  // the stacked parts: T, plus what measured parts exceed it by
};

// Legend, top to bottom as the stack reads: host overhead on top, kernels at the
// bottom. `lost_fill`: the hatched fill of the time lost to a roof.
std::vector<LegendEntry> decomposition_legend(const std::vector<DecompositionBar>& bars,
                                              const std::vector<Bound>& roofs_used,
                                              const std::function<std::string(Bound)>& lost_fill) {
  using Bar = DecompositionBar;
  // Only the parts some bar has: a legend entry for nothing reads as data.
  auto any_bar = [&](auto holds) { return std::any_of(bars.begin(), bars.end(), holds); };
  const bool separated_host =
      any_bar([](const Bar& b) { return b.parts.separated && b.parts.host_overhead_s > 0; });
  const bool joint_host =
      any_bar([](const Bar& b) { return !b.parts.separated && b.parts.host_overhead_s > 0; });
  std::vector<LegendEntry> legend;
  auto square = [&](const std::string& name, const std::string& fill) {
    legend.push_back({name, fill, false, "", true, Marker::square, true});
  };
  if (any_bar([](const Bar& b) { return b.parts.not_explained_s > 0; }))
    square("not explained", kUnexplained);
  if (separated_host) square("host overhead (T_stream - T_graph)", color(Bound::launch));
  if (joint_host)
    square("host overhead + device gaps (not measured separately)", color(Bound::launch));
  if (any_bar([](const Bar& b) { return b.parts.device_gaps_s > 0; }))
    square("device gaps (T_graph - T_k - transfer)", kDeviceGaps);
  if (any_bar([](const Bar& b) { return b.parts.transfer_s > 0; }))
    square("transfer", color(Bound::transfer));
  for (Bound r : roofs_used) {
    std::string name;
    bool lost = false;
    for (const Bar& b : bars)
      if (b.roof == r) name = b.roof_name, lost = lost || b.parts.lost_to_roof_s > 0;
    if (lost) square("kernel time lost to the " + name, lost_fill(r));
    square("kernel time within the " + name, color(r));
  }
  std::vector<std::string> sources;
  for (const Bar& b : bars) {
    const std::string name = b.parts.time_source == roofline::TimeSource::none
                                 ? "T_k + transfer"
                                 : roofline::to_string(b.parts.time_source);
    if (std::find(sources.begin(), sources.end(), name) == sources.end()) sources.push_back(name);
  }
  std::string t_name;
  for (const std::string& name : sources) t_name += (t_name.empty() ? "" : " or ") + name;
  legend.push_back({"T, the time explained" + (t_name.empty() ? "" : " (" + t_name + ")"),
                    color(Bound::measured), true, "", false});
  if (any_bar([](const Bar& b) { return b.total > b.parts.time_s * (1 + 1e-9); }))
    legend.push_back({"bar above T: measured parts exceed it (see its tooltip)",
                      color(Bound::measured), true, "2 2", false});
  return legend;
}

}  // namespace

std::string time_decomposition_chart(const roofline::Series& series, const std::string& title) {
  const std::vector<roofline::SeriesPoint> points = drawable_points(series);
  const std::string& parameter = series.parameter;
  using Bar = DecompositionBar;
  std::vector<Bar> bars;
  for (const roofline::SeriesPoint& p : points) {
    Bar b{&p, p.classification.parts, Bound::hbm, {}, 0};
    std::tie(b.roof, b.roof_name) = kernel_roof(p.bounds);
    const roofline::Decomposition& d = b.parts;
    b.total = d.host_overhead_s + d.device_gaps_s + d.transfer_s + d.kernel_s +
              std::max(0.0, d.not_explained_s);
    if (positive(b.total)) bars.push_back(b);
  }

  // The roofs of the bars' kernels, each with its hatched fill for the time lost to it.
  const std::string seed = title + parameter + std::to_string(bars.size());
  std::vector<Bound> roofs_used;
  for (const Bar& b : bars)
    if (std::find(roofs_used.begin(), roofs_used.end(), b.roof) == roofs_used.end())
      roofs_used.push_back(b.roof);
  std::sort(roofs_used.begin(), roofs_used.end());
  auto pattern_id = [&](Bound r) {
    return chart_id(std::string("lost-") + std::to_string(static_cast<int>(r)), seed);
  };
  auto lost_fill = [&](Bound r) { return "url(#" + pattern_id(r) + ")"; };  // hatched
  const std::vector<LegendEntry> legend = decomposition_legend(bars, roofs_used, lost_fill);
  const auto box = legend_size(legend, kLegendFont);

  const double plot_w = 600;
  const Area top{84, 72, plot_w, 290};
  const Area bottom{84, top.bottom() + 26, plot_w, 160};
  const double width = top.right() + 16 + box[0] + 16, height = bottom.bottom() + 64;
  Svg svg(width, height);
  chart_title(svg, title,
              "per call, measured: host overhead, device gaps, transfers, and kernel time within "
              "the kernels' roof and lost to it");
  svg.raw("<defs>");
  for (Bound r : roofs_used) svg.raw(hatch_pattern(pattern_id(r), color(r)));
  svg.raw("</defs>\n");

  const std::size_t n = bars.size();
  const double slot = plot_w / static_cast<double>(std::max<std::size_t>(n, 1));
  const double bar_w = std::min(slot * 0.64, 48.0);
  // Categories: one slot per point, labelled with its parameter value.
  std::vector<Tick> categories, unlabelled;
  for (std::size_t i = 0; i < n; ++i) {
    categories.push_back({static_cast<double>(i) + 0.5, roofline::format_value(bars[i].point->x)});
    unlabelled.push_back({static_cast<double>(i) + 0.5, ""});
  }
  double t_max = 0;
  for (const Bar& b : bars) t_max = std::max({t_max, b.total, b.parts.time_s});
  if (!positive(t_max)) t_max = 1e-3;
  std::vector<Tick> yt = linear_ticks(0, t_max, "s", 5);
  double y_hi = t_max * 1.04;
  if (yt.size() >= 2 && yt.back().value < y_hi)
    y_hi = yt.back().value + (yt[1].value - yt[0].value);

  AxisSpec xa{Scale::linear, 0, static_cast<double>(std::max<std::size_t>(n, 1)), "", ""};
  xa.grid = false;
  xa.ticks = n > 0 ? unlabelled : std::vector<Tick>{{0.5, ""}};
  const Axes abs_axes(top, xa, AxisSpec{Scale::linear, 0, y_hi, "Time per call (s)", "s"});
  xa.ticks = n > 0 ? categories : xa.ticks;
  xa.title = parameter;
  AxisSpec pa{Scale::linear, 0, 1, "Share of the call", ""};
  pa.percent = true;
  const Axes share_axes(bottom, xa, pa);
  abs_axes.draw(svg);
  share_axes.draw(svg);
  if (n == 0) centred_message(svg, top, "no point with a time or kernel time");

  // Each bar: one group with the point's tooltip; segments bottom-up.
  for (std::size_t i = 0; i < n; ++i) {
    const Bar& b = bars[i];
    const roofline::Decomposition& d = b.parts;
    const double cx = abs_axes.px(static_cast<double>(i) + 0.5);
    auto part = [&](const std::string& name, double v) {
      return "\n" + name + " " + format_si(v, "s") + " (" +
             format_number(v / b.total, hint::share) + ")";
    };
    std::string tip = series_tooltip(series, *b.point);
    tip += d.separated
               ? part("host overhead (T_stream - T_graph)", d.host_overhead_s) +
                     part("device gaps", d.device_gaps_s)
               : part("host overhead + device gaps (not measured separately)", d.host_overhead_s);
    tip += part("transfer", d.transfer_s);
    tip += part("kernels within the " + b.roof_name, d.within_roof_s);
    tip += part("kernels lost to the roof", d.lost_to_roof_s);
    if (d.kernel_overlap_s > 0) tip += "\nkernel overlap -" + format_si(d.kernel_overlap_s, "s");
    if (d.not_explained_s != 0) tip += "\nnot explained " + format_si(d.not_explained_s, "s");
    for (const std::string& note : d.notes) tip += "\n" + note;
    if (d.call_premium_s)
      tip += "\none-call premium T_call - T_stream " + format_si(*d.call_premium_s, "s");
    svg.begin_group(tip, "bar");
    const std::vector<std::pair<double, std::string>> stack = {
        {d.within_roof_s, color(b.roof)},          {d.lost_to_roof_s, lost_fill(b.roof)},
        {d.transfer_s, color(Bound::transfer)},    {d.device_gaps_s, kDeviceGaps},
        {d.host_overhead_s, color(Bound::launch)}, {std::max(0.0, d.not_explained_s), kUnexplained},
    };
    double base = 0;
    for (const auto& [v, fill] : stack) {
      if (!(v > 0)) continue;
      // Absolute, then share.
      const double y0 = abs_axes.py(base), y1 = abs_axes.py(base + v);
      svg.rect(cx - bar_w / 2, y1, bar_w, y0 - y1, Style{"#ffffff", fill, 0.5, "", 1});
      const double s0 = share_axes.py(base / b.total), s1 = share_axes.py((base + v) / b.total);
      svg.rect(cx - bar_w / 2, s1, bar_w, s0 - s1, Style{"#ffffff", fill, 0.5, "", 1});
      base += v;
    }
    if (positive(d.time_s)) {
      const double y = abs_axes.py(d.time_s);
      svg.line(cx - bar_w / 2 - 4, y, cx + bar_w / 2 + 4, y,
               Style{color(Bound::measured), "none", 2, "", 1});
    }
    svg.end_group();
  }
  // Each bar's T above it, where the slots leave room for the text.
  if (slot >= 46) {
    TextStyle vt;
    vt.size = 10;
    vt.anchor = Anchor::middle;
    vt.fill = "#333333";
    for (std::size_t i = 0; i < n; ++i) {
      const double t = bars[i].parts.time_s;
      svg.text(abs_axes.px(static_cast<double>(i) + 0.5),
               abs_axes.py(std::max(t, bars[i].total)) - 6, format_si(t, "s"), vt);
    }
  }
  svg.begin_group({}, "legend outside");
  draw_legend_at(svg, top.right() + 16, top.y, legend, kLegendFont);
  svg.end_group();
  return svg.str();
}

// ---- Tensor Cores -------------------------------------------------------------------

std::string tensor_core_chart(const roofline::Series& series, const std::string& title) {
  const std::vector<roofline::SeriesPoint> points = drawable_points(series);
  struct Line {
    std::string name;
    std::string dash;
    bool filled;
    std::vector<std::pair<const roofline::SeriesPoint*, double>> values;
  };
  std::vector<Line> lines = {
      {"share of the FLOPs", "", true, {}},
      {"utilisation (T_tensor / T_k)", "5 3", false, {}},
  };
  for (const roofline::SeriesPoint& p : points) {
    if (p.bounds.tensor_share) lines[0].values.push_back({&p, *p.bounds.tensor_share});
    if (p.bounds.tensor_utilisation) lines[1].values.push_back({&p, *p.bounds.tensor_utilisation});
  }
  const char* red = color(Bound::compute_tensor);
  std::vector<LegendEntry> legend;
  for (const Line& l : lines)
    legend.push_back({l.name, red, true, l.dash, true, Marker::circle, l.filled});
  const bool above = std::any_of(lines.begin(), lines.end(), [](const Line& l) {
    return std::any_of(l.values.begin(), l.values.end(),
                       [](const auto& pv) { return pv.second > 1.0005; });
  });
  if (above)
    legend.push_back(
        {"above 100% (counters or roof off)", red, false, "", true, Marker::triangle_up, true});
  const auto box = legend_size(legend, kLegendFont);

  double xlo = std::numeric_limits<double>::max(), xhi = 0;
  for (const roofline::SeriesPoint& p : points) xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x);
  if (!(xhi > 0)) xlo = 1, xhi = 1024;
  const Area area{84, 64, 600, 330};
  const double width = area.right() + 16 + box[0] + 16, height = area.bottom() + 64;
  Svg svg(width, height);
  chart_title(svg, title,
              "share = Tensor-Core FLOPs / all FLOPs; utilisation = the fraction of kernel time "
              "the Tensor Cores would be busy at their peak");
  // A little room above 100%, so markers at 100% are not cut by the frame.
  AxisSpec ya{Scale::linear, 0, 1.04, "Tensor Cores (%)", ""};
  ya.percent = true;
  const Axes axes(area, parameter_axis(xlo, xhi, series.parameter), ya);
  axes.draw(svg);
  if (lines[0].values.empty() && lines[1].values.empty())
    centred_message(svg, area, "no point with FLOPs and kernel time");

  for (const Line& l : lines) {
    std::vector<XY> pts;
    for (const auto& [p, v] : l.values) pts.push_back({axes.px(p->x), axes.py(std::min(v, 1.0))});
    svg.begin_group(l.name, "series");
    svg.polyline(pts, Style{red, "none", 2, l.dash, 1});
    svg.end_group();
  }
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const Line& l = lines[li];
    for (const auto& [p, v] : l.values) {
      std::string tip = series_tooltip(series, *p);
      tip += "\nTensor-Core share " + format_number(p->bounds.tensor_share, hint::share);
      tip +=
          "\nTensor-Core utilisation " + format_number(p->bounds.tensor_utilisation, hint::share);
      svg.begin_group(l.name + ": " + format_number(v, hint::share) + "\n" + tip, "point");
      const double x = axes.px(p->x), y = axes.py(std::min(v, 1.0));
      // Above 100% the counters or the roof are off: clamped to the top, marked.
      const Marker shape = v > 1.0005 ? Marker::triangle_up : Marker::circle;
      svg.marker(shape, x, y, 8, Style{red, l.filled ? red : "#ffffff", 1.4, "", 1});
      svg.end_group();
    }
  }
  // Each line's last value at its end: values near 0% cannot be read off the axis.
  {
    TextStyle vt;
    vt.size = 11;
    vt.halo = true;
    vt.bold = true;
    vt.fill = red;
    vt.baseline = "middle";
    vt.anchor = Anchor::end;
    std::vector<double> ys;
    std::vector<std::pair<double, std::string>> labels;
    for (const Line& l : lines) {
      if (l.values.empty()) continue;
      const auto& [p, v] = l.values.back();
      const double y = axes.py(std::min(v, 1.0));
      ys.push_back(y - 12 < area.y + 10 ? y + 14 : y - 12);  // under the line at the top
      labels.push_back({axes.px(p->x) - 2, format_number(v, hint::share)});
    }
    ys = spread_labels(ys, 14, area.y + 8, area.bottom() - 8);
    for (std::size_t i = 0; i < labels.size(); ++i)
      svg.text(labels[i].first, ys[i], labels[i].second, vt);
  }
  svg.begin_group({}, "legend outside");
  draw_legend_at(svg, area.right() + 16, area.y, legend, kLegendFont);
  svg.end_group();
  return svg.str();
}

}  // namespace timeroof::plots
