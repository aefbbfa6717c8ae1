#include "plots/energy_chart.hpp"

#include <algorithm>
#include <cmath>

#include "core/format.hpp"
#include "plots/axes.hpp"
#include "plots/chart_parts.hpp"
#include "plots/svg.hpp"

namespace timeroof::plots {

using detail::chart_title;

std::string energy_roofline_chart(const std::vector<roofline::EnergyRoof>& roofs,
                                  const std::string& gpu_name) {
  if (roofs.empty()) return {};
  const double width = 900, height = 560;
  Svg svg(width, height);
  chart_title(svg, "Energy roofline: " + (gpu_name.empty() ? "GPU" : gpu_name),
              "FLOP per joule of board energy = 1 / (J per FLOP + J per HBM byte / intensity); "
              "dot: the energy balance");
  constexpr double kLowestIntensity = 0.01, kHighestIntensity = 1e4;
  double ylo = std::numeric_limits<double>::max(), yhi = 0;
  for (const roofline::EnergyRoof& r : roofs) {
    ylo = std::min(ylo, r.flops_per_joule(kLowestIntensity));
    yhi = std::max(yhi, 1 / r.joules_per_flop);
  }
  const auto yr = decade_range(ylo, yhi * 1.5);
  const Margins m;
  const Area area{m.left, m.top + 8, width - m.left - m.right, height - m.top - 8 - m.bottom};
  Axes axes(area,
            AxisSpec{Scale::log, kLowestIntensity, kHighestIntensity,
                     "Arithmetic intensity (FLOP per HBM byte)", ""},
            AxisSpec{Scale::log, yr[0], yr[1], "Energy efficiency (FLOP/J)", ""});
  axes.draw(svg);

  std::vector<XY> occupied;
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < roofs.size(); ++i) {
    const roofline::EnergyRoof& r = roofs[i];
    const char* colour = series_color(i);
    std::vector<XY> curve;
    for (double lg = std::log10(kLowestIntensity); lg <= std::log10(kHighestIntensity) + 1e-9;
         lg += 0.05) {
      const double intensity = std::pow(10.0, lg);
      curve.push_back({axes.px(intensity), axes.py(r.flops_per_joule(intensity))});
    }
    svg.begin_group(r.compute + ": " + format_si(1 / r.joules_per_flop, "FLOP/J") +
                        " at high intensity, " + format_si(r.joules_per_byte, "J/B") + " per " +
                        r.memory + " byte, energy balance " +
                        format_number(r.balance, hint::significant_3) + " FLOP/B",
                    "energy-roof");
    svg.polyline(curve, Style{colour, "none", 2, "", 1});
    if (r.balance >= kLowestIntensity && r.balance <= kHighestIntensity)
      svg.marker(Marker::circle, axes.px(r.balance), axes.py(r.flops_per_joule(r.balance)), 7,
                 Style{colour, colour, 1, "", 1});
    svg.end_group();
    sample_polyline(curve, occupied);
    legend.push_back({r.compute + " (" + format_si(r.joules_per_flop, "J/FLOP") + ") + " +
                          r.memory + " (" + format_si(r.joules_per_byte, "J/B") + ")",
                      colour, true, "", true, Marker::circle, true});
  }
  const auto box = legend_size(legend);
  draw_legend(svg, area, emptiest_corner(area, occupied, box), legend);
  return svg.str();
}

}  // namespace timeroof::plots
