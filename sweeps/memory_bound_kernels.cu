#include "sweeps/memory_bound_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "gpu/check.hpp"

namespace timeroof {

namespace {

constexpr float kLog2e = 1.4426950408889634f;
// gelu(x) = x sigmoid(2 z), z = sqrt(2/pi) (x + 0.044715 x^3): exp(-2z) = 2^(-2 sqrt(2/pi) log2(e)
// ...).
constexpr float kGeluExponentScale = -2.0f * 0.7978845608028654f * kLog2e;

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// One MUFU instruction each (ftz: no denormal fix-up code around them).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float reciprocal_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <typename T>
struct alignas(16) Vector {
  static constexpr int kWidth = 16 / sizeof(T);
  T values[kWidth];
};

// --- pointwise --------------------------------------------------------------

// The FADD / FMUL / FFMA counts are pointwise_fma_pipe_flops_per_element's.
template <PointwiseOp Op>
__device__ __forceinline__ float apply(float a, float b) {
  if constexpr (Op == PointwiseOp::add) {
    return __fadd_rn(a, b);
  } else if constexpr (Op == PointwiseOp::mul) {
    return __fmul_rn(a, b);
  } else if constexpr (Op == PointwiseOp::relu) {
    return fmaxf(a, 0.0f);
  } else if constexpr (Op == PointwiseOp::gelu) {
    const float cubic = __fmul_rn(__fmaf_rn(0.044715f, __fmul_rn(a, a), 1.0f), a);
    const float e = exp2_approx(__fmul_rn(cubic, kGeluExponentScale));
    return __fmul_rn(a, reciprocal_approx(__fadd_rn(e, 1.0f)));
  } else {
    const float e = exp2_approx(__fmul_rn(a, -kLog2e));
    const float silu = __fmul_rn(a, reciprocal_approx(__fadd_rn(e, 1.0f)));
    if constexpr (Op == PointwiseOp::silu_mul) return __fmul_rn(silu, b);
    return silu;
  }
}

// One block per tile of kPointwiseThreads x kPointwiseUnroll vectors, every
// load of a thread in flight before its first use (the tile grid of the HBM
// copy roof's fastest variant, sweeps' ceilings: 1024 threads, 2 vectors each).
constexpr unsigned kPointwiseThreads = 1024;
constexpr int kPointwiseUnroll = 2;

template <typename T, PointwiseOp Op>
__global__ void __launch_bounds__(kPointwiseThreads)
    pointwise_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y,
                     std::size_t count) {
  constexpr int kWidth = Vector<T>::kWidth;
  constexpr bool kTwoInputs =
      Op == PointwiseOp::add || Op == PointwiseOp::mul || Op == PointwiseOp::silu_mul;
  const std::size_t vectors = count / kWidth;
  const std::size_t base =
      blockIdx.x * static_cast<std::size_t>(blockDim.x) * kPointwiseUnroll + threadIdx.x;
  const auto* av = reinterpret_cast<const Vector<T>*>(a);
  const auto* bv = reinterpret_cast<const Vector<T>*>(b);
  auto* yv = reinterpret_cast<Vector<T>*>(y);
  Vector<T> x[kPointwiseUnroll], other[kPointwiseUnroll] = {};
#pragma unroll
  for (int u = 0; u < kPointwiseUnroll; ++u) {
    const std::size_t v = base + static_cast<std::size_t>(u) * blockDim.x;
    if (v < vectors) {
      x[u] = av[v];
      if constexpr (kTwoInputs) other[u] = bv[v];
    }
  }
#pragma unroll
  for (int u = 0; u < kPointwiseUnroll; ++u) {
    const std::size_t v = base + static_cast<std::size_t>(u) * blockDim.x;
    if (v < vectors) {
      Vector<T> out;
#pragma unroll
      for (int i = 0; i < kWidth; ++i)
        out.values[i] =
            from_float<T>(apply<Op>(to_float(x[u].values[i]), to_float(other[u].values[i])));
      yv[v] = out;
    }
  }
  // The last count % kWidth values, one thread each of block 0.
  const std::size_t tail = vectors * kWidth + threadIdx.x;
  if (blockIdx.x == 0 && tail < count) {
    const float second = kTwoInputs ? to_float(b[tail]) : 0.0f;
    y[tail] = from_float<T>(apply<Op>(to_float(a[tail]), second));
  }
}

template <typename T, PointwiseOp Op>
void launch_pointwise_typed(const void* a, const void* b, void* y, std::size_t count,
                            cudaStream_t stream) {
  constexpr std::size_t kTile = std::size_t{kPointwiseThreads} * kPointwiseUnroll;
  const std::size_t vectors = count / Vector<T>::kWidth;
  const std::size_t blocks = std::max<std::size_t>(1, (vectors + kTile - 1) / kTile);
  if (blocks > INT_MAX)
    throw usage_error("pointwise: " + std::to_string(count) +
                      " elements exceed the own kernel's grid; allowed: batch x elements <= " +
                      std::to_string(INT_MAX * kTile));
  pointwise_kernel<T, Op><<<static_cast<unsigned>(blocks), kPointwiseThreads, 0, stream>>>(
      static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), count);
  TR_CUDA_CHECK(cudaGetLastError());
}

