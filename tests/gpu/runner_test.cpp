// GPU tier: the sweep runner end to end on cuDNN Conv2D points.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/json_io.hpp"
#include "core/statistics.hpp"
#include "counters/counter_access.hpp"
#include "sweeps/runner.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/paper_layer.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

struct CollectingSink : PointSink {
  std::vector<Point> points;
  std::function<void()> after_write;
  void write(Point& point) override {
    points.push_back(point);
    if (after_write) after_write();
  }
};

TEST(SweepRunner, MeasuresAPointCompletely) {
  TR_REQUIRE_GPU();
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  const OperatorFamily family = conv2d_family();
  const Point p = runner.measure_point(family, paper_point(16), "test", 0);
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
  EXPECT_EQ(p.op, "conv2d_fwd");
  EXPECT_FALSE(p.algorithm.empty());
  EXPECT_EQ(p.details["check"]["status"], "passed") << p.details["check"];
  // The three times, each with its interval, and the host issue time.
  ASSERT_TRUE(p.timing.call && p.timing.stream && p.timing.graph && p.timing.issue)
      << nlohmann::json(p.timing).dump() << p.details["timing"];
  EXPECT_TRUE(p.timing.graph_unavailable.empty()) << p.timing.graph_unavailable;
  EXPECT_GT(*p.timing.call_s(), 1e-6);
  EXPECT_GE(p.timing.call->samples, 30);
  for (const TimeStats* t : {&*p.timing.call, &*p.timing.stream, &*p.timing.graph}) {
    ASSERT_TRUE(t->ci_low_s && t->ci_high_s);
    EXPECT_LE(*t->ci_low_s, t->median_s);
    EXPECT_GE(*t->ci_high_s, t->median_s);
  }
  // One synchronized call costs at least what a call costs in a loop, and the
  // loop at least what the graph replay costs (5% for noise).
  EXPECT_GE(*p.timing.call_s() * 1.05, *p.timing.stream_s());
  EXPECT_GE(*p.timing.stream_s() * 1.05, *p.timing.graph_s());
  EXPECT_LT(*p.timing.issue_s(), *p.timing.call_s());
  EXPECT_GE(p.details["timing"]["graph"]["copies_per_graph"].get<int>(), 1);
  EXPECT_TRUE(p.details["timing"]["pinned_core"].is_number_integer()) << p.details["timing"];
  EXPECT_TRUE(p.details["trace"]["api_calls_per_call"].is_object()) << p.details["trace"];
  ASSERT_TRUE(p.timing.kernel_time_s && p.timing.launches);
  EXPECT_GE(*p.timing.launches, 1);
  EXPECT_LE(*p.timing.kernel_time_s, *p.timing.call_s() * 1.5);
  EXPECT_EQ(p.kernels.size(), static_cast<std::size_t>(*p.timing.launches));
  ASSERT_TRUE(p.counters.count("tensor_fp16_flops")) << nlohmann::json(p.counters).dump();
  EXPECT_DOUBLE_EQ(p.counters.at("tensor_fp16_flops"), p.flops);
  EXPECT_GT(p.counters.at("dram_read_bytes"), 0);
  EXPECT_LE(p.details["counters"]["passes"].get<int>(), 3);
  // Per-kernel counters add up to the operator's.
  ASSERT_TRUE(p.details["counters"]["per_kernel"].get<bool>()) << p.details["counters"];
  double kernel_flops = 0;
  for (const KernelRecord& k : p.kernels) {
    ASSERT_TRUE(k.metrics.count("tensor_fp16_flops")) << k.name;
    ASSERT_TRUE(k.metrics.count("gpu__time_duration.sum")) << k.name;
    kernel_flops += k.metrics.at("tensor_fp16_flops");
  }
  EXPECT_DOUBLE_EQ(kernel_flops, p.counters.at("tensor_fp16_flops"));
  // Where the point's time went, step by step.
  for (const char* step : {"prepare", "check", "timing", "trace", "counters"}) {
    ASSERT_TRUE(p.details["runner_seconds"].contains(step)) << step << p.details;
    EXPECT_GT(p.details["runner_seconds"][step].get<double>(), 0) << step;
  }
  // And inside the timing step, in the process that timed it (runner.hpp).
  const nlohmann::json& phases = p.details["timing"]["phase_seconds"];
  double parts = 0;
  for (const char* phase :
       {"host_probes", "warm_up", "graph_setup", "call", "stream", "graph", "passes_other"}) {
    ASSERT_TRUE(phases.contains(phase)) << phase << phases;
    parts += phases[phase].get<double>();
  }
  EXPECT_GT(phases["call"].get<double>(), 0) << phases;
  EXPECT_LE(phases["warm_up_first_call"].get<double>(), phases["warm_up"].get<double>());
  EXPECT_NEAR(parts, phases["total"].get<double>(), 1e-3) << phases;
  std::printf(
      "conv fp16 n16: T_call %.1f us, T_stream %.1f us, T_graph %.1f us, issue %.1f us, %.1f us "
      "kernels, %lld launch(es), %s, %d passes\n",
      *p.timing.call_s() * 1e6, *p.timing.stream_s() * 1e6, *p.timing.graph_s() * 1e6,
      *p.timing.issue_s() * 1e6, *p.timing.kernel_time_s * 1e6,
      static_cast<long long>(*p.timing.launches), p.algorithm.c_str(),
      p.details["counters"]["passes"].get<int>());
}

