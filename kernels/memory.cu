// Memory-bandwidth kernels; see kernels/memory.hpp for the conventions.
//
// HBM: a grid walks tiles of unroll x threads elements; each thread issues its
// `unroll` 16-byte loads before it uses them. A persistent grid (SMs x resident
// blocks) keeps up to unroll x 16 B per thread in flight (8 x 16 B x 1,280-2,048
// resident threads = 160-256 KB per SM, far above the DRAM latency-bandwidth
// product of ~25 KB per SM); a *_tile_grid runs one block per tile and lets the
// block scheduler refill the SMs. ptxas may interleave the read-only (.nc) loads
// with the stores to save registers; it then runs more threads instead.
// Copy: what moved the copy rate on an H200 was the L2 priority of the source
// lines more than the access shape. Loads under an evict_last policy (the source
// lines, never read again, then outrank the copy's dirty destination lines, so L2
// evicts those first; why that helps DRAM is not established) took the best grid
// from 4.18 to 4.30 TB/s with the same DRAM bytes (ncu: 1.07 GB read, 1.05 GB
// written per GiB copied, either way); evict_first or streaming loads with plain
// stores lost 3-5%; 1024- or 512-thread blocks of 32 or 16 KiB beat 256-thread
// ones by 2-3%. Moving both halves through shared memory with the bulk copy engine
// (cp.async.bulk) gained nothing over plain LDG/STG.
// Caches: the loads are volatile inline PTX so that the compiler neither hoists a
// re-read out of the pass loop nor drops it, and the address of each pass is a
// run-time value (or ld.volatile for shared memory) so that ptxas cannot merge the
// re-reads either. L2 loads bypass L1 (.cg or .nc.L1::no_allocate); L1 loads are
// plain ld.global (cached in L1); shared loads are ld.shared.v4 with consecutive
// threads on consecutive 16-byte words (each quarter warp covers the 32 banks once).
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "gpu/check.hpp"
#include "kernels/memory.hpp"

namespace timeroof {

namespace {

constexpr int kThreads = kMemoryThreadsPerBlock;
constexpr unsigned kPatternMultiplier = 2654435761u;  // pattern_word() in memory.hpp

// ---- 16-byte accesses ------------------------------------------------------

// The L2 cache policy of a load flavour (0: none); evaluated once per thread.
template <HbmLoad kLoad>
__device__ __forceinline__ std::uint64_t load_policy() {
  std::uint64_t policy = 0;
  if constexpr (kLoad == HbmLoad::evict_last)
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

template <HbmLoad kLoad>
__device__ __forceinline__ uint4 load16(const uint4* p, std::uint64_t policy = 0) {
  uint4 v;
  if constexpr (kLoad == HbmLoad::plain) {
    asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  } else if constexpr (kLoad == HbmLoad::nc_l2_256) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  } else if constexpr (kLoad == HbmLoad::streaming) {
    asm("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  } else {
    asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "l"(policy));
  }
  return v;
}

template <HbmStore kStore>
__device__ __forceinline__ void store16(uint4* p, uint4 v) {
  if constexpr (kStore == HbmStore::plain) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
  } else {
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
  }
}

// Volatile asm: executed exactly as often as written, even when the address repeats.
// .cg caches in L2 only (LDG.STRONG.GPU); .nc.L1::no_allocate reads through the
// read-only path without allocating in L1 (LDG.NA.CONSTANT).
template <L2Load kLoad>
__device__ __forceinline__ uint4 load16_l2(const uint4* p) {
  uint4 v;
  if constexpr (kLoad == L2Load::cg) {
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  } else {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  }
  return v;
}
// Plain (weak) ld.global: cached in L1 on sm_70 and later. ld.global.ca would
// become LDG.STRONG.SM, a different path.
__device__ __forceinline__ uint4 load16_l1(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
// ld.volatile: ptxas must not merge the re-reads of one address across passes.
__device__ __forceinline__ uint4 load16_shared(unsigned address) {
  uint4 v;
  asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(address));
  return v;
}

__device__ __forceinline__ unsigned fold(unsigned sum, uint4 v) {
  return sum + v.x + v.y + v.z + v.w;
}

__device__ __forceinline__ uint4 pattern_element(std::size_t element, unsigned seed) {
  const unsigned first = static_cast<unsigned>(element) * 4u * kPatternMultiplier;
  return make_uint4(first ^ seed, (first + kPatternMultiplier) ^ seed,
                    (first + 2u * kPatternMultiplier) ^ seed,
                    (first + 3u * kPatternMultiplier) ^ seed);
}

// One wrapping sum per block (blockDim.x == kBlock).
template <int kBlock = kThreads>
__device__ __forceinline__ void write_block_sum(unsigned sum, std::uint32_t* block_sums) {
  __shared__ unsigned warp_sums[kBlock / 32];
  sum = __reduce_add_sync(0xffffffffu, sum);
  if ((threadIdx.x & 31u) == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned total = 0;
#pragma unroll
    for (int w = 0; w < kBlock / 32; ++w) total += warp_sums[w];
    block_sums[blockIdx.x] = total;
  }
}

// ---- kernels ----------------------------------------------------------------

__global__ void __launch_bounds__(kThreads)
    fill_pattern_kernel(uint4* data, std::size_t count, unsigned seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += stride)
    data[i] = pattern_element(i, seed);
}

