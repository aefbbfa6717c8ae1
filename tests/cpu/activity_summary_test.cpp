// CPU tier: the activity tracer's per-call summary on hand-built traces, with
// every expected number worked out by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "counters/activity_tracer.hpp"
#include "measure/counter_collection.hpp"

namespace timeroof {
namespace {

KernelActivity kernel(std::uint64_t start, std::uint64_t end, std::uint32_t correlation = 0,
                      std::uint32_t device = 0) {
  KernelActivity k;
  k.name = "void k<float>(float*)";
  k.grid = {8, 2, 1};
  k.block = {128, 1, 1};
  k.start_ns = start;
  k.end_ns = end;
  k.correlation_id = correlation;
  k.device_id = device;
  return k;
}

ApiActivity api(const std::string& name, ApiDomain domain, std::uint64_t start, std::uint64_t end,
                std::uint32_t correlation, std::uint32_t thread = 1) {
  ApiActivity a;
  a.name = name;
  a.domain = domain;
  a.start_ns = start;
  a.end_ns = end;
  a.correlation_id = correlation;
  a.thread_id = thread;
  return a;
}

MemcpyActivity copy(CopyDirection direction, std::uint64_t bytes, std::uint64_t start,
                    std::uint64_t end, std::uint32_t device = 0) {
  MemcpyActivity m;
  m.direction = direction;
  m.bytes = bytes;
  m.start_ns = start;
  m.end_ns = end;
  m.device_id = device;
  return m;
}

constexpr ApiDomain runtime = ApiDomain::runtime;
constexpr ApiDomain driver = ApiDomain::driver;

TEST(ActivitySummary, OverlappingKernelsAndCopies) {
  Trace t;
  // A [100,200] and B [150,300] overlap (two streams); C [400,450].
  t.kernels = {kernel(100, 200), kernel(150, 300), kernel(400, 450)};
  // An H2D copy [300,350] fills part of the hole between B and C; a D2H copy
  // [500,600] and a memset [460,470] lie after the last kernel.
  t.memcpys = {copy(CopyDirection::h2d, 1000, 300, 350), copy(CopyDirection::d2h, 2000, 500, 600),
               copy(CopyDirection::d2d, 64, 600, 610)};
  MemsetActivity memset;
  memset.bytes = 4096;
  memset.start_ns = 460;
  memset.end_ns = 470;
  t.memsets = {memset};

  const TraceSummary s = summarize_calls(t, 1);
  EXPECT_EQ(s.launches, 3);
  EXPECT_EQ(s.kernel_ns, 100 + 150 + 50);  // each kernel in full: 300
  EXPECT_EQ(s.kernel_busy_ns, 200 + 50);   // union [100,300] + [400,450]: 250
  // Span [100,450] = 350; busy inside it: [100,350] (kernels + H2D) + [400,450] = 300.
  EXPECT_EQ(s.gap_ns, 50);
  EXPECT_EQ(s.h2d_bytes, 1000);
  EXPECT_EQ(s.h2d_ns, 50);
  EXPECT_EQ(s.d2h_bytes, 2000);
  EXPECT_EQ(s.d2h_ns, 100);
  EXPECT_EQ(s.other_copy_bytes, 64);
  EXPECT_EQ(s.other_copy_ns, 10);
  EXPECT_EQ(s.memset_bytes, 4096);
  EXPECT_EQ(s.memset_ns, 10);
  EXPECT_FALSE(s.launch_latency_ns.has_value()) << "no API records";
  EXPECT_EQ(s.api_ns, 0);

  // Without the copy, the hole [300,400] is idle: gap 100.
  t.memcpys.erase(t.memcpys.begin());
  EXPECT_EQ(summarize_calls(t, 1).gap_ns, 100);
}

TEST(ActivitySummary, NestedDriverCallsCountOnce) {
  Trace t;
  t.api_calls = {
      // Thread 1: cudaLaunchKernel [0,50] with cuLaunchKernel [10,40] inside it.
      api("cudaLaunchKernel", runtime, 0, 50, 1),
      api("cuLaunchKernel", driver, 10, 40, 2),
      // CUPTI naming the kernel record [52,55]: tracing overhead, not API time.
      api("cuKernelGetName", driver, 52, 55, 8),
      // cudaMemcpyAsync [60,100]; its driver call [70,110] overruns it by 10.
      api("cudaMemcpyAsync", runtime, 60, 100, 3),
      api("cuMemcpyHtoDAsync_v2", driver, 70, 110, 4),
      // cudaStreamSynchronize [120,300] with cuStreamSynchronize inside: waiting.
      api("cudaStreamSynchronize", runtime, 120, 300, 5),
      api("cuStreamSynchronize", driver, 125, 295, 6),
      // Thread 2, overlapping thread 1 in time: its own CPU time.
      api("cudaLaunchKernel_ptsz", runtime, 20, 45, 7, 2),
  };
  // The kernel is correlated with the nested driver call (id 2): its latency is
  // measured from the enclosing cudaLaunchKernel at 0 -> 80. Thread 2's kernel:
  // 65 - 20 = 45. A kernel with no API record (id 99) has no latency.
  t.kernels = {kernel(80, 90, 2), kernel(65, 70, 7), kernel(95, 100, 99)};

  const TraceSummary s = summarize_calls(t, 1);
  // Thread 1: 50 + (40 + 10) = 100; thread 2: 25. Total 125.
  EXPECT_EQ(s.api_ns, 125);
  EXPECT_EQ(s.api_calls, 3);  // two top-level non-sync calls on thread 1, one on thread 2
  EXPECT_EQ(s.sync_ns, 180);  // the cudaStreamSynchronize, its driver call not again
  EXPECT_EQ(s.tracer_api_ns, 3);
  ASSERT_TRUE(s.launch_latency_ns.has_value());
  EXPECT_EQ(*s.launch_latency_ns, (80 + 45) / 2.0);  // median of {45, 80}
  EXPECT_EQ(*s.launch_latency_max_ns, 80);
  EXPECT_EQ(s.launches, 3);

  const Timing timing = s.timing();
  EXPECT_DOUBLE_EQ(*timing.api_time_s, 125e-9);
  EXPECT_EQ(*timing.launches, 3);
}

TEST(ActivitySummary, NameQueriesInsideALaunchAreTracerTime) {
  Trace t;
  t.api_calls = {
      // cudaLaunchKernel [0,50], cuLaunchKernel [10,40] inside it, and inside that
      // the launch namer's queries: cuFuncGetName [12,14], cuKernelGetName [15,18].
      api("cudaLaunchKernel", runtime, 0, 50, 1),
      api("cuLaunchKernel", driver, 10, 40, 1),
      api("cuFuncGetName", driver, 12, 14, 2),
      api("cuKernelGetName", driver, 15, 18, 3),
      // A program's own cuFuncGetName at top level [60,64]: tracer time as well.
      api("cuFuncGetName", driver, 60, 64, 4),
  };
  t.kernels = {kernel(45, 55, 1)};
  const TraceSummary s = summarize_calls(t, 1);
  EXPECT_EQ(s.api_ns, 50 - 2 - 3);  // the launch less the 5 ns of queries inside it
  EXPECT_EQ(s.api_calls, 1);
  EXPECT_EQ(s.tracer_api_ns, 2 + 3 + 4);
  EXPECT_EQ(*s.launch_latency_ns, 45);  // from the launch's start, queries or not
}

TEST(ActivitySummary, MultipleCallsSeparatedByMarks) {
  Trace t;
  t.call_marks_ns = {0, 1000};
  t.api_calls = {
      // Call 1: two launches, then the host waits.
      api("cudaLaunchKernel", runtime, 10, 20, 1),
      api("cudaLaunchKernel", runtime, 30, 40, 2),
      api("cudaDeviceSynchronize", runtime, 50, 310, 3),
      // Call 2.
      api("cudaLaunchKernel", runtime, 1010, 1020, 4),
      api("cudaLaunchKernel", runtime, 1030, 1040, 5),
      api("cudaDeviceSynchronize", runtime, 1050, 1510, 6),
  };
  t.kernels = {kernel(100, 200, 1), kernel(250, 300, 2), kernel(1100, 1150, 4),
               kernel(1400, 1500, 5)};

  const TraceSummary s = summarize_calls(t, 2);
  EXPECT_EQ(s.launches, 2);
  EXPECT_EQ(s.kernel_ns, (100 + 50 + 50 + 100) / 2.0);  // 150
  EXPECT_EQ(s.kernel_ns_per_call, (std::vector<double>{150, 150}));
  EXPECT_EQ(s.api_ns, 4 * 10 / 2.0);  // 20
  EXPECT_EQ(s.api_calls, 2);
  EXPECT_EQ(s.sync_ns, (260 + 460) / 2.0);  // 360
  // Call 1: span [100,300] - busy 150 = 50; call 2: [1100,1500] - 150 = 250.
  EXPECT_EQ(s.gap_ns, (50 + 250) / 2.0);
  // Latencies 90, 220, 90, 370: median (90 + 220) / 2.
  EXPECT_EQ(*s.launch_latency_ns, 155);
  EXPECT_EQ(*s.launch_latency_max_ns, 370);

  const Timing timing = s.timing();
  EXPECT_EQ(*timing.launches, 2);
  EXPECT_DOUBLE_EQ(*timing.kernel_time_s, 150e-9);
  EXPECT_DOUBLE_EQ(*timing.launch_gap_s, 150e-9);
  EXPECT_DOUBLE_EQ(*timing.api_time_s, 20e-9);
  EXPECT_EQ(*timing.h2d_bytes, 0) << "a trace measures zero transfers, it does not miss them";
  EXPECT_FALSE(timing.call.has_value());

  // Without marks the host time between the calls, [300,1100], is one more gap.
  Trace unmarked = t;
  unmarked.call_marks_ns.clear();
  EXPECT_EQ(summarize_calls(unmarked, 2).gap_ns, (50 + 800 + 250) / 2.0);
  EXPECT_TRUE(summarize_calls(unmarked, 2).kernel_ns_per_call.empty()) << "no calls to tell apart";

  // Each call's kernel time in call order: T_k is their median.
  t.kernels.back().end_ns = 1700;  // call 2's second kernel 300 ns
  EXPECT_EQ(summarize_calls(t, 2).kernel_ns_per_call, (std::vector<double>{150, 350}));
  EXPECT_EQ(summarize_calls(t, 2).kernel_ns, 250);
}

TEST(ActivitySummary, KernelOfACallStartingAfterTheNextMarkStaysInItsCall) {
  Trace t;
  t.call_marks_ns = {0, 100};
  t.api_calls = {api("cudaLaunchKernel", runtime, 10, 20, 1),
                 api("cudaLaunchKernel", runtime, 30, 40, 2),
                 api("cudaLaunchKernel", runtime, 110, 120, 3)};
  // Call 1's second kernel runs after call 2 was marked (asynchronous host).
  t.kernels = {kernel(50, 60, 1), kernel(130, 140, 2), kernel(150, 170, 3)};
  // Call 1: span [50,140] - busy 20 = 70; call 2: one kernel, no gap.
  EXPECT_EQ(summarize_calls(t, 2).gap_ns, 70 / 2.0);
}

TEST(ActivitySummary, DevicesHaveTheirOwnGaps) {
  Trace t;
  t.kernels = {kernel(0, 10, 0, 0), kernel(20, 30, 0, 0), kernel(5, 15, 0, 1),
               kernel(40, 50, 0, 1)};
  const TraceSummary s = summarize_calls(t, 1);
  EXPECT_EQ(s.gap_ns, 10 + 25);          // device 0: [10,20]; device 1: [15,40]
  EXPECT_EQ(s.kernel_busy_ns, 20 + 20);  // no overlap within a device
}

TEST(ActivitySummary, UntimedRecordsCountButDoNotTime) {
  Trace t;
  t.kernels = {kernel(100, 200), kernel(0, 0), kernel(300, 350)};
  t.untimed_records = 1;
  const TraceSummary s = summarize_calls(t, 1);
  EXPECT_EQ(s.launches, 3);
  EXPECT_EQ(s.kernel_ns, 150);
  EXPECT_EQ(s.gap_ns, 100);
}

TEST(ActivitySummary, RejectsBadCallCounts) {
  Trace t;
  EXPECT_THROW(summarize_calls(t, 0), Error);
  t.call_marks_ns = {1, 2};
  EXPECT_THROW(summarize_calls(t, 3), Error);
  EXPECT_NO_THROW(summarize_calls(t, 2));
  t.dropped_records = 7;
  EXPECT_EQ(summarize_calls(t, 2).dropped_records, 7u) << "reported, never silent";
}

TEST(ActivitySummary, KernelRecordsCarryShapeAndDuration) {
  Trace t;
  t.kernels = {kernel(1000, 3500)};
  const std::vector<KernelRecord> records = kernel_records(t);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].name, "void k<float>(float*)");
  EXPECT_EQ(records[0].grid, (std::array<int, 3>{8, 2, 1}));
  EXPECT_EQ(records[0].block, (std::array<int, 3>{128, 1, 1}));
  EXPECT_DOUBLE_EQ(records[0].duration_s, 2.5e-6);
  EXPECT_TRUE(records[0].metrics.empty());
}