int multiprocessors() {
  int device = 0, count = 0;
  TR_CUDA_CHECK(cudaGetDevice(&device));
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

template <typename T>
void launch_pointwise_op(PointwiseOp op, const void* a, const void* b, void* y, std::size_t count,
                         cudaStream_t stream) {
  switch (op) {
    case PointwiseOp::add:
      return launch_pointwise_typed<T, PointwiseOp::add>(a, b, y, count, stream);
    case PointwiseOp::mul:
      return launch_pointwise_typed<T, PointwiseOp::mul>(a, b, y, count, stream);
    case PointwiseOp::relu:
      return launch_pointwise_typed<T, PointwiseOp::relu>(a, b, y, count, stream);
    case PointwiseOp::gelu:
      return launch_pointwise_typed<T, PointwiseOp::gelu>(a, b, y, count, stream);
    case PointwiseOp::silu:
      return launch_pointwise_typed<T, PointwiseOp::silu>(a, b, y, count, stream);
    case PointwiseOp::silu_mul:
      return launch_pointwise_typed<T, PointwiseOp::silu_mul>(a, b, y, count, stream);
  }
}

// --- softmax ----------------------------------------------------------------

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    x = __fadd_rn(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// The row's max (Sum = false) or sum over the block: each warp's butterfly, then
// warp 0's over the warps' results through shared memory; every thread gets it.
template <bool Sum>
__device__ float block_reduce(float x, float* shared) {
  x = Sum ? warp_sum(x) : warp_max(x);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  if (warp == 0) {
    const float identity = Sum ? 0.0f : -INFINITY;
    x = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : identity;
    x = Sum ? warp_sum(x) : warp_max(x);
    if (lane == 0) shared[32] = x;
  }
  __syncthreads();
  const float result = shared[32];
  __syncthreads();  // shared is reused by the next reduction
  return result;
}

// One row per warp (WarpPerRow; blocks of 8 warps) or per block. A thread
// holds up to kSoftmaxValuesPerThread values: its vectors j = lane, lane +
// threads, ... of the row.
template <typename T, int Width, bool WarpPerRow>
__global__ void __launch_bounds__(1024) softmax_kernel(const T* __restrict__ x, T* __restrict__ y,
                                                       std::int64_t rows, std::int64_t columns) {
  constexpr int kVectors = kSoftmaxValuesPerThread / Width;
  struct alignas(Width * sizeof(T)) Packed {
    T values[Width];
  };
  __shared__ float shared[33];
  const int threads = WarpPerRow ? 32 : static_cast<int>(blockDim.x);
  const int lane = WarpPerRow ? static_cast<int>(threadIdx.x % 32) : static_cast<int>(threadIdx.x);
  const std::int64_t row =
      WarpPerRow ? blockIdx.x * static_cast<std::int64_t>(blockDim.x / 32) + threadIdx.x / 32
                 : static_cast<std::int64_t>(blockIdx.x);
  if (row >= rows) return;  // a whole warp (warp per row) or block
  const std::int64_t vectors = columns / Width;
  const auto* in = reinterpret_cast<const Packed*>(x + row * columns);
  auto* out = reinterpret_cast<Packed*>(y + row * columns);

  float values[kSoftmaxValuesPerThread];
  float max = -INFINITY;
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const std::int64_t j = lane + static_cast<std::int64_t>(k) * threads;
    if (j < vectors) {
      const Packed p = in[j];
#pragma unroll
      for (int i = 0; i < Width; ++i) {
        values[k * Width + i] = to_float(p.values[i]);
        max = fmaxf(max, values[k * Width + i]);
      }
    }
  }
  max = WarpPerRow ? warp_max(max) : block_reduce<false>(max, shared);
  const float shift = __fmul_rn(max, -kLog2e);
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const std::int64_t j = lane + static_cast<std::int64_t>(k) * threads;
    if (j < vectors) {
#pragma unroll
      for (int i = 0; i < Width; ++i) {
        const float e = exp2_approx(__fmaf_rn(values[k * Width + i], kLog2e, shift));
        values[k * Width + i] = e;
        sum = __fadd_rn(sum, e);
      }
    }
  }
  sum = WarpPerRow ? warp_sum(sum) : block_reduce<true>(sum, shared);
  const float inverse = reciprocal_approx(sum);
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const std::int64_t j = lane + static_cast<std::int64_t>(k) * threads;
    if (j < vectors) {
      Packed p;
#pragma unroll
      for (int i = 0; i < Width; ++i)
        p.values[i] = from_float<T>(__fmul_rn(values[k * Width + i], inverse));
      out[j] = p;
    }
  }
}