// Elements past the last whole tile, spread over the grid.
__device__ __forceinline__ std::size_t whole_tiles_end(std::size_t whole_tiles, std::size_t tile,
                                                       int block_threads) {
  return whole_tiles * tile + static_cast<std::size_t>(blockIdx.x) * block_threads + threadIdx.x;
}
__device__ __forceinline__ std::size_t tail_start(std::size_t whole_tiles, std::size_t tile) {
  return whole_tiles_end(whole_tiles, tile, kThreads);
}

template <HbmLoad kLoad, int kUnroll>
__global__ void __launch_bounds__(kThreads)
    hbm_read_kernel(const uint4* src, std::size_t count, std::uint32_t* block_sums) {
  constexpr std::size_t kTile = static_cast<std::size_t>(kUnroll) * kThreads;
  const std::size_t tiles = count / kTile;
  unsigned sum = 0;
  for (std::size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const uint4* p = src + tile * kTile + threadIdx.x;
    uint4 v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) v[k] = load16<kLoad>(p + k * kThreads);
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) sum = fold(sum, v[k]);
  }
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
  for (std::size_t i = tail_start(tiles, kTile); i < count; i += stride)
    sum = fold(sum, load16<kLoad>(src + i));
  write_block_sum(sum, block_sums);
}

template <HbmStore kStore, int kUnroll>
__global__ void __launch_bounds__(kThreads)
    hbm_write_kernel(uint4* dst, std::size_t count, unsigned seed) {
  constexpr std::size_t kTile = static_cast<std::size_t>(kUnroll) * kThreads;
  const std::size_t tiles = count / kTile;
  for (std::size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::size_t first = tile * kTile + threadIdx.x;
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const std::size_t i = first + static_cast<std::size_t>(k) * kThreads;
      store16<kStore>(dst + i, pattern_element(i, seed));
    }
  }
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
  for (std::size_t i = tail_start(tiles, kTile); i < count; i += stride)
    store16<kStore>(dst + i, pattern_element(i, seed));
}