// Five marked calls, each [cudaMemcpyAsync H2D, cudaLaunchKernel x2, cudaDeviceSynchronize],
// call c starting at c * 10000. Call 2's first kernel runs 2x slower (200 ns
// against 100); everything else is the same in every call.
Trace five_calls_one_slow() {
  Trace t;
  std::uint32_t id = 1;
  for (std::uint64_t c = 0; c < 5; ++c) {
    const std::uint64_t base = c * 10000;
    const std::uint64_t slow = c == 2 ? 100 : 0;
    t.call_marks_ns.push_back(base);
    t.api_calls.push_back(api("cudaMemcpyAsync", runtime, base + 10, base + 20, id));
    MemcpyActivity h2d = copy(CopyDirection::h2d, 1000, base + 30, base + 80);
    h2d.correlation_id = id++;
    t.memcpys.push_back(h2d);
    t.api_calls.push_back(api("cudaLaunchKernel", runtime, base + 40, base + 50, id));
    t.kernels.push_back(kernel(base + 100, base + 200 + slow, id++));
    KernelActivity second = kernel(base + 300 + slow, base + 350 + slow, 0);
    second.name = "void second(float*)";
    second.grid = {4, 1, 1};
    t.api_calls.push_back(api("cudaLaunchKernel", runtime, base + 60, base + 70, id));
    second.correlation_id = id++;
    t.kernels.push_back(second);
    t.api_calls.push_back(
        api("cudaDeviceSynchronize", runtime, base + 80, base + 400 + slow, id++));
  }
  return t;
}

