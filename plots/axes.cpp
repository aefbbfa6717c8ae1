#include "plots/axes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace timeroof::plots {

const char* color(Bound bound) {
  switch (bound) {
    case Bound::compute_cuda:
      return "#1f77b4";  // blue
    case Bound::compute_tensor:
      return "#d62728";  // red
    case Bound::hbm:
      return "#2ca02c";  // green
    case Bound::l2:
      return "#ff7f0e";  // orange
    case Bound::l1:
      return "#9467bd";  // purple
    case Bound::launch:
      return "#8c564b";  // brown
    case Bound::transfer:
      return "#e377c2";  // pink
    case Bound::interconnect:
      return "#17becf";  // teal
    case Bound::measured:
      return "#111111";  // black
  }
  return "#777777";
}

const char* label(Bound bound) {
  switch (bound) {
    case Bound::compute_cuda:
      return "CUDA-core compute";
    case Bound::compute_tensor:
      return "Tensor-Core compute";
    case Bound::hbm:
      return "HBM";
    case Bound::l2:
      return "L2";
    case Bound::l1:
      return "L1";
    case Bound::launch:
      return "launch";
    case Bound::transfer:
      return "transfer";
    case Bound::interconnect:
      return "interconnect";
    case Bound::measured:
      return "measured";
  }
  return "?";
}

const char* series_color(std::size_t index) {
  // Distinct from the bound palette's hues where possible (Tableau-like, darker).
  static const char* const kColors[] = {"#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#637939",
                                        "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d"};
  return kColors[index % (sizeof kColors / sizeof kColors[0])];
}

// ---- Ticks -------------------------------------------------------------------

std::string si_label(double value, const std::string& unit) {
  if (!std::isfinite(value)) return "-";
  if (value == 0) return unit.empty() ? "0" : "0 " + unit;
  static const char* const kPrefixes[] = {"p", "n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  const double mag = std::fabs(value);
  int exp3 = static_cast<int>(std::floor(std::log10(mag) / 3 + 1e-9));
  exp3 = std::clamp(exp3, -4, 6);
  double mant = value / std::pow(10.0, 3 * exp3);
  // Three significant digits, trailing zeros dropped.
  char buf[32];
  const double am = std::fabs(mant);
  const int decimals = am >= 100 ? 0 : am >= 10 ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%.*f", decimals, mant);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "1000" && exp3 < 6) {  // 999.7 rounds up into the next prefix
    s = "1";
    ++exp3;
  }
  const std::string prefix = kPrefixes[exp3 + 4];
  if (prefix.empty() && unit.empty()) return s;
  return s + " " + prefix + unit;
}

std::array<double, 2> decade_range(double lo, double hi) {
  lo = std::max(lo, std::numeric_limits<double>::min());
  hi = std::max(hi, lo);
  double a = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
  double b = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
  if (b <= a) b = a * 10;
  return {a, b};
}

std::vector<Tick> log_ticks(double lo, double hi, const std::string& unit) {
  std::vector<Tick> ticks;
  if (!(lo > 0) || !(hi > lo)) return ticks;
  const int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  const int decades = d1 - d0;
  const int every = decades <= 8 ? 1 : (decades + 7) / 8;
  const bool one_two_five = decades <= 2;
  const bool minor = decades <= 6;
  const double eps = 1e-9;
  for (int d = d0; d <= d1; ++d) {
    const double base = std::pow(10.0, d);
    for (int m = 1; m <= 9; ++m) {
      const double v = base * m;
      if (v < lo * (1 - eps) || v > hi * (1 + eps)) continue;
      Tick t{v, ""};
      if (m == 1 && (d - d0) % every == 0)
        t.label = si_label(v, unit);
      else if (one_two_five && (m == 2 || m == 5))
        t.label = si_label(v, unit);
      else if (m != 1 && !minor)
        continue;
      ticks.push_back(t);
    }
  }
  return ticks;
}

std::vector<Tick> pow2_ticks(double lo, double hi, const std::string& unit) {
  std::vector<Tick> ticks;
  if (!(lo > 0) || !(hi > lo)) return ticks;
  const int e0 = static_cast<int>(std::ceil(std::log2(lo) - 1e-9));
  const int e1 = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
  const int every = e1 - e0 + 1 > 12 ? 2 : 1;
  for (int e = e0; e <= e1; ++e) {
    const double v = std::ldexp(1.0, e);
    // Batch sizes read best as integers: 1024, not 1.02 k.
    const std::string text =
        v < 1e5 ? std::to_string(static_cast<long long>(v)) + (unit.empty() ? "" : " " + unit)
                : si_label(v, unit);
    ticks.push_back({v, (e - e0) % every == 0 ? text : std::string()});
  }
  return ticks;
}

