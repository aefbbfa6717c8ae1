// Tensor-Core roofs through mma.sync (sm_80+): the kernels and their plain host
// API. FLOP convention and ceiling names: tensor_mma.hpp; the dispatcher is in
// tensor_ceilings.cpp.
//
// mma.sync kernel design: 256 threads per block, as many blocks as fit on every
// SM (occupancy API). Each warp keeps its A and B fragments in registers (random,
// finite values) and runs kChains independent accumulator chains, one mma each
// per loop iteration, so kChains MMAs are in flight per warp and 8+ warps per SM
// sub-partition hide the MMA latency. No memory traffic in the loop; each thread
// writes the sum of its accumulators once, so no MMA is dead code.
#include "kernels/clock_span.cuh"
#include "kernels/tensor_mma.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/tensor_device.cuh"

namespace timeroof {

namespace {

using tensor_device::kElementsPerWord;
using tensor_device::pack_word;
using tensor_device::random_word;
using tensor_device::unit_float;

constexpr int kMmaThreads = 256;
constexpr int kChains = 8;  // independent accumulators per warp

// ---- one mma.sync per shape. Fragment layouts (PTX ISA "Matrix Fragments for
// mma.m16n8k*"), with lane = 4 * group + thread_in_group:
//   A register r: row group + 8 * (r % 2), columns (r / 2) * K/2 + thread_in_group * e + [0, e)
//   B register r: rows r * K/2 + thread_in_group * e + [0, e), column group
//   C register i: row group + 8 * (i / 2), column 2 * thread_in_group + i % 2
// where e = elements per 32-bit register (2 for 16-bit types, 1 tf32, 4 for 8-bit). ----

#define TR_DEFINE_MMA_16X8(NAME, TYPE, K, ACC, CONSTRAINT, MIN_ARCH, NATIVE_ON_SM90, ptx,     \
                           description)                                                       \
  struct NAME {                                                                               \
    static constexpr Precision kType = Precision::TYPE;                                       \
    static constexpr int kM = 16, kN = 8, kK = K;                                             \
    static constexpr int kARegs = 4, kBRegs = 2, kCRegs = 4;                                  \
    static constexpr int kMinArch = MIN_ARCH;                                                 \
    static constexpr bool kNativeOnSm90 = NATIVE_ON_SM90;                                     \
    using Reg = std::uint32_t;                                                                \
    using Acc = ACC;                                                                          \
    static const char* describe() { return description; }                                     \
    static __device__ __forceinline__ void run(Acc (&d)[4], const Reg (&a)[4],                \
                                               const Reg (&b)[2]) {                           \
      if constexpr (kDeviceArch >= MIN_ARCH) {                                                \
        asm volatile(ptx " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n" \
                     : CONSTRAINT(d[0]), CONSTRAINT(d[1]), CONSTRAINT(d[2]), CONSTRAINT(d[3]) \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));     \
      }                                                                                       \
    }                                                                                         \
  };

// The architecture this device pass compiles for (0 in the host pass): code
// below an instruction's minimum is left out, and the host checks the kernel's
// PTX version before it trusts a figure (mma_sync_available).
#ifdef __CUDA_ARCH__
constexpr int kDeviceArch = __CUDA_ARCH__ / 10;
#else
constexpr int kDeviceArch = 0;
#endif

