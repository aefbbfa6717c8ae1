// What every timing strategy of this folder measures: one operator call (with
// its host<->device copies, if any), enqueued on a stream without synchronizing,
// and what must precede each timed call. The strategies are small separate units
// that the sweep runner composes, as nvbench composes its cold, hot and CUPTI
// measurements:
//   warmup.hpp          calls until the clocks and caches have settled
//   synchronized.hpp    T_call: one call, synchronized; and the host issue time
//   back_to_back.hpp    T_stream: calls issued back to back, host overlapped
//   graph_replay.hpp    T_graph: the call captured into a CUDA graph, replayed
//   trace_calls.hpp     kernels, launches, API time and copies (CUPTI activity)
//   counter_collection.hpp  hardware counters per kernel (CUPTI range profiler)
//   l2_flush.hpp        the cold-L2 prelude
//   core/pinned_thread.hpp  the measuring thread kept on one core (core: the
//                       launch roofs use it too)
//   host_probe.hpp      the host's speed, recorded beside host-bound times
// Each timing strategy stops when the 95% interval of its median is within the
// stop rule's target, or when its time budget runs out, and says which.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <string>

#include "core/results.hpp"

namespace timeroof {

struct CallUnderTest {
  // Enqueues exactly one call on the stream and returns without synchronizing.
  std::function<void(cudaStream_t)> enqueue;
  // Runs before every timed call on the same stream, outside the timed span
  // (an L2 flush for cold-L2 numbers); empty: the calls find L2 as the previous
  // call left it (warm).
  std::function<void(cudaStream_t)> prelude;
};

// One time a strategy measured, and how.
struct MeasuredTime {
  TimeStats stats;
  std::string method;                 // one sentence, stored with the point
  std::optional<double> sm_clock_hz;  // NVML, read while the GPU ran the timed calls
};

}  // namespace timeroof