// kBlockThreads-thread blocks. kBarrier: the block waits until every load of the
// tile has landed (the barrier's predicate depends on each loaded vector) before
// any thread stores, so each block reads its whole tile, then writes it.
template <HbmLoad kLoad, HbmStore kStore, int kUnroll, int kBlockThreads, bool kBarrier>
__global__ void __launch_bounds__(kBlockThreads)
    hbm_copy_kernel(const uint4* src, uint4* dst, std::size_t count) {
  constexpr std::size_t kTile = static_cast<std::size_t>(kUnroll) * kBlockThreads;
  const std::size_t tiles = count / kTile;
  const std::uint64_t policy = load_policy<kLoad>();
  for (std::size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::size_t first = tile * kTile + threadIdx.x;
    uint4 v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) v[k] = load16<kLoad>(src + first + k * kBlockThreads, policy);
    if constexpr (kBarrier) {
      unsigned landed = 0;
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) landed ^= v[k].x;
      (void)__syncthreads_or(landed == 0x9e3779b9u);
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) store16<kStore>(dst + first + k * kBlockThreads, v[k]);
  }
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kBlockThreads;
  for (std::size_t i = whole_tiles_end(tiles, kTile, kBlockThreads); i < count; i += stride)
    store16<kStore>(dst + i, load16<kLoad>(src + i, policy));
}

constexpr int kCacheUnroll = 8;

// The L2 read kernel family (memory.hpp L2Variant). Tiles: a tile is kUnroll x
// kBlock elements, each thread issuing its kUnroll loads before using them;
// `sharing` consecutive blocks form a group that reads the same tiles at the same
// time, the groups splitting the tiles, every tile read `sharing` times a pass.
// Strided: a thread's kUnroll loads lie one grid (blocks x kBlock elements)
// apart, wrapping at the power-of-two `count` (mask), as the working-set sweep
// reads; `passes` x kUnroll loads per thread in all.
// Chunks (chunk_tiles > 0): block b reads chunk b mod (count / chunk), chunk_tiles
// consecutive tiles, `passes` times, and exits: a grid of many short blocks, the
// pattern of gpu-benches' gpu-l2-cache, whose published H200 figures (9.7-10.2
// TB/s for 5-40 MB) issue 15 asks the roof to match.
template <L2Load kLoad, int kBlock, int kUnroll>
__global__ void __launch_bounds__(kBlock)
    l2_read_kernel(const uint4* data, std::size_t count, int passes, int sharing, bool strided,
                   int chunk_tiles, std::uint32_t* block_sums) {
  unsigned sum = 0;
  if (chunk_tiles > 0) {
    constexpr std::size_t kTile = static_cast<std::size_t>(kUnroll) * kBlock;
    const std::size_t chunk = kTile * static_cast<std::size_t>(chunk_tiles);
    const uint4* p = data + (blockIdx.x % (count / chunk)) * chunk + threadIdx.x;
    for (int pass = 0; pass < passes; ++pass) {
      for (int tile = 0; tile < chunk_tiles; ++tile) {
        uint4 v[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) v[k] = load16_l2<kLoad>(p + tile * kTile + k * kBlock);
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) sum = fold(sum, v[k]);
      }
    }
  } else if (strided) {
    // 32-bit indices (count <= 2^32, checked at launch): the 64-bit add and mask
    // per load cost ~1.5% of the rate on an H100 (8.28 against 8.40 TB/s).
    // Unsigned wrap-around is mod 2^32, so (x mod 2^32) & mask equals x & mask.
    const unsigned mask = static_cast<unsigned>(count - 1);
    const unsigned grid = gridDim.x * static_cast<unsigned>(kBlock);
    unsigned index = blockIdx.x * static_cast<unsigned>(kBlock) + threadIdx.x;
    for (int pass = 0; pass < passes; ++pass) {
      uint4 v[kUnroll];
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        v[k] = load16_l2<kLoad>(data + (index & mask));
        index += grid;
      }
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) sum = fold(sum, v[k]);
    }
  } else {
    constexpr std::size_t kTile = static_cast<std::size_t>(kUnroll) * kBlock;
    const std::size_t tiles = count / kTile;
    const unsigned groups = max(1u, gridDim.x / static_cast<unsigned>(sharing));
    const unsigned group = (blockIdx.x / static_cast<unsigned>(sharing)) % groups;
    for (int pass = 0; pass < passes; ++pass) {
      for (std::size_t tile = group; tile < tiles; tile += groups) {
        const uint4* p = data + tile * kTile + threadIdx.x;
        uint4 v[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) v[k] = load16_l2<kLoad>(p + k * kBlock);
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) sum = fold(sum, v[k]);
      }
    }
  }
  write_block_sum<kBlock>(sum, block_sums);
}

