// wgmma.mma_async roofs (Hopper, sm_90a only). Design and FLOP convention:
// tensor_wgmma.hpp and tensor_mma.hpp.
#include "kernels/clock_span.cuh"
#include "kernels/tensor_wgmma.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/tensor_device.cuh"

namespace timeroof {

namespace {

using tensor_device::Accumulator;
using tensor_device::element_bits;
using tensor_device::kElementBytes;
using tensor_device::random_word;

// Every wgmma reads 32 bytes of each A row and B column (k16 x 2 B, k8 x 4 B, k32 x 1 B).
constexpr int kRowBytes = 32;
constexpr int kTileM = 64;
constexpr int kWarpgroupThreads = 128;
constexpr int kLoopWarpgroups = 2;  // consumer warpgroups per block
constexpr int kLoopThreads = kLoopWarpgroups * kWarpgroupThreads;
// wgmma per commit group: a K extent of 4 x 32 = 128 bytes per row, as one
// k-block of a real GEMM main loop.
constexpr int kStepsPerGroup = 4;

// Canonical K-major layout without swizzle: the tile is cut into "core
// matrices" of 8 rows x 16 bytes, each stored as 128 contiguous bytes; the two
// core matrices of a row group (K bytes 0-15 and 16-31) sit next to each other,
// and row groups follow one another.
constexpr std::uint32_t kCoreMatrixBytes = 128;
constexpr std::uint32_t kLeadingByteOffset = kCoreMatrixBytes;     // next core matrix along K
constexpr std::uint32_t kStrideByteOffset = 2 * kCoreMatrixBytes;  // next 8-row group along M/N

__host__ __device__ constexpr int tile_bytes(int rows) {
  return rows * kRowBytes;
}

// Byte offset of (row, byte k) inside one 32-byte-wide tile.
__device__ __forceinline__ int core_matrix_offset(int row, int k_byte) {
  return (row / 8) * static_cast<int>(kStrideByteOffset) +
         (k_byte / 16) * static_cast<int>(kLeadingByteOffset) + (row % 8) * 16 + k_byte % 16;
}

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start
// address >> 4 in bits 0-13, leading byte offset >> 4 in 16-29, stride byte
// offset >> 4 in 32-45, base offset 0 (bits 49-51), swizzle mode 0 = none (62-63).
__device__ __forceinline__ std::uint64_t make_descriptor(const void* shared_tile) {
  const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared_tile));
  std::uint64_t desc = (address & 0x3FFFFu) >> 4;
  desc |= static_cast<std::uint64_t>(kLeadingByteOffset >> 4) << 16;
  desc |= static_cast<std::uint64_t>(kStrideByteOffset >> 4) << 32;
  return desc;
}

// Shared memory written by ordinary stores must be made visible to the async
// proxy, through which wgmma reads its operands.
__device__ __forceinline__ void fence_shared_for_async_proxy() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// ---- one wgmma per (type, N): D(64 x N) += A(64 x K) * B(K x N), both K-major in
// shared memory; scale-d = 1 (accumulate), no negation, no transpose. ----

#define TR_WG_REGS_0_63                                                                   \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, " \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, " \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define TR_WG_REGS_64_127                                                                    \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, "    \
  "%81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, "    \
  "%98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, " \
  "%113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

#define TR_WG_OPS8(d, c, i)                                                                 \
  c(d[(i) + 0]), c(d[(i) + 1]), c(d[(i) + 2]), c(d[(i) + 3]), c(d[(i) + 4]), c(d[(i) + 5]), \
      c(d[(i) + 6]), c(d[(i) + 7])
#define TR_WG_OPS64(d, c, i)                                                              \
  TR_WG_OPS8(d, c, (i) + 0), TR_WG_OPS8(d, c, (i) + 8), TR_WG_OPS8(d, c, (i) + 16),       \
      TR_WG_OPS8(d, c, (i) + 24), TR_WG_OPS8(d, c, (i) + 32), TR_WG_OPS8(d, c, (i) + 40), \
      TR_WG_OPS8(d, c, (i) + 48), TR_WG_OPS8(d, c, (i) + 56)

template <Precision T, int N>
struct Wgmma;

// `shape_types` is e.g. "m64n256k16.f32.bf16.bf16"; `tail` the operands after
// the descriptors: scale-d, then imm-scale-a/b and imm-trans-a/b where the type has them.
#define TR_DEFINE_WGMMA_N128(TYPE, ACC, CONSTRAINT, shape_types, tail)                           \
  template <>                                                                                    \
  struct Wgmma<Precision::TYPE, 128> {                                                           \
    static __device__ __forceinline__ void run(ACC (&d)[64], std::uint64_t a, std::uint64_t b) { \
      asm volatile("wgmma.mma_async.sync.aligned." shape_types " {" TR_WG_REGS_0_63              \
                   "}, %64, %65" tail ";\n"                                                      \
                   : TR_WG_OPS64(d, CONSTRAINT, 0)                                               \
                   : "l"(a), "l"(b));                                                            \
    }                                                                                            \
  };
