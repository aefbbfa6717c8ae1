// Theoretical roofs, the way Nsight Compute draws them: a unit's per-cycle peak
// from CUPTI's `.peak_sustained` submetric, times the clock that unit ran at
// while the roof was measured. Read on the live GPU, so they are this chip's
// numbers, not a datasheet's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"

namespace timeroof {

class ProfilerSession;

// One way to read a roof's peak: a CUPTI metric's per-cycle peak times the
// work each counted unit does.
struct PeakTerm {
  std::string metric;        // without ".peak_sustained"
  double work_per_unit = 1;  // FLOP per instruction/op, bytes per wavefront, or 1
  std::string note;          // e.g. "2 FLOP per FFMA"
};

// What a ceiling's theoretical value is made of.
struct PeakFormula {
  std::vector<PeakTerm> candidates;  // the first one the chip has wins
  enum class Clock { sm, dram, l2 } clock = Clock::sm;
};

// The formula for a ceiling name (suffixes _wgmma / _mma_sync and the library
// prefixes cublaslt_ / cublas_ map onto the same tensor path), or nullopt for
// roofs with no counter peak (transfers, launches).
std::optional<PeakFormula> peak_formula(const std::string& ceiling_name);

// Per-cycle peaks and the clocks CUPTI saw, read once per run.
struct PeakRates {
  std::string chip;
  std::map<std::string, double> per_cycle;  // metric name -> peak per cycle
  double sm_hz = 0;
  double dram_hz = 0;
  double l2_hz = 0;
};

// Profiles a probe kernel with every `.peak_sustained` the formulas need.
PeakRates read_peak_rates(ProfilerSession& session);

// Fills theoretical and theoretical_source of each ceiling that has a formula,
// using the SM clock observed during that ceiling's own measurement.
void apply_theoretical_peaks(const PeakRates& rates, std::vector<Ceiling>& ceilings);

}  // namespace timeroof
