// CUDA-core arithmetic kernels (plain host view of kernels/cuda_core.cu): long
// chains of FMA, or of alternating add and multiply, per precision. They set the
// fp64/fp32/fp16/bf16 *_fma and *_addmul ceilings (kernels/cuda_core_ceilings.cpp).
//
// FLOP convention (the one ncu's roofline and the whitepapers use):
//   an FMA is 2 FLOP per lane, an add or a multiply 1 FLOP per lane;
//   a packed instruction (HFMA2, HADD2, HMUL2 on __half2 / __nv_bfloat162) has 2 lanes.
//   So per thread instruction: DFMA, FFMA = 2 FLOP; HFMA2 (fp16 or bf16) = 4 FLOP;
//   DADD, DMUL, FADD, FMUL = 1 FLOP; HADD2, HMUL2 = 2 FLOP.
// (On sm_80 bf16 add and multiply have no instruction of their own: the compiler
// emits HFMA2.BF16 with a constant 1 or -0 operand, so bf16_addmul runs on FMA.)
// Theoretical per SM per clock on sm_90 (H100/H200; programming guide throughput
// table and the H100 whitepaper, where non-tensor FP16 and BF16 = 2 x FP32 FLOP/s):
//   FFMA 128 lanes -> 256 FLOP, DFMA 64 lanes -> 128 FLOP, HFMA2 128 instructions
//   (256 lanes) -> 512 FLOP for fp16 and bf16; FADD/FMUL 128 lanes -> 128 FLOP,
//   DADD/DMUL 64 -> 64 FLOP, HADD2/HMUL2 128 instructions -> 256 FLOP.
// The measured ceilings are FLOP/s under this convention.
//
// The chains (so that tests can recompute them on the CPU):
//   global thread t = blockIdx.x * blockDim.x + threadIdx.x runs kCudaCoreChains
//   independent chains; packed types carry two lanes per chain. Lane l of chain c
//   starts at x = 1 + ((t + 7c + 61l) mod 128) / 128 (exact in every precision).
//   With a = kChainMultiplier and b = kChainAddend, rounded to the precision:
//     *_fma:    every instruction is x = fma(x, a, b), one rounding;
//     *_addmul: instructions alternate x = x + b, then x = x * a, each rounded.
//   A loop trip runs kCudaCoreInstructionsPerTrip instructions per chain (for addmul
//   half adds, half multiplies). The thread writes one double: the sum, in double,
//   over chains c = 0.. in order, lane 0 then lane 1, of the final values.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kernels/clock_span.hpp"

namespace timeroof {

enum class CudaCoreRoof {
  fp64_fma,
  fp32_fma,
  fp16_fma,
  bf16_fma,
  fp64_addmul,
  fp32_addmul,
  fp16_addmul,
  bf16_addmul,
};

inline constexpr int kCudaCoreChains = 8;
inline constexpr int kCudaCoreInstructionsPerTrip = 32;  // per chain, fully unrolled
inline constexpr int kCudaCoreThreadsPerBlock = 256;     // the kernels' launch bound
inline constexpr double kChainMultiplier = 0.875;
inline constexpr double kChainAddend = 0.25;

struct CudaCoreKernel {
  CudaCoreRoof roof;
  std::string ceiling;      // "fp32_fma" (core/ceiling_names.hpp)
  const char* kernel;       // "fp32_fma_kernel" (the __global__ function's name)
  const char* instruction;  // sm_90 SASS it is built from: "FFMA", "HADD2 + HMUL2", ...
  int lanes;                // per thread instruction: 2 for packed types, else 1
  double flop_per_lane;     // 2 for FMA, 1 for add or multiply
  int mantissa_bits;        // significand bits incl. the implicit one: 53, 24, 11, 8
};

// All eight kernels, in the order of CudaCoreRoof.
const std::vector<CudaCoreKernel>& cuda_core_kernels();
const CudaCoreKernel& cuda_core_kernel(CudaCoreRoof roof);

// FLOPs one launch does under the convention above.
double cuda_core_flops(CudaCoreRoof roof, int blocks, int threads, int trips);

// Launches the kernel of `roof`: `blocks` x `threads` (threads <= kCudaCoreThreadsPerBlock),
// `trips` loop trips; `out` (device) receives blocks * threads doubles and, unless
// null, `spans` (device) one clock span per block (kernels/clock_span.hpp).
void launch_cuda_core_kernel(CudaCoreRoof roof, int blocks, int threads, int trips, double* out,
                             ClockSpan* spans, cudaStream_t stream);

// Resident blocks of kCudaCoreThreadsPerBlock threads per SM for the kernel of `roof`.
int cuda_core_blocks_per_sm(CudaCoreRoof roof);

}  // namespace timeroof