TEST(ActivitySummary, MarkedCallsReportTheMedianCall) {
  const Trace t = five_calls_one_slow();
  const TraceSummary s = summarize_calls(t, 5);
  // Kernel time per call: 100 + 50 = 150, the slow call 200 + 50 = 250. Median
  // 150; the mean would be (4 * 150 + 250) / 5 = 170.
  EXPECT_EQ(s.kernel_ns, 150);
  EXPECT_EQ(s.kernel_busy_ns, 150);
  // Gap per call: span [100,350] - busy 150 = 100; the slow call's [100,450] - 250 = 100.
  EXPECT_EQ(s.gap_ns, 100);
  // Sync per call 320, the slow call 420: median 320 (mean 340).
  EXPECT_EQ(s.sync_ns, 320);
  EXPECT_EQ(s.api_ns, 30);
  EXPECT_EQ(s.h2d_ns, 50);
  // Counts and bytes are sum / calls.
  EXPECT_EQ(s.launches, 2);
  EXPECT_EQ(s.api_calls, 3);
  EXPECT_EQ(s.h2d_bytes, 1000);
  // Latency stays the median over all 10 kernels: 60 (x5), 240 (x4), 340 -> 150.
  EXPECT_EQ(*s.launch_latency_ns, (60 + 240) / 2.0);
  EXPECT_EQ(*s.launch_latency_max_ns, 340);
  EXPECT_DOUBLE_EQ(*s.timing().kernel_time_s, 150e-9);

  // Without marks: today's sum / calls, the slow call included.
  Trace unmarked = t;
  unmarked.call_marks_ns.clear();
  const TraceSummary mean = summarize_calls(unmarked, 5);
  EXPECT_EQ(mean.kernel_ns, (4 * 150 + 250) / 5.0);  // 170
  EXPECT_EQ(mean.sync_ns, (4 * 320 + 420) / 5.0);    // 340
  EXPECT_EQ(mean.launches, 2);
}

