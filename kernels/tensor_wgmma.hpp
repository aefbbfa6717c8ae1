// Tensor-Core roofs through Hopper's warpgroup path (wgmma.mma_async). The
// kernels are built for sm_90a only (arch-specific: they load on compute
// capability 9.0 and nowhere else), so call these only when the GPU is 9.0.
//
// Kernel design (tensor_wgmma.cu): one block per SM with two consumer
// warpgroups (2 x 128 threads). Each warpgroup issues m64nNk* wgmma with A and B
// read from shared memory through matrix descriptors (K-major, no swizzle),
// fp32/int32 accumulators in registers (N/2 per thread). A loop iteration is one
// commit group of kStepsPerGroup wgmma into the same accumulators (a K extent of
// 128 bytes per row); wgmma.wait_group 1 keeps up to two groups (8 wgmma) in
// flight per warpgroup. The loop reads the same shared tiles again and again:
// no global memory traffic, so the tensor pipe is the only limit.
// FLOPs per wgmma: 2 * 64 * N * K (tensor_mma.hpp has the convention).
// Seen on an H200: the bf16 m64n256 kernel does 4,096 FLOP per SM per SM cycle
// (clock64), the dense peak; its FLOP/s is set by the clock the power limit
// allows under this load (~1.65-1.77 GHz), not by the kernel. Deeper pipelines,
// 128-byte swizzle, A from registers, 1 or 3 warpgroups per block measured no faster.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/tensor_types.hpp"

namespace timeroof {

// Whether wgmma takes `type` (every type but fp64).
bool wgmma_supports(Precision type);

// The K of one wgmma of `type`: 16 for fp16/bf16, 8 for tf32, 32 for fp8/int8
// (32 bytes of each row in every case).
int wgmma_k(Precision type);

// The N values with a kernel: 128 and 256.
inline constexpr int kWgmmaTileNs[] = {256, 128};

// How the throughput kernel of (type, n) is launched on a GPU of `sm_count` SMs.
struct WgmmaLoopShape {
  Precision type = Precision::bf16;
  int n = 256;
  int blocks = 0;
  int threads = 0;  // 128 per warpgroup
  std::size_t shared_bytes = 0;
  int wgmma_per_iteration = 0;     // per warpgroup
  double flops_per_iteration = 0;  // whole grid
  std::size_t sink_bytes = 0;      // launch_wgmma_loop writes accumulators, then clock spans
  std::string description;         // for a ceiling's method
};
WgmmaLoopShape wgmma_loop_shape(Precision type, int n, int sm_count);

// Enqueues one launch of `iterations` loop iterations on `stream`; `sink`
// (shape.sink_bytes) receives each thread's accumulator sum so nothing is dead code.
void launch_wgmma_loop(const WgmmaLoopShape& shape, long long iterations, void* sink,
                       cudaStream_t stream);

// Runs one wgmma m64 x n x wgmma_k(type) on one warpgroup, operands loaded into
// shared memory in the same layout and with the same descriptors the roof
// kernel uses, and returns D = A * B (64 x n, row-major). `a` is 64 x k
// row-major, `b` is k x n row-major, values exactly representable in `type`.
std::vector<double> run_wgmma_tile(Precision type, int n, const std::vector<double>& a,
                                   const std::vector<double>& b);

}  // namespace timeroof
