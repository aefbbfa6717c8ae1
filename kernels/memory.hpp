// Memory-bandwidth kernels (plain host view of kernels/memory.cu): HBM read, write
// and copy, L2 / L1 / shared-memory reads and the working-set sweep. They set the
// hbm_*, l2_read, l1_read, shared_read ceilings and the working-set curve
// (kernels/memory_ceilings.cpp).
//
// Byte convention: bytes the kernel's threads request, each 16-byte access once.
// hbm_read and hbm_write count the buffer once, hbm_copy counts it twice (read +
// write); the cache kernels count every load, repeats included. Every access is
// 16 bytes wide (LDG.E.128 / STG.E.128 / LDS.128), coalesced across the warp.
//
// Data: element i (a uint4) holds the words 4i..4i+3 of the pattern
// word(j) = j * 2654435761 ^ seed (mod 2^32), which fill_pattern writes.
// Read kernels fold every word they load into a wrapping 32-bit sum and write one
// sum per block, so that no load can be dropped and tests can check the total.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace timeroof {

inline constexpr int kMemoryThreadsPerBlock = 256;
// The L1 and shared-memory kernels re-read one region: 256 threads x 8 x 16 B.
inline constexpr int kCacheRegionUnroll = 8;
inline constexpr std::size_t kCacheRegionElements =
    static_cast<std::size_t>(kMemoryThreadsPerBlock) * kCacheRegionUnroll;  // 32 KiB

// The pattern word j holds (see above).
inline std::uint32_t pattern_word(std::uint64_t j, std::uint32_t seed) {
  return static_cast<std::uint32_t>(j) * 2654435761u ^ seed;
}

// How the HBM kernels issue their 16-byte accesses.
enum class HbmLoad {
  plain,       // ld.global.v4                               (LDG.E.128)
  nc_l2_256,   // ld.global.nc.L1::no_allocate.L2::256B.v4  (read-only path, 256 B L2 prefetch)
  streaming,   // ld.global.cs.v4: evict-first              (LDG.E.EF.128)
  evict_last,  // ld.global.L2::cache_hint.v4 under createpolicy.fractional.L2::evict_last 1.0
               // (LDG.E.128, the policy in its descriptor); copy kernels only: the source
               // lines outrank the copy's dirty lines in L2 (kernels/memory.cu says why).
};
enum class HbmStore {
  plain,      // st.global.v4
  streaming,  // st.global.cs.v4: evict-first
};

// How the L2 kernel keeps its re-reads out of L1.
enum class L2Load {
  cg,              // ld.global.cg.v4                        (LDG.E.128.STRONG.GPU)
  nc_no_allocate,  // ld.global.nc.L1::no_allocate.v4       (LDG.E.NA.128.CONSTANT)
};

// One L2 read kernel variant (kernels/memory.cu): `threads` per block (256, 512,
// 1024), `unroll` 16-byte loads in flight per thread (4, 8, 16), L1 bypassed by
// `load`. Tiles (strided false): `sharing` consecutive blocks read the same tiles
// at the same time. Strided: each thread's loads lie one grid apart, wrapping at
// a power-of-two element count, the working-set sweep's pattern. `half_resident`:
// half the blocks that fit on an SM (on an H100 strided 256 x 8 loaded 8.28 TB/s at 4
// blocks per SM against 7.93 at 8: fewer requests queue at the L2 slices).
// Chunks (chunk_tiles > 0, tiles only, sharing 1): a grid of many short blocks,
// block b reading the chunk of chunk_tiles consecutive tiles at b mod the chunks
// `passes` times: consecutive blocks read different chunks, and blocks a chunk
// count apart the same one, at different times.
struct L2Variant {
  L2Load load = L2Load::cg;
  int threads = 256;
  int unroll = 8;
  int sharing = 1;
  bool strided = false;
  bool half_resident = false;
  int chunk_tiles = 0;
};
// Elements of one chunk of a chunked variant.
std::size_t l2_chunk_elements(const L2Variant& v);

