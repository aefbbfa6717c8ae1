#include "core/power.hpp"

#include <algorithm>

namespace timeroof {

namespace {

struct ReasonName {
  unsigned long long bit;
  const char* name;
  const char* text;
};

// nvml.h's nvmlClocksEventReason* values (stable since the Throttle* names).
constexpr ReasonName kReasons[] = {
    {0x2, "applications_clocks_setting", "application clocks"},
    {0x4, "sw_power_cap", "power cap"},
    {0x8, "hw_slowdown", "HW slowdown"},
    {0x10, "sync_boost", "sync boost"},
    {0x20, "sw_thermal_slowdown", "thermal (SW)"},
    {0x40, "hw_thermal_slowdown", "thermal (HW)"},
    {0x80, "hw_power_brake_slowdown", "power brake"},
    {0x100, "display_clock_setting", "display clocks"},
};

}  // namespace

std::vector<std::string> clock_limit_names(unsigned long long reasons) {
  std::vector<std::string> names;
  for (const ReasonName& reason : kReasons)
    if (reasons & reason.bit) names.emplace_back(reason.name);
  return names;
}

std::string describe_clock_limits(const std::vector<std::string>& limits) {
  std::string text;
  for (const std::string& limit : limits) {
    const auto known = std::find_if(std::begin(kReasons), std::end(kReasons),
                                    [&](const ReasonName& r) { return limit == r.name; });
    text += (text.empty() ? "" : ", ") +
            std::string(known != std::end(kReasons) ? known->text : limit.c_str());
  }
  return text.empty() ? "none" : text;
}

PowerConditions summarize_power(const std::vector<PowerSample>& samples) {
  PowerConditions power;
  unsigned long long reasons = 0;
  for (const PowerSample& s : samples) {
    reasons |= s.clock_event_reasons;
    if (s.temperature_c)
      power.max_temperature_c =
          std::max(power.max_temperature_c.value_or(*s.temperature_c), *s.temperature_c);
  }
  power.clock_limits = clock_limit_names(reasons);

  // The samples at which the counter had just stepped: the first sample after a
  // step marks it to within one sampling period.
  std::vector<const PowerSample*> steps;
  const PowerSample* previous = nullptr;
  for (const PowerSample& s : samples) {
    if (!s.energy_j) continue;
    if (previous && *s.energy_j != *previous->energy_j) steps.push_back(&s);
    previous = &s;
  }
  if (static_cast<int>(steps.size()) < kMinEnergySteps) return power;
  const PowerSample& first = *steps.front();
  const PowerSample& last = *steps.back();
  const double window = last.at_s - first.at_s;
  const double joules = *last.energy_j - *first.energy_j;
  if (window <= 0 || joules < 0) return power;  // a counter that went back: no figure
  power.watts = joules / window;
  power.window_s = window;
  return power;
}

}  // namespace timeroof
