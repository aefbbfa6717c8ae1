// roofline/profile_analysis (#17) against truth computed by hand from
// tests/fixtures/profile-synthetic.jsonl (its generator, make_profile_synthetic.py,
// lays the trace out; times below are ns from T0 = 1e9, "o" an iteration's start):
// - GPU busy = union per device: setup HtoD 20 us + external kernel 8 us + per
//   iteration gemm s7 [o+20, o+60] u relu s7 [o+64, o+74] u gemm s8 [o+69, o+99]
//   u DtoH [o+116, o+126] = 40 + 35 + 10 = 85 us, so 28 + 3 x 85 = 283 us;
// - layer0: launches at o+15 (gemm, 40 us), API union 5 us (the cuLaunchKernel
//   lies inside the cudaLaunchKernel), GPU idle in [o+12, o+50] = 38 - 30 = 8 us;
// - layer1: relu 10 us + gemm 30 us, API 4 + 3 us, busy in [o+55, o+105] =
//   5 + 35 = 40 us, so idle 10 us;
// - forward [o+10, o+110]: all 3 kernels, API 12 us, busy 75 us, idle 25 us;
// - step (150, 160, 170 us): kernels 75 us, copies 10 us, idle 65/75/85 us.
// Then the edge cases: an empty trace, unclosed ranges, unattributed work,
// two processes, start/end ranges that do not nest.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "roofline/profile_analysis.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/profile_nodes.hpp"

