// Pieces the chart files of plots/ share (charts.cpp, time_charts.cpp); not a
// public interface.
#pragma once

#include <string>
#include <vector>

#include "plots/axes.hpp"
#include "plots/svg.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/sweep_fit.hpp"

namespace timeroof::plots::detail {

bool positive(double v);  // finite and > 0
// The title at the top left, and a grey subtitle line under it.
void chart_title(Svg& svg, const std::string& title, const std::string& subtitle = {});
Bound level_bound(Level level);
// The points of a series a log axis can show (x > 0), sorted by x.
std::vector<roofline::SeriesPoint> drawable_points(const roofline::Series& series);
// "conv2d fwd fp16 batch=16": the first line of a series point's tooltip.
std::string point_label(const roofline::Series& series, const roofline::SeriesPoint& point);
// Moves labels (pixel y positions, in order of importance) apart so that no two
// are closer than `gap`; returns the adjusted positions in the input order.
std::vector<double> spread_labels(std::vector<double> ys, double gap, double top, double bottom);

}  // namespace timeroof::plots::detail