std::vector<Tick> linear_ticks(double lo, double hi, const std::string& unit, int target) {
  std::vector<Tick> ticks;
  if (!(hi > lo) || target < 1) return ticks;
  const double raw = (hi - lo) / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * p;
    if (step >= raw) break;
  }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
    const double clean = std::fabs(v) < step * 1e-9 ? 0 : v;
    ticks.push_back({clean, si_label(clean, unit)});
  }
  return ticks;
}

// ---- Axes --------------------------------------------------------------------

namespace {

double to_frac(const AxisSpec& s, double v) {
  if (s.scale == Scale::log) {
    if (!(v > 0)) return -1e6;
    return (std::log10(v) - std::log10(s.lo)) / (std::log10(s.hi) - std::log10(s.lo));
  }
  return (v - s.lo) / (s.hi - s.lo);
}

double from_frac(const AxisSpec& s, double f) {
  if (s.scale == Scale::log)
    return std::pow(10.0, std::log10(s.lo) + f * (std::log10(s.hi) - std::log10(s.lo)));
  return s.lo + f * (s.hi - s.lo);
}

std::vector<Tick> ticks_for(const AxisSpec& s) {
  if (!s.ticks.empty()) return s.ticks;
  if (s.scale == Scale::linear && s.percent) {
    std::vector<Tick> ticks = linear_ticks(s.lo * 100, s.hi * 100);
    for (Tick& t : ticks) {
      t.label += "%";
      t.value /= 100;
    }
    return ticks;
  }
  if (s.scale == Scale::linear) return linear_ticks(s.lo, s.hi, s.unit);
  return s.powers_of_two ? pow2_ticks(s.lo, s.hi, s.unit) : log_ticks(s.lo, s.hi, s.unit);
}

}  // namespace

Axes::Axes(const Area& area, AxisSpec x, AxisSpec y)
    : area_(area), x_(std::move(x)), y_(std::move(y)) {}

double Axes::px(double x) const {
  return area_.x + to_frac(x_, x) * area_.w;
}
double Axes::py(double y) const {
  return area_.bottom() - to_frac(y_, y) * area_.h;
}
double Axes::data_x(double p) const {
  return from_frac(x_, (p - area_.x) / area_.w);
}
double Axes::data_y(double p) const {
  return from_frac(y_, (area_.bottom() - p) / area_.h);
}

bool Axes::inside(double x, double y) const {
  const double fx = to_frac(x_, x), fy = to_frac(y_, y);
  return fx >= -1e-9 && fx <= 1 + 1e-9 && fy >= -1e-9 && fy <= 1 + 1e-9;
}

void Axes::define_clip(Svg& svg, const std::string& id) const {
  svg.raw("<defs><clipPath id=\"" + escape(id) + "\"><rect x=\"" + num(area_.x) + "\" y=\"" +
          num(area_.y) + "\" width=\"" + num(area_.w) + "\" height=\"" + num(area_.h) +
          "\"/></clipPath></defs>\n");
}

void Axes::draw(Svg& svg) const {
  const Style minor{"#eeeeee", "none", 1, "", 1};
  const Style major{"#d0d0d0", "none", 1, "", 1};
  const Style tick{"#444444", "none", 1, "", 1};
  TextStyle xl;
  xl.size = 11;
  xl.anchor = Anchor::middle;
  xl.fill = "#333333";
  TextStyle yl = xl;
  yl.anchor = Anchor::end;
  yl.baseline = "middle";
  svg.begin_group({}, "axes");
  for (const Tick& t : ticks_for(x_)) {
    const double x = px(t.value);
    if (x_.grid) svg.line(x, area_.y, x, area_.bottom(), t.label.empty() ? minor : major);
    if (!t.label.empty()) {
      svg.line(x, area_.bottom(), x, area_.bottom() + 5, tick);
      svg.text(x, area_.bottom() + 18, t.label, xl);
    }
  }
  for (const Tick& t : ticks_for(y_)) {
    const double y = py(t.value);
    if (y_.grid) svg.line(area_.x, y, area_.right(), y, t.label.empty() ? minor : major);
    if (!t.label.empty()) {
      svg.line(area_.x - 5, y, area_.x, y, tick);
      svg.text(area_.x - 8, y, t.label, yl);
    }
  }
  svg.rect(area_.x, area_.y, area_.w, area_.h, Style{"#444444", "none", 1, "", 1});
  TextStyle title;
  title.size = 13;
  title.anchor = Anchor::middle;
  if (!x_.title.empty()) svg.text(area_.x + area_.w / 2, area_.bottom() + 42, x_.title, title);
  if (!y_.title.empty()) {
    title.rotate = -90;
    const double tx = std::max(14.0, area_.x - 64);
    svg.text(tx, area_.y + area_.h / 2, y_.title, title);
  }
  svg.end_group();
}

