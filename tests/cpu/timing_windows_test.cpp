// CPU tier: which points the runner times in several host-side windows
// (sweeps/runner.hpp host_part_matters).
#include <gtest/gtest.h>

#include <optional>

#include "sweeps/runner.hpp"

namespace timeroof {
namespace {

Timing times(std::optional<double> call, std::optional<double> issue, std::optional<double> stream,
             std::optional<double> graph) {
  auto stats = [](std::optional<double> median) -> std::optional<TimeStats> {
    if (!median) return std::nullopt;
    TimeStats t;
    t.median_s = *median;
    return t;
  };
  Timing timing;
  timing.call = stats(call);
  timing.issue = stats(issue);
  timing.stream = stats(stream);
  timing.graph = stats(graph);
  return timing;
}

TEST(TimingWindows, AHostPartOfTwoPercentOrALaunchBoundStreamGetsWindows) {
  // A launch-bound LSTM: T_stream is the host's issue rate, far above T_graph.
  EXPECT_TRUE(host_part_matters(times(40e-6, 30e-6, 30e-6, 12e-6)));
  // A 5 ms convolution: issue 0.2% of T_call, T_stream within 1% of T_graph.
  EXPECT_FALSE(host_part_matters(times(5e-3, 10e-6, 5.01e-3, 4.99e-3)));
  // The thresholds: issue at 2% of T_call, T_stream at 1.02x T_graph.
  EXPECT_TRUE(host_part_matters(times(1e-3, 20e-6, 1e-3, 1e-3)));
  EXPECT_FALSE(host_part_matters(times(1e-3, 19.9e-6, 1e-3, 1e-3)));
  EXPECT_TRUE(host_part_matters(times(1e-3, 1e-6, 1.02e-3, 1e-3)));
  EXPECT_FALSE(host_part_matters(times(1e-3, 1e-6, 1.019e-3, 1e-3)));
  // Without T_graph nothing says the stream is GPU-bound.
  EXPECT_TRUE(host_part_matters(times(1e-3, 1e-6, 1e-3, std::nullopt)));
  // Nothing timed: nothing to revisit.
  EXPECT_FALSE(host_part_matters(Timing{}));
}

}  // namespace
}  // namespace timeroof