static_assert(kCacheRegionUnroll == kCacheUnroll, "one region pass = one unrolled trip");
constexpr unsigned kWindow = static_cast<unsigned>(kCacheRegionElements);

// Pass p reads the kCacheRegionElements-element window at (p x window) mod
// region_elements. The window's start is a run-time value, so ptxas cannot merge
// the passes' loads into one (with a one-window region it is always 0).
__global__ void __launch_bounds__(kThreads)
    l1_read_kernel(const uint4* region, unsigned region_elements, int passes,
                   std::uint32_t* block_sums) {
  const unsigned window_mask = region_elements - 1;
  unsigned sum = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const unsigned window = (static_cast<unsigned>(pass) * kWindow) & window_mask;
    const uint4* p = region + window + threadIdx.x;
    uint4 v[kCacheUnroll];
#pragma unroll
    for (int k = 0; k < kCacheUnroll; ++k) v[k] = load16_l1(p + k * kThreads);
#pragma unroll
    for (int k = 0; k < kCacheUnroll; ++k) sum = fold(sum, v[k]);
  }
  write_block_sum(sum, block_sums);
}

__global__ void __launch_bounds__(kThreads)
    shared_read_kernel(const uint4* region, int passes, std::uint32_t* block_sums) {
  __shared__ uint4 tile[kCacheRegionElements];
#pragma unroll
  for (int k = 0; k < kCacheUnroll; ++k)
    tile[threadIdx.x + k * kThreads] = region[threadIdx.x + k * kThreads];
  __syncthreads();
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(tile + threadIdx.x));
  unsigned sum = 0;
  for (int pass = 0; pass < passes; ++pass) {
    uint4 v[kCacheUnroll];
#pragma unroll
    for (int k = 0; k < kCacheUnroll; ++k)
      v[k] = load16_shared(base + static_cast<unsigned>(k * kThreads * sizeof(uint4)));
#pragma unroll
    for (int k = 0; k < kCacheUnroll; ++k) sum = fold(sum, v[k]);
  }
  write_block_sum(sum, block_sums);
}

// Indices wrap in 32 bits; count is a power of two <= 2^32, so (x mod 2^32) & mask
// equals x & mask.
__global__ void __launch_bounds__(kThreads)
    sweep_read_kernel(const uint4* data, unsigned mask, int loads_per_thread,
                      std::uint32_t* block_sums) {
  const unsigned total_threads = gridDim.x * kThreads;
  unsigned index = blockIdx.x * kThreads + threadIdx.x;
  unsigned sum = 0;
  for (int k = 0; k < loads_per_thread; k += kCacheUnroll) {
    uint4 v[kCacheUnroll];
#pragma unroll
    for (int u = 0; u < kCacheUnroll; ++u) {
      v[u] = load16_l1(data + (index & mask));
      index += total_threads;
    }
#pragma unroll
    for (int u = 0; u < kCacheUnroll; ++u) sum = fold(sum, v[u]);
  }
  write_block_sum(sum, block_sums);
}

// ---- dispatch ---------------------------------------------------------------

using ReadKernel = void (*)(const uint4*, std::size_t, std::uint32_t*);
using WriteKernel = void (*)(uint4*, std::size_t, unsigned);
using CopyKernel = void (*)(const uint4*, uint4*, std::size_t);

template <HbmLoad kLoad>
ReadKernel read_kernel_for_unroll(int unroll) {
  if (unroll == 4) return hbm_read_kernel<kLoad, 4>;
  if (unroll == 8) return hbm_read_kernel<kLoad, 8>;
  throw std::invalid_argument("HBM kernels unroll 4 or 8");
}
ReadKernel read_kernel(const HbmVariant& v) {
  switch (v.load) {
    case HbmLoad::plain:
      return read_kernel_for_unroll<HbmLoad::plain>(v.unroll);
    case HbmLoad::nc_l2_256:
      return read_kernel_for_unroll<HbmLoad::nc_l2_256>(v.unroll);
    case HbmLoad::streaming:
      return read_kernel_for_unroll<HbmLoad::streaming>(v.unroll);
    case HbmLoad::evict_last:
      break;
  }
  throw std::invalid_argument("HBM read kernels load plain, nc_l2_256 or streaming");
}

