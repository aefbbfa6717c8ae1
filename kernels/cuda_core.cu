// CUDA-core FMA and add/mul chains; see kernels/cuda_core.hpp for the chain
// definition and the FLOP convention.
//
// Design: each thread runs kCudaCoreChains independent chains, so the pipe never
// waits on one instruction's latency; the inner trip (kCudaCoreInstructionsPerTrip
// x kCudaCoreChains = 256 arithmetic instructions) is fully unrolled, leaving about
// 3 loop instructions per 256 (the FP32 and packed-half pipes are issue-bound on
// sm_90, one warp instruction per scheduler per clock, so overhead counts). The
// explicit *_rn intrinsics keep adds and multiplies from being contracted into FMA.
// Every chain reaches the one double each thread writes, so none can be dropped.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>

#include "core/ceiling_names.hpp"
#include "gpu/check.hpp"
#include "kernels/clock_span.cuh"
#include "kernels/cuda_core.hpp"

namespace timeroof {

namespace {

// Seed of lane `lane` of chain `chain`: 1 + k / 128 with k < 128, exact in bf16.
__device__ __forceinline__ float chain_seed(unsigned thread, int chain, int lane) {
  const unsigned k = (thread + 7u * chain + 61u * lane) & 127u;
  return __fmul_rn(__uint2float_rn(128u + k), 1.0f / 128.0f);  // FMUL, no FFMA
}

struct Fp64 {
  using T = double;
  static __device__ __forceinline__ T make(double v) { return v; }
  static __device__ __forceinline__ T seed(unsigned t, int c) {
    return static_cast<double>(chain_seed(t, c, 0));
  }
  static __device__ __forceinline__ T fma(T x, T a, T b) { return __fma_rn(x, a, b); }
  static __device__ __forceinline__ T add(T x, T b) { return __dadd_rn(x, b); }
  static __device__ __forceinline__ T mul(T x, T a) { return __dmul_rn(x, a); }
  static __device__ __forceinline__ double accumulate(double sum, T x) { return sum + x; }
};

struct Fp32 {
  using T = float;
  static __device__ __forceinline__ T make(double v) { return static_cast<float>(v); }
  static __device__ __forceinline__ T seed(unsigned t, int c) { return chain_seed(t, c, 0); }
  static __device__ __forceinline__ T fma(T x, T a, T b) { return __fmaf_rn(x, a, b); }
  static __device__ __forceinline__ T add(T x, T b) { return __fadd_rn(x, b); }
  static __device__ __forceinline__ T mul(T x, T a) { return __fmul_rn(x, a); }
  static __device__ __forceinline__ double accumulate(double sum, T x) {
    return sum + static_cast<double>(x);
  }
};

// Fp16x2 and Bf16x2 are spelled out, not one template over the packed type: each
// roof's intrinsics stay readable by name beside the PTX they become.
struct Fp16x2 {
  using T = __half2;
  static __device__ __forceinline__ T make(double v) {
    return __float2half2_rn(static_cast<float>(v));
  }
  static __device__ __forceinline__ T seed(unsigned t, int c) {
    return __floats2half2_rn(chain_seed(t, c, 0), chain_seed(t, c, 1));
  }
  static __device__ __forceinline__ T fma(T x, T a, T b) { return __hfma2(x, a, b); }
  static __device__ __forceinline__ T add(T x, T b) { return __hadd2_rn(x, b); }
  static __device__ __forceinline__ T mul(T x, T a) { return __hmul2_rn(x, a); }
  static __device__ __forceinline__ double accumulate(double sum, T x) {
    sum += static_cast<double>(__low2float(x));
    return sum + static_cast<double>(__high2float(x));
  }
};

struct Bf16x2 {
  using T = __nv_bfloat162;
  static __device__ __forceinline__ T make(double v) {
    return __float2bfloat162_rn(static_cast<float>(v));
  }
  static __device__ __forceinline__ T seed(unsigned t, int c) {
    return __floats2bfloat162_rn(chain_seed(t, c, 0), chain_seed(t, c, 1));
  }
  static __device__ __forceinline__ T fma(T x, T a, T b) { return __hfma2(x, a, b); }
  static __device__ __forceinline__ T add(T x, T b) { return __hadd2_rn(x, b); }
  static __device__ __forceinline__ T mul(T x, T a) { return __hmul2_rn(x, a); }
  static __device__ __forceinline__ double accumulate(double sum, T x) {
    sum += static_cast<double>(__low2float(x));
    return sum + static_cast<double>(__high2float(x));
  }
};

template <class Ops, bool kFma>
__device__ __forceinline__ void run_chains(int trips, typename Ops::T a, typename Ops::T b,
                                           double* out, ClockSpan* spans) {
  using T = typename Ops::T;
  const ClockMark start = clock_mark();
  const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
  T x[kCudaCoreChains];
#pragma unroll
  for (int c = 0; c < kCudaCoreChains; ++c) x[c] = Ops::seed(thread, c);

#pragma unroll 1
  for (int trip = 0; trip < trips; ++trip) {
    if constexpr (kFma) {
#pragma unroll
      for (int s = 0; s < kCudaCoreInstructionsPerTrip; ++s) {
#pragma unroll
        for (int c = 0; c < kCudaCoreChains; ++c) x[c] = Ops::fma(x[c], a, b);
      }
    } else {
#pragma unroll
      for (int s = 0; s < kCudaCoreInstructionsPerTrip; s += 2) {
#pragma unroll
        for (int c = 0; c < kCudaCoreChains; ++c) x[c] = Ops::add(x[c], b);
#pragma unroll
        for (int c = 0; c < kCudaCoreChains; ++c) x[c] = Ops::mul(x[c], a);
      }
    }
  }

  double sum = 0;
#pragma unroll
  for (int c = 0; c < kCudaCoreChains; ++c) sum = Ops::accumulate(sum, x[c]);
  out[thread] = sum;
  // Thread 0's span stands for its block: the block's warps run the same trips.
  if (spans != nullptr && threadIdx.x == 0) write_clock_span(spans, start);
}

// One named kernel per roof, so SASS, traces and counters name the roof.
#define TR_CUDA_CORE_KERNEL(name, Ops, is_fma)                              \
  __global__ void __launch_bounds__(kCudaCoreThreadsPerBlock)               \
      name(int trips, double a, double b, double* out, ClockSpan* spans) {  \
    run_chains<Ops, is_fma>(trips, Ops::make(a), Ops::make(b), out, spans); \
  }

TR_CUDA_CORE_KERNEL(fp64_fma_kernel, Fp64, true)
TR_CUDA_CORE_KERNEL(fp32_fma_kernel, Fp32, true)
TR_CUDA_CORE_KERNEL(fp16_fma_kernel, Fp16x2, true)
TR_CUDA_CORE_KERNEL(bf16_fma_kernel, Bf16x2, true)
TR_CUDA_CORE_KERNEL(fp64_addmul_kernel, Fp64, false)
TR_CUDA_CORE_KERNEL(fp32_addmul_kernel, Fp32, false)
TR_CUDA_CORE_KERNEL(fp16_addmul_kernel, Fp16x2, false)
TR_CUDA_CORE_KERNEL(bf16_addmul_kernel, Bf16x2, false)
#undef TR_CUDA_CORE_KERNEL

using ChainKernel = void (*)(int, double, double, double*, ClockSpan*);

ChainKernel kernel_of(CudaCoreRoof roof) {
  switch (roof) {
    case CudaCoreRoof::fp64_fma:
      return fp64_fma_kernel;
    case CudaCoreRoof::fp32_fma:
      return fp32_fma_kernel;
    case CudaCoreRoof::fp16_fma:
      return fp16_fma_kernel;
    case CudaCoreRoof::bf16_fma:
      return bf16_fma_kernel;
    case CudaCoreRoof::fp64_addmul:
      return fp64_addmul_kernel;
    case CudaCoreRoof::fp32_addmul:
      return fp32_addmul_kernel;
    case CudaCoreRoof::fp16_addmul:
      return fp16_addmul_kernel;
    case CudaCoreRoof::bf16_addmul:
      return bf16_addmul_kernel;
  }
  throw std::logic_error("unknown CudaCoreRoof");
}

}  // namespace

const std::vector<CudaCoreKernel>& cuda_core_kernels() {
  using R = CudaCoreRoof;
  static const std::vector<CudaCoreKernel> kernels = {
      {R::fp64_fma, ceiling::fma(Precision::fp64), "fp64_fma_kernel", "DFMA", 1, 2.0, 53},
      {R::fp32_fma, ceiling::fma(Precision::fp32), "fp32_fma_kernel", "FFMA", 1, 2.0, 24},
      {R::fp16_fma, ceiling::fma(Precision::fp16), "fp16_fma_kernel", "HFMA2", 2, 2.0, 11},
      {R::bf16_fma, ceiling::fma(Precision::bf16), "bf16_fma_kernel", "HFMA2.BF16_V2", 2, 2.0, 8},
      {R::fp64_addmul, ceiling::addmul(Precision::fp64), "fp64_addmul_kernel", "DADD + DMUL", 1,
       1.0, 53},
      {R::fp32_addmul, ceiling::addmul(Precision::fp32), "fp32_addmul_kernel", "FADD + FMUL", 1,
       1.0, 24},
      {R::fp16_addmul, ceiling::addmul(Precision::fp16), "fp16_addmul_kernel", "HADD2 + HMUL2", 2,
       1.0, 11},
      {R::bf16_addmul, ceiling::addmul(Precision::bf16), "bf16_addmul_kernel",
       "HADD2.BF16_V2 + HMUL2.BF16_V2", 2, 1.0, 8},
  };
  return kernels;
}

const CudaCoreKernel& cuda_core_kernel(CudaCoreRoof roof) {
  return cuda_core_kernels().at(static_cast<std::size_t>(roof));
}

double cuda_core_flops(CudaCoreRoof roof, int blocks, int threads, int trips) {
  const CudaCoreKernel& k = cuda_core_kernel(roof);
  const double instructions_per_thread =
      static_cast<double>(trips) * kCudaCoreInstructionsPerTrip * kCudaCoreChains;
  return static_cast<double>(blocks) * threads * instructions_per_thread * k.lanes *
         k.flop_per_lane;
}

void launch_cuda_core_kernel(CudaCoreRoof roof, int blocks, int threads, int trips, double* out,
                             ClockSpan* spans, cudaStream_t stream) {
  if (threads <= 0 || threads > kCudaCoreThreadsPerBlock || blocks <= 0 || trips < 0)
    throw std::invalid_argument("launch_cuda_core_kernel: bad launch shape");
  kernel_of(roof)<<<blocks, threads, 0, stream>>>(trips, kChainMultiplier, kChainAddend, out,
                                                  spans);
  TR_CUDA_CHECK(cudaGetLastError());
}

int cuda_core_blocks_per_sm(CudaCoreRoof roof) {
  int blocks = 0;
  TR_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel_of(roof),
                                                              kCudaCoreThreadsPerBlock, 0));
  return blocks;
}

}  // namespace timeroof