namespace timeroof::roofline {
namespace {

constexpr std::uint64_t kUs = 1000;  // ns

const std::vector<TraceEvent>& fixture() {
  static const std::vector<TraceEvent> events =
      test::load_trace("tests/fixtures/profile-synthetic.jsonl");
  return events;
}

const ProfileAnalysis& analysis() {
  static const ProfileAnalysis a = analyze_profile(fixture());
  return a;
}

using test::child;
using test::kernel;

using test::trace_event;

TEST(ProfileAnalysis, TraceTotals) {
  const ProfileAnalysis& a = analysis();
  EXPECT_EQ(a.records, 46u);
  EXPECT_EQ(a.origin_ns, 1'000'000'000u);
  EXPECT_EQ(a.span_ns(), 670 * kUs);
  EXPECT_EQ(a.gpu_busy_ns, 283 * kUs);  // the union: the overlapping streams' 5 us once
  EXPECT_EQ(a.kernel_ns, (210 + 30 + 8) * kUs);
  EXPECT_EQ(a.copy_ns, (20 + 30) * kUs);
  EXPECT_EQ(a.unattributed.kernels, 1u);
  EXPECT_EQ(a.unattributed.kernel_ns, 8 * kUs);
  EXPECT_EQ(a.unattributed.copies, 0u);
}

TEST(ProfileAnalysis, KernelsByTotalTime) {
  const ProfileAnalysis& a = analysis();
  ASSERT_EQ(a.kernels.size(), 3u);
  EXPECT_EQ(a.kernels[0].name, "gemm_kernel");
  EXPECT_EQ(a.kernels[1].name, "relu_kernel");
  EXPECT_EQ(a.kernels[2].name, "external_kernel");
  const KernelSummary& gemm = kernel(a, "gemm_kernel");
  EXPECT_EQ(gemm.calls, 6u);
  EXPECT_EQ(gemm.total_ns, 210 * kUs);
  EXPECT_EQ(gemm.median_ns, 30 * kUs);  // lower middle of 30, 30, 30, 40, 40, 40
  EXPECT_EQ(gemm.min_ns, 30 * kUs);
  EXPECT_EQ(gemm.max_ns, 40 * kUs);
  EXPECT_DOUBLE_EQ(gemm.share_of_busy, 210.0 / 283.0);
  const KernelSummary& relu = kernel(a, "relu_kernel");
  EXPECT_EQ(relu.calls, 3u);
  EXPECT_EQ(relu.total_ns, 30 * kUs);
  EXPECT_EQ(relu.median_ns, 10 * kUs);
  EXPECT_FALSE(gemm.model.has_value());  // no counters in this trace: never guessed
}

TEST(ProfileAnalysis, CopiesAndApi) {
  const ProfileAnalysis& a = analysis();
  ASSERT_EQ(a.copies.size(), 2u);
  EXPECT_EQ(a.copies[0].direction, "DtoH");
  EXPECT_EQ(a.copies[0].count, 3u);
  EXPECT_EQ(a.copies[0].bytes, 1'500'000u);
  EXPECT_EQ(a.copies[0].total_ns, 30 * kUs);
  ASSERT_TRUE(a.copies[0].bytes_per_s);
  EXPECT_DOUBLE_EQ(*a.copies[0].bytes_per_s, 50e9);
  EXPECT_EQ(a.copies[1].direction, "HtoD");
  EXPECT_EQ(a.copies[1].bytes, 1'000'000u);
  EXPECT_DOUBLE_EQ(*a.copies[1].bytes_per_s, 50e9);

  ASSERT_EQ(a.api.size(), 5u);
  const std::vector<std::pair<std::string, std::uint64_t>> expected = {
      {"cudaLaunchKernel", 36},
      {"cudaStreamSynchronize", 30},
      {"cudaMemcpy", 25},
      {"cudaMemcpyAsync", 12},
      {"cuLaunchKernel", 9}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(a.api[i].name, expected[i].first);
    EXPECT_EQ(a.api[i].total_ns, expected[i].second * kUs) << expected[i].first;
  }
  EXPECT_EQ(a.api[0].count, 9u);
  EXPECT_EQ(a.api[4].kind, TraceKind::driver_api);
}

TEST(ProfileAnalysis, RangeTreeNestsAndAttributesByLaunch) {
  const ProfileAnalysis& a = analysis();
  ASSERT_EQ(a.threads.size(), 1u);
  EXPECT_EQ(a.threads[0].process_id, 100u);
  EXPECT_EQ(a.threads[0].thread_id, 1u);
  ASSERT_EQ(a.threads[0].roots.size(), 1u);
  const RangeNode& step = a.threads[0].roots[0];
  EXPECT_EQ(step.path, "step");
  EXPECT_EQ(step.calls, 3u);
  EXPECT_EQ(step.wall_ns, 480 * kUs);
  EXPECT_DOUBLE_EQ(step.share_of_top, 1.0);
  EXPECT_EQ(step.work.kernels, 9u);
  EXPECT_EQ(step.work.copies, 3u);
  EXPECT_EQ(step.work.kernel_ns, 240 * kUs);
  EXPECT_EQ(step.work.copy_ns, 30 * kUs);
  EXPECT_EQ(step.work.api_ns, 78 * kUs);  // launches 12 + memcpy 4 + sync 10 us, x3
  EXPECT_EQ(step.work.gpu_idle_ns, 225 * kUs);
  ASSERT_EQ(step.children.size(), 1u);

  const RangeNode& forward = child(step, "forward");
  EXPECT_EQ(forward.calls, 3u);
  EXPECT_EQ(forward.wall_ns, 300 * kUs);
  EXPECT_DOUBLE_EQ(forward.share_of_top, 300.0 / 480.0);
  EXPECT_EQ(forward.work.kernels, 9u);
  EXPECT_EQ(forward.work.copies, 0u);
  EXPECT_EQ(forward.work.api_ns, 36 * kUs);
  EXPECT_EQ(forward.work.gpu_idle_ns, 75 * kUs);
  ASSERT_EQ(forward.children.size(), 2u);
  EXPECT_EQ(forward.children[0].name, "layer0");  // by first start
  EXPECT_EQ(forward.children[1].name, "layer1");

  // layer0's gemm runs until o+60, past layer0's end: still layer0's (launched there).
  const RangeNode& layer0 = child(forward, "layer0");
  EXPECT_EQ(layer0.path, "step/forward/layer0");
  EXPECT_EQ(layer0.calls, 3u);
  EXPECT_EQ(layer0.wall_ns, 114 * kUs);
  EXPECT_EQ(layer0.work.kernels, 3u);
  EXPECT_EQ(layer0.work.kernel_ns, 120 * kUs);
  EXPECT_EQ(layer0.work.api_ns, 15 * kUs);  // the driver call inside the runtime call: once
  EXPECT_EQ(layer0.work.gpu_idle_ns, 24 * kUs);
  EXPECT_EQ(layer0.not_nested, 0u);
  EXPECT_EQ(layer0.unclosed, 0u);

  const RangeNode& layer1 = child(forward, "layer1");
  EXPECT_EQ(layer1.wall_ns, 150 * kUs);
  EXPECT_DOUBLE_EQ(layer1.share_of_top, 150.0 / 480.0);
  EXPECT_EQ(layer1.work.kernels, 6u);
  EXPECT_EQ(layer1.work.kernel_ns, 120 * kUs);
  EXPECT_EQ(layer1.work.api_ns, 21 * kUs);
  EXPECT_EQ(layer1.work.gpu_idle_ns, 30 * kUs);
  EXPECT_TRUE(layer1.children.empty());
}

TEST(ProfileAnalysis, IterationBreakdown) {
  const ProfileAnalysis& a = analysis();
  ASSERT_TRUE(a.iterations);
  const IterationBreakdown& b = *a.iterations;
  EXPECT_EQ(b.range, "step");
  ASSERT_EQ(b.iterations.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const Iteration& it = b.iterations[i];
    EXPECT_EQ(it.start_ns, 1'000'000'000u + (100 + 200 * i) * kUs);
    EXPECT_EQ(it.wall_ns, (150 + 10 * i) * kUs);
    EXPECT_EQ(it.kernel_ns, 75 * kUs);
    EXPECT_EQ(it.copy_ns, 10 * kUs);
    EXPECT_EQ(it.idle_ns, (65 + 10 * i) * kUs);
    EXPECT_EQ(it.kernel_ns + it.copy_ns + it.idle_ns, it.wall_ns);
  }
  EXPECT_EQ(b.wall.median_ns, 160 * kUs);
  EXPECT_EQ(b.wall.min_ns, 150 * kUs);
  EXPECT_EQ(b.wall.max_ns, 170 * kUs);
  EXPECT_EQ(b.idle.median_ns, 75 * kUs);
  EXPECT_EQ(b.kernel.max_ns, 75 * kUs);
  EXPECT_EQ(b.copy.median_ns, 10 * kUs);

  // A named range that is not top-level, or not there: no breakdown.
  EXPECT_FALSE(analyze_profile(fixture(), {"forward"}).iterations);
  EXPECT_FALSE(analyze_profile(fixture(), {"nothing"}).iterations);
}

// `profile --api none`: the fixture without its API and synchronization records.
// No GPU work can be tied to a thread or range (all of it unattributed, range work
// and API time "not traced"), but GPU idle time still holds: the work of no known
// process counts as the only process's, so every range's idle time and the
// iteration breakdown equal the hand-computed truth of the full trace.
TEST(ProfileAnalysis, WithoutApiCallsIdleTimeHoldsAndNothingIsAttributed) {
  const std::vector<TraceEvent> events = test::without_api_records(fixture());
  ProfileOptions options;
  options.api = ApiTracing::none;
  const ProfileAnalysis a = analyze_profile(events, options);
  EXPECT_FALSE(a.api_traced());
  EXPECT_TRUE(a.api.empty());
  EXPECT_EQ(a.gpu_busy_ns, 283 * kUs);
  EXPECT_EQ(a.unattributed.kernels, 10u);
  EXPECT_EQ(a.unattributed.kernel_ns, (210 + 30 + 8) * kUs);
  EXPECT_EQ(a.unattributed.copies, 4u);

  ASSERT_EQ(a.threads.size(), 1u);
  const RangeNode& step = a.threads[0].roots[0];
  EXPECT_EQ(step.work.kernels, 0u);
  EXPECT_EQ(step.work.api_ns, 0u);
  EXPECT_EQ(step.work.gpu_idle_ns, 225 * kUs);
  EXPECT_EQ(child(step, "forward").work.gpu_idle_ns, 75 * kUs);
  EXPECT_EQ(child(child(step, "forward"), "layer0").work.gpu_idle_ns, 24 * kUs);
  EXPECT_EQ(child(child(step, "forward"), "layer1").work.gpu_idle_ns, 30 * kUs);
  ASSERT_TRUE(a.iterations);
  ASSERT_EQ(a.iterations->iterations.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const Iteration& it = a.iterations->iterations[i];
    EXPECT_EQ(it.kernel_ns, 75 * kUs);
    EXPECT_EQ(it.copy_ns, 10 * kUs);
    EXPECT_EQ(it.idle_ns, (65 + 10 * i) * kUs);
  }

  // Read as a trace of every call (a stored run before --api), the same records
  // would make the whole iteration host-only: why the run keeps its choice.
  const ProfileAnalysis as_all = analyze_profile(events);
  EXPECT_TRUE(as_all.api_traced());
  EXPECT_EQ(as_all.iterations->iterations[0].idle_ns, 150 * kUs);
}

TEST(ProfileAnalysis, LaunchingCalls) {
  const std::vector<std::optional<std::size_t>> launcher = launching_calls(fixture());
  std::size_t attributed = 0;
  for (std::size_t i = 0; i < fixture().size(); ++i) {
    if (!launcher[i]) continue;
    ++attributed;
    const TraceEvent& call = fixture()[*launcher[i]];
    EXPECT_EQ(call.correlation_id, fixture()[i].correlation_id);
    EXPECT_EQ(call.kind, TraceKind::runtime_api);
  }
  EXPECT_EQ(attributed, 13u);  // every GPU record but the external kernel
}

TEST(ProfileAnalysis, EmptyTrace) {
  const ProfileAnalysis a = analyze_profile({});
  EXPECT_EQ(a.records, 0u);
  EXPECT_EQ(a.span_ns(), 0u);
  EXPECT_EQ(a.gpu_busy_ns, 0u);
  EXPECT_TRUE(a.kernels.empty());
  EXPECT_TRUE(a.threads.empty());
  EXPECT_FALSE(a.iterations);
  EXPECT_TRUE(range_instances({}).empty());
}

TEST(ProfileAnalysis, UnclosedRangesEndAtTheTraceEnd) {
  std::vector<TraceEvent> events = {
      trace_event(TraceKind::nvtx_range, "open0", 100, 0),  // end 0: never closed
      trace_event(TraceKind::nvtx_range, "openmax", 200, std::numeric_limits<std::uint64_t>::max()),
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 300, 400, 7),
      trace_event(TraceKind::kernel, "k", 500, 1000, 7)};
  const ProfileAnalysis a = analyze_profile(events);
  EXPECT_EQ(a.end_ns, 1000u);
  EXPECT_EQ(a.span_ns(), 900u);
  const std::vector<RangeInstance> ranges = range_instances(events);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_FALSE(ranges[0].closed);
  EXPECT_EQ(ranges[0].end_ns, 1000u);
  EXPECT_FALSE(ranges[1].closed);
  EXPECT_EQ(ranges[1].parent, std::optional<std::size_t>(0));  // inside open0 once clipped
  ASSERT_EQ(a.threads.size(), 1u);
  const RangeNode& open0 = a.threads[0].roots.at(0);
  EXPECT_EQ(open0.wall_ns, 900u);
  EXPECT_EQ(open0.unclosed, 1u);
  EXPECT_EQ(open0.work.kernels, 1u);
  EXPECT_EQ(open0.work.gpu_idle_ns, 400u);
  const RangeNode& openmax = open0.children.at(0);
  EXPECT_EQ(openmax.wall_ns, 800u);
  EXPECT_EQ(openmax.unclosed, 1u);
}

TEST(ProfileAnalysis, UnattributedWork) {
  std::vector<TraceEvent> events = {
      trace_event(TraceKind::nvtx_range, "r", 0, 1000),
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 10, 20, 5),
      trace_event(TraceKind::kernel, "no_correlation", 100, 200, 0),
      trace_event(TraceKind::kernel, "no_call", 200, 400, 99),
      trace_event(TraceKind::memcpy, "HtoD", 400, 500, 98)};
  events.back().bytes = 4096;
  const ProfileAnalysis a = analyze_profile(events);
  EXPECT_EQ(a.unattributed.kernels, 2u);
  EXPECT_EQ(a.unattributed.kernel_ns, 300u);
  EXPECT_EQ(a.unattributed.copies, 1u);
  EXPECT_EQ(a.unattributed.copy_ns, 100u);
  const RangeNode& r = a.threads.at(0).roots.at(0);
  EXPECT_EQ(r.work.kernels, 0u);
  EXPECT_EQ(r.work.gpu_idle_ns, 1000u);  // unattributed work belongs to no process
  EXPECT_EQ(a.gpu_busy_ns, 400u);        // but the GPU was busy with it
}

TEST(ProfileAnalysis, TwoProcesses) {
  std::vector<TraceEvent> events = {
      trace_event(TraceKind::nvtx_range, "step", 0, 100, 0, 1, 11),
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 5, 8, 1, 1, 11),
      trace_event(TraceKind::kernel, "a", 10, 30, 1),
      trace_event(TraceKind::nvtx_range, "step", 0, 100, 0, 2, 22),
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 20, 25, 2, 2, 22),
      trace_event(TraceKind::kernel, "b", 40, 90, 2)};
  events[5].device = 1;
  const ProfileAnalysis a = analyze_profile(events);
  ASSERT_EQ(a.threads.size(), 2u);
  EXPECT_EQ(a.threads[0].process_id, 1u);
  EXPECT_EQ(a.threads[1].process_id, 2u);
  const RangeNode& first = a.threads[0].roots.at(0);
  EXPECT_EQ(first.work.kernels, 1u);
  EXPECT_EQ(first.work.kernel_ns, 20u);
  EXPECT_EQ(first.work.gpu_idle_ns, 80u);  // the other process's kernel is not its work
  const RangeNode& second = a.threads[1].roots.at(0);
  EXPECT_EQ(second.work.kernel_ns, 50u);
  EXPECT_EQ(second.work.gpu_idle_ns, 50u);
  EXPECT_EQ(a.gpu_busy_ns, 70u);  // two devices: each one's union, summed
  ASSERT_TRUE(a.iterations);
  EXPECT_EQ(a.iterations->iterations.size(), 2u);
  EXPECT_EQ(a.iterations->idle.min_ns, 50u);
  EXPECT_EQ(a.iterations->idle.max_ns, 80u);
}

