// Tensor-Core roofs through the warp-level mma.sync path (sm_80+): the plain
// host view of kernels/tensor_mma.cu. The dispatcher measure_tensor_ceilings
// (ceilings.hpp, in tensor_ceilings.cpp) times these and, on compute
// capability 9.0, the wgmma path (tensor_wgmma.hpp).
//
// Kernel design: 256 threads per block, as many blocks as fit on every SM (one
// wave). Each warp holds its A and B fragments in registers (random, finite
// values) and runs 8 independent accumulator chains, one mma each per loop
// iteration: 8 MMAs in flight per warp, and 8+ warps per SM sub-partition, hide
// the MMA latency. No memory traffic in the loop; each thread writes the sum of
// its accumulators once, so no MMA is dead code.
//
// FLOP convention: one matrix multiply-accumulate of shape m x n x k counts
// 2 * m * n * k FLOPs (a multiply and an add per product), whatever the type;
// int8 "FLOPs" are integer operations counted the same way. So one
//   mma.sync m16n8k16 (fp16, bf16)      = 4,096 FLOP
//   mma.sync m16n8k8  (tf32)            = 2,048 FLOP
//   mma.sync m16n8k32 (int8, fp8 e4m3)  = 8,192 FLOP
//   mma.sync m8n8k4   (fp64, DMMA)      =   512 FLOP
//   mma.sync m16n8k16 (fp64, sm_90)     = 4,096 FLOP
//   wgmma    m64nNk16 (fp16, bf16)      = 2,048 * N FLOP, k8 for tf32, k32 for fp8/int8
// These match what CUPTI's sm__ops_path_tensor_* counters report (one op = one FLOP).
//
// Ceiling names: tensor_fp16, tensor_bf16, tensor_tf32, tensor_fp8, tensor_int8,
// tensor_fp64 are the best path the GPU has (on sm_90: the larger of wgmma and
// mma.sync; elsewhere mma.sync). On sm_90 the mma.sync figures are also kept as
// tensor_<type>_mma_sync, the roof of code that never moved to wgmma.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kernels/tensor_types.hpp"

namespace timeroof {

// One mma.sync roof kernel: one per type, and for fp64 also the m16n8k16 shape
// PTX added for sm_90 (fewer instructions per FLOP than m8n8k4).
enum class MmaSyncVariant { fp16, bf16, tf32, fp8, int8, fp64, fp64_m16n8k16 };

// The variants that measure `type`.
std::vector<MmaSyncVariant> mma_sync_variants(Precision type);

// Why `variant` gives no roof on the current GPU, or nullopt when it can be timed.
struct MmaSyncUnavailable {
  std::string reason;
  // true: this binary lacks real code for the GPU (the instruction needs a newer
  // target than the image the GPU runs, e.g. fp8 on sm_89 with only sm_80 built);
  // false: the GPU has no such tensor instruction (fp8 mma.sync on sm_90 is
  // emulated by ptxas with f16 HMMA, so it measures no tensor roof).
  bool build_problem = false;
};
std::optional<MmaSyncUnavailable> mma_sync_unavailable(MmaSyncVariant variant);

// How the roof kernel of `variant` is launched on the current GPU.
struct MmaSyncLoopShape {
  MmaSyncVariant variant = MmaSyncVariant::bf16;
  int blocks = 0;
  int threads = 0;
  double flops_per_iteration = 0;  // whole grid
  std::size_t sink_bytes = 0;      // launch_mma_sync_loop writes accumulators, then clock spans
  std::string label;               // "mma.sync m16n8k16 bf16 x bf16 -> f32"
  std::string description;         // for a ceiling's method
};
MmaSyncLoopShape mma_sync_loop_shape(MmaSyncVariant variant, int sm_count);

// Enqueues one launch of `iterations` loop iterations on `stream`.
void launch_mma_sync_loop(const MmaSyncLoopShape& shape, long long iterations, void* sink,
                          cudaStream_t stream);

struct MmaTileShape {
  int m = 0;
  int n = 0;
  int k = 0;
};

// The mma.sync shape measured for `type` (fp64: m8n8k4, the shape every sm_80+ GPU has).
MmaTileShape mma_sync_tile_shape(Precision type);

// Runs one mma.sync of `type` on one warp with the same fragment layout the
// roof kernels use, and returns D = A * B (m x n, row-major) as doubles.
// `a` is m x k row-major, `b` is k x n row-major; values must be exactly
// representable in `type`. For tests: it proves the operands are laid out and
// the instruction is spelled as intended. fp8 needs compute capability 8.9+.
std::vector<double> run_mma_sync_tile(Precision type, const std::vector<double>& a,
                                      const std::vector<double>& b);

}  // namespace timeroof
