#include "gpu/check.hpp"
#include "tests/gpu/replay_kernels.hpp"

namespace timeroof::test {

namespace {
__global__ void consume_once_kernel(unsigned* counters, int iterations, float b, float c) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = threadIdx.x * 1e-3f;
  if (counters[i] == 0) {
    for (int k = 0; k < iterations; ++k) {
      x = fmaf(x, b, c);
      x = fmaf(x, c, b);
    }
  }
  counters[i] += 1 + (x == 12345.0f);  // consumes x so the loop stays
}
}  // namespace

void launch_consume_once(unsigned* counters, int blocks, int threads, int iterations,
                         cudaStream_t stream) {
  consume_once_kernel<<<blocks, threads, 0, stream>>>(counters, iterations, 1.0001f, 0.9999f);
  TR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace timeroof::test
