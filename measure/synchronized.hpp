// T_call: one call at a time, synchronized, CUDA events around it. The start
// event is recorded on an idle GPU, so the time includes the host's enqueue of
// the call, the launch latency and the device work: the latency one isolated
// call sees (a framework's eager call with a synchronize after it). With a
// prelude (cold L2), the prelude runs and is waited for before the start event.
// The host issue time is measured in the same loop: the steady clock around the
// enqueue alone, on an idle GPU (no back-pressure from a full launch queue) and
// untraced.
#pragma once

#include <cuda_runtime_api.h>

#include "core/statistics.hpp"
#include "measure/call_under_test.hpp"

namespace timeroof {

struct SynchronizedTimes {
  MeasuredTime call;   // T_call; the stop rule judges these samples
  MeasuredTime issue;  // host issue time of one call, from the same calls
};

SynchronizedTimes time_synchronized(const CallUnderTest& call, cudaStream_t stream,
                                    const StopRule& rule);

}  // namespace timeroof