TR_DEFINE_MMA_16X8(MmaFp16, fp16, 16, float, "+f", 80, true,
                   "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                   "mma.sync m16n8k16 f16 x f16 -> f32")
TR_DEFINE_MMA_16X8(MmaBf16, bf16, 16, float, "+f", 80, true,
                   "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                   "mma.sync m16n8k16 bf16 x bf16 -> f32")
TR_DEFINE_MMA_16X8(MmaTf32, tf32, 8, float, "+f", 80, true,
                   "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                   "mma.sync m16n8k8 tf32 x tf32 -> f32")
TR_DEFINE_MMA_16X8(MmaInt8, int8, 32, std::int32_t, "+r", 80, true,
                   "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                   "mma.sync m16n8k32 s8 x s8 -> s32")
// Hopper has no fp8 mma.sync: ptxas emulates it (e4m3 -> f16 unpack, two HMMA
// and FADDs), so it is no tensor roof there; Hopper's fp8 path is wgmma (QGMMA).
TR_DEFINE_MMA_16X8(MmaFp8, fp8, 32, float, "+f", 89, false,
                   "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
                   "mma.sync m16n8k32 e4m3 x e4m3 -> f32")
#undef TR_DEFINE_MMA_16X8

// DMMA m8n8k4, the fp64 shape of every sm_80+ GPU. A: row group, column
// thread_in_group; B: row thread_in_group, column group; C register i: row
// group, column 2 * thread_in_group + i.
struct MmaFp64 {
  static constexpr Precision kType = Precision::fp64;
  static constexpr int kM = 8, kN = 8, kK = 4;
  static constexpr int kARegs = 1, kBRegs = 1, kCRegs = 2;
  static constexpr int kMinArch = 80;
  static constexpr bool kNativeOnSm90 = true;
  using Reg = double;
  using Acc = double;
  static const char* describe() { return "mma.sync m8n8k4 f64 x f64 -> f64 (DMMA)"; }
  static __device__ __forceinline__ void run(Acc (&d)[2], const Reg (&a)[1], const Reg (&b)[1]) {
    if constexpr (kDeviceArch >= kMinArch) {
      asm volatile(
          "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
          : "+d"(d[0]), "+d"(d[1])
          : "d"(a[0]), "d"(b[0]));
    }
  }
};

// The larger fp64 shape PTX added for sm_90 (fewer instructions per FLOP).
struct MmaFp64Large {
  static constexpr Precision kType = Precision::fp64;
  static constexpr int kM = 16, kN = 8, kK = 16;
  static constexpr int kARegs = 8, kBRegs = 4, kCRegs = 4;
  static constexpr int kMinArch = 90;
  static constexpr bool kNativeOnSm90 = true;
  using Reg = double;
  using Acc = double;
  static const char* describe() { return "mma.sync m16n8k16 f64 x f64 -> f64 (DMMA, sm_90)"; }
  static __device__ __forceinline__ void run(Acc (&d)[4], const Reg (&a)[8], const Reg (&b)[4]) {
    if constexpr (kDeviceArch >= kMinArch) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
          "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
          : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
          : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
            "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
    }
  }
};

template <class Mma>
__device__ __forceinline__ typename Mma::Reg random_register(std::uint32_t h) {
  if constexpr (Mma::kType == Precision::fp64) {
    return static_cast<double>(unit_float(hash32(h)));
  } else {
    return random_word<Mma::kType>(h);
  }
}

template <class Mma>
__global__ void __launch_bounds__(kMmaThreads)
    mma_sync_loop_kernel(long long iterations, std::uint32_t seed, void* sink) {
  using Reg = typename Mma::Reg;
  using Acc = typename Mma::Acc;
  const std::uint32_t thread = blockIdx.x * kMmaThreads + threadIdx.x;
  Reg a[Mma::kARegs];
  Reg b[Mma::kBRegs];
#pragma unroll
  for (int r = 0; r < Mma::kARegs; ++r) a[r] = random_register<Mma>(seed + thread * 16u + r);
#pragma unroll
  for (int r = 0; r < Mma::kBRegs; ++r) b[r] = random_register<Mma>(seed + thread * 16u + 8u + r);
  Acc acc[kChains][Mma::kCRegs] = {};
  const ClockMark start = clock_mark();
  for (long long it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) Mma::run(acc[c], a, b);
  }
  if (threadIdx.x == 0)
    write_clock_span(sink, static_cast<std::size_t>(gridDim.x) * kMmaThreads * sizeof(Acc), start);
  Acc total = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) {
#pragma unroll
    for (int i = 0; i < Mma::kCRegs; ++i) total += acc[c][i];
  }
  static_cast<Acc*>(sink)[thread] = total;
}

using LoopKernel = void (*)(long long, std::uint32_t, void*);

// ---- one tile with known operands (tests) ----

template <class Mma>
__device__ typename Mma::Reg load_a(const double* a, int r, int group, int thread_in_group) {
  if constexpr (Mma::kType == Precision::fp64) {
    return a[group * Mma::kK + thread_in_group];
  } else {
    constexpr int kPerWord = kElementsPerWord<Mma::kType>;
    const int row = group + 8 * (r % 2);
    const int col = (r / 2) * (Mma::kK / 2) + thread_in_group * kPerWord;
    return pack_word<Mma::kType>(a + row * Mma::kK + col);
  }
}

template <class Mma>
__device__ typename Mma::Reg load_b(const double* b, int r, int group, int thread_in_group) {
  if constexpr (Mma::kType == Precision::fp64) {
    return b[thread_in_group * Mma::kN + group];
  } else {
    constexpr int kPerWord = kElementsPerWord<Mma::kType>;
    const int k0 = r * (Mma::kK / 2) + thread_in_group * kPerWord;
    double column[kPerWord];
#pragma unroll
    for (int e = 0; e < kPerWord; ++e) column[e] = b[(k0 + e) * Mma::kN + group];
    return pack_word<Mma::kType>(column);
  }
}

template <class Mma>
__global__ void mma_sync_tile_kernel(const double* a, const double* b, double* d) {
  const int group = threadIdx.x / 4;
  const int thread_in_group = threadIdx.x % 4;
  typename Mma::Reg ra[Mma::kARegs];
  typename Mma::Reg rb[Mma::kBRegs];
#pragma unroll
  for (int r = 0; r < Mma::kARegs; ++r) ra[r] = load_a<Mma>(a, r, group, thread_in_group);
#pragma unroll
  for (int r = 0; r < Mma::kBRegs; ++r) rb[r] = load_b<Mma>(b, r, group, thread_in_group);
  typename Mma::Acc acc[Mma::kCRegs] = {};
  Mma::run(acc, ra, rb);
#pragma unroll
  for (int i = 0; i < Mma::kCRegs; ++i) {
    const int row = group + 8 * (i / 2);
    const int col = 2 * thread_in_group + i % 2;
    d[row * Mma::kN + col] = static_cast<double>(acc[i]);
  }
}

// ---- host side ----

template <class Mma>
LoopKernel loop_kernel_of() {
  return mma_sync_loop_kernel<Mma>;
}

// Calls `f` with a value-initialised traits object of `variant`.
template <class F>
decltype(auto) with_traits(MmaSyncVariant variant, F&& f) {
  switch (variant) {
    case MmaSyncVariant::fp16:
      return f(MmaFp16{});
    case MmaSyncVariant::bf16:
      return f(MmaBf16{});
    case MmaSyncVariant::tf32:
      return f(MmaTf32{});
    case MmaSyncVariant::fp8:
      return f(MmaFp8{});
    case MmaSyncVariant::int8:
      return f(MmaInt8{});
    case MmaSyncVariant::fp64:
      return f(MmaFp64{});
    case MmaSyncVariant::fp64_m16n8k16:
      return f(MmaFp64Large{});
  }
  throw usage_error("unknown mma.sync variant");
}

// Why `Mma` cannot be timed on the current GPU, if so: a kernel built below the
// instruction's minimum (e.g. the sm_80 image on an sm_89 GPU for fp8) has an
// empty body (a build problem); an instruction ptxas emulates is no tensor roof
// (the GPU lacks the unit). `for_roof` = false asks only whether real code exists.
template <class Mma>
std::optional<MmaSyncUnavailable> unavailable_reason(const void* kernel, bool for_roof) {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it
    return MmaSyncUnavailable{std::string("no kernel image for this GPU (") +
                                  cudaGetErrorName(status) +
                                  "); rebuild with its architecture in CMAKE_CUDA_ARCHITECTURES",
                              true};
  }
  if (attributes.ptxVersion < Mma::kMinArch) {
    return MmaSyncUnavailable{std::string(Mma::describe()) + " needs code built for sm_" +
                                  std::to_string(Mma::kMinArch) + "+, but this GPU runs the sm_" +
                                  std::to_string(attributes.ptxVersion) +
                                  " build; add its architecture to CMAKE_CUDA_ARCHITECTURES",
                              true};
  }
  if (for_roof && !Mma::kNativeOnSm90 && attributes.binaryVersion == 90) {
    return MmaSyncUnavailable{std::string(Mma::describe()) +
                                  " is no tensor-core instruction on sm_90: ptxas emulates it "
                                  "with f16 HMMA (Hopper's fp8 path is wgmma)",
                              false};
  }
  return std::nullopt;
}

}  // namespace