TEST(ActivitySummary, MedianOfAnEvenNumberOfCallsIsTheMeanOfTheMiddleTwo) {
  Trace t;
  t.call_marks_ns = {0, 1000, 2000, 3000};
  const std::uint64_t lengths[] = {100, 400, 200, 300};
  for (std::uint32_t c = 0; c < 4; ++c) {
    t.api_calls.push_back(api("cudaLaunchKernel", runtime, c * 1000 + 10, c * 1000 + 20, c + 1));
    t.kernels.push_back(kernel(c * 1000 + 50, c * 1000 + 50 + lengths[c], c + 1));
  }
  EXPECT_EQ(summarize_calls(t, 4).kernel_ns, (200 + 300) / 2.0);
}

TEST(ActivitySummary, MedianCallKernelsTakesTheMedianPerPosition) {
  const Trace t = five_calls_one_slow();
  const std::vector<KernelRecord> records = median_call_kernels(t, 5);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].name, "void k<float>(float*)");
  EXPECT_EQ(records[0].grid, (std::array<int, 3>{8, 2, 1}));
  EXPECT_EQ(records[0].block, (std::array<int, 3>{128, 1, 1}));
  EXPECT_DOUBLE_EQ(records[0].duration_s, 100e-9) << "durations 100 x4 and 200: median 100";
  EXPECT_EQ(records[1].name, "void second(float*)");
  EXPECT_EQ(records[1].grid, (std::array<int, 3>{4, 1, 1}));
  EXPECT_DOUBLE_EQ(records[1].duration_s, 50e-9);
  EXPECT_TRUE(records[0].metrics.empty());

  // The slow call first: the result does not depend on which call is slow.
  Trace first_slow = t;
  first_slow.kernels[0].end_ns += 500;
  EXPECT_DOUBLE_EQ(median_call_kernels(first_slow, 5)[0].duration_s, 100e-9);
  EXPECT_DOUBLE_EQ(kernel_records(first_slow)[0].duration_s, 600e-9);
}