TEST(SweepRunner, ResumesAndStopsBetweenPoints) {
  TR_REQUIRE_GPU();
  RunnerOptions options;
  options.counters = false;  // timing-only mode: points stay ok, counters empty
  options.host_windows = 1;  // nothing waits for a batch: each point is written at once
  SweepRunner runner(inspect_gpu(0), options);
  const OperatorFamily family = conv2d_family();
  SweepPlan plan{
      "batch", &family, {paper_point(1), paper_point(2), paper_point(4), paper_point(8)}};
  std::atomic<bool> stop = false;
  CollectingSink sink;
  sink.after_write = [&] {
    if (sink.points.size() == 2) stop = true;  // as Ctrl-C during the second point would
  };
  const SweepOutcome first = runner.run(plan, {0}, sink, stop);  // point 0 already stored
  EXPECT_EQ(first.already_finished, 1);
  EXPECT_EQ(first.measured, 2);
  EXPECT_TRUE(first.interrupted);
  ASSERT_EQ(sink.points.size(), 2u);
  EXPECT_EQ(sink.points[0].seq, 1);
  EXPECT_EQ(sink.points[1].seq, 2);
  for (const Point& p : sink.points) {
    EXPECT_EQ(p.status, PointStatus::ok) << p.reason;
    EXPECT_TRUE(p.counters.empty());
    EXPECT_EQ(p.details["counters"]["collected"], false);
  }
  stop = false;
  const SweepOutcome rest = runner.run(plan, {0, 1, 2}, sink, stop);
  EXPECT_EQ(rest.measured, 1);
  EXPECT_FALSE(rest.interrupted);
  EXPECT_EQ(sink.points.back().seq, 3);
}

TEST(SweepRunner, FailedPointsGetAStatusAndTheSweepGoesOn) {
  TR_REQUIRE_GPU();
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  const OperatorFamily family = conv2d_family();
  nlohmann::json unsupported = paper_point(2);
  unsupported["algorithm"] = "CUDNN_CONVOLUTION_FWD_ALGO_FFT";  // FFT rejects stride 2
  unsupported["cudnn_api"] = "legacy";         // cuDNN's own refusal, not our usage error
  nlohmann::json huge = paper_point(1 << 20);  // terabytes of input
  SweepPlan plan{"bad", &family, {unsupported, huge, paper_point(1)}};
  CollectingSink sink;
  const std::atomic<bool> stop = false;
  const SweepOutcome outcome = runner.run(plan, {}, sink, stop);
  ASSERT_EQ(sink.points.size(), 3u);
  EXPECT_EQ(outcome.not_ok, 2);
  EXPECT_EQ(sink.points[0].status, PointStatus::unsupported) << sink.points[0].reason;
  EXPECT_FALSE(sink.points[0].reason.empty());
  EXPECT_EQ(sink.points[1].status, PointStatus::out_of_memory) << sink.points[1].reason;
  EXPECT_EQ(sink.points[2].status, PointStatus::ok) << sink.points[2].reason;
}

