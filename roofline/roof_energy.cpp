#include "roofline/roof_energy.hpp"

#include <algorithm>

#include "core/ceiling_names.hpp"

namespace timeroof::roofline {

namespace {

std::optional<double> per_unit(const PowerConditions& power, double rate) {
  if (!power.watts || rate <= 0) return std::nullopt;
  return *power.watts / rate;
}

const Ceiling* find(const Machine& machine, const std::string& name) {
  for (const Ceiling& c : machine.ceilings)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

std::vector<RoofEnergy> roof_energy(const Machine& machine) {
  std::vector<RoofEnergy> out;
  for (const Ceiling& c : machine.ceilings) {
    if (c.kind == CeilingKind::latency || c.measured <= 0) continue;
    if (!c.power.watts && !c.sustained) continue;
    RoofEnergy e;
    e.ceiling = c.name;
    e.unit = c.unit;
    e.measured = c.measured;
    e.power = c.power;
    e.joules_per_unit = per_unit(c.power, c.measured);
    e.sustained = c.sustained;
    if (c.sustained && c.sustained->measured > 0) {
      e.sustained_ratio = c.sustained->measured / c.measured;
      e.sustained_joules_per_unit = per_unit(c.sustained->power, c.sustained->measured);
    }
    out.push_back(std::move(e));
  }
  return out;
}

double EnergyRoof::flops_per_joule(double intensity) const {
  return intensity > 0 ? 1 / (joules_per_flop + joules_per_byte / intensity) : 0;
}

// The burst figure, else the sustained load's: an HBM roof's timed launches
// (20 x 0.7 ms on an H100) end before the energy counter steps three times.
std::optional<double> energy_per_unit(const RoofEnergy& e) {
  return e.joules_per_unit ? e.joules_per_unit : e.sustained_joules_per_unit;
}

std::vector<EnergyRoof> energy_roofs(const std::vector<RoofEnergy>& energy) {
  const RoofEnergy* hbm = nullptr;
  for (const RoofEnergy& e : energy) {
    const bool is_hbm = e.ceiling == ceiling::kHbmRead || e.ceiling == ceiling::kHbmCopy;
    if (is_hbm && energy_per_unit(e) && (!hbm || *energy_per_unit(e) < *energy_per_unit(*hbm)))
      hbm = &e;
  }
  std::vector<EnergyRoof> out;
  if (!hbm) return out;
  for (const RoofEnergy& e : energy) {
    if (e.unit != "FLOP/s" || !energy_per_unit(e)) continue;
    // The _mma_sync figures are the slower path of a type drawn already.
    if (e.ceiling.find("_mma_sync") != std::string::npos) continue;
    EnergyRoof roof;
    roof.compute = e.ceiling;
    roof.memory = hbm->ceiling;
    roof.joules_per_flop = *energy_per_unit(e);
    roof.joules_per_byte = *energy_per_unit(*hbm);
    roof.balance = roof.joules_per_byte / roof.joules_per_flop;
    out.push_back(roof);
  }
  return out;
}

std::vector<LibraryReference> library_references(const Machine& machine) {
  std::vector<LibraryReference> out;
  for (const Precision precision : ceiling::kTensorPrecisions) {
    const Ceiling* reference = find(machine, ceiling::library(precision));
    const Ceiling* roof = find(machine, ceiling::tensor(precision));
    if (!reference || !roof || reference->measured <= 0 || roof->measured <= 0) continue;
    LibraryReference r;
    r.reference = reference->name;
    r.roof = roof->name;
    r.measured = reference->measured;
    r.clock_hz = reference->sm_clock_hz;
    r.roof_measured = roof->measured;
    r.roof_clock_hz = roof->sm_clock_hz;
    if (r.clock_hz && r.roof_clock_hz && *r.clock_hz > 0)
      r.at_roof_clock = r.measured * *r.roof_clock_hz / *r.clock_hz;
    r.ratio = r.at_roof_clock.value_or(r.measured) / r.roof_measured;
    out.push_back(r);
  }
  return out;
}

}  // namespace timeroof::roofline
