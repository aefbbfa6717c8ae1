#include "counters/probe_kernel.hpp"

#include "gpu/check.hpp"

namespace timeroof {

namespace {
__global__ void ffma_probe_kernel(float* out, int iterations, float b, float c) {
  float x = threadIdx.x * 1e-3f;
  float y = blockIdx.x * 1e-4f;
  for (int i = 0; i < iterations; ++i) {
    x = fmaf(x, b, c);
    y = fmaf(y, c, b);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x + y;  // one FADD, consumes both chains
}
}  // namespace

void launch_ffma_probe(const FfmaProbe& probe, float* out, cudaStream_t stream) {
  ffma_probe_kernel<<<probe.blocks, probe.threads, 0, stream>>>(out, probe.iterations, 1.0001f,
                                                                0.9999f);
  TR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace timeroof