std::vector<MmaSyncVariant> mma_sync_variants(Precision type) {
  switch (type) {
    case Precision::fp16:
      return {MmaSyncVariant::fp16};
    case Precision::bf16:
      return {MmaSyncVariant::bf16};
    case Precision::tf32:
      return {MmaSyncVariant::tf32};
    case Precision::fp8:
      return {MmaSyncVariant::fp8};
    case Precision::int8:
      return {MmaSyncVariant::int8};
    case Precision::fp64:
      return {MmaSyncVariant::fp64, MmaSyncVariant::fp64_m16n8k16};
    case Precision::fp32:  // not a Tensor-Core operand type (tf32 is)
      break;
  }
  return {};
}

std::optional<MmaSyncUnavailable> mma_sync_unavailable(MmaSyncVariant variant) {
  return with_traits(variant, [](auto traits) {
    using Mma = decltype(traits);
    return unavailable_reason<Mma>(reinterpret_cast<const void*>(loop_kernel_of<Mma>()), true);
  });
}

MmaSyncLoopShape mma_sync_loop_shape(MmaSyncVariant variant, int sm_count) {
  return with_traits(variant, [&](auto traits) {
    using Mma = decltype(traits);
    const LoopKernel kernel = loop_kernel_of<Mma>();
    int blocks_per_sm = 0;
    TR_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kMmaThreads, 0));
    MmaSyncLoopShape shape;
    shape.variant = variant;
    shape.threads = kMmaThreads;
    shape.blocks = std::max(1, blocks_per_sm) * sm_count;
    shape.flops_per_iteration = 2.0 * Mma::kM * Mma::kN * Mma::kK * kChains * (kMmaThreads / 32.0) *
                                static_cast<double>(shape.blocks);
    shape.sink_bytes = with_clock_spans(
        static_cast<std::size_t>(shape.blocks) * kMmaThreads * sizeof(typename Mma::Acc),
        shape.blocks);
    shape.label = Mma::describe();
    shape.description = std::string(Mma::describe()) + ", operands in registers, " +
                        std::to_string(kChains) + " independent accumulator chains per warp, " +
                        std::to_string(kMmaThreads / 32) + " warps/block x " +
                        std::to_string(shape.blocks) + " blocks (" + std::to_string(blocks_per_sm) +
                        "/SM)";
    return shape;
  });
}

