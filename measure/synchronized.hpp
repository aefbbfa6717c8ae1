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

#include <functional>
#include <span>
#include <vector>

#include "core/statistics.hpp"
#include "gpu/handles.hpp"
#include "measure/call_under_test.hpp"

namespace timeroof {

struct SynchronizedTimes {
  MeasuredTime call;   // T_call; the stop rule judges these samples
  MeasuredTime issue;  // host issue time of one call, from the same calls
};

// The T_call loop in rounds (core/statistics.hpp Sampler): round(n, samples)
// times n calls, appending their T_call and keeping their issue times.
// `while_busy`, if set, runs once per round after the first call is enqueued
// (e.g. a clock reading), outside both timed spans.
class SynchronizedSampler {
 public:
  SynchronizedSampler(const CallUnderTest& call, cudaStream_t stream,
                      std::function<void()> while_busy = nullptr);
  void round(int n, std::vector<double>& call_samples);
  SynchronizedTimes times(std::span<const double> call_samples, bool converged,
                          const StopRule& rule) const;

 private:
  const CallUnderTest& call_;
  cudaStream_t stream_;
  std::function<void()> while_busy_;
  Event start_, stop_;
  std::vector<double> issue_samples_;
};

SynchronizedTimes time_synchronized(const CallUnderTest& call, cudaStream_t stream,
                                    const StopRule& rule);

}  // namespace timeroof
