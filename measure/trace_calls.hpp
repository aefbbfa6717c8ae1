// The trace strategy: CUPTI activity records of a few calls issued back to back
// (each call marked), summarized per call: kernels and their median durations,
// launches, CUDA API time, GPU gaps, copies. Tracing slows every launch, so it
// runs after the timing strategies and never overlaps them; the tracer is fully
// off again when this returns.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "measure/call_under_test.hpp"

namespace timeroof {

struct TracedCalls {
  // kernel_time_s, launches, api_time_s, launch_gap_s and the copies' bytes and
  // times (TraceSummary::timing()); the times of the timing strategies stay empty.
  Timing timing;
  std::vector<KernelRecord> kernels;  // one call's kernels, median durations
  // {"calls", "dropped_records", "kernels_renamed", "kernel_busy_s", "launch_latency_s",
  //  "kernel_time_per_call_s": [each call's summed kernel time, in call order],
  //  "api_calls_per_call": {name: count}}: every CUDA runtime and driver API one
  //  call makes (so a per-call allocation or synchronization inside a library
  //  shows by name), less tracing's own (is_tracer_api). kernels_renamed: kernel
  //  records of the traced calls whose CUPTI name was not the launched kernel's
  //  (Trace::kernels_renamed); "kernel_naming", only where kernels could not be
  //  named at launch, says why.
  nlohmann::json details;
};

// The prelude is not run: the trace counts the call's own work.
TracedCalls trace_calls(const CallUnderTest& call, cudaStream_t stream, int calls);

}  // namespace timeroof