template <typename T, int Width>
void launch_softmax_width(const SoftmaxLaunch& launch, std::int64_t rows, std::int64_t columns,
                          const void* x, void* y, cudaStream_t stream) {
  const auto* in = static_cast<const T*>(x);
  auto* out = static_cast<T*>(y);
  if (launch.warp_per_row) {
    constexpr std::int64_t kWarpsPerBlock = 8;
    const std::int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    softmax_kernel<T, Width, true>
        <<<static_cast<unsigned>(blocks), 32 * kWarpsPerBlock, 0, stream>>>(in, out, rows, columns);
  } else {
    softmax_kernel<T, Width, false>
        <<<static_cast<unsigned>(rows), static_cast<unsigned>(launch.threads_per_row), 0, stream>>>(
            in, out, rows, columns);
  }
  TR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_softmax_typed(const SoftmaxSpec& spec, const void* x, void* y, cudaStream_t stream) {
  const SoftmaxLaunch launch = softmax_launch(spec);
  const std::int64_t rows = spec.batch * spec.rows;
  if (rows > INT_MAX)
    throw usage_error(
        "softmax: batch x rows = " + std::to_string(rows) +
        " rows exceed the own kernel's grid; allowed: batch x rows <= " + std::to_string(INT_MAX));
  if (launch.vector_width == 1)
    return launch_softmax_width<T, 1>(launch, rows, spec.columns, x, y, stream);
  return launch_softmax_width<T, Vector<T>::kWidth>(launch, rows, spec.columns, x, y, stream);
}

// --- pool -------------------------------------------------------------------

struct PoolShape {
  std::int64_t batch, channels, height, width, out_height, out_width;
  int window, stride, pad;
};

// Window > 0: the window side known at compile time, so the taps' loops unroll
// and their loads are in flight together; 0: s.window at run time.
template <typename T, int Width, PoolMode Mode, int Window>
__global__ void __launch_bounds__(256)
    pool_kernel(const T* __restrict__ x, T* __restrict__ y, PoolShape s, float inverse_area) {
  const int window = Window > 0 ? Window : s.window;
  struct alignas(Width * sizeof(T)) Packed {
    T values[Width];
  };
  const std::int64_t groups = s.channels / Width;
  const std::int64_t total = s.batch * s.out_height * s.out_width * groups;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += step) {
    const std::int64_t group = t % groups;
    const std::int64_t ow = (t / groups) % s.out_width;
    const std::int64_t oh = (t / (groups * s.out_width)) % s.out_height;
    const std::int64_t n = t / (groups * s.out_width * s.out_height);
    const std::int64_t h0 = oh * s.stride - s.pad, w0 = ow * s.stride - s.pad;
    float acc[Width];
#pragma unroll
    for (int i = 0; i < Width; ++i) acc[i] = Mode == PoolMode::max ? -INFINITY : 0.0f;
    for (int kh = 0; kh < window; ++kh)
      for (int kw = 0; kw < window; ++kw) {
        const std::int64_t h = h0 + kh, w = w0 + kw;
        if (h < 0 || h >= s.height || w < 0 || w >= s.width) continue;  // padding
        const Packed p = reinterpret_cast<const Packed*>(x + ((n * s.height + h) * s.width + w) *
                                                                 s.channels)[group];
#pragma unroll
        for (int i = 0; i < Width; ++i)
          acc[i] = Mode == PoolMode::max ? fmaxf(acc[i], to_float(p.values[i]))
                                         : __fadd_rn(acc[i], to_float(p.values[i]));
      }
    Packed out;
#pragma unroll
    for (int i = 0; i < Width; ++i)
      out.values[i] =
          from_float<T>(Mode == PoolMode::max ? acc[i] : __fmul_rn(acc[i], inverse_area));
    reinterpret_cast<Packed*>(y + ((n * s.out_height + oh) * s.out_width + ow) *
                                      s.channels)[group] = out;
  }
}

