// GPU tier: the range profiler's per-operator mode (user range + user replay),
// with idempotent work and with work that needs CUPTI's checkpoint restore, and
// its per-kernel mode inside one call (auto range + user replay).
#include <gtest/gtest.h>

#include <vector>

#include "counters/probe_kernel.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/handles.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/gpu/replay_kernels.hpp"

namespace timeroof {
namespace {

// Needs two replay passes on GH100 (`timeroof metrics --passes`), so replay really happens.
const std::vector<std::string> kTwoPassMetrics = {
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"};

TEST(RangeProfiler, UserRangesSumEveryKernelOfAnOperator) {
  TR_REQUIRE_GPU();
  ProfilerSession session;
  const FfmaProbe small{32, 64, 100};
  const FfmaProbe large{264, 256, 1000};
  DeviceBuffer<float> out(static_cast<std::size_t>(large.blocks) * large.threads);
  int calls_a = 0;
  const ProfileResult result = session.profile_ranges(
      kTwoPassMetrics, {{"two_small",
                         [&] {
                           ++calls_a;
                           launch_ffma_probe(small, out.get(), nullptr);
                           launch_ffma_probe(small, out.get(), nullptr);
                         }},
                        {"one_large", [&] { launch_ffma_probe(large, out.get(), nullptr); }}});
  EXPECT_GE(result.passes, 2u);
  EXPECT_EQ(calls_a, static_cast<int>(result.passes)) << "each range runs once per pass";
  EXPECT_EQ(result.dropped_ranges, 0u);
  ASSERT_EQ(result.ranges.size(), 2u);
  EXPECT_EQ(result.ranges[0].name, "two_small");
  EXPECT_EQ(result.ranges[1].name, "one_large");
  EXPECT_DOUBLE_EQ(result.ranges[0].values[0], 2 * small.expected_ffma());
  EXPECT_DOUBLE_EQ(result.ranges[1].values[0], large.expected_ffma());
  EXPECT_DOUBLE_EQ(result.ranges[1].values[5], 1.0 * large.blocks * large.threads);  // FADD
  // A user range's duration is its span on the GPU, launch gaps included.
  EXPECT_GT(result.ranges[0].values[1], 0);
  EXPECT_GT(result.ranges[1].values[1], 0);
}

TEST(RangeProfiler, CallKernelsGetOneRangeEachWithTheCallReplayed) {
  TR_REQUIRE_GPU();
  ProfilerSession session;
  const FfmaProbe small{32, 64, 100};
  const FfmaProbe large{264, 256, 1000};
  DeviceBuffer<float> out(static_cast<std::size_t>(large.blocks) * large.threads);
  int calls = 0, setups = 0;
  UserRange call{"op",
                 [&] {
                   ++calls;
                   launch_ffma_probe(small, out.get(), nullptr);
                   launch_ffma_probe(large, out.get(), nullptr);
                   launch_ffma_probe(small, out.get(), nullptr);
                 },
                 [&] {
                   ++setups;
                   launch_ffma_probe(large, out.get(), nullptr);  // outside: not a range
                 }};
  const ProfileResult result = session.profile_call_kernels(kTwoPassMetrics, call);
  EXPECT_GE(result.passes, 2u);
  EXPECT_EQ(calls, static_cast<int>(result.passes)) << "the whole call runs once per pass";
  EXPECT_EQ(setups, calls);
  EXPECT_EQ(result.dropped_ranges, 0u);
  ASSERT_EQ(result.ranges.size(), 3u) << "one range per kernel of the call, none for setup";
  EXPECT_DOUBLE_EQ(result.ranges[0].values[0], small.expected_ffma());
  EXPECT_DOUBLE_EQ(result.ranges[1].values[0], large.expected_ffma());
  EXPECT_DOUBLE_EQ(result.ranges[2].values[0], small.expected_ffma());
  for (const RangeValues& range : result.ranges) EXPECT_GT(range.values[1], 0) << range.name;

  // More kernels than ranges: the rest are reported as dropped, never lost silently.
  const ProfileResult capped = session.profile_call_kernels(kTwoPassMetrics, call, 2);
  EXPECT_EQ(capped.ranges.size(), 2u);
  EXPECT_GE(capped.dropped_ranges, 1u);
}

// Several calls in one collection: each call's ranges are its own kernels, the
// preludes' kernels are dropped, and the counts equal the analytic ones.
TEST(RangeProfiler, CallBatchGivesEachCallItsKernels) {
  TR_REQUIRE_GPU();
  ProfilerSession session;
  const FfmaProbe small{32, 64, 100};
  const FfmaProbe medium{132, 128, 300};
  const FfmaProbe large{264, 256, 1000};
  DeviceBuffer<float> out(static_cast<std::size_t>(large.blocks) * large.threads);
  int runs_a = 0, preludes_a = 0;
  BatchedCall a;  // two kernels, a one-kernel prelude
  a.prelude = [&] {
    ++preludes_a;
    launch_ffma_probe(large, out.get(), nullptr);
  };
  a.prelude_kernels = 1;
  a.run = [&] {
    ++runs_a;
    launch_ffma_probe(small, out.get(), nullptr);
    launch_ffma_probe(medium, out.get(), nullptr);
  };
  a.kernels = 2;
  BatchedCall b;  // one kernel, its prelude a call of its own (warm)
  b.run = [&] { launch_ffma_probe(large, out.get(), nullptr); };
  b.kernels = 1;
  b.prelude = b.run;
  b.prelude_kernels = 1;
  BatchedCall c;  // three kernels, no prelude
  c.run = [&] {
    launch_ffma_probe(medium, out.get(), nullptr);
    launch_ffma_probe(small, out.get(), nullptr);
    launch_ffma_probe(large, out.get(), nullptr);
  };
  c.kernels = 3;
  const std::vector<ProfileResult> results = session.profile_call_batch(kTwoPassMetrics, {a, b, c});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_GE(results[0].passes, 2u);
  EXPECT_EQ(runs_a, static_cast<int>(results[0].passes)) << "every call runs once per pass";
  EXPECT_EQ(preludes_a, runs_a);
  ASSERT_EQ(results[0].ranges.size(), 2u);
  ASSERT_EQ(results[1].ranges.size(), 1u);
  ASSERT_EQ(results[2].ranges.size(), 3u);
  EXPECT_DOUBLE_EQ(results[0].ranges[0].values[0], small.expected_ffma());
  EXPECT_DOUBLE_EQ(results[0].ranges[1].values[0], medium.expected_ffma());
  EXPECT_DOUBLE_EQ(results[1].ranges[0].values[0], large.expected_ffma());
  EXPECT_DOUBLE_EQ(results[2].ranges[0].values[0], medium.expected_ffma());
  EXPECT_DOUBLE_EQ(results[2].ranges[1].values[0], small.expected_ffma());
  EXPECT_DOUBLE_EQ(results[2].ranges[2].values[0], large.expected_ffma());
  for (const ProfileResult& r : results) {
    EXPECT_EQ(r.dropped_ranges, 0u);
    for (const RangeValues& range : r.ranges) EXPECT_GT(range.values[1], 0) << range.name;
  }

  // A call that launches more or fewer kernels than it declares cannot be mapped.
  BatchedCall wrong = c;
  wrong.kernels = 2;
  EXPECT_THROW(session.profile_call_batch(kTwoPassMetrics, {a, wrong}), KernelCountMismatch);
  wrong.kernels = 4;
  EXPECT_THROW(session.profile_call_batch(kTwoPassMetrics, {wrong, b}), KernelCountMismatch);
  // The session is usable after a mismatch.
  EXPECT_EQ(session.profile_call_batch(kTwoPassMetrics, {b}).at(0).ranges.size(), 1u);
}

TEST(RangeProfiler, CheckpointRestoresStateBetweenPasses) {
  TR_REQUIRE_GPU();
  constexpr int kBlocks = 132, kThreads = 128, kIterations = 500;
  const double expected_ffma = 2.0 * kIterations * kBlocks * kThreads;
  DeviceBuffer<unsigned> counters(kBlocks * kThreads);
  ProfilerSession session;
  auto run = [&] {
    test::launch_consume_once(counters.get(), kBlocks, kThreads, kIterations, nullptr);
  };

  TR_CUDA_CHECK(cudaMemset(counters.get(), 0, counters.bytes()));
  const ProfileResult restored =
      session.profile_ranges(kTwoPassMetrics, {{"consume", run}}, ReplayState::checkpoint);
  ASSERT_GE(restored.passes, 2u);
  // Whichever pass collected the FFMA counter saw the starting state.
  EXPECT_DOUBLE_EQ(restored.ranges.at(0).values[0], expected_ffma);
  std::vector<unsigned> host(counters.size());
  TR_CUDA_CHECK(cudaMemcpy(host.data(), counters.get(), counters.bytes(), cudaMemcpyDeviceToHost));
  EXPECT_EQ(host.front(), 0u) << "the caller's state is restored after profiling";

  // The same work replayed without a restore: later passes do nothing, so a
  // counter collected in pass 2 reads 0 (what ReplayState::checkpoint prevents).
  TR_CUDA_CHECK(cudaMemset(counters.get(), 0, counters.bytes()));
  const ProfileResult unrestored =
      session.profile_ranges(kTwoPassMetrics, {{"consume", run}}, ReplayState::idempotent);
  TR_CUDA_CHECK(cudaMemcpy(host.data(), counters.get(), counters.bytes(), cudaMemcpyDeviceToHost));
  EXPECT_EQ(host.front(), unrestored.passes) << "ran once per pass";
  const double ffma = unrestored.ranges.at(0).values[0];
  EXPECT_TRUE(ffma == expected_ffma || ffma == 0) << ffma;
  std::printf("user replay: %zu passes; FFMA with checkpoint %.0f, without %.0f (expected %.0f)\n",
              restored.passes, restored.ranges.at(0).values[0], ffma, expected_ffma);
}

}  // namespace
}  // namespace timeroof
