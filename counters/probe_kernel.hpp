// A kernel with an exactly known instruction count, used to prove that the
// counters read what the GPU did.
#pragma once

#include <cuda_runtime_api.h>

namespace timeroof {

struct FfmaProbe {
  int blocks = 64;
  int threads = 128;
  int iterations = 256;
  // Each thread runs two independent FFMA chains of `iterations` steps.
  double expected_ffma() const { return 2.0 * iterations * blocks * threads; }
};

// `out` must hold blocks * threads floats.
void launch_ffma_probe(const FfmaProbe& probe, float* out, cudaStream_t stream);

}  // namespace timeroof