template <HbmStore kStore>
WriteKernel write_kernel_for_unroll(int unroll) {
  if (unroll == 4) return hbm_write_kernel<kStore, 4>;
  if (unroll == 8) return hbm_write_kernel<kStore, 8>;
  throw std::invalid_argument("HBM kernels unroll 4 or 8");
}
WriteKernel write_kernel(const HbmVariant& v) {
  return v.store == HbmStore::plain ? write_kernel_for_unroll<HbmStore::plain>(v.unroll)
                                    : write_kernel_for_unroll<HbmStore::streaming>(v.unroll);
}

template <HbmLoad kLoad, HbmStore kStore>
CopyKernel copy_kernel_for_unroll(int unroll) {
  if (unroll == 4) return hbm_copy_kernel<kLoad, kStore, 4, kThreads, false>;
  if (unroll == 8) return hbm_copy_kernel<kLoad, kStore, 8, kThreads, false>;
  throw std::invalid_argument("256-thread HBM kernels unroll 4 or 8");
}
template <HbmLoad kLoad>
CopyKernel copy_kernel_for_load(const HbmVariant& v) {
  return v.store == HbmStore::plain ? copy_kernel_for_unroll<kLoad, HbmStore::plain>(v.unroll)
                                    : copy_kernel_for_unroll<kLoad, HbmStore::streaming>(v.unroll);
}
// Large blocks: plain or evict_last loads, plain stores.
template <HbmLoad kLoad, int kBlockThreads, bool kBarrier>
CopyKernel large_block_copy_kernel(int unroll) {
  constexpr HbmStore kStore = HbmStore::plain;
  if (unroll == 2) return hbm_copy_kernel<kLoad, kStore, 2, kBlockThreads, kBarrier>;
  if (unroll == 4) return hbm_copy_kernel<kLoad, kStore, 4, kBlockThreads, kBarrier>;
  if (unroll == 8) return hbm_copy_kernel<kLoad, kStore, 8, kBlockThreads, kBarrier>;
  if constexpr (kBlockThreads <= 512) {  // 1024 x 16 vectors would exceed the registers
    if (unroll == 16) return hbm_copy_kernel<kLoad, kStore, 16, kBlockThreads, kBarrier>;
  }
  throw std::invalid_argument("large-block copy kernels unroll 2, 4, 8 (or 16 at 512 threads)");
}
template <HbmLoad kLoad>
CopyKernel large_block_copy_kernel(const HbmVariant& v) {
  if (v.threads == 512)
    return v.block_barrier ? large_block_copy_kernel<kLoad, 512, true>(v.unroll)
                           : large_block_copy_kernel<kLoad, 512, false>(v.unroll);
  if (v.threads == 1024)
    return v.block_barrier ? large_block_copy_kernel<kLoad, 1024, true>(v.unroll)
                           : large_block_copy_kernel<kLoad, 1024, false>(v.unroll);
  throw std::invalid_argument("copy kernels run 256, 512 or 1024 threads (barrier: 512, 1024)");
}
CopyKernel copy_kernel(const HbmVariant& v) {
  if (v.threads != kThreads || v.block_barrier) {
    if (v.store != HbmStore::plain)
      throw std::invalid_argument("large-block copy kernels store plain");
    if (v.load == HbmLoad::plain) return large_block_copy_kernel<HbmLoad::plain>(v);
    if (v.load == HbmLoad::evict_last) return large_block_copy_kernel<HbmLoad::evict_last>(v);
    throw std::invalid_argument("large-block copy kernels load plain or evict_last");
  }
  switch (v.load) {
    case HbmLoad::plain:
      return copy_kernel_for_load<HbmLoad::plain>(v);
    case HbmLoad::nc_l2_256:
      return copy_kernel_for_load<HbmLoad::nc_l2_256>(v);
    case HbmLoad::streaming:
      return copy_kernel_for_load<HbmLoad::streaming>(v);
    case HbmLoad::evict_last:
      return copy_kernel_for_load<HbmLoad::evict_last>(v);
  }
  throw std::invalid_argument("unknown HbmLoad");
}