// Each process counts its correlation ids from 1: a kernel belongs to the call
// of its own process with its id (the injection library records the process of
// GPU work); a trace recorded before GPU records named it matches by id alone.
TEST(ProfileAnalysis, TwoProcessesWithOneCorrelationId) {
  std::vector<TraceEvent> events = {
      trace_event(TraceKind::nvtx_range, "step", 0, 100, 0, 1, 11),
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 5, 8, 3, 1, 11),
      trace_event(TraceKind::nvtx_range, "step", 0, 100, 0, 2, 22),
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 20, 25, 3, 2, 22),
      trace_event(TraceKind::kernel, "b", 40, 90, 3),
      trace_event(TraceKind::kernel, "a", 10, 30, 3)};
  events[4].process_id = 2;
  events[4].device = 1;
  events[5].process_id = 1;
  const std::vector<std::optional<std::size_t>> launcher = launching_calls(events);
  EXPECT_EQ(launcher[4], 3u);
  EXPECT_EQ(launcher[5], 1u);
  const ProfileAnalysis a = analyze_profile(events);
  ASSERT_EQ(a.threads.size(), 2u);
  EXPECT_EQ(a.threads[0].roots.at(0).work.kernel_ns, 20u);
  EXPECT_EQ(a.threads[1].roots.at(0).work.kernel_ns, 50u);
  events[4].process_id = events[5].process_id = 0;  // an older trace: the first call with the id
  EXPECT_EQ(launching_calls(events)[4], 1u);
}