TEST(ActivitySummary, MedianCallKernelsFallsBackToTheFirstCall) {
  // The first call's kernels as kernel_records has them, cut at launches per call.
  const auto expect_first_call = [](const std::vector<KernelRecord>& records, const Trace& t,
                                    std::size_t per_call) {
    const std::vector<KernelRecord> all = kernel_records(t);
    ASSERT_EQ(records.size(), per_call);
    for (std::size_t i = 0; i < per_call; ++i) {
      EXPECT_EQ(records[i].name, all[i].name);
      EXPECT_DOUBLE_EQ(records[i].duration_s, all[i].duration_s);
    }
  };

  // Calls differ in kernel count: the last call launches a third kernel.
  Trace extra = five_calls_one_slow();
  extra.api_calls.push_back(api("cudaLaunchKernel", runtime, 40410, 40420, 999));
  extra.kernels.push_back(kernel(40500, 40510, 999));
  expect_first_call(median_call_kernels(extra, 5), extra, 11 / 5);

  // No marks: the slow call 2 is not call 0, so the first call's 2 kernels.
  Trace unmarked = five_calls_one_slow();
  unmarked.call_marks_ns.clear();
  expect_first_call(median_call_kernels(unmarked, 5), unmarked, 2);

  // Same count, but the kernels at a position differ between calls.
  Trace reordered = five_calls_one_slow();
  reordered.kernels[7].name = "void other(float*)";  // call 3's second kernel
  expect_first_call(median_call_kernels(reordered, 5), reordered, 2);

  EXPECT_THROW(median_call_kernels(unmarked, 0), Error);
  EXPECT_THROW(median_call_kernels(five_calls_one_slow(), 4), Error) << "5 marks, 4 calls";
}