// ---- Legend ------------------------------------------------------------------

const char* to_string(Corner corner) {
  switch (corner) {
    case Corner::top_left:
      return "top_left";
    case Corner::top_right:
      return "top_right";
    case Corner::bottom_left:
      return "bottom_left";
    case Corner::bottom_right:
      return "bottom_right";
  }
  return "?";
}

std::array<double, 2> legend_size(const std::vector<LegendEntry>& entries, double font) {
  std::size_t longest = 0;
  for (const LegendEntry& e : entries) longest = std::max(longest, e.label.size());
  const double w = 12 + 26 + static_cast<double>(longest) * font * 0.6 + 10;
  const double h = 8 + static_cast<double>(entries.size()) * (font + 5) + 4;
  return {w, h};
}

namespace {

Area corner_box(const Area& area, Corner corner, const std::array<double, 2>& box) {
  const double inset = 8;
  Area a{0, 0, box[0], box[1]};
  const bool left = corner == Corner::top_left || corner == Corner::bottom_left;
  const bool top = corner == Corner::top_left || corner == Corner::top_right;
  a.x = left ? area.x + inset : area.right() - inset - box[0];
  a.y = top ? area.y + inset : area.bottom() - inset - box[1];
  return a;
}

}  // namespace

Corner emptiest_corner(const Area& area, const std::vector<XY>& occupied,
                       const std::array<double, 2>& box) {
  const std::array<Corner, 4> order = {Corner::top_left, Corner::top_right, Corner::bottom_left,
                                       Corner::bottom_right};
  Corner best = Corner::top_left;
  std::size_t best_in_box = std::numeric_limits<std::size_t>::max();
  std::size_t best_in_quadrant = std::numeric_limits<std::size_t>::max();
  const double mx = area.x + area.w / 2, my = area.y + area.h / 2;
  for (Corner c : order) {
    const Area b = corner_box(area, c, box);
    // A few pixels of clearance around the box.
    const Area padded{b.x - 4, b.y - 4, b.w + 8, b.h + 8};
    std::size_t in_box = 0, in_quadrant = 0;
    const bool left = c == Corner::top_left || c == Corner::bottom_left;
    const bool top = c == Corner::top_left || c == Corner::top_right;
    for (const XY& p : occupied) {
      if (!area.contains(p.first, p.second)) continue;  // clipped away: covers nothing
      if (padded.contains(p.first, p.second)) ++in_box;
      if ((p.first < mx) == left && (p.second < my) == top) ++in_quadrant;
    }
    if (in_box < best_in_box || (in_box == best_in_box && in_quadrant < best_in_quadrant)) {
      best = c;
      best_in_box = in_box;
      best_in_quadrant = in_quadrant;
    }
  }
  return best;
}

void draw_legend_at(Svg& svg, double x, double y, const std::vector<LegendEntry>& entries,
                    double font) {
  if (entries.empty()) return;
  const auto size = legend_size(entries, font);
  svg.rect(x, y, size[0], size[1], Style{"#999999", "#ffffff", 1, "", 0.92});
  TextStyle ts;
  ts.size = font;
  ts.baseline = "middle";
  double row = y + 6 + (font + 5) / 2;
  for (const LegendEntry& e : entries) {
    const double x0 = x + 8;
    if (e.line) svg.line(x0, row, x0 + 24, row, Style{e.color, "none", 2, e.dash, 1});
    if (e.has_marker) {
      Style ms{e.color, e.filled ? e.color : "#ffffff", 1.3, "", 1};
      svg.marker(e.marker, x0 + 12, row, 8, ms);
    }
    svg.text(x0 + 32, row, e.label, ts);
    row += font + 5;
  }
}

void draw_legend(Svg& svg, const Area& area, Corner corner, const std::vector<LegendEntry>& entries,
                 double font) {
  if (entries.empty()) return;
  const Area b = corner_box(area, corner, legend_size(entries, font));
  svg.begin_group({}, std::string("legend ") + to_string(corner));
  draw_legend_at(svg, b.x, b.y, entries, font);
  svg.end_group();
}

void sample_polyline(const std::vector<XY>& pixels, std::vector<XY>& out, double step) {
  for (std::size_t i = 0; i + 1 < pixels.size(); ++i) {
    const auto [x0, y0] = pixels[i];
    const auto [x1, y1] = pixels[i + 1];
    const double len = std::hypot(x1 - x0, y1 - y0);
    const int n = std::max(1, static_cast<int>(len / step));
    for (int k = 0; k <= n; ++k) {
      const double f = static_cast<double>(k) / n;
      out.push_back({x0 + f * (x1 - x0), y0 + f * (y1 - y0)});
    }
  }
  if (pixels.size() == 1) out.push_back(pixels[0]);
}

}  // namespace timeroof::plots
