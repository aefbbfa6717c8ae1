// Device side of the interconnect roofs (kernels/interconnect.hpp).
#include "gpu/check.hpp"
#include "kernels/interconnect.hpp"

namespace timeroof {

namespace {

__global__ void vector_copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst,
                                   std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    dst[i] = src[i];
}

__global__ void chain_init_kernel(unsigned* chain, unsigned nodes, unsigned stride_words) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  // i -> 5i + 1 mod 2^k: a full-period LCG (a = 1 mod 4, c odd), one cycle
  // through every node in an order no stride predictor follows.
  if (i < nodes) chain[i * stride_words] = ((i * 5u + 1u) & (nodes - 1)) * stride_words;
}

__global__ void pointer_chase_kernel(const unsigned* chain, int hops, unsigned* sink) {
  unsigned p = 0;
  for (int h = 0; h < hops; ++h) p = __ldcg(chain + p);  // .cg: L2 only, never a stale L1 line
  *sink = p;
}

}  // namespace

void launch_vector_copy(const void* src, void* dst, std::size_t count, int blocks,
                        cudaStream_t stream) {
  vector_copy_kernel<<<blocks, 512, 0, stream>>>(static_cast<const int4*>(src),
                                                 static_cast<int4*>(dst), count);
  TR_CUDA_CHECK(cudaGetLastError());
}

void launch_chain_init(unsigned* chain, unsigned nodes, unsigned stride_words,
                       cudaStream_t stream) {
  chain_init_kernel<<<(nodes + 255) / 256, 256, 0, stream>>>(chain, nodes, stride_words);
  TR_CUDA_CHECK(cudaGetLastError());
}

void launch_pointer_chase(const unsigned* chain, int hops, unsigned* sink, cudaStream_t stream) {
  pointer_chase_kernel<<<1, 1, 0, stream>>>(chain, hops, sink);
  TR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace timeroof