// An LSTM call launches dozens of kernels: each gets its own counters, in the
// trace's order, and they add up to the operator's (the model's per-kernel bound).
TEST(SweepRunner, MultiKernelOperatorsGetPerKernelCounters) {
  TR_REQUIRE_GPU();
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  const OperatorFamily family = lstm_family();
  const nlohmann::json params = {{"batch", 32},        {"seq_length", 16},    {"input_size", 256},
                                 {"hidden_size", 256}, {"precision", "fp32"}, {"math", "fma_only"}};
  const Point p = runner.measure_point(family, params, "test", 0);
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
  ASSERT_GT(p.kernels.size(), 2u);
  ASSERT_TRUE(p.details["counters"]["per_kernel"].get<bool>()) << p.details["counters"];
  double flops = 0, l2 = 0, duration = 0;
  for (const KernelRecord& k : p.kernels) {
    flops += k.metrics.at("fp32_flops");
    l2 += k.metrics.at("l2_bytes");
    duration += k.metrics.at("duration");
  }
  EXPECT_NEAR(flops, p.counters.at("fp32_flops"), 1e-9 * flops);
  EXPECT_NEAR(l2, p.counters.at("l2_bytes"), 1e-9 * l2);
  // Each range sits on its own kernel (issue #20: cuDNN starts a side-stream
  // kernel before one launched earlier; both lists are in launch order): its
  // counted time within 2x of its traced time, with 1 us for replay's overhead.
  EXPECT_FALSE(p.details["counters"].contains("kernel_mismatches")) << p.details["counters"];
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    const double counted = p.kernels[i].metrics.at("duration"), traced = p.kernels[i].duration_s;
    EXPECT_LE(std::max(counted, traced), 2 * (std::min(counted, traced) + 1e-6))
        << "kernel " << i << " " << p.kernels[i].name << ": counted " << counted << " s, traced "
        << traced << " s";
  }
  EXPECT_NEAR(duration, p.counters.at("duration"), 1e-9 * duration);
  // cuDNN may do a little more work than the analytic count, never less.
  EXPECT_GE(p.counters.at("fp32_flops"), 0.99 * p.flops);
  std::printf("lstm fp32 b32: %zu kernels with counters, %.4g FLOPs (analytic %.4g)\n",
              p.kernels.size(), p.counters.at("fp32_flops"), p.flops);
}

std::string kernel_names(const Point& point) {
  std::string names;
  for (const KernelRecord& kernel : point.kernels) names += kernel.name + "\n";
  return names;
}

// A sweep collects the counters of consecutive points in one collection, a
// batch ending where the metric set changes (fp16 -> fp32); each call finds L2
// as its timed calls did: warm (a call of its own just before) or cold (a flush).
// Points of two metric plans in turn (fp16 Tensor-Core and fp32 FMA convs, as a
// GEMM sweep's precisions or a --devices chunk give): each plan's points share a
// collection, instead of every change of plan ending the batch (4 collections
// of one point each before).
TEST(SweepRunner, PlansInTurnKeepEachPlansBatchTogether) {
  TR_REQUIRE_GPU();
  const OperatorFamily family = conv2d_family();
  auto fp32 = [](int batch) {
    nlohmann::json point = paper_point(batch);
    point["precision"] = "fp32";
    point["math"] = "fma_only";
    return point;
  };
  const SweepPlan plan{
      "plans in turn", &family, {paper_point(4), fp32(4), paper_point(8), fp32(8)}};
  RunnerOptions options;
  options.counter_batch = 2;
  SweepRunner runner(inspect_gpu(0), options);
  CollectingSink sink;
  const std::atomic<bool> stop = false;
  const SweepOutcome outcome = runner.run(plan, {}, sink, stop);
  EXPECT_EQ(outcome.not_ok, 0);
  ASSERT_EQ(sink.points.size(), 4u);
  std::vector<int> order;
  for (const Point& p : sink.points) {
    ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
    order.push_back(p.seq);
    EXPECT_EQ(p.details["counters"]["batch_size"].get<int>(), 2) << p.details["counters"];
    if (p.seq % 2 == 0)
      EXPECT_DOUBLE_EQ(p.counters.at("tensor_fp16_flops"), p.flops);
    else
      EXPECT_GT(p.counters.at("fp32_flops"), 0.99 * p.flops);
  }
  // The fp16 pair is collected (and written) once its second point is timed.
  EXPECT_EQ(order, (std::vector<int>{0, 2, 1, 3}));
}

