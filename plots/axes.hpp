// Axes for the charts: log and linear scales, nice ticks with SI labels, a plot
// area with margins, grid lines and titles; the palette shared by every chart;
// a legend placed in the corner of the plot area that covers the fewest data.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "plots/svg.hpp"

namespace timeroof::plots {

// ---- Palette: one colour per bound, the same in every chart --------------------
enum class Bound {
  compute_cuda,
  compute_tensor,
  hbm,
  l2,
  l1,
  launch,
  transfer,
  interconnect,
  measured
};
inline constexpr std::size_t kBoundCount = 9;
const char* color(Bound bound);
const char* label(Bound bound);  // "CUDA-core compute", "HBM", ...
// Colours for data series that are not bounds (precision classes, operators).
const char* series_color(std::size_t index);

// ---- Ticks -------------------------------------------------------------------
// value with an SI prefix and up to three significant digits: 1e12 -> "1 T",
// 2.5e-6 with unit "s" -> "2.5 us", 100e9 -> "100 G". Prefixes p..E.
std::string si_label(double value, const std::string& unit = "");

struct Tick {
  double value = 0;
  std::string label;  // empty: a minor tick (grid line only)
};
// Ticks of a log axis over [lo, hi] (lo, hi > 0): labelled decades (every k-th
// decade when there are many), 1-2-5 labels when the range spans at most two
// decades, unlabelled 2..9 minor ticks when it spans at most six.
std::vector<Tick> log_ticks(double lo, double hi, const std::string& unit = "");
// Ticks of a linear axis: about `target` labelled 1-2-5 steps.
std::vector<Tick> linear_ticks(double lo, double hi, const std::string& unit = "", int target = 6);
// Ticks at the powers of two in [lo, hi], all labelled (every other one past 12).
std::vector<Tick> pow2_ticks(double lo, double hi, const std::string& unit = "");
// [lo, hi] widened to whole decades (log axes).
std::array<double, 2> decade_range(double lo, double hi);

// ---- Axes --------------------------------------------------------------------
enum class Scale { linear, log };

struct Margins {
  double left = 84, right = 24, top = 48, bottom = 62;
};

struct Area {
  double x = 0, y = 0, w = 0, h = 0;
  double right() const { return x + w; }
  double bottom() const { return y + h; }
  bool contains(double px, double py) const {
    return px >= x && px <= right() && py >= y && py <= bottom();
  }
};

struct AxisSpec {
  Scale scale = Scale::log;
  double lo = 1, hi = 10;
  std::string title;           // "Arithmetic intensity (FLOP/B)"
  std::string unit;            // appended to tick labels: "FLOP/s" -> "1 TFLOP/s"; often empty
  bool powers_of_two = false;  // log axis labelled 1, 2, 4, 8, ... (batch sizes)
  bool percent = false;        // linear axis of fractions labelled 0%, 20%, ... 100%
  bool grid = true;            // grid lines across the plot (off where a chart draws its own)
  std::vector<Tick> ticks;     // not empty: drawn instead of the computed ticks (categories)
};

class Axes {
 public:
  Axes(const Area& area, AxisSpec x, AxisSpec y);
  const Area& area() const { return area_; }
  const AxisSpec& xspec() const { return x_; }
  const AxisSpec& yspec() const { return y_; }
  // Data -> pixels.
  double px(double x) const;
  double py(double y) const;
  // Pixels -> data.
  double data_x(double px) const;
  double data_y(double py) const;
  bool inside(double x, double y) const;
  // Frame, grid, ticks and tick labels, axis titles.
  void draw(Svg& svg) const;
  // A clip path id for the plot area (write it once with define_clip()).
  void define_clip(Svg& svg, const std::string& id) const;

 private:
  Area area_;
  AxisSpec x_, y_;
};

// ---- Legend ------------------------------------------------------------------
struct LegendEntry {
  std::string label;
  std::string color;
  bool line = false;  // a line sample
  std::string dash;   // its dash pattern
  bool has_marker = true;
  Marker marker = Marker::circle;
  bool filled = true;
};

enum class Corner { top_left, top_right, bottom_left, bottom_right };
const char* to_string(Corner corner);

// Size of a legend box in pixels.
std::array<double, 2> legend_size(const std::vector<LegendEntry>& entries, double font = 11);
// The corner of `area` whose legend-sized box holds the fewest of `occupied`
// (pixel positions of the data: markers and points along drawn lines); ties go
// to the quadrant with the fewest points, then top_left, top_right,
// bottom_left, bottom_right.
Corner emptiest_corner(const Area& area, const std::vector<XY>& occupied,
                       const std::array<double, 2>& box);
// Draws the legend in `corner` of `area` (inset 8 px) on a white, framed box.
void draw_legend(Svg& svg, const Area& area, Corner corner, const std::vector<LegendEntry>& entries,
                 double font = 11);

// Draws the legend box with its top-left corner at (x, y).
void draw_legend_at(Svg& svg, double x, double y, const std::vector<LegendEntry>& entries,
                    double font = 11);

// Points every `step` pixels along a polyline, for emptiest_corner().
void sample_polyline(const std::vector<XY>& pixels, std::vector<XY>& out, double step = 6);

}  // namespace timeroof::plots
