// The model of a profile's kernels and ranges (roofline/profile_analysis, #17 part
// 2) against truth computed by hand from tests/fixtures/profile-counters.jsonl
// (make_profile_synthetic.py --counters) on the roofs of profile_test_machine():
// P_fp32 50 TFLOP/s, P_tensor_fp16 800 TFLOP/s, B_dram 4 TB/s, B_l2 10, B_l1 30.
//
// Per call (quantities of the one measured launch of each configuration):
// - gemm_kernel [128]: W = 16e9 tensor_fp16 + 0.5e9 fp32; T_tensor = 20 us,
//   T_cuda = 10 us, T_compute = 30 us; Q_l1 300 MB (10 us), Q_l2 100 MB (10 us),
//   Q_dram 60 MB (15 us). T_k = 40 us: the mean of its two unmeasured launches
//   (the measured one was replayed: 60 us in the trace). Over its 3 calls:
//   T_k 120 us, T_compute 90 us (Tensor 60), T_dram 45 us: compute-bound
//   (Tensor Cores) at 90 / 120 = 75%; T_lb = 90 us.
// - relu_kernel [512]: W = 1e6 fp32 (0.02 us); Q_l1 40 MB (1.33 us), Q_l2 40 MB
//   (4 us), Q_dram 32 MB (8 us). T_k = 10 us (unmeasured mean; replayed 25 us).
//   Over 3 calls: T_k 30 us, T_dram 24 us: DRAM-bound at 80%; T_lb = 24 us.
// - gemm_kernel [96]: never measured, so not covered (3 calls, 90 us).
// Ranges (summed over the 3 iterations): layer0 = 3 gemm [128]: T_lb 90 us,
// wall 114 us, headroom 114 / 90; layer1 = 3 relu + 3 gemm [96] (not covered):
// T_lb 24 us, wall 150 us; forward and step = both covered kernels: T_k 150 us,
// T_compute = 60 + 30.06 us, T_dram = 276 MB / 4 TB/s = 69 us, so compute-bound
// (Tensor) at 90.06 / 150, T_lb = 90 + 24 = 114 us (per kernel, above the
// operator-level 90.06); headroom = wall / T_lb = 300 / 114 and 480 / 114. The
// program: the same kernels, time = the trace's span, 670 us.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "roofline/profile_analysis.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/profile_nodes.hpp"

