// CPU tier: which larger CUDA graphs of a call T_graph may try
// (measure/graph_replay.hpp larger_graph_pilot_fits): a pilot is kPilotReplays
// replays of the larger graph, and it must fit in max_pilot_seconds.
#include <gtest/gtest.h>

#include "measure/graph_replay.hpp"

namespace timeroof {
namespace {

TEST(GraphCopies, AShortCallTriesEveryLargerGraph) {
  const GraphReplayOptions options;  // 50 ms per pilot
  // An empty kernel: ~2 us a call, 256 copies' pilot 10 x 256 x 2 us = 5 ms.
  EXPECT_TRUE(larger_graph_pilot_fits(2e-6, 1, 8, options));
  EXPECT_TRUE(larger_graph_pilot_fits(8 * 2e-6, 8, 64, options));
  EXPECT_TRUE(larger_graph_pilot_fits(64 * 2e-6, 64, 256, options));
}

TEST(GraphCopies, ALongCallTriesNoLargerGraph) {
  const GraphReplayOptions options;
  // The fp32 8192^3 GEMM of the H100 (22 ms a call): 8 copies' pilot would be 1.76 s,
  // 64 copies' 14 s (what it cost before the limit).
  EXPECT_FALSE(larger_graph_pilot_fits(22e-3, 1, 8, options));
  EXPECT_FALSE(larger_graph_pilot_fits(8 * 22e-3, 8, 64, options));
  // A 200 us spin: 8 copies (16 ms) may be tried, 64 (128 ms) not.
  EXPECT_TRUE(larger_graph_pilot_fits(200e-6, 1, 8, options));
  EXPECT_FALSE(larger_graph_pilot_fits(8 * 200e-6, 8, 64, options));
}

TEST(GraphCopies, TheLimitIsExactAtItsEdgeAndJudgedPerCall) {
  GraphReplayOptions options;
  options.max_pilot_seconds = 0.08;
  // 10 replays x 8 copies x 1 ms = 80 ms: at the limit, allowed; the same per-call
  // time read from a graph of 8 copies (8 ms a replay) judges the same.
  EXPECT_TRUE(larger_graph_pilot_fits(1e-3, 1, 8, options));
  EXPECT_TRUE(larger_graph_pilot_fits(8e-3, 8, 8, options));
  EXPECT_FALSE(larger_graph_pilot_fits(1.01e-3, 1, 8, options));
  // A broken estimate never lets a graph through.
  EXPECT_FALSE(larger_graph_pilot_fits(1e-3, 0, 8, options));
  EXPECT_FALSE(larger_graph_pilot_fits(-1, 1, 8, options));
}

}  // namespace
}  // namespace timeroof
