#include "tests/gpu/measure_kernels.hpp"

#include "gpu/check.hpp"

namespace timeroof::test {

namespace {

__device__ unsigned long long global_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__global__ void spin(long long nanoseconds) {
  const unsigned long long start = global_ns();
  while (static_cast<long long>(global_ns() - start) < nanoseconds) {
  }
}

__global__ void empty() {}

}  // namespace

void launch_spin(long long nanoseconds, cudaStream_t stream) {
  spin<<<1, 32, 0, stream>>>(nanoseconds);
  TR_CUDA_CHECK(cudaGetLastError());
}

void launch_empty(cudaStream_t stream) {
  empty<<<1, 32, 0, stream>>>();
  TR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace timeroof::test
