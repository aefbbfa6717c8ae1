// Board power while something ran: NVML samples (energy counter, temperature,
// clock-event reasons) summarised into a roof's PowerConditions. Host logic only,
// so the summary is tested without a GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"

namespace timeroof {

struct PowerSample {
  double at_s = 0;  // steady clock, seconds
  std::optional<double> energy_j;
  std::optional<double> temperature_c;
  unsigned long long clock_event_reasons = 0;  // nvmlClocksEventReason* bits
};

// The names of the clock-event reason bits that limit work ("sw_power_cap",
// "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
// "hw_power_brake_slowdown", ...); gpu_idle is left out, since samples taken
// between rounds see an idle GPU.
std::vector<std::string> clock_limit_names(unsigned long long reasons);

// The energy counter moves in steps (every few milliseconds on an H100), so the
// mean power is taken between its first and its last step inside the samples,
// whose times are known to the sampling period; fewer than this many steps give
// no figure.
inline constexpr int kMinEnergySteps = 3;

// Mean watts between the counter's first and last step, the window, the hottest
// temperature and every limiting reason seen. joules_per_call is left to the
// caller, who knows the time of a call.
PowerConditions summarize_power(const std::vector<PowerSample>& samples);

// "sw_power_cap" -> "power cap" etc., for printing; empty list -> "none".
std::string describe_clock_limits(const std::vector<std::string>& limits);

}  // namespace timeroof
