// T_stream: the time per call when calls are issued back to back on one stream,
// as a training or inference loop issues them: the host enqueues the next call
// while the GPU runs the previous one (sequence_timing.hpp says how it is timed).
// It is the larger of the host's issue rate and the GPU's time per call, plus
// whatever the two fail to overlap.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>

#include "core/statistics.hpp"
#include "measure/call_under_test.hpp"
#include "measure/sequence_timing.hpp"

namespace timeroof {

struct BackToBackOptions {
  // A warm sample spans about this long (many calls per sample for short calls).
  double sample_seconds = 200e-6;
  int max_calls_per_sample = 1000;
};

// The sequence (sequence_timing.hpp) that times calls back to back:
// `per_call_estimate_s` (e.g. T_call's median) sizes the samples.
SequenceOptions back_to_back_sequence(double per_call_estimate_s,
                                      const BackToBackOptions& options = {});
// The sentence stored with the time.
std::string back_to_back_method(const CallUnderTest& call, const SequenceOptions& sequence);

// `while_busy` runs once per chunk while the GPU works (e.g. a clock reading).
MeasuredTime time_back_to_back(const CallUnderTest& call, cudaStream_t stream, const StopRule& rule,
                               double per_call_estimate_s, const BackToBackOptions& options = {},
                               const std::function<void()>& while_busy = nullptr);

}  // namespace timeroof
