// Pieces the chart files of plots/ share (charts.cpp, time_charts.cpp,
// compare_charts.cpp; defined in chart_parts.cpp); not a public interface.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "plots/axes.hpp"
#include "plots/charts.hpp"
#include "plots/svg.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/sweep_fit.hpp"

namespace timeroof::plots::detail {

bool positive(double v);  // finite and > 0
// The title at the top left, and a grey subtitle line under it.
void chart_title(Svg& svg, const std::string& title, const std::string& subtitle = {});
// "prefix-1a2b3c4d": an id for <defs> unique per `seed`: several charts are
// inlined into one HTML page, where url(#id) resolves to the first element with that id.
std::string chart_id(const std::string& prefix, const std::string& seed);
Bound level_bound(Level level);
// A memory level's marker in the roofline charts: L1 triangle, L2 square, HBM circle.
Marker level_marker(Level level);
// Bold 11 px with a white halo: the labels drawn last, on top of the data.
TextStyle label_style();
// A sample's markers, one per memory level with an intensity, at its achieved
// FLOP/s, inside the caller's group; their pixels go to `occupied` (for the
// legend's corner).
void sample_markers(Svg& svg, const Axes& axes, const PointSample& sample, const std::string& color,
                    double opacity, std::vector<XY>& occupied);
// The points of a series a log axis can show (x > 0), sorted by x.
std::vector<roofline::SeriesPoint> drawable_points(const roofline::Series& series);
// "conv2d fwd fp16 batch=16": the first line of a series point's tooltip.
std::string point_label(const roofline::Series& series, const roofline::SeriesPoint& point);
// Moves labels (pixel y positions, in order of importance) apart so that no two
// are closer than `gap`; returns the adjusted positions in the input order.
std::vector<double> spread_labels(std::vector<double> ys, double gap, double top, double bottom);

// The axes of a roofline chart over the whole of `svg` below its title:
// arithmetic intensity (x) against FLOP/s (y), both log, drawn, with the clip
// path `clip` of the plot area.
Axes roofline_axes(Svg& svg, const std::array<double, 2>& x, const std::array<double, 2>& y,
                   const std::string& clip);

// A chart over the swept parameter whose legend sits outside, right of the plot
// (many lines cross every corner): 760 px of plot and margins, then the legend.
struct LegendOutsideChart {
  Svg svg;
  Area area;
  Axes axes;
};
// Its frame drawn: the title and subtitle, both axes, and the clip path `clip`
// of the plot area.
LegendOutsideChart legend_outside_chart(double height, const std::vector<LegendEntry>& legend,
                                        const std::string& title, const std::string& subtitle,
                                        const AxisSpec& x, const AxisSpec& y,
                                        const std::string& clip);
// The legend of such a chart, right of its plot area.
void draw_legend_outside(Svg& svg, const Area& area, const std::vector<LegendEntry>& legend);
// "shaded: 95% interval of the median": the legend entry of a time's band.
LegendEntry median_band_entry();

// The swept parameter's axis (batch, ...): log over the powers of two around
// [lo, hi], at least one octave wide, with a little room at the ends for markers.
// Every chart over the parameter uses it, so a series' charts line up.
AxisSpec parameter_axis(double lo, double hi, const std::string& parameter);

// A measured time's 95% interval at one x, for the shaded bands.
struct Interval {
  double x, low, high;
};
// The polygon of band[first, last): the low edge left to right, the high edge back.
std::vector<XY> band_outline(const Axes& axes, const std::vector<Interval>& band, std::size_t first,
                             std::size_t last);

// Roofline charts (classic and the comparison overlay) draw their roofs alike:
// where a compute roof at `peak` starts, at its ridge with the steepest
// bandwidth roof drawn (the left edge where there is none);
double compute_roof_start(const std::array<double, 2>& x, double peak, double bandwidth_max);
// a bandwidth roof's ends in pixels, from the left edge (or where it enters
// through the bottom edge) up to its ridge with the compute roof `top` (to the
// right edge where `top` is 0);
std::pair<XY, XY> bandwidth_roof_ends(const Axes& axes, const std::array<double, 2>& x,
                                      const std::array<double, 2>& y, double bandwidth, double top);
// and their labels, drawn last over the data.
struct RoofLabel {
  double x, y;
  std::string text;
  std::string color;
  double angle = 0;  // degrees
};
// Along a diagonal roof, near its lower-left end, parallel to it.
RoofLabel diagonal_roof_label(const XY& from, const XY& to, std::string text, std::string color);
// The labels with a halo, spread at least `gap` px apart vertically.
void draw_roof_labels(Svg& svg, const Area& area, const std::vector<RoofLabel>& labels, double gap,
                      Anchor anchor);

}  // namespace timeroof::plots::detail
