// The project's own CUDA kernels for the memory-bound families (the
// `implementation = own` path of pointwise, softmax and pool), written to run
// near the HBM roof: 16-byte vector loads and stores, arithmetic in fp32 at
// every stored type, and exactly the FADD / FMUL / FFMA each problem's header
// states (explicitly rounded intrinsics, no contraction; exp and reciprocal as
// MUFU.EX2 / MUFU.RCP), so the fp32 FLOP counters can be checked exactly.
// Each launcher enqueues one kernel on `stream` and does not synchronize.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "sweeps/pointwise_problem.hpp"
#include "sweeps/pool_problem.hpp"
#include "sweeps/softmax_problem.hpp"

namespace timeroof {

// y[i] = op(a[i], b[i]) for i < count; `b` is null for one-input ops. One
// block of 1024 threads per tile of 2048 16-byte vectors, then the last
// count % vector values.
void launch_pointwise(PointwiseOp op, DataType type, const void* a, const void* b, void* y,
                      std::size_t count, cudaStream_t stream);

// Softmax of every row of x (batch x rows rows of `columns`), as softmax_launch(spec)
// says: one warp or one block per row, the row held in registers, fp32 max,
// exponentials and sum; x is read once and y written once.
void launch_softmax(const SoftmaxSpec& spec, const void* x, void* y, cudaStream_t stream);

// NHWC pooling: one thread per output pixel and 16-byte channel vector
// (single channels when channels is not a multiple of the vector).
void launch_pool(const PoolSpec& spec, const void* x, void* y, cudaStream_t stream);

}  // namespace timeroof