TEST(SweepRunner, BatchedCountersGiveEachPointItsOwnCounters) {
  TR_REQUIRE_GPU();
  const OperatorFamily family = conv2d_family();
  nlohmann::json fp32 = paper_point(8);
  fp32["precision"] = "fp32";
  fp32["math"] = "fma_only";
  const SweepPlan plan{
      "batched", &family, {paper_point(4), paper_point(16), paper_point(32), fp32}};
  const std::atomic<bool> stop = false;
  auto sweep = [&](bool cold) {
    RunnerOptions options;
    options.counter_batch = 3;
    options.cold_l2 = cold;
    SweepRunner runner(inspect_gpu(0), options);
    CollectingSink sink;
    const SweepOutcome outcome = runner.run(plan, {}, sink, stop);
    EXPECT_EQ(outcome.not_ok, 0);
    return sink.points;
  };
  const std::vector<Point> warm = sweep(false);
  ASSERT_EQ(warm.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const Point& p = warm[i];
    ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
    EXPECT_EQ(p.seq, i) << "written in order";
    EXPECT_EQ(p.details["counters"]["batch_size"].get<int>(), i < 3 ? 3 : 1)
        << p.details["counters"];
    EXPECT_EQ(p.details["counters"]["l2"], "warm");
    EXPECT_TRUE(p.details["counters"]["per_kernel"].get<bool>()) << p.details["counters"];
    if (i < 3) EXPECT_DOUBLE_EQ(p.counters.at("tensor_fp16_flops"), p.flops);
  }
  EXPECT_GT(warm[3].counters.at("fp32_flops"), 0.99 * warm[3].flops);
  // Batch 4 (8 MB) fits in L2: warm, it reads next to nothing from DRAM.
  EXPECT_LT(warm[0].counters.at("dram_read_bytes"), 0.1 * warm[0].min_bytes);

  // Cold: each point reads at least its input from DRAM, and the batch gives the
  // same counters as each point in a collection of its own (a batch of one).
  const std::vector<Point> cold = sweep(true);
  ASSERT_EQ(cold.size(), 4u);
  RunnerOptions alone_options;
  alone_options.cold_l2 = true;
  SweepRunner alone_runner(inspect_gpu(0), alone_options);
  for (int i = 0; i < 3; ++i) {
    const Point& batched = cold[i];
    ASSERT_EQ(batched.status, PointStatus::ok) << batched.reason;
    EXPECT_EQ(batched.details["counters"]["l2"], "cold");
    const Point alone = alone_runner.measure_point(family, plan.points[i], "alone", i);
    ASSERT_EQ(alone.status, PointStatus::ok) << alone.reason;
    EXPECT_EQ(alone.details["counters"]["batch_size"].get<int>(), 1);
    EXPECT_DOUBLE_EQ(batched.counters.at("tensor_fp16_flops"),
                     alone.counters.at("tensor_fp16_flops"));
    const double input_bytes = batched.params["batch"].get<double>() * 64 * 112 * 112 * 2;
    EXPECT_GE(batched.counters.at("dram_read_bytes"), 0.95 * input_bytes);
    // The same plan both ways, or the comparison below compares two algorithms.
    EXPECT_EQ(kernel_names(batched), kernel_names(alone));
    // DRAM reads repeat to 0.1%. L2 sectors of the same kernel and grid vary by a few
    // percent from one call to the next (an H100, 4 runs of batch 4: 19.5-20.8 MB), as
    // L1 hits depend on which CTAs share an SM; 10% still tells a point's own counters
    // from its neighbour's (batch 4 moves a third of batch 16's bytes).
    EXPECT_NEAR(batched.counters.at("dram_read_bytes"), alone.counters.at("dram_read_bytes"),
                0.05 * alone.counters.at("dram_read_bytes"))
        << "at batch " << batched.params["batch"];
    EXPECT_NEAR(batched.counters.at("l2_bytes"), alone.counters.at("l2_bytes"),
                0.1 * alone.counters.at("l2_bytes"))
        << "at batch " << batched.params["batch"];
    std::printf(
        "cold batch %d: dram read %.4g B batched, %.4g B alone; l2 %.4g / %.4g B; "
        "warm dram read %.4g B\n",
        batched.params["batch"].get<int>(), batched.counters.at("dram_read_bytes"),
        alone.counters.at("dram_read_bytes"), batched.counters.at("l2_bytes"),
        alone.counters.at("l2_bytes"), warm[i].counters.at("dram_read_bytes"));
    for (const Point* p : {&batched, &alone})
      for (const KernelRecord& k : p->kernels)
        std::printf("  %s %s grid %dx%dx%d: l2 sectors %.0f\n", p == &batched ? "batched" : "alone",
                    k.name.substr(0, 60).c_str(), k.grid[0], k.grid[1], k.grid[2],
                    k.metrics.count("lts__t_sectors_srcunit_tex.sum")
                        ? k.metrics.at("lts__t_sectors_srcunit_tex.sum")
                        : -1.0);
  }
}

