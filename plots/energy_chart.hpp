// The energy roofline of a machine (roofline/roof_energy.hpp): FLOP per joule
// against arithmetic intensity, one curve per compute roof with a power figure,
// each bending at its energy balance (where its HBM bytes cost as much energy
// as its FLOPs).
#pragma once

#include <string>
#include <vector>

#include "roofline/roof_energy.hpp"

namespace timeroof::plots {

// An SVG document; empty when there is no energy roof to draw.
std::string energy_roofline_chart(const std::vector<roofline::EnergyRoof>& roofs,
                                  const std::string& gpu_name);

}  // namespace timeroof::plots