template <typename T, int Width>
void launch_pool_width(const PoolSpec& spec, const PoolShape& shape, const void* x, void* y,
                       cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  static const std::int64_t max_blocks = std::int64_t{multiprocessors()} * 8;
  const std::int64_t total =
      shape.batch * shape.out_height * shape.out_width * (shape.channels / Width);
  const std::int64_t blocks = std::min(max_blocks, (total + kThreads - 1) / kThreads);
  const float inverse_area = 1.0f / static_cast<float>(spec.window * spec.window);
  const auto* in = static_cast<const T*>(x);
  auto* out = static_cast<T*>(y);
  const auto grid = static_cast<unsigned>(blocks);
  const bool max = spec.mode == PoolMode::max;
  if (spec.window == 3 && max)
    pool_kernel<T, Width, PoolMode::max, 3>
        <<<grid, kThreads, 0, stream>>>(in, out, shape, inverse_area);
  else if (spec.window == 3)
    pool_kernel<T, Width, PoolMode::avg, 3>
        <<<grid, kThreads, 0, stream>>>(in, out, shape, inverse_area);
  else if (max)
    pool_kernel<T, Width, PoolMode::max, 0>
        <<<grid, kThreads, 0, stream>>>(in, out, shape, inverse_area);
  else
    pool_kernel<T, Width, PoolMode::avg, 0>
        <<<grid, kThreads, 0, stream>>>(in, out, shape, inverse_area);
  TR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_pool_typed(const PoolSpec& spec, const void* x, void* y, cudaStream_t stream) {
  const PoolShape shape{spec.batch,
                        spec.channels,
                        spec.height,
                        spec.width,
                        pool_output_height(spec),
                        pool_output_width(spec),
                        static_cast<int>(spec.window),
                        static_cast<int>(spec.stride),
                        static_cast<int>(spec.pad)};
  if (spec.channels % Vector<T>::kWidth == 0)
    return launch_pool_width<T, Vector<T>::kWidth>(spec, shape, x, y, stream);
  return launch_pool_width<T, 1>(spec, shape, x, y, stream);
}

}  // namespace

void launch_pointwise(PointwiseOp op, DataType type, const void* a, const void* b, void* y,
                      std::size_t count, cudaStream_t stream) {
  switch (type) {
    case DataType::fp32:
      return launch_pointwise_op<float>(op, a, b, y, count, stream);
    case DataType::fp16:
      return launch_pointwise_op<__half>(op, a, b, y, count, stream);
    case DataType::bf16:
      return launch_pointwise_op<__nv_bfloat16>(op, a, b, y, count, stream);
    default:
      throw std::logic_error(std::string("pointwise: no kernel for ") + to_string(type));
  }
}

void launch_softmax(const SoftmaxSpec& spec, const void* x, void* y, cudaStream_t stream) {
  switch (storage_type(spec.precision)) {
    case DataType::fp32:
      return launch_softmax_typed<float>(spec, x, y, stream);
    case DataType::fp16:
      return launch_softmax_typed<__half>(spec, x, y, stream);
    case DataType::bf16:
      return launch_softmax_typed<__nv_bfloat16>(spec, x, y, stream);
    default:
      throw std::logic_error("softmax: no kernel for this precision");
  }
}

void launch_pool(const PoolSpec& spec, const void* x, void* y, cudaStream_t stream) {
  switch (storage_type(spec.precision)) {
    case DataType::fp32:
      return launch_pool_typed<float>(spec, x, y, stream);
    case DataType::fp16:
      return launch_pool_typed<__half>(spec, x, y, stream);
    case DataType::bf16:
      return launch_pool_typed<__nv_bfloat16>(spec, x, y, stream);
    default:
      throw std::logic_error("pool: no kernel for this precision");
  }
}

}  // namespace timeroof
