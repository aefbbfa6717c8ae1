// The three times of one call measured together: T_call with the host issue
// time (synchronized.hpp), T_stream (back_to_back.hpp) and T_graph
// (graph_replay.hpp), in alternating rounds until each stops under its own rule
// (core/statistics.hpp sample_interleaved). Why interleaved: measured one after
// the other, a large convolution on a power-capped H200 read T_call up to 14%
// below T_graph, because T_call ran first at the idle GPU's boost clock and the
// sustained passes after it at the capped clock; and a host-bound call's T_stream
// rose 31% above T_call when the host slowed between the passes. Alternating,
// a drift falls on all three alike. Each time carries the median SM clock its
// own rounds ran at, so a difference that remains is explained by the clock or
// is not.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>

#include "core/statistics.hpp"
#include "measure/back_to_back.hpp"
#include "measure/call_under_test.hpp"
#include "measure/graph_replay.hpp"
#include "measure/synchronized.hpp"

namespace timeroof {

struct ThreeTimeRules {
  StopRule call, stream, graph;
  // false: T_call and T_stream only (a revisit of a point's host-side times,
  // sweeps/runner.hpp); T_graph is GPU-side and repeats without one.
  bool with_graph = true;
};

struct ThreeTimes {
  SynchronizedTimes synchronized;  // T_call and the issue time
  MeasuredTime stream;             // T_stream
  GraphReplay graph;               // T_graph, or why there is none
  int call_rounds = 0, stream_rounds = 0, graph_rounds = 0;
  // Wall seconds of each pass's own rounds (T_call's first round included);
  // the graph's capture and pilots are graph.setup_s.
  double call_seconds = 0, stream_seconds = 0, graph_seconds = 0;
};

// `read_sm_clock`, if set, is read once per round of each pass while the GPU
// works (NVML; an empty reading is skipped); each time's sm_clock_hz is the
// median of its own pass's readings.
ThreeTimes time_three_interleaved(const CallUnderTest& call, cudaStream_t stream,
                                  const ThreeTimeRules& rules,
                                  const std::function<std::optional<double>()>& read_sm_clock,
                                  const BackToBackOptions& stream_options = {},
                                  const GraphReplayOptions& graph_options = {});

}  // namespace timeroof
