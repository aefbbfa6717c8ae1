// A templated kernel with a 3-D launch shape and static + dynamic shared memory,
// for the activity tracer's GPU tests (demangled template names, grid, block,
// registers and shared bytes as CUPTI reports them).
#include <cuda_runtime_api.h>

#include "gpu/check.hpp"

namespace timeroof::trace_test {

template <typename T, int Tile>
__global__ void scale_kernel(T* data, T factor, int n) {
  __shared__ T tile[Tile * 32];
  extern __shared__ unsigned char scratch[];
  const int threads = blockDim.x * blockDim.y * blockDim.z;
  const int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int lane = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int i = block * threads + lane;
  const T value = i < n ? data[i] : T(0);
  tile[lane % (Tile * 32)] = value;
  scratch[lane % 256] = static_cast<unsigned char>(lane);
  __syncthreads();
  if (i < n) data[i] = tile[lane % (Tile * 32)] * factor + T(scratch[lane % 256] & 1);
}

void launch_scale(float* data, float factor, int n, dim3 grid, dim3 block, unsigned dynamic_shared,
                  cudaStream_t stream) {
  scale_kernel<float, 4><<<grid, block, dynamic_shared, stream>>>(data, factor, n);
  TR_CUDA_CHECK(cudaGetLastError());
}

cudaFuncAttributes scale_attributes() {
  cudaFuncAttributes attributes{};
  TR_CUDA_CHECK(cudaFuncGetAttributes(&attributes, scale_kernel<float, 4>));
  return attributes;
}

}  // namespace timeroof::trace_test