TEST(ProfileAnalysis, StartEndRangesThatDoNotNestStayFlat) {
  std::vector<TraceEvent> events = {
      trace_event(TraceKind::nvtx_range, "outer", 0, 1000),
      trace_event(TraceKind::nvtx_range, "a", 100, 500),
      trace_event(TraceKind::nvtx_range, "b", 300, 800),   // overlaps a, inside outer
      trace_event(TraceKind::nvtx_range, "c", 350, 400),   // inside b
      trace_event(TraceKind::nvtx_range, "d", 500, 600)};  // starts where a ends: inside b
  const ProfileAnalysis a = analyze_profile(events);
  const RangeNode& outer = a.threads.at(0).roots.at(0);
  ASSERT_EQ(outer.children.size(), 2u);
  EXPECT_EQ(outer.children[0].name, "a");
  EXPECT_EQ(outer.children[0].not_nested, 0u);
  EXPECT_EQ(outer.children[1].name, "b");
  EXPECT_EQ(outer.children[1].not_nested, 1u);
  ASSERT_EQ(outer.children[1].children.size(), 2u);
  EXPECT_EQ(outer.children[1].children[0].path, "outer/b/c");
  EXPECT_EQ(outer.children[1].children[1].path, "outer/b/d");
  EXPECT_TRUE(outer.children[0].children.empty());
}

TEST(ProfileAnalysis, MostRepeatedTopLevelRangeIsTheIteration) {
  std::vector<TraceEvent> events = {trace_event(TraceKind::nvtx_range, "init", 0, 1000)};
  for (std::uint64_t i = 0; i < 2; ++i)
    events.push_back(trace_event(TraceKind::nvtx_range, "iter", 1000 + 100 * i, 1050 + 100 * i));
  const ProfileAnalysis a = analyze_profile(events);
  ASSERT_TRUE(a.iterations);
  EXPECT_EQ(a.iterations->range, "iter");
  EXPECT_EQ(a.iterations->iterations.size(), 2u);
  EXPECT_EQ(a.iterations->wall.median_ns, 50u);
  EXPECT_EQ(analyze_profile(events, {"init"}).iterations->wall.max_ns, 1000u);
}

}  // namespace
}  // namespace timeroof::roofline