template <typename Kernel>
int blocks_per_sm(Kernel kernel, int threads = kThreads) {
  int blocks = 0;
  TR_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0));
  return blocks;
}

// Read and write kernels run kThreads-thread blocks only.
void check_256(const HbmVariant& v) {
  if (v.threads != kThreads || v.block_barrier)
    throw std::invalid_argument("HBM read and write kernels run 256-thread blocks, no barrier");
}

using L2Kernel = void (*)(const uint4*, std::size_t, int, int, bool, int, std::uint32_t*);

template <L2Load kLoad, int kBlock>
L2Kernel l2_kernel_for_unroll(int unroll) {
  switch (unroll) {
    case 4:
      return l2_read_kernel<kLoad, kBlock, 4>;
    case 8:
      return l2_read_kernel<kLoad, kBlock, 8>;
    case 16:
      return l2_read_kernel<kLoad, kBlock, 16>;
  }
  throw std::invalid_argument("L2 read unroll must be 4, 8 or 16");
}

template <L2Load kLoad>
L2Kernel l2_kernel_for_block(int threads, int unroll) {
  switch (threads) {
    case 256:
      return l2_kernel_for_unroll<kLoad, 256>(unroll);
    case 512:
      return l2_kernel_for_unroll<kLoad, 512>(unroll);
    case 1024:
      return l2_kernel_for_unroll<kLoad, 1024>(unroll);
  }
  throw std::invalid_argument("L2 read blocks must be 256, 512 or 1024 threads");
}

L2Kernel l2_read_kernel_for(const L2Variant& v) {
  if (v.sharing < 1) throw std::invalid_argument("L2 read sharing must be at least 1");
  return v.load == L2Load::cg ? l2_kernel_for_block<L2Load::cg>(v.threads, v.unroll)
                              : l2_kernel_for_block<L2Load::nc_no_allocate>(v.threads, v.unroll);
}

void check_blocks(int blocks) {
  if (blocks <= 0) throw std::invalid_argument("memory kernels need at least one block");
}

}  // namespace

const std::vector<HbmVariant>& hbm_read_variants() {
  static const std::vector<HbmVariant> variants = {
      {"ld_u8", HbmLoad::plain, HbmStore::plain, 8, true},
      {"ld_u4", HbmLoad::plain, HbmStore::plain, 4, true},
      {"ld_nc_l2_256_u8", HbmLoad::nc_l2_256, HbmStore::plain, 8, true},
      {"ld_cs_u8", HbmLoad::streaming, HbmStore::plain, 8, true},
      {"ld_u8_tile_grid", HbmLoad::plain, HbmStore::plain, 8, false},
  };
  return variants;
}

const std::vector<HbmVariant>& hbm_write_variants() {
  static const std::vector<HbmVariant> variants = {
      {"st_u4", HbmLoad::plain, HbmStore::plain, 4, true},
      {"st_u8", HbmLoad::plain, HbmStore::plain, 8, true},
      {"st_cs_u8", HbmLoad::plain, HbmStore::streaming, 8, true},
      {"st_u4_tile_grid", HbmLoad::plain, HbmStore::plain, 4, false},
  };
  return variants;
}

