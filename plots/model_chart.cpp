#include "plots/model_chart.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "core/format.hpp"
#include "plots/axes.hpp"
#include "plots/chart_parts.hpp"
#include "plots/svg.hpp"

namespace timeroof::plots {

using detail::chart_title;

std::string model_time_chart(const roofline::ModelAnalysis& model) {
  struct Line {
    std::string name;
    const char* colour;
    std::string dash;
    Marker marker;
    std::vector<std::pair<double, double>> points;  // (batch, seconds)
  };
  std::vector<Line> lines = {
      {"T_model (sum of count x T_stream)", color(Bound::measured), "", Marker::circle, {}},
      {"T_graph sum", series_color(1), "6 3", Marker::square, {}},
      {"Benanza lower bound (sum of count x T_lb)", color(Bound::hbm), "2 3", Marker::diamond, {}}};
  for (const roofline::ModelBatch& b : model.batches) {
    const double batch = static_cast<double>(b.batch);
    if (b.time_s > 0) lines[0].points.push_back({batch, b.time_s});
    if (b.graph_s && *b.graph_s > 0) lines[1].points.push_back({batch, *b.graph_s});
    if (b.bound_s > 0 && b.headroom) lines[2].points.push_back({batch, b.bound_s});
  }
  if (lines[0].points.empty()) return {};
  double xlo = std::numeric_limits<double>::max(), xhi = 0;
  double ylo = std::numeric_limits<double>::max(), yhi = 0;
  for (const Line& line : lines)
    for (const auto& [x, y] : line.points) {
      xlo = std::min(xlo, x);
      xhi = std::max(xhi, x);
      ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
  if (xhi <= xlo) xhi = xlo * 2, xlo = std::max(1.0, xlo / 2);
  const double width = 900, height = 520;
  Svg svg(width, height);
  chart_title(svg, model.name + ": time against batch",
              "per forward pass: each layer's time x its count, summed; the bound from each "
              "layer's time-based roofline");
  const auto yr = decade_range(ylo, yhi);
  const Margins m;
  const Area area{m.left, m.top + 8, width - m.left - m.right, height - m.top - 8 - m.bottom};
  Axes axes(area, AxisSpec{Scale::log, xlo, xhi, "Batch", "", true},
            AxisSpec{Scale::log, yr[0], yr[1], "Time per forward pass", "s"});
  axes.draw(svg);
  std::vector<XY> occupied;
  std::vector<LegendEntry> legend;
  for (const Line& line : lines) {
    if (line.points.empty()) continue;
    std::vector<XY> pixels;
    for (const auto& [x, y] : line.points) pixels.push_back({axes.px(x), axes.py(y)});
    svg.begin_group(line.name, "model-line");
    svg.polyline(pixels, Style{line.colour, "none", 2, line.dash, 1});
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      svg.begin_group("batch " + format_number(line.points[i].first, hint::significant_3) + ": " +
                      format_time(line.points[i].second));
      svg.marker(line.marker, pixels[i].first, pixels[i].second, 7,
                 Style{line.colour, line.colour, 1, "", 1});
      svg.end_group();
    }
    svg.end_group();
    sample_polyline(pixels, occupied);
    legend.push_back({line.name, line.colour, true, line.dash, true, line.marker, true});
  }
  draw_legend(svg, area, emptiest_corner(area, occupied, legend_size(legend)), legend);
  return svg.str();
}

}  // namespace timeroof::plots
