// kernels/time_windows (issue 15): the host-timed launch roofs measured in windows
// spread over a ceilings run — where the windows fall, how a roof's windows become
// one stored ceiling, and what its method says. Host-only logic; no GPU.
#include "kernels/time_windows.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/format.hpp"
#include "kernels/ceilings.hpp"

namespace timeroof {
namespace {

TEST(CeilingWindows, FirstAtItsTurnThenMidRunThenAfterTheLastFamily) {
  const std::vector<std::string> families = {"launch",    "transfer", "memory",
                                             "cuda_core", "tensor",   "library"};
  EXPECT_EQ(windows_after_each(families, "launch", 3), (std::vector<int>{1, 0, 1, 0, 0, 1}));
  // Every window is taken, whatever the families.
  for (std::size_t n = 1; n <= families.size(); ++n) {
    const std::vector<std::string> first_n(families.begin(),
                                           families.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<int> after = windows_after_each(first_n, "launch", 3);
    int total = 0;
    for (int w : after) total += w;
    EXPECT_EQ(total, 3) << n << " families";
    EXPECT_GE(after.front(), 1) << "the first window at the launch family's turn";
    EXPECT_GE(after.back(), 1) << "the last after the last family";
  }
}

TEST(CeilingWindows, OnlyTheLaunchFamilyTakesThemOneAfterAnother) {
  const std::vector<std::string> alone = {"launch"};
  EXPECT_EQ(windows_after_each(alone, "launch", 3), (std::vector<int>{3}));
  const std::vector<std::string> with_memory = {"launch", "memory"};
  EXPECT_EQ(windows_after_each(with_memory, "launch", 3), (std::vector<int>{2, 1}));
}

TEST(CeilingWindows, NoneWithoutTheWindowedFamily) {
  const std::vector<std::string> families = {"transfer", "memory"};
  EXPECT_EQ(windows_after_each(families, "launch", 3), (std::vector<int>{0, 0}));
  const std::vector<std::string> later = {"memory", "launch", "tensor"};
  EXPECT_EQ(windows_after_each(later, "launch", 3), (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(windows_after_each(later, "launch", 1), (std::vector<int>{0, 1, 0}));
}

TEST(CeilingWindows, SpacingNoteSaysWhenTheWindowsLayCloseTogether) {
  const std::vector<int> alone = {3};
  const std::vector<int> spread = {1, 0, 1, 0, 0, 1};
  EXPECT_NE(window_spacing_note(alone, false).find("one after another"), std::string::npos);
  EXPECT_NE(window_spacing_note(alone, true).find("one after another"), std::string::npos);
  EXPECT_NE(window_spacing_note(spread, false).find("spread over the ceilings run"),
            std::string::npos);
  EXPECT_EQ(window_spacing_note(spread, false).find("close together"), std::string::npos);
  EXPECT_NE(window_spacing_note(spread, true).find("quick mode"), std::string::npos);
  EXPECT_NE(window_spacing_note(spread, true).find("close together"), std::string::npos);
}

// `count` samples spread evenly over median x (1 +- spread / 2).
TimeWindow window_around(double median, double at_s, int count = 41, double spread = 0.1,
                         bool converged = true) {
  TimeWindow w;
  w.at_s = at_s;
  for (int i = 0; i < count; ++i)
    w.samples.push_back(median * (1 - spread / 2 + spread * i / (count - 1)));
  w.stats = time_stats(w.samples, 1024, converged);
  w.detail = "thread pinned to core 3";
  return w;
}

WindowedRoof three_window_roof() {
  WindowedRoof roof{.name = "launch_async", .scheme = "empty kernels back to back"};
  // The fast window holds the most samples (more fit in its budget): pooled, its
  // level would be the median.
  roof.windows = {window_around(4.0e-6, 0.04, 81), window_around(5.2e-6, 38.26),
                  window_around(4.4e-6, 97.5)};
  return roof;
}

// The windows of `roof` joined as measure_ceilings joins them.
TimeStats joined_windows(const WindowedRoof& roof) {
  std::vector<TimeStats> stats;
  for (const TimeWindow& w : roof.windows) stats.push_back(w.stats);
  return combine_windows(stats);
}

TEST(CeilingWindows, CeilingCarriesTheJoinedMedianSamplesAndSpread) {
  const WindowedRoof roof = three_window_roof();
  const Ceiling c = windowed_ceiling(roof, "spacing note");
  const TimeStats joined = joined_windows(roof);
  EXPECT_EQ(c.name, "launch_async");
  EXPECT_EQ(c.kind, CeilingKind::latency);
  EXPECT_EQ(c.unit, "s");
  // The median of the windows' medians, not of all samples pooled.
  EXPECT_DOUBLE_EQ(c.measured, roof.windows[2].stats.median_s);
  EXPECT_DOUBLE_EQ(c.measured, joined.median_s);
  EXPECT_EQ(c.repeats, 81 + 41 + 41);
  // The medians' range over the median is in the spread: (5.2 - 4.0) / 4.4.
  EXPECT_NEAR(c.spread, (5.2 - 4.0) / 4.4, 1e-9);
  EXPECT_DOUBLE_EQ(c.spread, joined.spread);
}

TEST(CeilingWindows, MethodNamesEachWindowAndTheJoinedInterval) {
  const WindowedRoof roof = three_window_roof();
  const Ceiling c = windowed_ceiling(roof, "spacing note");
  const TimeStats joined = joined_windows(roof);
  const auto has = [&](const std::string& text) {
    EXPECT_NE(c.method.find(text), std::string::npos) << "no '" << text << "' in " << c.method;
  };
  has("empty kernels back to back; measured in 3 windows");
  // Three significant digits (trailing zeros dropped): close times side by side.
  has("4 us at 0 s (thread pinned to core 3)");
  has("5.2 us at 38.3 s");
  has("4.4 us at 97.5 s");
  has("163 samples, p10 / p50 / p90 ");
  has(" / " + format_si(joined.median_s, "s") + " / ");
  has("(p50: the median of the window medians)");
  ASSERT_TRUE(joined.ci_low_s && joined.ci_high_s);
  has("95% interval of the median " + format_si(*joined.ci_low_s, "s") + " - " +
      format_si(*joined.ci_high_s, "s"));
  has("; spacing note");
  EXPECT_EQ(c.method.find("budget ended"), std::string::npos) << c.method;
  // The envelope: from the fast window's low to the slow window's high.
  EXPECT_LT(*joined.ci_low_s, 4.1e-6);
  EXPECT_GT(*joined.ci_high_s, 5.1e-6);
}

TEST(CeilingWindows, MethodNamesUnconvergedAndFailedWindows) {
  WindowedRoof roof = three_window_roof();
  roof.windows[1] = window_around(5.2e-6, 38.2, 41, 0.1, /*converged=*/false);
  roof.failures = {"window 4 at 120 s failed: no device"};
  const Ceiling c = windowed_ceiling(roof, "");
  EXPECT_NE(c.method.find("the budget ended sampling before +-3% in window 2)"), std::string::npos)
      << c.method;
  EXPECT_NE(c.method.find("; window 4 at 120 s failed: no device"), std::string::npos) << c.method;
  EXPECT_NE(c.method.back(), ' ');
}

TEST(CeilingWindows, OneWindowReadsAsOneSampledTime) {
  WindowedRoof roof{.name = "launch_graph_node", .scheme = "graph"};
  roof.windows = {window_around(0.5e-6, 3, 41, 0.1, /*converged=*/false)};
  const Ceiling c = windowed_ceiling(roof, "thread pinned to core 2");
  EXPECT_DOUBLE_EQ(c.measured, roof.windows[0].stats.median_s);
  EXPECT_EQ(c.method.find("window"), std::string::npos) << c.method;
  EXPECT_NE(c.method.find("graph; 41 samples, p10 / p50 / p90 "), std::string::npos) << c.method;
  EXPECT_NE(c.method.find("95% interval of the median"), std::string::npos) << c.method;
  EXPECT_NE(c.method.find("(the budget ended sampling before +-3%); thread pinned to core 2"),
            std::string::npos)
      << c.method;
}

TEST(CeilingWindows, BandwidthRoofDividesTheAmountByTheJoinedMedian) {
  WindowedRoof roof{.name = "h2d_pageable",
                    .kind = CeilingKind::bandwidth,
                    .unit = "B/s",
                    .amount_per_unit = 256e6,
                    .scheme = "pageable copy"};
  roof.windows = {window_around(20e-3, 1), window_around(25e-3, 30), window_around(22e-3, 60)};
  const Ceiling c = windowed_ceiling(roof, "");
  EXPECT_DOUBLE_EQ(c.measured, 256e6 / roof.windows[2].stats.median_s);
}

// sample_window over a sampler whose i-th call (from 1) takes `seconds_of_call(i)`.
struct Sampled {
  TimeWindow window;
  int calls = 0;
};
Sampled sample_sequence(const std::function<double(int)>& seconds_of_call, double units,
                        int max_samples, double target_relative_ci) {
  Sampled s;
  const StopRule rule{.min_samples = 30,
                      .max_samples = max_samples,
                      .target_relative_ci = target_relative_ci,
                      .budget_s = 10};
  s.window = sample_window([&] { return seconds_of_call(++s.calls); }, units, rule);
  return s;
}

TEST(CeilingWindows, SampleWindowDividesBySamplesUnitsUntilTheRuleStops) {
  const Sampled s =
      sample_sequence([](int call) { return 1024 * (call % 2 ? 4e-6 : 4.1e-6); }, 1024, 100, 0.03);
  const TimeWindow& w = s.window;
  EXPECT_EQ(static_cast<int>(w.samples.size()), s.calls);
  EXPECT_GE(s.calls, 30);
  EXPECT_LT(s.calls, 100) << "a +-1.3% scatter converges well before max_samples";
  EXPECT_TRUE(w.stats.converged);
  EXPECT_EQ(w.stats.calls_per_sample, 1024);
  EXPECT_EQ(w.stats.samples, s.calls);
  EXPECT_GE(w.stats.median_s, 4e-6);
  EXPECT_LE(w.stats.median_s, 4.1e-6);
  EXPECT_EQ(w.at_s, 0);
}

TEST(CeilingWindows, SampleWindowStopsAtMaxSamplesUnconverged) {
  // 101 levels between 1 and 11 us in a scrambled order: far wider than +-0.1%.
  const Sampled s =
      sample_sequence([](int call) { return 1e-6 * (1 + (call * 37 % 101) / 10.0); }, 1, 40, 0.001);
  EXPECT_EQ(s.window.samples.size(), 40u);
  EXPECT_FALSE(s.window.stats.converged);
}

// Windows in processes of their own (issue 15): each process gets one of the
// host's launch-cost modes (H200: ~3.5 or ~4.4 us), and processes of the fast mode
// still differ by a few percent, so the roof is the median window of the fast mode
// (within 10% of the fastest) with that window's interval, the others named beside it.
TEST(CeilingWindows, WindowsInProcessesKeepTheHostsFastMode) {
  WindowedRoof roof{.name = "launch_async", .scheme = "empty kernels back to back"};
  roof.windows_in_processes = true;
  roof.windows = {window_around(3.60e-6, 0), window_around(4.40e-6, 1.5),
                  window_around(3.40e-6, 3.0, 81), window_around(3.55e-6, 4.5),
                  window_around(4.50e-6, 6.0)};
  const Ceiling c = windowed_ceiling(roof, "spacing note");
  const TimeWindow& median_fast = roof.windows[3];
  EXPECT_DOUBLE_EQ(c.measured, median_fast.stats.median_s)
      << "3.55 us: the middle of 3.40, 3.55 and 3.60, not the luckiest process";
  EXPECT_EQ(c.repeats, 4 * 41 + 81);
  EXPECT_DOUBLE_EQ(c.spread, joined_windows(roof).spread) << "the processes' range stays visible";
  const TimeStats& fast = median_fast.stats;
  ASSERT_TRUE(fast.ci_low_s && fast.ci_high_s);
  for (const std::string& text :
       {std::string("measured in 5 windows, each in a process of its own"),
        std::string("the roof: the median window of the host's fast mode (the 3 of 5 windows "
                    "within 10% of the fastest), 3.55 us"),
        "95% interval of the median " + format_si(*fast.ci_low_s, "s") + " - " +
            format_si(*fast.ci_high_s, "s") + " (that window's)",
        std::string("3.6 us at 0 s (thread pinned to core 3), 4.4 us at 1.5 s")})
    EXPECT_NE(c.method.find(text), std::string::npos) << "no '" << text << "' in " << c.method;

  // A fast mode of one window (the others 30% slower) is that window; of two, the faster.
  roof.windows = {window_around(5.2e-6, 0), window_around(4.0e-6, 1.5)};
  EXPECT_DOUBLE_EQ(windowed_ceiling(roof, "").measured, roof.windows[1].stats.median_s);
  roof.windows = {window_around(4.2e-6, 0), window_around(4.0e-6, 1.5), window_around(5.2e-6, 3)};
  EXPECT_DOUBLE_EQ(windowed_ceiling(roof, "").measured, roof.windows[1].stats.median_s);
  // One window is one sampled time, wherever it was taken.
  roof.windows.resize(1);
  EXPECT_EQ(windowed_ceiling(roof, "").method.find("fast mode"), std::string::npos);
}

TEST(CeilingWindows, WindowCrossesAPipeAsJson) {
  const TimeWindow w = window_around(4.2e-6, 12.5, 21, 0.2, false);
  const TimeWindow back = window_from_json(nlohmann::json::parse(window_json(w).dump()));
  EXPECT_EQ(back.at_s, w.at_s);
  EXPECT_EQ(back.samples, w.samples);
  EXPECT_EQ(back.stats, w.stats);
  EXPECT_EQ(back.detail, w.detail);
  EXPECT_THROW(window_from_json(nlohmann::json{{"at_s", 1}}), nlohmann::json::exception);
}

// HostWindows with CeilingRequest::process_window: each window is the document
// a process answered; a process that failed, or answered nonsense, fails its
// window for every roof, and a roof the process could not measure fails alone.
TEST(CeilingWindows, HostWindowsInProcessesReadTheirDocuments) {
  CeilingRequest request;
  request.wanted = [](const std::string& name) {
    return name == "launch_async" || name == "launch_sync";
  };
  request.host_windows = kHostProcessWindows;
  int calls = 0;
  request.process_window = [&](const std::vector<std::string>& roofs,
                               int windows) -> nlohmann::json {
    ++calls;
    EXPECT_EQ(windows, kHostProcessWindows) << "each window samples its share of the budget";
    EXPECT_EQ(roofs, (std::vector<std::string>{"launch_async", "launch_sync"}));
    const auto entry = [](const char* name, double median) {
      return nlohmann::json{{"name", name}, {"window", window_json(window_around(median, 0))}};
    };
    if (calls == 2) throw environment_error("the worker is gone");
    if (calls == 3) return {{"nonsense", 1}};
    if (calls == 4)
      return {{"roofs",
               {entry("launch_async", 3.5e-6),
                {{"name", "launch_sync"}, {"window", nullptr}, {"failure", "cudaErrorUnknown"}}}}};
    return {{"roofs", {entry("launch_async", 4.4e-6), entry("launch_sync", 9e-6)}}};
  };
  HostWindows windows(request);
  for (int i = 0; i < kHostProcessWindows; ++i) windows.take(request);
  EXPECT_EQ(calls, kHostProcessWindows);
  CeilingResults out;
  windows.finish(out, "note");
  ASSERT_EQ(out.ceilings.size(), 2u);
  const Ceiling& async = out.ceilings[0];
  const Ceiling& sync = out.ceilings[1];
  EXPECT_EQ(async.name, "launch_async");
  EXPECT_DOUBLE_EQ(async.measured, window_around(3.5e-6, 0).stats.median_s)
      << "the fast mode: 3.5 us alone within 10% of the fastest";
  EXPECT_DOUBLE_EQ(sync.measured, window_around(9e-6, 0).stats.median_s);
  for (const Ceiling* c : {&async, &sync}) {
    EXPECT_NE(c->method.find("window 2 at 0 s failed: the worker is gone"), std::string::npos)
        << c->method;
    EXPECT_NE(c->method.find("window 3 at 0 s failed: the window's process answered no window"),
              std::string::npos)
        << c->method;
  }
  EXPECT_NE(sync.method.find("window 4 at 0 s failed: cudaErrorUnknown"), std::string::npos)
      << sync.method;
  EXPECT_EQ(async.method.find("window 4"), std::string::npos) << async.method;
  EXPECT_NE(async.method.find("measured in 3 windows, each in a process of its own"),
            std::string::npos);
}

}  // namespace
}  // namespace timeroof
