#include "sweeps/device_compare.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/element_load.cuh"

namespace timeroof {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ double infinity() {
  return __longlong_as_double(0x7ff0000000000000LL);
}

// Non-negative doubles order like their bit patterns, so atomicMax on the bits
// is a max on the values; NaN is mapped to +infinity first.
__device__ __forceinline__ unsigned long long ordered_bits(double value) {
  if (isnan(value)) value = infinity();
  return static_cast<unsigned long long>(__double_as_longlong(value));
}

__global__ void compare_kernel(const void* a, const void* b, std::size_t count, DataType type,
                               unsigned long long* result) {
  double difference = 0;
  double reference = 0;
  unsigned long long non_finite_a = 0;
  unsigned long long non_finite_b = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double x = load_element(a, i, type);
    const double y = load_element(b, i, type);
    non_finite_a += isfinite(x) ? 0 : 1;
    non_finite_b += isfinite(y) ? 0 : 1;
    const double d = fabs(x - y);
    difference = fmax(difference, isfinite(d) ? d : infinity());
    if (isfinite(y)) reference = fmax(reference, fabs(y));
  }
  __shared__ double block_difference[kThreads];
  __shared__ double block_reference[kThreads];
  block_difference[threadIdx.x] = difference;
  block_reference[threadIdx.x] = reference;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      block_difference[threadIdx.x] =
          fmax(block_difference[threadIdx.x], block_difference[threadIdx.x + half]);
      block_reference[threadIdx.x] =
          fmax(block_reference[threadIdx.x], block_reference[threadIdx.x + half]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicMax(&result[0], ordered_bits(block_difference[0]));
    atomicMax(&result[1], ordered_bits(block_reference[0]));
  }
  // Rare: one atomic per thread that met a value that is not finite.
  if (non_finite_a > 0) atomicAdd(&result[2], non_finite_a);
  if (non_finite_b > 0) atomicAdd(&result[3], non_finite_b);
}

}  // namespace

DeviceDifference compare_on_device(const void* a, const void* b, std::size_t count, DataType type,
                                   cudaStream_t stream) {
  DeviceBuffer<unsigned long long> result(4);
  TR_CUDA_CHECK(cudaMemsetAsync(result.get(), 0, result.bytes(), stream));
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks == 0 ? 1 : (blocks < 4096 ? blocks : 4096));
  compare_kernel<<<grid, kThreads, 0, stream>>>(a, b, count, type, result.get());
  TR_CUDA_CHECK(cudaGetLastError());
  unsigned long long host[4] = {0, 0, 0, 0};
  TR_CUDA_CHECK(cudaMemcpyAsync(host, result.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  DeviceDifference difference;
  std::memcpy(&difference.max_abs_difference, &host[0], sizeof(double));
  std::memcpy(&difference.max_abs_reference, &host[1], sizeof(double));
  difference.non_finite_a = static_cast<std::size_t>(host[2]);
  difference.non_finite_b = static_cast<std::size_t>(host[3]);
  return difference;
}

}  // namespace timeroof
