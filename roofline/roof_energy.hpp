// What each roof costs in energy and what it holds under a long load, and the
// library references set beside the roof they reach for (issue 15): read from
// the machine's ceilings once per run, for every printer.
//
// - Energy per unit of a roof: the board's mean power while the roof's kernel
//   ran over its rate, joules per FLOP or per byte. It is the whole board's
//   power, idle share included, as an operator running at that roof pays it.
// - The energy roofline (Choi et al., "A roofline model of energy", 2013, and
//   the Pagoda paper, 2025): at arithmetic intensity I (FLOP per HBM byte) an
//   operator at both roofs pays e_flop per FLOP plus e_byte / I, so its
//   efficiency is 1 / (e_flop + e_byte / I) FLOP/J. The energy balance
//   I_e = e_byte / e_flop is where moving data and computing cost the same.
// - A library reference (cublaslt_<type>, cublas_fp64) ran at its own clock;
//   quoted at the clock of the roof it is compared with (rate x roof clock /
//   its clock), a swing between runs that only the clock explains goes away.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"

namespace timeroof::roofline {

struct RoofEnergy {
  std::string ceiling;
  std::string unit;  // the roof's: "FLOP/s" or "B/s"
  double measured = 0;
  PowerConditions power;
  std::optional<double> joules_per_unit;  // power.watts / measured
  std::optional<SustainedRoof> sustained;
  std::optional<double> sustained_ratio;            // sustained rate / burst rate
  std::optional<double> sustained_joules_per_unit;  // its watts / its rate
};

// The throughput roofs with a power figure or a sustained load, in the
// machine's order.
std::vector<RoofEnergy> roof_energy(const Machine& machine);

struct EnergyRoof {
  std::string compute;  // the compute roof's ceiling, "tensor_fp16"
  std::string memory;   // the HBM roof's, "hbm_copy"
  double joules_per_flop = 0;
  double joules_per_byte = 0;
  double balance = 0;  // FLOP per byte where both cost the same
  // FLOP per joule at `intensity` FLOP per byte.
  double flops_per_joule(double intensity) const;
};

// One energy roofline per compute roof with a power figure, against the HBM
// roof with the lowest energy per byte (hbm_read or hbm_copy); a roof without a
// burst power figure counts with its sustained load's.
std::vector<EnergyRoof> energy_roofs(const std::vector<RoofEnergy>& energy);

struct LibraryReference {
  std::string reference;  // "cublaslt_fp16"
  std::string roof;       // "tensor_fp16"
  double measured = 0;
  std::optional<double> clock_hz;
  double roof_measured = 0;
  std::optional<double> roof_clock_hz;
  std::optional<double> at_roof_clock;  // measured x roof clock / its clock
  double ratio = 0;                     // (at_roof_clock, else measured) / roof_measured
};

// Every library reference whose Tensor-Core roof was measured too.
std::vector<LibraryReference> library_references(const Machine& machine);

}  // namespace timeroof::roofline