// Measured on an H200 (1 GiB buffers, 2026-11-21): the ld_el_*_t512/t1024 grids
// 4.29-4.31 TB/s, ld_el_st_u4_tile_grid 4.24, ld_st_u2_t1024_tile_grid 4.15-4.18,
// ld_st_u4_tile_grid 4.04-4.07, persistent grids 3.80-3.85 (cudaMemcpyAsync 4.20-4.23).
const std::vector<HbmVariant>& hbm_copy_variants() {
  constexpr HbmLoad kPlain = HbmLoad::plain;
  constexpr HbmLoad kEvictLast = HbmLoad::evict_last;
  constexpr HbmStore kSt = HbmStore::plain;
  static const std::vector<HbmVariant> variants = {
      {"ld_st_u8", kPlain, kSt, 8, true},
      {"ld_st_u4_tile_grid", kPlain, kSt, 4, false},
      {"ld_st_u2_t1024_tile_grid", kPlain, kSt, 2, false, 1024},
      {"ld_el_st_u4_tile_grid", kEvictLast, kSt, 4, false},
      {"ld_el_st_u2_t512_tile_grid", kEvictLast, kSt, 2, false, 512},
      {"ld_el_st_u2_t1024_tile_grid", kEvictLast, kSt, 2, false, 1024},
      {"ld_el_st_u2_t1024_barrier_tile_grid", kEvictLast, kSt, 2, false, 1024, true},
      {"ld_el_st_u8_t1024_tile_grid", kEvictLast, kSt, 8, false, 1024},
  };
  return variants;
}

int hbm_blocks_for(const HbmVariant& v, std::size_t count) {
  const std::size_t tile = static_cast<std::size_t>(v.unroll) * v.threads;
  const std::size_t blocks = std::max<std::size_t>(1, (count + tile - 1) / tile);
  if (blocks > 0x7fffffff) throw std::invalid_argument("HBM buffer too large for one grid");
  return static_cast<int>(blocks);
}

void fill_pattern(void* data, std::size_t count, std::uint32_t seed, cudaStream_t stream) {
  if (count == 0) return;
  int device = 0, sms = 0;
  TR_CUDA_CHECK(cudaGetDevice(&device));
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t wanted = (count + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(
      wanted < static_cast<std::size_t>(sms) * 8 ? wanted : static_cast<std::size_t>(sms) * 8);
  fill_pattern_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint4*>(data), count, seed);
  TR_CUDA_CHECK(cudaGetLastError());
}

int hbm_read_blocks_per_sm(const HbmVariant& v) {
  check_256(v);
  return blocks_per_sm(read_kernel(v));
}
int hbm_write_blocks_per_sm(const HbmVariant& v) {
  check_256(v);
  return blocks_per_sm(write_kernel(v));
}
int hbm_copy_blocks_per_sm(const HbmVariant& v) {
  return blocks_per_sm(copy_kernel(v), v.threads);
}
int l2_read_blocks_per_sm(const L2Variant& v) {
  const int resident = blocks_per_sm(l2_read_kernel_for(v), v.threads);
  return v.half_resident ? std::max(1, resident / 2) : resident;
}
int l1_read_blocks_per_sm() {
  return blocks_per_sm(l1_read_kernel);
}
int shared_read_blocks_per_sm() {
  return blocks_per_sm(shared_read_kernel);
}
int sweep_read_blocks_per_sm() {
  return blocks_per_sm(sweep_read_kernel);
}

void launch_hbm_read(const HbmVariant& v, const void* src, std::size_t count,
                     std::uint32_t* block_sums, int blocks, cudaStream_t stream) {
  check_blocks(blocks);
  check_256(v);
  read_kernel(v)<<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(src), count,
                                                  block_sums);
  TR_CUDA_CHECK(cudaGetLastError());
}

void launch_hbm_write(const HbmVariant& v, void* dst, std::size_t count, std::uint32_t seed,
                      int blocks, cudaStream_t stream) {
  check_blocks(blocks);
  check_256(v);
  write_kernel(v)<<<blocks, kThreads, 0, stream>>>(static_cast<uint4*>(dst), count, seed);
  TR_CUDA_CHECK(cudaGetLastError());
}

