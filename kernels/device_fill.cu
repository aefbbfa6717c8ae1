#include "kernels/device_fill.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "gpu/check.hpp"
#include "kernels/element_load.cuh"
#include "kernels/hash.cuh"

namespace timeroof {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ std::uint32_t mix(std::uint64_t index, std::uint32_t seed) {
  auto x =
      static_cast<std::uint32_t>(index) ^ static_cast<std::uint32_t>(index >> 32) * 0x9e3779b9U;
  return hash32(x ^ seed);
}

__device__ __forceinline__ void store(void* data, std::size_t i, DataType type, double value) {
  switch (type) {
    case DataType::fp16:
      static_cast<__half*>(data)[i] = __double2half(value);
      break;
    case DataType::bf16:
      static_cast<__nv_bfloat16*>(data)[i] = __double2bfloat16(value);
      break;
    case DataType::fp32:
      static_cast<float*>(data)[i] = static_cast<float>(value);
      break;
    case DataType::fp64:
      static_cast<double*>(data)[i] = value;
      break;
    case DataType::fp8_e4m3:
      static_cast<__nv_fp8_e4m3*>(data)[i] = __nv_fp8_e4m3(static_cast<float>(value));
      break;
    case DataType::fp8_e5m2:
      static_cast<__nv_fp8_e5m2*>(data)[i] = __nv_fp8_e5m2(static_cast<float>(value));
      break;
    case DataType::int8:
      static_cast<std::int8_t*>(data)[i] = static_cast<std::int8_t>(value);
      break;
    case DataType::int32:
      static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(value);
      break;
  }
}

__global__ void fill_random_kernel(void* data, std::size_t count, DataType type,
                                   std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t h = mix(i, seed);
    double value;
    if (type == DataType::int8)
      value = static_cast<double>(static_cast<std::int8_t>(h & 0xff));
    else if (type == DataType::int32)
      value = static_cast<double>(static_cast<std::int32_t>(h >> 16) - 32768);
    else
      value = static_cast<double>(h >> 8) * (2.0 / 16777216.0) - 1.0;
    store(data, i, type, value);
  }
}

__global__ void from_double_kernel(const double* source, void* destination, std::size_t count,
                                   DataType type) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    store(destination, i, type, source[i]);
}

__global__ void to_double_kernel(const void* source, double* destination, std::size_t count,
                                 DataType type) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    destination[i] = load_element(source, i, type);
}

unsigned grid_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

}  // namespace

void fill_random(void* data, std::size_t count, DataType type, std::uint32_t seed,
                 cudaStream_t stream) {
  fill_random_kernel<<<grid_for(count), kThreads, 0, stream>>>(data, count, type, seed);
  TR_CUDA_CHECK(cudaGetLastError());
}

void convert_from_double(const double* source, void* destination, std::size_t count, DataType type,
                         cudaStream_t stream) {
  from_double_kernel<<<grid_for(count), kThreads, 0, stream>>>(source, destination, count, type);
  TR_CUDA_CHECK(cudaGetLastError());
}

void convert_to_double(const void* source, double* destination, std::size_t count, DataType type,
                       cudaStream_t stream) {
  to_double_kernel<<<grid_for(count), kThreads, 0, stream>>>(source, destination, count, type);
  TR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace timeroof
