// Warm-up before timing: synchronized calls until at least `min_calls` ran and
// `min_seconds` passed, so module loading, library plan caches, first-touch page
// faults and the SM clock's ramp from idle stay out of the timed samples.
#pragma once

#include <cuda_runtime_api.h>

#include "measure/call_under_test.hpp"

namespace timeroof {

struct WarmupPolicy {
  int min_calls = 3;
  double min_seconds = 0.02;
};

struct WarmupResult {
  int calls = 0;
  // The first call alone, synchronized: lazy module loading (CUDA_MODULE_LOADING=LAZY,
  // CUDA 12.2's default) and a library's first-use setup land here.
  double first_call_s = 0;
  double seconds = 0;  // all of it
};

// Throws on any CUDA error of the calls.
WarmupResult warm_up(const CallUnderTest& call, cudaStream_t stream,
                     const WarmupPolicy& policy = {});

}  // namespace timeroof