void launch_hbm_copy(const HbmVariant& v, const void* src, void* dst, std::size_t count, int blocks,
                     cudaStream_t stream) {
  check_blocks(blocks);
  copy_kernel(v)<<<blocks, v.threads, 0, stream>>>(static_cast<const uint4*>(src),
                                                   static_cast<uint4*>(dst), count);
  TR_CUDA_CHECK(cudaGetLastError());
}

void launch_l2_read(const L2Variant& v, const void* data, std::size_t count, int passes,
                    std::uint32_t* block_sums, int blocks, cudaStream_t stream) {
  check_blocks(blocks);
  const L2Kernel kernel = l2_read_kernel_for(v);
  if (v.strided && (count == 0 || (count & (count - 1)) != 0 || count > (std::size_t{1} << 32)))
    throw std::invalid_argument("a strided L2 read needs a power-of-two element count <= 2^32");
  if (!v.strided && count % (static_cast<std::size_t>(v.unroll) * v.threads) != 0)
    throw std::invalid_argument("an L2 read of tiles needs a whole number of tiles");
  if (!v.strided && blocks % v.sharing != 0)
    throw std::invalid_argument("an L2 read of shared tiles needs blocks a multiple of sharing");
  if (v.chunk_tiles > 0 && (v.strided || v.sharing != 1 || count % l2_chunk_elements(v) != 0))
    throw std::invalid_argument("an L2 read of chunks needs a whole number of chunks, unshared");
  kernel<<<blocks, v.threads, 0, stream>>>(static_cast<const uint4*>(data), count, passes,
                                           v.sharing, v.strided, v.chunk_tiles, block_sums);
  TR_CUDA_CHECK(cudaGetLastError());
}

std::size_t l2_chunk_elements(const L2Variant& v) {
  return static_cast<std::size_t>(v.unroll) * v.threads * static_cast<std::size_t>(v.chunk_tiles);
}

double l2_read_bytes(const L2Variant& v, std::size_t count, int passes, int blocks) {
  if (v.chunk_tiles > 0)
    return static_cast<double>(passes) * static_cast<double>(blocks) *
           static_cast<double>(l2_chunk_elements(v)) * sizeof(uint4);
  if (v.strided)
    return static_cast<double>(passes) * v.unroll * static_cast<double>(blocks) * v.threads *
           sizeof(uint4);
  return static_cast<double>(passes) * v.sharing * static_cast<double>(count) * sizeof(uint4);
}

void launch_l1_read(const void* region, std::size_t region_elements, int passes,
                    std::uint32_t* block_sums, int blocks, cudaStream_t stream) {
  check_blocks(blocks);
  if (region_elements < kCacheRegionElements || (region_elements & (region_elements - 1)) != 0 ||
      region_elements > (std::size_t{1} << 31))
    throw std::invalid_argument("L1 region must be a power of two of at least 2048 elements");
  l1_read_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(region),
                                                  static_cast<unsigned>(region_elements), passes,
                                                  block_sums);
  TR_CUDA_CHECK(cudaGetLastError());
}

void launch_shared_read(const void* region, int passes, std::uint32_t* block_sums, int blocks,
                        cudaStream_t stream) {
  check_blocks(blocks);
  shared_read_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(region), passes,
                                                      block_sums);
  TR_CUDA_CHECK(cudaGetLastError());
}

void launch_sweep_read(const void* data, std::size_t count, int loads_per_thread,
                       std::uint32_t* block_sums, int blocks, cudaStream_t stream) {
  check_blocks(blocks);
  if (count == 0 || (count & (count - 1)) != 0 || count > (std::size_t{1} << 32))
    throw std::invalid_argument("sweep working set must be a power of two <= 2^32 elements");
  if (loads_per_thread <= 0 || loads_per_thread % kCacheUnroll != 0)
    throw std::invalid_argument("sweep loads per thread must be a positive multiple of 8");
  sweep_read_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(data),
                                                     static_cast<unsigned>(count - 1),
                                                     loads_per_thread, block_sums);
  TR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace timeroof