#define TR_DEFINE_WGMMA_N256(TYPE, ACC, CONSTRAINT, shape_types, tail)                            \
  template <>                                                                                     \
  struct Wgmma<Precision::TYPE, 256> {                                                            \
    static __device__ __forceinline__ void run(ACC (&d)[128], std::uint64_t a, std::uint64_t b) { \
      asm volatile("wgmma.mma_async.sync.aligned." shape_types " {" TR_WG_REGS_0_63               \
                   ", " TR_WG_REGS_64_127 "}, %128, %129" tail ";\n"                              \
                   : TR_WG_OPS64(d, CONSTRAINT, 0), TR_WG_OPS64(d, CONSTRAINT, 64)                \
                   : "l"(a), "l"(b));                                                             \
    }                                                                                             \
  };

TR_DEFINE_WGMMA_N128(fp16, float, "+f", "m64n128k16.f32.f16.f16", ", 1, 1, 1, 0, 0")
TR_DEFINE_WGMMA_N256(fp16, float, "+f", "m64n256k16.f32.f16.f16", ", 1, 1, 1, 0, 0")
TR_DEFINE_WGMMA_N128(bf16, float, "+f", "m64n128k16.f32.bf16.bf16", ", 1, 1, 1, 0, 0")
TR_DEFINE_WGMMA_N256(bf16, float, "+f", "m64n256k16.f32.bf16.bf16", ", 1, 1, 1, 0, 0")
TR_DEFINE_WGMMA_N128(tf32, float, "+f", "m64n128k8.f32.tf32.tf32", ", 1, 1, 1")
TR_DEFINE_WGMMA_N256(tf32, float, "+f", "m64n256k8.f32.tf32.tf32", ", 1, 1, 1")
TR_DEFINE_WGMMA_N128(fp8, float, "+f", "m64n128k32.f32.e4m3.e4m3", ", 1, 1, 1")
TR_DEFINE_WGMMA_N256(fp8, float, "+f", "m64n256k32.f32.e4m3.e4m3", ", 1, 1, 1")
TR_DEFINE_WGMMA_N128(int8, std::int32_t, "+r", "m64n128k32.s32.s8.s8", ", 1")
TR_DEFINE_WGMMA_N256(int8, std::int32_t, "+r", "m64n256k32.s32.s8.s8", ", 1")

#undef TR_DEFINE_WGMMA_N128
#undef TR_DEFINE_WGMMA_N256
#undef TR_WG_OPS64
#undef TR_WG_OPS8
#undef TR_WG_REGS_64_127
#undef TR_WG_REGS_0_63

// Shared memory of the loop kernel: one A tile per warpgroup (its own 64 rows,
// as the two consumer warpgroups of a GEMM block own different rows) and one B
// tile both share, each kStepsPerGroup k-steps deep.
__host__ __device__ constexpr int loop_a_bytes_per_warpgroup() {
  return kStepsPerGroup * tile_bytes(kTileM);
}
__host__ __device__ constexpr int loop_shared_bytes(int n) {
  return kLoopWarpgroups * loop_a_bytes_per_warpgroup() + kStepsPerGroup * tile_bytes(n);
}

template <Precision T, int N>
__global__ void __launch_bounds__(kLoopThreads, 1)
    wgmma_loop_kernel(long long iterations, std::uint32_t seed, void* sink) {
  extern __shared__ __align__(1024) std::uint8_t shared[];
  using Acc = Accumulator<T>;
  // Random operands: real data draws the power (and clock) real GEMMs see.
  constexpr int kWords = loop_shared_bytes(N) / 4;
  auto* words = reinterpret_cast<std::uint32_t*>(shared);
  for (int i = threadIdx.x; i < kWords; i += kLoopThreads)
    words[i] = random_word<T>(seed + blockIdx.x * kWords + i);
  fence_shared_for_async_proxy();
  __syncthreads();

  const int warpgroup = threadIdx.x / kWarpgroupThreads;
  const std::uint64_t a_desc = make_descriptor(shared + warpgroup * loop_a_bytes_per_warpgroup());
  const std::uint64_t b_desc =
      make_descriptor(shared + kLoopWarpgroups * loop_a_bytes_per_warpgroup());
  Acc acc[N / 2] = {};
  const ClockMark start = clock_mark();
  for (long long it = 0; it < iterations; ++it) {
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kStepsPerGroup; ++step) {
      // Descriptor start addresses count 16-byte units: adding to the low field
      // moves the tile start.
      Wgmma<T, N>::run(acc, a_desc + step * (tile_bytes(kTileM) >> 4),
                       b_desc + step * (tile_bytes(N) >> 4));
    }
    wgmma_commit();
    wgmma_wait<1>();  // the next group is issued while this one runs
  }
  wgmma_wait<0>();
  if (threadIdx.x == 0)
    write_clock_span(sink, static_cast<std::size_t>(gridDim.x) * kLoopThreads * sizeof(Acc), start);
  Acc total = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) total += acc[i];
  static_cast<Acc*>(sink)[blockIdx.x * kLoopThreads + threadIdx.x] = total;
}