TEST(SweepRunner, ColdL2IsRecorded) {
  TR_REQUIRE_GPU();
  RunnerOptions options;
  options.cold_l2 = true;
  SweepRunner runner(inspect_gpu(0), options);
  const OperatorFamily family = conv2d_family();
  const Point cold = runner.measure_point(family, paper_point(4), "cold", 0);
  ASSERT_EQ(cold.status, PointStatus::ok) << cold.reason;
  EXPECT_EQ(cold.details["timing"]["l2"], "cold");
  EXPECT_EQ(cold.details["counters"]["l2"], "cold");
  // From a cold L2 the inputs come from DRAM: at least the filter and input bytes.
  EXPECT_GT(cold.counters.at("dram_read_bytes"), 0.5 * cold.min_bytes * 0.5);
}

// Every point of a sweep is timed in the timing worker, a process CUPTI never
// attached to, although this process traces and counts between the points; the
// worker runs the plan this process chose.
TEST(SweepRunner, TimesEveryPointInAWorkerCuptiNeverAttachedTo) {
  TR_REQUIRE_GPU();
  RunnerOptions options;
  options.timing_worker = test::tool_binary();
  SweepRunner runner(inspect_gpu(0), options);
  const OperatorFamily conv = conv2d_family();
  SweepPlan plan{"worker", &conv, {paper_point(1), paper_point(8), paper_point(64)}};
  CollectingSink sink;
  const std::atomic<bool> stop = false;
  runner.run(plan, {}, sink, stop);
  ASSERT_EQ(sink.points.size(), 3u);
  for (const Point& p : sink.points) {
    ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
    const nlohmann::json& timing = p.details["timing"];
    EXPECT_EQ(timing["process"], "timing worker") << timing;
    EXPECT_EQ(timing["after_cupti"], false) << timing;
    EXPECT_FALSE(timing.contains("worker_failure")) << timing;
    ASSERT_TRUE(p.timing.call && p.timing.stream && p.timing.graph && p.timing.issue);
    EXPECT_TRUE(p.timing.kernel_time_s) << "the trace still runs here";
    EXPECT_TRUE(p.counters.count("tensor_fp16_flops")) << "and the counters";
    // The worker's device time agrees with this process's kernel time.
    EXPECT_GE(*p.timing.graph_s(), *p.timing.kernel_time_s * 0.9);
    // The worker's window, phase by phase, fits in the round trip this process saw,
    // which fits in the runner's timing step.
    const nlohmann::json& phases = timing["phase_seconds"];
    for (const char* phase : {"build", "prepare", "host_buffers", "teardown"})
      EXPECT_TRUE(phases.contains(phase)) << phase << phases;
    EXPECT_LE(phases["total"].get<double>(), timing["worker_wall_s"].get<double>()) << timing;
    EXPECT_LE(timing["worker_wall_s"].get<double>(),
              p.details["runner_seconds"]["timing"].get<double>());
    std::printf("worker: batch %lld T_call %.1f us, T_stream %.1f us, T_graph %.1f us, T_k %.1f\n",
                static_cast<long long>(p.params["batch"].get<int>()), *p.timing.call_s() * 1e6,
                *p.timing.stream_s() * 1e6, *p.timing.graph_s() * 1e6,
                *p.timing.kernel_time_s * 1e6);
  }
}