namespace timeroof::roofline {
namespace {

constexpr double kUs = 1e-6;  // s
constexpr double kTol = 1e-12;

const std::vector<TraceEvent>& fixture() {
  static const std::vector<TraceEvent> events =
      test::load_trace("tests/fixtures/profile-counters.jsonl");
  return events;
}

ProfileOptions with_roofs() {
  ProfileOptions options;
  options.roofs = machine_roofs(test::profile_test_machine());
  options.roofs_from = "run 1";
  return options;
}

const ProfileAnalysis& analysis() {
  static const ProfileAnalysis a = analyze_profile(fixture(), with_roofs());
  return a;
}

using test::child;
using test::kernel;

const RangeNode& step() {
  return analysis().threads.at(0).roots.at(0);
}

double work(const KernelModel& m, PrecisionClass p) {
  return m.bounds.work[static_cast<std::size_t>(p)];
}

TEST(ProfileModel, CountersTiedByLaunchingProcess) {
  const ProfileAnalysis& a = analysis();
  EXPECT_EQ(a.counter_records, 3u);
  // pid 101's record carries gemm [96]'s correlation id, but gemm [96] was
  // launched by pid 100: it ties to nothing.
  EXPECT_EQ(a.counters_unmatched, 1u);
  EXPECT_EQ(a.roofs_from, "run 1");
  ASSERT_TRUE(a.roofs);
}

TEST(ProfileModel, KernelExtrapolatedPerConfiguration) {
  const KernelSummary& gemm = kernel(analysis(), "gemm_kernel");
  ASSERT_TRUE(gemm.model);
  const KernelModel& m = *gemm.model;
  EXPECT_EQ(m.launches, 3u);  // grid 128 only
  EXPECT_EQ(m.measured, 1u);
  EXPECT_TRUE(m.extrapolated());
  EXPECT_EQ(m.not_covered, 3u);  // grid 96: another configuration, never measured
  EXPECT_EQ(m.not_covered_ns, 90'000u);
  EXPECT_EQ(m.timed_by_replay, 0u);
  EXPECT_NEAR(m.quantities.at("tensor_fp16_flops"), 48e9, 1);
  EXPECT_NEAR(work(m, PrecisionClass::tensor_fp16), 48e9, 1);
  EXPECT_NEAR(work(m, PrecisionClass::fp32), 1.5e9, 1);
  ASSERT_TRUE(m.bounds.kernel_s);
  EXPECT_NEAR(*m.bounds.kernel_s, 120 * kUs, kTol);  // not the replayed 60 us
  EXPECT_NEAR(m.bounds.t_tensor, 60 * kUs, kTol);
  EXPECT_NEAR(m.bounds.t_cuda, 30 * kUs, kTol);
  EXPECT_NEAR(*m.bounds.level(Level::dram).time_s, 45 * kUs, kTol);
  EXPECT_NEAR(*m.bounds.level(Level::l2).time_s, 30 * kUs, kTol);
  EXPECT_NEAR(*m.bounds.level(Level::l1).time_s, 30 * kUs, kTol);
  EXPECT_NEAR(*m.bounds.level(Level::dram).intensity, 49.5e9 / 180e6, 1e-9);
  EXPECT_NEAR(*m.bounds.tensor_share, 48.0 / 49.5, 1e-12);
  EXPECT_NEAR(*m.bounds.efficiency, 0.75, 1e-12);
  EXPECT_EQ(m.classification.label(), "compute_bound(tensor_core)");
  EXPECT_NEAR(m.bounds.t_lower_bound, 90 * kUs, kTol);
  EXPECT_NEAR(m.time_s, 120 * kUs, kTol);
  EXPECT_NEAR(*m.headroom, 120.0 / 90.0, 1e-12);

  const KernelModel& relu = *kernel(analysis(), "relu_kernel").model;
  EXPECT_EQ(relu.launches, 3u);
  EXPECT_EQ(relu.not_covered, 0u);
  EXPECT_NEAR(*relu.bounds.kernel_s, 30 * kUs, kTol);
  EXPECT_NEAR(*relu.bounds.level(Level::dram).time_s, 24 * kUs, kTol);
  EXPECT_NEAR(*relu.bounds.efficiency, 0.8, 1e-12);
  EXPECT_EQ(relu.classification.label(), "memory_bound(dram)");
  EXPECT_NEAR(*relu.headroom, 30.0 / 24.0, 1e-12);

  EXPECT_FALSE(kernel(analysis(), "external_kernel").model);  // never measured
}

// The user's --metrics per kernel name: the mean over its measured launches (one
// here); the record of another process ties to nothing and adds nothing.
TEST(ProfileModel, UserMetricsPerKernelFromItsMeasuredLaunches) {
  const KernelSummary& gemm = kernel(analysis(), "gemm_kernel");
  ASSERT_EQ(gemm.metrics.size(), 1u);
  EXPECT_EQ(gemm.metrics.at("sm__cycles_elapsed.avg"), 52'000.0);
  EXPECT_TRUE(kernel(analysis(), "relu_kernel").metrics.empty());
  EXPECT_TRUE(kernel(analysis(), "external_kernel").metrics.empty());
}

TEST(ProfileModel, RangesSumTheirKernels) {
  const RangeNode& forward = child(step(), "forward");
  const RangeNode& layer0 = child(forward, "layer0");
  ASSERT_TRUE(layer0.model);
  EXPECT_EQ(layer0.model->launches, 3u);
  EXPECT_NEAR(layer0.model->bounds.t_lower_bound, 90 * kUs, kTol);
  EXPECT_NEAR(layer0.model->time_s, 114 * kUs, kTol);
  EXPECT_NEAR(*layer0.model->headroom, 114.0 / 90.0, 1e-12);
  EXPECT_EQ(layer0.model->classification.label(), "compute_bound(tensor_core)");

  const RangeNode& layer1 = child(forward, "layer1");
  ASSERT_TRUE(layer1.model);
  EXPECT_EQ(layer1.model->launches, 3u);
  EXPECT_EQ(layer1.model->not_covered, 3u);
  EXPECT_EQ(layer1.model->not_covered_ns, 90'000u);
  EXPECT_EQ(layer1.model->classification.label(), "memory_bound(dram)");
  EXPECT_NEAR(*layer1.model->headroom, 150.0 / 24.0, 1e-12);

  for (const RangeNode* node : {&forward, &step()}) {
    ASSERT_TRUE(node->model) << node->path;
    const KernelModel& m = *node->model;
    EXPECT_EQ(m.launches, 6u);
    EXPECT_EQ(m.measured, 2u);
    EXPECT_NEAR(*m.bounds.kernel_s, 150 * kUs, kTol);
    EXPECT_NEAR(m.bounds.t_compute, (60 + 30.06) * kUs, kTol);
    EXPECT_NEAR(*m.bounds.level(Level::dram).time_s, 69 * kUs, kTol);
    EXPECT_NEAR(*m.bounds.efficiency, 90.06 / 150, 1e-12);
    EXPECT_EQ(m.classification.label(), "compute_bound(tensor_core)");
    EXPECT_EQ(m.bounds.lower_bound_scope, BoundScope::per_kernel);
    EXPECT_NEAR(m.bounds.t_lower_bound, 114 * kUs, kTol);
  }
  EXPECT_NEAR(*forward.model->headroom, 300.0 / 114.0, 1e-12);
  EXPECT_NEAR(*step().model->headroom, 480.0 / 114.0, 1e-12);
}

TEST(ProfileModel, WholeProgram) {
  ASSERT_TRUE(analysis().program);
  const KernelModel& p = *analysis().program;
  EXPECT_EQ(p.launches, 6u);
  EXPECT_EQ(p.not_covered, 4u);  // gemm [96] x3 and the external kernel
  EXPECT_EQ(p.not_covered_ns, 98'000u);
  EXPECT_NEAR(p.bounds.t_lower_bound, 114 * kUs, kTol);
  EXPECT_NEAR(p.time_s, 670 * kUs, kTol);
  EXPECT_NEAR(*p.headroom, 670.0 / 114.0, 1e-12);
}

TEST(ProfileModel, IterationsFlagMeasuredLaunches) {
  ASSERT_TRUE(analysis().iterations);
  const IterationBreakdown& b = *analysis().iterations;
  ASSERT_EQ(b.iterations.size(), 3u);
  EXPECT_EQ(b.iterations[0].measured_launches, 2u);
  EXPECT_EQ(b.iterations[0].replay_ns, 9'000u);  // the two launch calls: 5 + 4 us
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(b.iterations[i].measured_launches, 0u);
    EXPECT_EQ(b.iterations[i].replay_ns, 0u);
  }
  for (const Iteration& it : b.iterations) {  // gemm 40 + relu 10 us; T_compute 20 + 10.02
    ASSERT_TRUE(it.within_roof_s && it.lost_to_roof_s);
    EXPECT_NEAR(*it.within_roof_s, 30.02 * kUs, kTol);
    EXPECT_NEAR(*it.lost_to_roof_s, 19.98 * kUs, kTol);
  }
  ASSERT_TRUE(b.within_roof_s && b.lost_to_roof_s);
  EXPECT_NEAR(*b.within_roof_s, 90.06 * kUs, kTol);
  EXPECT_NEAR(*b.lost_to_roof_s, (150 - 90.06) * kUs, kTol);
}

TEST(ProfileModel, FindingsRankedByTheTimeTheirClassNames) {
  const std::vector<ProfileFinding>& f = analysis().findings;
  ASSERT_EQ(f.size(), 5u);                  // forward, layer0, gemm, layer1, relu; step is the top
  EXPECT_EQ(f[0].subject, "step/forward");  // T_compute 90.06 us
  EXPECT_EQ(f[0].label, "compute_bound(tensor_core)");
  EXPECT_NEAR(f[0].explained_s, 90.06 * kUs, kTol);
  EXPECT_EQ(f[1].text, "step/forward/layer0: Tensor-Core-bound at 75% of the roof; 24% of step");
  EXPECT_EQ(f[2].subject, "gemm_kernel");
  EXPECT_EQ(f[2].text.rfind("gemm_kernel: Tensor-Core-bound at 75% of the roof; ", 0), 0u);
  EXPECT_EQ(f[3].text,
            "step/forward/layer1: HBM-bound at 80% of the roof; 31% of step (3 of its 6 kernel "
            "launches without counters)");
  EXPECT_NEAR(f[3].explained_s, 24 * kUs, kTol);
  EXPECT_EQ(f[4].subject, "relu_kernel");
  EXPECT_TRUE(analyze_profile(fixture()).findings.empty());  // no roofs: nothing judged
}

// The host sets an iteration's pace where the GPU idles for at least half of it
// (the sweeps' launch fraction), the replays of measured launches aside.
TEST(ProfileModel, IterationsMostlyWithoutGpuWorkAreLaunchBound) {
  // The fixture's steps idle 47% of the median one (75 of 160 us): not enough.
  for (const ProfileFinding& f : analysis().findings) EXPECT_NE(f.label, "launch_bound");
  // 30 us more host-only time at each step's end (the next starts 40-50 us later):
  // idle 95 - 9 (replay), 105 and 115 us of 180, 190 and 200.
  std::vector<TraceEvent> events = fixture();
  for (TraceEvent& e : events)
    if (e.kind == TraceKind::nvtx_range && e.name == "step") e.end_ns += 30'000;
  const ProfileAnalysis a = analyze_profile(events, with_roofs());
  ASSERT_FALSE(a.findings.empty());
  const ProfileFinding& f = a.findings.front();  // 306 us: more than any kernel's class
  EXPECT_EQ(f.subject, "step");
  EXPECT_EQ(f.label, "launch_bound");
  EXPECT_NEAR(f.explained_s, (86 + 105 + 115) * kUs, kTol);
  EXPECT_EQ(f.text,
            "step: launch-bound, the GPU idle 55% of an iteration (median 105 us of 190 us); 3 "
            "launches, 35 us of host-only time each (launch roof 2.0 us): fewer launches or less "
            "host work between them (CUDA graphs, fusion) would cut it");
  // Without API records (--api none) no launch is tied to a step: the idle share alone.
  std::erase_if(events, [](const TraceEvent& e) {
    return e.kind == TraceKind::runtime_api || e.kind == TraceKind::driver_api;
  });
  ProfileOptions untraced = with_roofs();
  untraced.api = ApiTracing::none;
  const std::vector<ProfileFinding> idle_only = analyze_profile(events, untraced).findings;
  ASSERT_FALSE(idle_only.empty());
  EXPECT_EQ(idle_only.front().text,
            "step: launch-bound, the GPU idle 55% of an iteration (median 105 us of 190 us): "
            "fewer launches or less host work between them (CUDA graphs, fusion) would cut it");
}

TEST(ProfileModel, WithoutRoofsWorkAndIntensitiesOnly) {
  const ProfileAnalysis a = analyze_profile(fixture());
  EXPECT_FALSE(a.roofs);
  const KernelModel& m = *kernel(a, "gemm_kernel").model;
  EXPECT_NEAR(m.bounds.total_work, 49.5e9, 1);
  EXPECT_NEAR(*m.bounds.level(Level::dram).intensity, 49.5e9 / 180e6, 1e-9);
  EXPECT_EQ(m.bounds.t_kernel_roof, 0);
  EXPECT_FALSE(m.bounds.efficiency);
  EXPECT_FALSE(m.headroom);
  EXPECT_EQ(m.classification.rule, ClassRule::no_roof);
  EXPECT_FALSE(a.iterations->within_roof_s);
}

TEST(ProfileModel, OnlyMeasuredLaunchesTimedByTheirReplay) {
  using test::trace_event;
  std::vector<TraceEvent> events = {
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 0, 5'000, 7),
      trace_event(TraceKind::kernel, "k", 5'000, 55'000, 7),
      trace_event(TraceKind::kernel_counters, "k", 0, 5'000, 7)};
  events[2].details = {{"quantities", {{"fp32_flops", 1e9}}}};
  const ProfileAnalysis a = analyze_profile(events, with_roofs());
  const KernelModel& m = *a.kernels.at(0).model;
  EXPECT_EQ(m.measured, 1u);
  EXPECT_FALSE(m.extrapolated());
  EXPECT_EQ(m.timed_by_replay, 1u);
  EXPECT_NEAR(*m.bounds.kernel_s, 50 * kUs, kTol);
  EXPECT_NEAR(m.bounds.t_cuda, 20 * kUs, kTol);
  EXPECT_EQ(m.classification.label(), "compute_bound(cuda_core)");  // 20 / 50 = 0.4
}

// Two steps, each launching one kernel configuration in range "a" then in "b":
// in step 1 at 0 and 500, in step 2 at 1000 and 1500 (correlations 1-4), each
// kernel 100 ns. `counters` gives measured launches their FP32 FLOPs.
std::vector<TraceEvent> one_grid_in_two_ranges(const std::map<std::uint32_t, double>& counters) {
  using test::trace_event;
  std::vector<TraceEvent> events;
  std::uint32_t correlation = 0;
  for (std::uint64_t step : {0u, 1000u}) {
    events.push_back(trace_event(TraceKind::nvtx_range, "step", step, step + 1000));
    for (const char* range : {"a", "b"}) {
      const std::uint64_t at = step + (range[0] == 'a' ? 0 : 500);
      events.push_back(trace_event(TraceKind::nvtx_range, range, at, at + 500));
      events.push_back(
          trace_event(TraceKind::runtime_api, "cudaLaunchKernel", at + 10, at + 20, ++correlation));
      events.push_back(trace_event(TraceKind::kernel, "k", at + 30, at + 130, correlation));
      if (const auto flops = counters.find(correlation); flops != counters.end()) {
        events.push_back(
            trace_event(TraceKind::kernel_counters, "k", at + 10, at + 20, correlation));
        events.back().details = {{"quantities", {{"fp32_flops", flops->second}}}};
      }
    }
  }
  return events;
}

double fp32_flops(const KernelModel& m) {
  return m.quantities.at("fp32_flops");
}

// One grid can carry different work at two call sites (a convolution's grid
// covers its output, not its reduction): counters stand only for launches of the
// same configuration in the same innermost range, as the selection measures them.
TEST(ProfileModel, OneGridInTwoRangesIsTwoConfigurations) {
  {  // "a" measured in step 1: it covers step 2's "a", never "b".
    const ProfileAnalysis a = analyze_profile(one_grid_in_two_ranges({{1, 1e9}}), with_roofs());
    const RangeNode& in_a = child(a.threads.at(0).roots.at(0), "a");
    const RangeNode& in_b = child(a.threads.at(0).roots.at(0), "b");
    ASSERT_TRUE(in_a.model);
    EXPECT_EQ(in_a.model->launches, 2u);
    EXPECT_EQ(in_a.model->measured, 1u);
    EXPECT_DOUBLE_EQ(fp32_flops(*in_a.model), 2e9);
    EXPECT_FALSE(in_b.model);  // its launches are not covered
    EXPECT_EQ(a.program->not_covered, 2u);
    EXPECT_DOUBLE_EQ(fp32_flops(*a.program), 2e9);
  }
  {  // Both measured in step 1, with 4x the work in "b".
    const ProfileAnalysis a =
        analyze_profile(one_grid_in_two_ranges({{1, 1e9}, {2, 4e9}}), with_roofs());
    EXPECT_DOUBLE_EQ(fp32_flops(*child(a.threads.at(0).roots.at(0), "a").model), 2e9);
    EXPECT_DOUBLE_EQ(fp32_flops(*child(a.threads.at(0).roots.at(0), "b").model), 8e9);
    EXPECT_EQ(a.program->not_covered, 0u);
    EXPECT_DOUBLE_EQ(fp32_flops(*a.program), 10e9);
    ASSERT_EQ(a.kernels.size(), 1u);
    EXPECT_DOUBLE_EQ(fp32_flops(*a.kernels[0].model), 10e9);
  }
}

// A measured launch is replayed inside its launch call, and its record spans
// that call: every time of the analysis takes the model's time instead.
TEST(ProfileModel, ReplayedLaunchesTakeTheirModelTimeEverywhere) {
  using test::trace_event;
  std::vector<TraceEvent> events;
  // Three steps of 100 us, each launching k (10 us when not replayed) at its start;
  // step 1's launch is measured: its call and its record last 60 us. Step 1
  // also launches "once", measured only (its passes timed it at 3 us).
  for (std::uint32_t step = 0; step < 3; ++step) {
    const std::uint64_t at = step * 100'000;
    const std::uint64_t call_end = at + (step == 0 ? 60'000 : 1'000);
    events.push_back(trace_event(TraceKind::nvtx_range, "step", at, at + 100'000));
    events.push_back(
        trace_event(TraceKind::runtime_api, "cudaLaunchKernel", at, call_end, step + 1));
    events.push_back(trace_event(TraceKind::kernel, "k", at + 500,
                                 step == 0 ? call_end : at + 10'500, step + 1));
  }
  events[2].details["replayed"] = true;
  events.push_back(trace_event(TraceKind::kernel_counters, "k", 0, 60'000, 1));
  events.back().details = {{"quantities", {{"fp32_flops", 1e9}, {"duration", 8e-6}}}};
  events.push_back(trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 70'000, 90'000, 9));
  events.push_back(trace_event(TraceKind::kernel, "once", 70'000, 90'000, 9));
  events.back().details["replayed"] = true;
  events.push_back(trace_event(TraceKind::kernel_counters, "once", 70'000, 90'000, 9));
  events.back().details = {{"quantities", {{"fp32_flops", 1e6}, {"duration", 3e-6}}}};

  const ProfileAnalysis a = analyze_profile(events, with_roofs());
  const KernelSummary& k = kernel(a, "k");
  EXPECT_EQ(k.total_ns, 30'000u);  // its unmeasured launches' mean, not the replay's 59.5 us
  EXPECT_EQ(k.max_ns, 10'000u);
  EXPECT_EQ(k.model->timed_by_replay, 0u);
  const KernelSummary& once = kernel(a, "once");
  EXPECT_EQ(once.total_ns, 3'000u);  // its passes' GPU time, not its 20 us call
  EXPECT_EQ(once.model->timed_by_replay, 1u);
  EXPECT_NEAR(*once.model->bounds.kernel_s, 3 * kUs, kTol);
  EXPECT_EQ(a.gpu_busy_ns, 33'000u);
  EXPECT_EQ(a.kernel_ns, 33'000u);
  const RangeNode& step = a.threads.at(0).roots.at(0);
  EXPECT_EQ(step.work.kernel_ns, 33'000u);
  EXPECT_EQ(step.work.gpu_idle_ns, 300'000u - 33'000u);
  ASSERT_TRUE(a.iterations);
  const Iteration& first = a.iterations->iterations.at(0);
  EXPECT_EQ(first.kernel_ns, 13'000u);  // the replay's 80 us are host time
  EXPECT_EQ(first.idle_ns, 87'000u);
  EXPECT_EQ(first.measured_launches, 2u);
  EXPECT_EQ(first.replay_ns, 80'000u);
}

// Iteration replay measures launches as they ran (a counters record without a
// span, no `replayed` flag): each keeps its own time.
TEST(ProfileModel, IterationReplaysLaunchesKeepTheirOwnTime) {
  using test::trace_event;
  std::vector<TraceEvent> events;
  for (std::uint32_t step = 0; step < 2; ++step) {
    const std::uint64_t at = step * 100'000;
    events.push_back(trace_event(TraceKind::nvtx_range, "step", at, at + 100'000));
    events.push_back(
        trace_event(TraceKind::runtime_api, "cudaLaunchKernel", at, at + 1'000, step + 1));
    events.push_back(trace_event(TraceKind::kernel, "k", at + 1'000,
                                 at + 1'000 + (step == 0 ? 10'000 : 20'000), step + 1));
  }
  events.push_back(trace_event(TraceKind::kernel_counters, "k", 500, 500, 1));
  events.back().details = {{"quantities", {{"fp32_flops", 1e9}, {"duration", 9e-6}}}};
  const ProfileAnalysis a = analyze_profile(events, with_roofs());
  const KernelSummary& k = kernel(a, "k");
  EXPECT_EQ(k.total_ns, 30'000u);
  EXPECT_EQ(k.min_ns, 10'000u);
  EXPECT_EQ(k.model->measured, 1u);
  EXPECT_EQ(k.model->timed_by_replay, 0u);
  EXPECT_NEAR(*k.model->bounds.kernel_s, 30 * kUs, kTol);
}

TEST(ProfileModel, RoofsFromTheNewestCeilingsRunOfTheSameGpu) {
  timeroof::Run profile;
  profile.machine.gpu.name = "NVIDIA H100 80GB HBM3";
  auto run = [](std::int64_t id, const char* gpu, const char* started, bool ceilings) {
    timeroof::Run r;
    r.id = id;
    r.machine = test::profile_test_machine();
    r.machine.gpu.name = gpu;
    r.started_at = started;
    if (!ceilings) r.machine.ceilings.clear();
    return r;
  };
  const std::vector<timeroof::Run> runs = {
      run(1, "NVIDIA H100 80GB HBM3", "2026-01-01T00:00:00Z", true),
      run(2, "NVIDIA H100 80GB HBM3", "2026-03-01T00:00:00Z", true),
      run(3, "NVIDIA H200", "2026-04-01T00:00:00Z", true),
      run(4, "NVIDIA H100 80GB HBM3", "2026-05-01T00:00:00Z", false)};
  EXPECT_EQ(profile_roofs_run(profile, runs), 1u);
  profile.machine.gpu.name = "NVIDIA A100";
  EXPECT_FALSE(profile_roofs_run(profile, runs));
  profile.machine.gpu.name.clear();  // no GPU recorded: nothing to match
  EXPECT_FALSE(profile_roofs_run(profile, runs));
}

}  // namespace
}  // namespace timeroof::roofline