template <Precision T>
__device__ __forceinline__ void store_element(std::uint8_t* p, double value) {
  const std::uint32_t bits = element_bits<T>(static_cast<float>(value));
  if constexpr (kElementBytes<T> == 4) {
    *reinterpret_cast<std::uint32_t*>(p) = bits;
  } else if constexpr (kElementBytes<T> == 2) {
    *reinterpret_cast<std::uint16_t*>(p) = static_cast<std::uint16_t>(bits);
  } else {
    *p = static_cast<std::uint8_t>(bits);
  }
}

template <Precision T>
constexpr int kWgmmaK = kRowBytes / kElementBytes<T>;

// One wgmma on one warpgroup; layout of D fragments: warp w holds rows
// 16w..16w+15; register i of a thread (lane = 4g + t) holds row 16w + g + 8 *
// ((i % 4) / 2), column 8 * (i / 4) + 2t + i % 2.
template <Precision T, int N>
__global__ void __launch_bounds__(kWarpgroupThreads)
    wgmma_tile_kernel(const double* a, const double* b, double* d) {
  __shared__ __align__(1024) std::uint8_t shared[tile_bytes(kTileM) + tile_bytes(N)];
  constexpr int K = kWgmmaK<T>;
  constexpr int kBytes = kElementBytes<T>;
  for (int i = threadIdx.x; i < kTileM * K; i += kWarpgroupThreads)
    store_element<T>(shared + core_matrix_offset(i / K, (i % K) * kBytes), a[i]);
  std::uint8_t* b_tile = shared + tile_bytes(kTileM);
  for (int i = threadIdx.x; i < K * N; i += kWarpgroupThreads)  // b[k][n] -> row n, byte k
    store_element<T>(b_tile + core_matrix_offset(i % N, (i / N) * kBytes), b[i]);
  fence_shared_for_async_proxy();
  __syncthreads();

  Accumulator<T> acc[N / 2] = {};
  wgmma_fence();
  Wgmma<T, N>::run(acc, make_descriptor(shared), make_descriptor(b_tile));
  wgmma_commit();
  wgmma_wait<0>();

  const int warp = threadIdx.x / 32;
  const int group = (threadIdx.x % 32) / 4;
  const int thread_in_group = threadIdx.x % 4;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const int row = 16 * warp + group + 8 * ((i % 4) / 2);
    const int col = 8 * (i / 4) + 2 * thread_in_group + i % 2;
    d[row * N + col] = static_cast<double>(acc[i]);
  }
}

using LoopKernel = void (*)(long long, std::uint32_t, void*);
using TileKernel = void (*)(const double*, const double*, double*);

template <Precision T>
struct KernelsOf {
  static LoopKernel loop(int n) {
    return n == 256 ? wgmma_loop_kernel<T, 256> : wgmma_loop_kernel<T, 128>;
  }
  static TileKernel tile(int n) {
    return n == 256 ? wgmma_tile_kernel<T, 256> : wgmma_tile_kernel<T, 128>;
  }
};

void check_supported(Precision type, int n) {
  if (!wgmma_supports(type))
    throw usage_error(std::string("wgmma has no ") + to_string(type) + " form");
  if (n != 128 && n != 256)
    throw usage_error("wgmma kernels exist for N = 128 and 256, not " + std::to_string(n));
}

LoopKernel loop_kernel(Precision type, int n) {
  check_supported(type, n);
  switch (type) {
    case Precision::fp16:
      return KernelsOf<Precision::fp16>::loop(n);
    case Precision::bf16:
      return KernelsOf<Precision::bf16>::loop(n);
    case Precision::tf32:
      return KernelsOf<Precision::tf32>::loop(n);
    case Precision::fp8:
      return KernelsOf<Precision::fp8>::loop(n);
    case Precision::int8:
      return KernelsOf<Precision::int8>::loop(n);
    case Precision::fp64:
    case Precision::fp32:
      break;
  }
  return nullptr;
}