void launch_mma_sync_loop(const MmaSyncLoopShape& shape, long long iterations, void* sink,
                          cudaStream_t stream) {
  const LoopKernel kernel =
      with_traits(shape.variant, [](auto traits) { return loop_kernel_of<decltype(traits)>(); });
  kernel<<<shape.blocks, shape.threads, 0, stream>>>(iterations, 0x9e3779b9u, sink);
  TR_CUDA_CHECK(cudaGetLastError());
}

MmaTileShape mma_sync_tile_shape(Precision type) {
  switch (type) {
    case Precision::fp16:
    case Precision::bf16:
      return {16, 8, 16};
    case Precision::tf32:
      return {16, 8, 8};
    case Precision::fp8:
    case Precision::int8:
      return {16, 8, 32};
    case Precision::fp64:
      return {8, 8, 4};
    case Precision::fp32:
      break;
  }
  return {};
}

namespace {

template <class Mma>
std::vector<double> run_tile(const std::vector<double>& a, const std::vector<double>& b) {
  const auto kernel = mma_sync_tile_kernel<Mma>;
  if (auto missing = unavailable_reason<Mma>(reinterpret_cast<const void*>(kernel), false))
    throw environment_error(missing->reason);
  if (a.size() != static_cast<std::size_t>(Mma::kM) * Mma::kK ||
      b.size() != static_cast<std::size_t>(Mma::kK) * Mma::kN)
    throw usage_error("run_mma_sync_tile: A must be m x k and B k x n");
  DeviceBuffer<double> a_device(a.size()), b_device(b.size()), d_device(Mma::kM * Mma::kN);
  TR_CUDA_CHECK(cudaMemcpy(a_device.get(), a.data(), a_device.bytes(), cudaMemcpyHostToDevice));
  TR_CUDA_CHECK(cudaMemcpy(b_device.get(), b.data(), b_device.bytes(), cudaMemcpyHostToDevice));
  kernel<<<1, 32>>>(a_device.get(), b_device.get(), d_device.get());
  TR_CUDA_CHECK(cudaGetLastError());
  std::vector<double> d(d_device.size());
  TR_CUDA_CHECK(cudaMemcpy(d.data(), d_device.get(), d_device.bytes(), cudaMemcpyDeviceToHost));
  return d;
}

}  // namespace

std::vector<double> run_mma_sync_tile(Precision type, const std::vector<double>& a,
                                      const std::vector<double>& b) {
  switch (type) {
    case Precision::fp16:
      return run_tile<MmaFp16>(a, b);
    case Precision::bf16:
      return run_tile<MmaBf16>(a, b);
    case Precision::tf32:
      return run_tile<MmaTf32>(a, b);
    case Precision::fp8:
      return run_tile<MmaFp8>(a, b);
    case Precision::int8:
      return run_tile<MmaInt8>(a, b);
    case Precision::fp64:
      return run_tile<MmaFp64>(a, b);
    case Precision::fp32:
      break;
  }
  return {};
}

}  // namespace timeroof