// An LSTM-like call (issue #20): A and B on the main stream, C launched last on a
// side stream but started before B. Per call (base = c * 10000):
//   launch A (id 3c+1) at +10, B (3c+2) at +20, C (3c+3) at +30;
//   A runs [+100, +110], C [+115, +200] on stream 2, B [+120, +140].
// Start order A, C, B; launch order A, B, C.
Trace side_stream_calls(int calls) {
  Trace t;
  const char* names[] = {"void scal(float*)", "void gemmSN(float*)", "void sgemm_largek(float*)"};
  const std::uint64_t times[][2] = {{100, 110}, {120, 140}, {115, 200}};
  for (std::uint32_t c = 0; c < static_cast<std::uint32_t>(calls); ++c) {
    const std::uint64_t base = c * 10000;
    t.call_marks_ns.push_back(base);
    for (std::uint32_t i = 0; i < 3; ++i) {
      const std::uint32_t id = 3 * c + i + 1;
      t.api_calls.push_back(
          api("cudaLaunchKernel", runtime, base + 10 * (i + 1), base + 10 * (i + 1) + 5, id));
      KernelActivity k = kernel(base + times[i][0], base + times[i][1], id);
      k.name = names[i];
      k.stream_id = i == 2 ? 2 : 1;
      t.kernels.push_back(k);
    }
  }
  // Trace::kernels is sorted by start, as the tracer delivers it.
  std::stable_sort(
      t.kernels.begin(), t.kernels.end(),
      [](const KernelActivity& a, const KernelActivity& b) { return a.start_ns < b.start_ns; });
  return t;
}

// One range per kernel in launch order, as the range profiler's auto ranges
// come, with the GPU time each kernel really took (10, 20 and 85 ns, in us here
// so that they are far apart beyond replay's slack) and an FMA count of its own.
ProfileResult launch_order_ranges() {
  ProfileResult r;
  r.metrics = {"gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"};
  r.ranges = {{"0", {10e3, 1}}, {"1", {20e3, 2}}, {"2", {85e3, 3}}};
  r.passes = 1;
  return r;
}