// A worker that cannot start leaves the timing to this process, which says why.
TEST(SweepRunner, WithoutItsWorkerTheRunnerTimesHereAndSaysWhy) {
  TR_REQUIRE_GPU();
  RunnerOptions options;
  options.timing_worker = "/nonexistent/timeroof";
  options.counters = false;
  SweepRunner runner(inspect_gpu(0), options);
  const Point p = runner.measure_point(conv2d_family(), paper_point(2), "test", 0);
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
  EXPECT_EQ(p.details["timing"]["process"], "runner");
  EXPECT_NE(p.details["timing"]["worker_failure"].get<std::string>().find("cannot start"),
            std::string::npos)
      << p.details["timing"];
  EXPECT_TRUE(p.timing.stream && p.timing.graph);
}

// A small LSTM: launch-bound, so its host part decides its times.
nlohmann::json lstm_point(int batch) {
  return {{"batch", batch},    {"seq_length", 16},    {"input_size", 64},
          {"hidden_size", 64}, {"precision", "fp32"}, {"math", "fma_only"}};
}

// Host-side windows (runner.hpp): a host-bound point's T_call, issue time and
// T_stream are taken in three windows, each revisit once the point's latest
// window is window_spacing_s old (at the sweep's end for the last points), and
// combined (median of the windows' medians, envelope of their intervals); a
// GPU-bound point keeps one window. T_graph is the first window's.
TEST(SweepRunner, HostBoundPointsAreTimedInWindowsSpreadOverTheSweep) {
  TR_REQUIRE_GPU();
  RunnerOptions options;
  options.timing_worker = test::tool_binary();
  options.counters = false;
  options.window_spacing_s = 1.0;
  SweepRunner runner(inspect_gpu(0), options);
  const OperatorFamily lstm = lstm_family();
  SweepPlan plan{"windows",
                 &lstm,
                 {lstm_point(1), lstm_point(2), lstm_point(4), lstm_point(8), lstm_point(16),
                  lstm_point(32), lstm_point(64), lstm_point(128)}};
  CollectingSink sink;
  const std::atomic<bool> stop = false;
  std::vector<std::string> steps;
  runner.run(plan, {}, sink, stop, [&](const SweepProgress& s) { steps.push_back(s.current); });
  ASSERT_EQ(sink.points.size(), plan.points.size());
  const double last_first_at = sink.points.back().details["timing"]["at_s"].get<double>();
  double previous_first_at = -1;
  int spaced = 0;
  for (const Point& p : sink.points) {
    ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
    const nlohmann::json& timing = p.details["timing"];
    ASSERT_TRUE(timing.contains("windows")) << timing;
    const nlohmann::json& windows = timing["windows"];
    // A small LSTM is launch-bound: its host part decides its times.
    ASSERT_EQ(windows.size(), 3u) << timing["host_windows"];
    EXPECT_EQ(timing["host_windows"]["taken"], 3);
    EXPECT_FALSE(timing["host_windows"].contains("ended")) << timing["host_windows"];
    // The first windows ran in sweep order; each revisit at least the spacing
    // after the point's window before it, or at the sweep's end.
    const double first_at = windows[0]["at_s"].get<double>();
    EXPECT_GT(first_at, previous_first_at);
    previous_first_at = first_at;
    for (std::size_t w = 1; w < windows.size(); ++w) {
      const double at = windows[w]["at_s"].get<double>();
      const double gap = at - windows[w - 1]["at_s"].get<double>();
      EXPECT_TRUE(gap >= options.window_spacing_s || at > last_first_at)
          << "window " << w << " began " << gap << " s after the one before, at " << at
          << " s; the last point's first window began at " << last_first_at << " s";
      spaced += gap >= options.window_spacing_s;
    }
    for (const nlohmann::json& w : windows) EXPECT_EQ(w["process"], "timing worker") << w;
    const std::vector<std::pair<const char*, TimeStats>> combined_times = {
        {"call", *p.timing.call}, {"issue", *p.timing.issue}, {"stream", *p.timing.stream}};
    for (const auto& [name, combined] : combined_times) {
      std::vector<TimeStats> taken;
      for (const nlohmann::json& w : windows) taken.push_back(w[name].get<TimeStats>());
      EXPECT_EQ(combined, combine_windows(taken)) << name;
      for (const TimeStats& w : taken) {
        EXPECT_LE(*combined.ci_low_s, *w.ci_low_s) << name;
        EXPECT_GE(*combined.ci_high_s, *w.ci_high_s) << name;
      }
      std::printf("batch %d %s: windows %.2f / %.2f / %.2f us -> %.2f us [%.2f, %.2f]\n",
                  p.params["batch"].get<int>(), name, taken[0].median_s * 1e6,
                  taken[1].median_s * 1e6, taken[2].median_s * 1e6, combined.median_s * 1e6,
                  *combined.ci_low_s * 1e6, *combined.ci_high_s * 1e6);
    }
    // T_graph is GPU-side: measured in the first window only.
    EXPECT_TRUE(p.timing.graph) << timing;
    EXPECT_GT(timing["rounds"]["graph"].get<int>(), 0);
  }
  // Eight points take seconds: the early ones were revisited between later ones.
  EXPECT_GT(spaced, 0);
  EXPECT_NE(
      std::find_if(steps.begin(), steps.end(),
                   [](const std::string& step) { return step.rfind("timing windows of", 0) == 0; }),
      steps.end());
}