TileKernel tile_kernel(Precision type, int n) {
  check_supported(type, n);
  switch (type) {
    case Precision::fp16:
      return KernelsOf<Precision::fp16>::tile(n);
    case Precision::bf16:
      return KernelsOf<Precision::bf16>::tile(n);
    case Precision::tf32:
      return KernelsOf<Precision::tf32>::tile(n);
    case Precision::fp8:
      return KernelsOf<Precision::fp8>::tile(n);
    case Precision::int8:
      return KernelsOf<Precision::int8>::tile(n);
    case Precision::fp64:
    case Precision::fp32:
      break;
  }
  return nullptr;
}

const char* wgmma_operand_types(Precision type) {
  switch (type) {
    case Precision::fp16:
      return "f16 x f16 -> f32";
    case Precision::bf16:
      return "bf16 x bf16 -> f32";
    case Precision::tf32:
      return "tf32 x tf32 -> f32";
    case Precision::fp8:
      return "e4m3 x e4m3 -> f32";
    case Precision::int8:
      return "s8 x s8 -> s32";
    case Precision::fp64:
    case Precision::fp32:
      break;
  }
  return "?";
}

}  // namespace

bool wgmma_supports(Precision type) {
  return type != Precision::fp64 && type != Precision::fp32;
}

int wgmma_k(Precision type) {
  switch (type) {
    case Precision::fp16:
    case Precision::bf16:
      return 16;
    case Precision::tf32:
      return 8;
    case Precision::fp8:
    case Precision::int8:
      return 32;
    case Precision::fp64:
    case Precision::fp32:
      break;
  }
  return 0;
}

WgmmaLoopShape wgmma_loop_shape(Precision type, int n, int sm_count) {
  const LoopKernel kernel = loop_kernel(type, n);
  WgmmaLoopShape shape;
  shape.type = type;
  shape.n = n;
  shape.threads = kLoopThreads;
  shape.shared_bytes = static_cast<std::size_t>(loop_shared_bytes(n));
  TR_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shape.shared_bytes)));
  int blocks_per_sm = 0;
  TR_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kLoopThreads,
                                                              shape.shared_bytes));
  if (blocks_per_sm < 1)
    throw environment_error("the wgmma kernel does not fit on one SM (registers or shared memory)");
  shape.blocks = blocks_per_sm * sm_count;
  shape.wgmma_per_iteration = kStepsPerGroup;
  const int k = wgmma_k(type);
  shape.flops_per_iteration =
      2.0 * kTileM * n * k * kStepsPerGroup * kLoopWarpgroups * static_cast<double>(shape.blocks);
  shape.sink_bytes =
      with_clock_spans(static_cast<std::size_t>(shape.blocks) * kLoopThreads * 4, shape.blocks);
  shape.description =
      "wgmma.mma_async m64n" + std::to_string(n) + "k" + std::to_string(k) + " " +
      wgmma_operand_types(type) + ", A and B from shared memory (K-major, no swizzle), " +
      std::to_string(kLoopWarpgroups) + " warpgroups/block x " + std::to_string(shape.blocks) +
      " blocks (" + std::to_string(blocks_per_sm) + "/SM), " + std::to_string(kStepsPerGroup) +
      " wgmma per commit group, <= 2 groups in flight per warpgroup";
  return shape;
}

void launch_wgmma_loop(const WgmmaLoopShape& shape, long long iterations, void* sink,
                       cudaStream_t stream) {
  const LoopKernel kernel = loop_kernel(shape.type, shape.n);
  kernel<<<shape.blocks, shape.threads, shape.shared_bytes, stream>>>(iterations, 0x5eed1234u,
                                                                      sink);
  TR_CUDA_CHECK(cudaGetLastError());
}

std::vector<double> run_wgmma_tile(Precision type, int n, const std::vector<double>& a,
                                   const std::vector<double>& b) {
  const TileKernel kernel = tile_kernel(type, n);
  const int k = wgmma_k(type);
  if (a.size() != static_cast<std::size_t>(kTileM) * k ||
      b.size() != static_cast<std::size_t>(k) * n)
    throw usage_error("run_wgmma_tile: A must be 64 x k and B k x n");
  DeviceBuffer<double> a_device(a.size()), b_device(b.size()), d_device(kTileM * n);
  TR_CUDA_CHECK(cudaMemcpy(a_device.get(), a.data(), a_device.bytes(), cudaMemcpyHostToDevice));
  TR_CUDA_CHECK(cudaMemcpy(b_device.get(), b.data(), b_device.bytes(), cudaMemcpyHostToDevice));
  kernel<<<1, kWarpgroupThreads>>>(a_device.get(), b_device.get(), d_device.get());
  TR_CUDA_CHECK(cudaGetLastError());
  std::vector<double> d(d_device.size());
  TR_CUDA_CHECK(cudaMemcpy(d.data(), d_device.get(), d_device.bytes(), cudaMemcpyDeviceToHost));
  return d;
}

}  // namespace timeroof