CollectionPlan duration_and_fma_plan() {
  CollectionPlan plan;
  plan.chip = "GH100";
  plan.quantities = {Quantity::duration, Quantity::fp32_flops};
  plan.expressions = {
      {Quantity::duration, {{"gpu__time_duration.sum", 1e-9}}},
      {Quantity::fp32_flops, {{"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2}}}};
  plan.metrics = launch_order_ranges().metrics;
  return plan;
}

TEST(ActivitySummary, SideStreamKernelsKeepLaunchOrderForTheCounters) {
  Trace t = side_stream_calls(3);
  ASSERT_EQ(t.kernels[1].name, "void sgemm_largek(float*)") << "C starts second";
  const std::vector<KernelRecord> kernels = median_call_kernels(t, 3);
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[0].name, "void scal(float*)");
  EXPECT_EQ(kernels[1].name, "void gemmSN(float*)");
  EXPECT_EQ(kernels[2].name, "void sgemm_largek(float*)");
  EXPECT_DOUBLE_EQ(kernels[1].duration_s, 20e-9);
  EXPECT_DOUBLE_EQ(kernels[2].duration_s, 85e-9);
  // kernel_records stays in start order.
  EXPECT_EQ(kernel_records(t)[1].name, "void sgemm_largek(float*)");

  // The ranges (launch order) land on their own kernels: each kernel's counted
  // time is its traced time, each its own FMA count.
  Point point;
  point.kernels = kernels;
  for (KernelRecord& k : point.kernels) k.duration_s *= 1000;  // ns -> us, as the ranges
  apply_counters(duration_and_fma_plan(), launch_order_ranges(), nlohmann::json::object(), point);
  ASSERT_TRUE(point.details["counters"]["per_kernel"].get<bool>());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(point.kernels[i].metrics.at("duration"), point.kernels[i].duration_s)
        << point.kernels[i].name;
    EXPECT_DOUBLE_EQ(point.kernels[i].metrics.at("fp32_flops"), 2.0 * (i + 1));
  }
  EXPECT_DOUBLE_EQ(point.counters.at("fp32_flops"), 12);
  EXPECT_FALSE(point.details["counters"].contains("warning")) << point.details["counters"];

  // Without marks (the fallback), the first call's kernels, also in launch order.
  t.call_marks_ns.clear();
  const std::vector<KernelRecord> first = median_call_kernels(t, 3);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[1].name, "void gemmSN(float*)");
  EXPECT_EQ(first[2].name, "void sgemm_largek(float*)");
}

TEST(ActivitySummary, CountersOnTheWrongKernelAreReported) {
  // The kernels in start order, as before issue #20: the ranges (launch order)
  // would put B's counters on C and C's on B. The match stands, with a warning.
  Point point;
  point.kernels = kernel_records(side_stream_calls(1));
  for (KernelRecord& k : point.kernels) k.duration_s *= 1000;
  apply_counters(duration_and_fma_plan(), launch_order_ranges(), nlohmann::json::object(), point);
  const nlohmann::json& counters = point.details["counters"];
  ASSERT_TRUE(counters.contains("warning")) << counters;
  const nlohmann::json& mismatches = counters["kernel_mismatches"];
  ASSERT_EQ(mismatches.size(), 2u) << mismatches;
  EXPECT_EQ(mismatches[0]["range"], 1);
  EXPECT_EQ(mismatches[0]["kernel"], "void sgemm_largek(float*)");
  EXPECT_EQ(mismatches[0]["fits_kernel"], 2);
  EXPECT_EQ(mismatches[1]["range"], 2);
  EXPECT_EQ(mismatches[1]["fits_kernel"], 1);
  EXPECT_DOUBLE_EQ(point.kernels[1].metrics.at("duration"), 20e-6) << "reported, not moved";

  // Replay's ~1 us on small kernels is no mismatch (0.87 us traced, 1.73 counted),
  // nor is a far range that no other kernel fits.
  ProfileResult small;
  small.metrics = {"gpu__time_duration.sum"};
  small.ranges = {{"0", {1730}}, {"1", {30e3}}};
  std::vector<KernelRecord> kernels(2);
  kernels[0].duration_s = 0.87e-6;
  kernels[1].duration_s = 2e-6;
  EXPECT_TRUE(kernel_mismatches(small, kernels).empty()) << kernel_mismatches(small, kernels);
}

TEST(ActivitySummary, DemanglesAndKeepsTemplates) {
  EXPECT_EQ(demangle("_Z4fillIfLi4EEvPT_S0_"), "void fill<float, 4>(float*, float)");
  EXPECT_EQ(demangle("_ZN8timeroof10trace_test12scale_kernelIfLi4EEEvPT_S2_i"),
            "void timeroof::trace_test::scale_kernel<float, 4>(float*, float, int)");
  EXPECT_EQ(demangle("not_mangled"), "not_mangled");
  EXPECT_EQ(demangle(nullptr), "");
}

}  // namespace
}  // namespace timeroof