// A big convolution's host part is too small to move its times: one window.
TEST(SweepRunner, GpuBoundPointsKeepOneWindow) {
  TR_REQUIRE_GPU();
  RunnerOptions options;
  options.counters = false;
  SweepRunner runner(inspect_gpu(0), options);
  // fp16 stride 2 at batch 256 took 195 us on an H100 (issue 7.6%: host-bound);
  // fp32 stride 1 took 6.8 ms with a 127-us issue (1.9%, at the threshold).
  nlohmann::json big = paper_point(512);
  big["precision"] = "fp32";
  big["stride"] = 1;
  const Point p = runner.measure_point(conv2d_family(), big, "test", 0);
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
  const nlohmann::json& timing = p.details["timing"];
  std::printf(
      "conv fp32 stride 1 batch 256: T_call %.1f us, issue %.2f us, T_stream %.1f us, T_graph %.1f "
      "us\n",
      *p.timing.call_s() * 1e6, *p.timing.issue_s() * 1e6, *p.timing.stream_s() * 1e6,
      *p.timing.graph_s() * 1e6);
  // The rule judged the first window (the combined times may fall either side).
  Timing first = p.timing;
  first.call = timing["windows"][0]["call"].get<TimeStats>();
  first.issue = timing["windows"][0]["issue"].get<TimeStats>();
  first.stream = timing["windows"][0]["stream"].get<TimeStats>();
  EXPECT_EQ(host_part_matters(first), timing["host_windows"]["wanted"] == 3) << timing;
  ASSERT_FALSE(host_part_matters(first)) << "batch 512 should be GPU-bound: " << timing;
  EXPECT_EQ(timing["windows"].size(), 1u);
  EXPECT_EQ(timing["host_windows"]["taken"], 1);
}

// Ctrl-C while a batch waits for its windows: the revisits are skipped, the
// points are written with the windows taken and say why.
TEST(SweepRunner, AStopSkipsTheWindowsNotYetTaken) {
  TR_REQUIRE_GPU();
  RunnerOptions options;
  options.counters = false;
  SweepRunner runner(inspect_gpu(0), options);
  const OperatorFamily lstm = lstm_family();
  SweepPlan plan{"stopped", &lstm, {lstm_point(1), lstm_point(1)}};
  CollectingSink sink;
  std::atomic<bool> stop = false;
  runner.run(plan, {}, sink, stop, [&](const SweepProgress& s) {
    if (s.current.rfind("timing windows", 0) == 0) stop = true;  // Ctrl-C there
  });
  ASSERT_EQ(sink.points.size(), 2u);
  for (const Point& p : sink.points) {
    ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
    const nlohmann::json& windows = p.details["timing"]["host_windows"];
    EXPECT_EQ(windows["taken"], 1) << windows;
    EXPECT_NE(windows.value("ended", std::string()).find("stopped"), std::string::npos) << windows;
    EXPECT_EQ(*p.timing.call, p.details["timing"]["windows"][0]["call"].get<TimeStats>());
  }
}

}  // namespace
}  // namespace timeroof