// One HBM kernel variant: each thread keeps `unroll` independent 16-byte loads in
// flight; a block walks tiles of unroll x threads elements, grid-stride. A
// persistent variant runs SMs x resident blocks (hbm_*_blocks_per_sm); the others
// one block per tile (hbm_blocks_for), so the block scheduler balances the tail.
// Read and write kernels run 256-thread blocks; copy kernels also 512 or 1024
// (plain or evict_last loads, plain stores), and `block_barrier` makes every load
// of a tile land before the block's first store of it (copy only).
struct HbmVariant {
  const char* name;
  HbmLoad load;
  HbmStore store;
  int unroll;  // 4 or 8; copy kernels of 512 or 1024 threads: 2, 4, 8 (16 at 512)
  bool persistent;
  int threads = kMemoryThreadsPerBlock;
  bool block_barrier = false;
};
const std::vector<HbmVariant>& hbm_read_variants();
const std::vector<HbmVariant>& hbm_write_variants();
const std::vector<HbmVariant>& hbm_copy_variants();

// Fills `count` uint4 elements with the pattern of `seed`.
void fill_pattern(void* data, std::size_t count, std::uint32_t seed, cudaStream_t stream);

// Blocks of one tile (unroll x threads elements) each for `count` elements (the
// non-persistent grid).
int hbm_blocks_for(const HbmVariant& v, std::size_t count);

// Resident blocks per SM of each kernel (for a persistent grid).
int hbm_read_blocks_per_sm(const HbmVariant& v);
int hbm_write_blocks_per_sm(const HbmVariant& v);
int hbm_copy_blocks_per_sm(const HbmVariant& v);
int l2_read_blocks_per_sm(const L2Variant& v);
int l1_read_blocks_per_sm();
int shared_read_blocks_per_sm();
int sweep_read_blocks_per_sm();

// All kernels run `blocks` x kMemoryThreadsPerBlock threads (copy: blocks x
// v.threads); `block_sums` (device) receives one wrapping sum per block.
// Reads `count` elements once.
void launch_hbm_read(const HbmVariant& v, const void* src, std::size_t count,
                     std::uint32_t* block_sums, int blocks, cudaStream_t stream);
// Writes the pattern of `seed` into `count` elements.
void launch_hbm_write(const HbmVariant& v, void* dst, std::size_t count, std::uint32_t seed,
                      int blocks, cudaStream_t stream);
// Copies `count` elements.
void launch_hbm_copy(const HbmVariant& v, const void* src, void* dst, std::size_t count, int blocks,
                     cudaStream_t stream);
// Reads `count` elements through L2, L1 bypassed, `passes` times (tiles: count a
// multiple of unroll x threads; blocks a multiple of sharing) or `passes` x unroll
// loads per thread (strided: count a power of two); l2_read_bytes says how many
// bytes that loads. Runs `blocks` x v.threads threads.
void launch_l2_read(const L2Variant& v, const void* data, std::size_t count, int passes,
                    std::uint32_t* block_sums, int blocks, cudaStream_t stream);
double l2_read_bytes(const L2Variant& v, std::size_t count, int passes, int blocks);
// Every block reads `passes` windows of kCacheRegionElements elements from the
// `region_elements`-element region (a power of two >= kCacheRegionElements); pass
// p reads the window at (p x kCacheRegionElements) mod region_elements. Plain
// ld.global, which L1 caches after the first pass.
void launch_l1_read(const void* region, std::size_t region_elements, int passes,
                    std::uint32_t* block_sums, int blocks, cudaStream_t stream);
// Every block copies the region into shared memory once, then reads it `passes`
// times with conflict-free 16-byte loads (LDS.128).
void launch_shared_read(const void* region, int passes, std::uint32_t* block_sums, int blocks,
                        cudaStream_t stream);
// Working-set sweep: global thread t (of T = blocks x 256) loads the elements
// (t + k T) mod count for k < loads_per_thread; count is a power of two and
// loads_per_thread a multiple of 8.
void launch_sweep_read(const void* data, std::size_t count, int loads_per_thread,
                       std::uint32_t* block_sums, int blocks, cudaStream_t stream);

}  // namespace timeroof
