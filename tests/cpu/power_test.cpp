// Power and energy per roof (issue 15): NVML samples summarised into a roof's
// PowerConditions, and the model's energy figures, sustained ratios, energy
// roofline and library references at the roof's clock, against hand counts.
#include <gtest/gtest.h>

#include <cmath>

#include "core/json_io.hpp"
#include "core/power.hpp"
#include "roofline/roof_energy.hpp"

namespace timeroof {
namespace {

// A counter stepping every `step_s` by the energy `watts` gives in that time,
// sampled every 0.5 ms from t = 0 to `until_s`.
std::vector<PowerSample> counter_samples(double watts, double step_s, double until_s) {
  std::vector<PowerSample> samples;
  for (double t = 0; t <= until_s; t += 0.5e-3) {
    PowerSample s;
    s.at_s = 1000 + t;
    s.energy_j = 5e6 + watts * step_s * std::floor(t / step_s);
    s.temperature_c = 50 + t;
    samples.push_back(s);
  }
  return samples;
}

TEST(Power, MeanWattsFromTheEnergyCounterSteps) {
  const PowerConditions p = summarize_power(counter_samples(612.5, 0.01, 0.2));
  ASSERT_TRUE(p.watts);
  // Steps are placed to within one 0.5 ms sample over a window of 18-19 steps.
  EXPECT_NEAR(*p.watts, 612.5, 612.5 * 0.01);
  EXPECT_NEAR(*p.window_s, 0.185, 0.011);
  EXPECT_NEAR(*p.max_temperature_c, 50.2, 1e-3);
  EXPECT_FALSE(p.joules_per_call);  // the caller's, who knows a call's time
}

TEST(Power, TooFewCounterStepsGiveNoFigure) {
  // 25 ms of samples with a 10 ms counter: two steps.
  const PowerConditions p = summarize_power(counter_samples(500, 0.01, 0.025));
  EXPECT_FALSE(p.watts);
  EXPECT_FALSE(p.window_s);
  EXPECT_FALSE(summarize_power({}).watts);
}

TEST(Power, ACounterThatGoesBackGivesNoFigure) {
  std::vector<PowerSample> samples = counter_samples(500, 0.01, 0.1);
  samples.back().energy_j = 0;  // a reset driver
  EXPECT_FALSE(summarize_power(samples).watts);
}

TEST(Power, ClockLimitsAreEveryReasonSeenButIdle) {
  std::vector<PowerSample> samples(3);
  samples[0].clock_event_reasons = 0x1;          // gpu_idle, between rounds
  samples[1].clock_event_reasons = 0x4;          // power cap
  samples[2].clock_event_reasons = 0x20 | 0x80;  // thermal, power brake
  const PowerConditions p = summarize_power(samples);
  EXPECT_EQ(p.clock_limits, (std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown",
                                                      "hw_power_brake_slowdown"}));
  EXPECT_EQ(describe_clock_limits(p.clock_limits), "power cap, thermal (SW), power brake");
  EXPECT_EQ(describe_clock_limits({}), "none");
}

Ceiling roof(const std::string& name, const std::string& unit, double measured,
             std::optional<double> watts, std::optional<double> clock_hz = std::nullopt) {
  Ceiling c;
  c.name = name;
  c.unit = unit;
  c.kind = unit == "B/s" ? CeilingKind::bandwidth : CeilingKind::compute;
  c.measured = measured;
  c.power.watts = watts;
  c.sm_clock_hz = clock_hz;
  return c;
}

TEST(RoofEnergy, JoulesPerUnitSustainedRatioAndEnergyBalance) {
  Machine m;
  m.ceilings.push_back(roof("tensor_fp16", "FLOP/s", 800e12, 700.0, 1.86e9));
  m.ceilings.push_back(roof("tensor_fp16_mma_sync", "FLOP/s", 500e12, 650.0));
  m.ceilings.push_back(roof("hbm_read", "B/s", 3.2e12, 400.0));
  m.ceilings.push_back(roof("hbm_copy", "B/s", 3.0e12, 420.0));
  m.ceilings.push_back(roof("fp32_fma", "FLOP/s", 60e12, std::nullopt));  // no power: left out
  Ceiling launch = roof("launch_async", "s", 3e-6, 100.0);
  launch.kind = CeilingKind::latency;
  m.ceilings.push_back(launch);  // a latency: no energy per unit
  SustainedRoof s;
  s.measured = 720e12;
  s.seconds = 10;
  s.power.watts = 699.0;
  m.ceilings[0].sustained = s;

  const std::vector<roofline::RoofEnergy> energy = roofline::roof_energy(m);
  ASSERT_EQ(energy.size(), 4u);
  EXPECT_EQ(energy[0].ceiling, "tensor_fp16");
  EXPECT_DOUBLE_EQ(*energy[0].joules_per_unit, 700.0 / 800e12);
  EXPECT_DOUBLE_EQ(*energy[0].sustained_ratio, 0.9);
  EXPECT_DOUBLE_EQ(*energy[0].sustained_joules_per_unit, 699.0 / 720e12);
  EXPECT_FALSE(energy[1].sustained_ratio);

  const std::vector<roofline::EnergyRoof> lines = roofline::energy_roofs(energy);
  ASSERT_EQ(lines.size(), 1u);             // the mma.sync path is not a line of its own
  EXPECT_EQ(lines[0].memory, "hbm_read");  // 125 pJ/B against hbm_copy's 140
  const double e_flop = 700.0 / 800e12, e_byte = 400.0 / 3.2e12;
  EXPECT_DOUBLE_EQ(lines[0].balance, e_byte / e_flop);
  EXPECT_DOUBLE_EQ(lines[0].flops_per_joule(100), 1 / (e_flop + e_byte / 100));
  // At the balance, half the best efficiency.
  EXPECT_NEAR(lines[0].flops_per_joule(lines[0].balance) * e_flop, 0.5, 1e-12);

  // HBM launches too short for the energy counter: the sustained load's J/B.
  for (Ceiling& c : m.ceilings)
    if (c.unit == "B/s") {
      SustainedRoof hbm_load;
      hbm_load.measured = c.measured;
      hbm_load.seconds = 10;
      hbm_load.power.watts = *c.power.watts * 1.1;
      c.sustained = hbm_load;
      c.power.watts.reset();
    }
  const std::vector<roofline::EnergyRoof> from_loads =
      roofline::energy_roofs(roofline::roof_energy(m));
  ASSERT_EQ(from_loads.size(), 1u);
  EXPECT_EQ(from_loads[0].memory, "hbm_read");
  EXPECT_DOUBLE_EQ(from_loads[0].joules_per_byte, 440.0 / 3.2e12);
}

TEST(RoofEnergy, LibraryReferenceQuotedAtTheRoofsClock) {
  Machine m;
  m.ceilings.push_back(roof("tensor_fp16", "FLOP/s", 850e12, std::nullopt, 1.86e9));
  m.ceilings.push_back(roof("cublaslt_fp16", "FLOP/s", 784.6e12, std::nullopt, 1.77e9));
  m.ceilings.push_back(roof("cublaslt_bf16", "FLOP/s", 700e12, std::nullopt));  // no roof
  m.ceilings.push_back(roof("tensor_tf32", "FLOP/s", 400e12, std::nullopt));
  m.ceilings.push_back(roof("cublaslt_tf32", "FLOP/s", 352e12, std::nullopt, 1.59e9));
  const std::vector<roofline::LibraryReference> refs = roofline::library_references(m);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].reference, "cublaslt_fp16");
  EXPECT_EQ(refs[0].roof, "tensor_fp16");
  EXPECT_DOUBLE_EQ(*refs[0].at_roof_clock, 784.6e12 * 1.86 / 1.77);
  EXPECT_DOUBLE_EQ(refs[0].ratio, 784.6e12 * 1.86 / 1.77 / 850e12);
  // Without the roof's clock it is compared as measured.
  EXPECT_FALSE(refs[1].at_roof_clock);
  EXPECT_DOUBLE_EQ(refs[1].ratio, 352.0 / 400.0);
}

TEST(RoofEnergy, CeilingJsonRoundTripAndOlderFilesWithoutPower) {
  Ceiling c = roof("tensor_fp16", "FLOP/s", 800e12, 700.0, 1.8e9);
  c.power.clock_limits = {"sw_power_cap"};
  c.power.max_temperature_c = 63;
  SustainedRoof s;
  s.measured = 720e12;
  s.seconds = 10;
  s.sm_clock_hz = 1.6e9;
  c.sustained = s;
  const nlohmann::json j = c;
  EXPECT_EQ(j.get<Ceiling>(), c);
  nlohmann::json old = j;
  old.erase("power");
  old.erase("sustained");
  const Ceiling read = old.get<Ceiling>();
  EXPECT_EQ(read.power, PowerConditions{});
  EXPECT_FALSE(read.sustained);
}

}  // namespace
}  // namespace timeroof
