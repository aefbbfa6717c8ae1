// Memory ceilings (kernels/memory.hpp has the kernels and the byte convention):
//   hbm_read / hbm_write / hbm_copy: buffers of max(4 x L2, 1 GiB) (quick: 4 x L2),
//     bounded by free memory; several kernel variants are timed and the fastest is
//     the ceiling (its name and every variant's rate go into `method`);
//   l2_read: a working set of L2/4 or L2/2 re-read many times with L1 bypassed,
//     the best of a search over kernel shapes and access patterns, by the bytes
//     the L2 slices served where counters can be read (measure_l2);
//   l1_read: every block re-reads one 32 KiB region (L1-resident after pass 1);
//   shared_read: every block re-reads 32 KiB of shared memory with LDS.128;
//   working_set: the sweep 16 KiB .. 4 GiB (x2; quick: .. 4 x L2, x4), bytes per
//     second against working-set size, into CeilingResults::working_set.
// Grids are persistent (SMs x resident blocks, one wave) unless a variant says
// otherwise (*_tile_grid: one block per tile; L2 chunks: many short blocks).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/ceiling_names.hpp"
#include "core/format.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/memory.hpp"

namespace timeroof {

namespace {

using ceiling_support::concat;
using ceiling_support::round_down;
using ceiling_support::round_up;

constexpr std::size_t kElement = 16;  // bytes per access (uint4)
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = std::size_t{1} << 30;
constexpr std::size_t kHeadroom = 256 * kMiB;  // left free for the runtime and others
constexpr int kMaxBlocksPerSm = 32;            // the hardware limit of resident blocks per SM

struct Context {
  const CeilingRequest& request;
  int sms;
  std::size_t l2_bytes;
  cudaStream_t stream;
  DeviceBuffer<std::uint32_t> block_sums;  // one per block of the largest grid

  // The block-sum sink for a grid of `blocks`: grown where a one-block-per-tile
  // HBM grid has more blocks than the persistent grids it was sized for (its
  // blocks past the end wrote outside the allocation; compute-sanitizer memcheck).
  std::uint32_t* sums_for(int blocks) {
    const auto needed = static_cast<std::size_t>(blocks);
    if (block_sums.size() < needed) block_sums = DeviceBuffer<std::uint32_t>(needed);
    return block_sums.get();
  }
};

std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  TR_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

// One timed candidate: the fastest of several is kept.
struct Candidate {
  std::string name;
  int blocks = 0;
  double bytes = 0;
  Measurement m;
  int threads = kMemoryThreadsPerBlock;
  std::function<void(cudaStream_t)> launch;  // for the winner's sustained load
  double rate() const { return bytes / m.median_s; }
};

Candidate time_candidate(Context& ctx, const std::string& name, int blocks, double bytes,
                         const std::function<void(cudaStream_t)>& launch,
                         int threads = kMemoryThreadsPerBlock) {
  Candidate c{name,    blocks, bytes, measure_on_stream(launch, ctx.stream, ctx.request.timing()),
              threads, launch};
  return c;
}

// The roof under a load of request.sustained_seconds with the winning variant.
void sustain(const Context& ctx, const Candidate& best, Ceiling& ceiling) {
  if (ctx.request.sustained_seconds <= 0) return;
  ceiling.sustained = sustained_roof(
      best.bytes, measure_sustained(best.launch, ctx.stream, ctx.request.sustained_seconds));
}

const Candidate& best_of(const std::vector<Candidate>& candidates) {
  return *std::max_element(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return a.rate() < b.rate(); });
}

std::string list_rates(const std::vector<Candidate>& candidates) {
  std::string text;
  for (const Candidate& c : candidates) {
    if (!text.empty()) text += ", ";
    text += c.name + " " + format_si(c.rate(), "B/s");
  }
  return text;
}

// ---- HBM ---------------------------------------------------------------------

void measure_hbm(Context& ctx, CeilingResults& out) {
  const CeilingRequest& request = ctx.request;
  const bool want_read = request.wanted(ceiling::kHbmRead);
  const bool want_write = request.wanted(ceiling::kHbmWrite);
  const bool want_copy = request.wanted(ceiling::kHbmCopy);
  if (!want_read && !want_write && !want_copy) return;

  const std::size_t four_l2 = round_up(4 * ctx.l2_bytes, 2 * kMiB);
  std::size_t bytes = request.quick ? four_l2 : std::max(four_l2, kGiB);
  const bool need_src = want_read || want_copy;
  const bool need_dst = want_write || want_copy;
  const std::size_t buffers = (need_src ? 1 : 0) + (need_dst ? 1 : 0);
  const std::size_t free = free_device_bytes();
  const std::size_t budget = free > kHeadroom ? (free - kHeadroom) / buffers : 0;
  bytes = round_down(std::min(bytes, budget), 2 * kMiB);
  if (bytes < 2 * ctx.l2_bytes) {
    const std::string reason =
        concat("only ", format_binary_bytes(static_cast<double>(free)),
               " free: an HBM working set needs at least 2 x L2 (",
               format_binary_bytes(2.0 * static_cast<double>(ctx.l2_bytes)), ") per buffer");
    for (const char* name : {ceiling::kHbmRead, ceiling::kHbmWrite, ceiling::kHbmCopy})
      if (request.wanted(name)) out.skipped.push_back({name, reason});
    return;
  }
  const std::size_t count = bytes / kElement;
  DeviceBuffer<uint4> src(need_src ? count : 0);
  DeviceBuffer<uint4> dst(need_dst ? count : 0);
  // Never zeros; and every page is mapped before the first timed launch.
  if (need_src) fill_pattern(src.get(), count, 0x5eed0001u, ctx.stream);
  if (need_dst) fill_pattern(dst.get(), count, 0x5eed0002u, ctx.stream);

  const std::string size_text =
      concat(format_binary_bytes(static_cast<double>(bytes)), " buffer (",
             format_binary_bytes(static_cast<double>(ctx.l2_bytes)), " L2)");
  const auto describe = [&](const std::string& kernel, const Candidate& best,
                            const std::vector<Candidate>& all, const std::string& bytes_rule) {
    return concat(kernel, " variant ", best.name, ": grid ", best.blocks, " x ", best.threads,
                  " (grid-stride over tiles of unroll x threads; *_tile_grid: one block per tile, "
                  "else persistent; *_barrier: the block's loads land before its stores), "
                  "16-byte accesses, ",
                  size_text, "; ", bytes_rule, "; median of ", best.m.repeats,
                  " event-timed launches; fastest of: ", list_rates(all));
  };

  if (want_read) {
    std::vector<Candidate> all;
    for (const HbmVariant& v : hbm_read_variants()) {
      const int blocks =
          v.persistent ? ctx.sms * hbm_read_blocks_per_sm(v) : hbm_blocks_for(v, count);
      all.push_back(time_candidate(
          ctx, v.name, blocks, static_cast<double>(bytes), [&, v, blocks](cudaStream_t s) {
            launch_hbm_read(v, src.get(), count, ctx.sums_for(blocks), blocks, s);
          }));
    }
    const Candidate& best = best_of(all);
    out.ceilings.push_back(make_ceiling(
        ceiling::kHbmRead, CeilingKind::bandwidth, "B/s", best.bytes, best.m,
        describe("hbm_read_kernel", best, all,
                 "bytes = buffer size; every word summed, one sum per block written")));
    sustain(ctx, best, out.ceilings.back());
  }
  if (want_write) {
    std::vector<Candidate> all;
    for (const HbmVariant& v : hbm_write_variants()) {
      const int blocks =
          v.persistent ? ctx.sms * hbm_write_blocks_per_sm(v) : hbm_blocks_for(v, count);
      all.push_back(time_candidate(ctx, v.name, blocks, static_cast<double>(bytes),
                                   [&, v, blocks](cudaStream_t s) {
                                     launch_hbm_write(v, dst.get(), count, 0x5eed0003u, blocks, s);
                                   }));
    }
    const Candidate& best = best_of(all);
    out.ceilings.push_back(make_ceiling(ceiling::kHbmWrite, CeilingKind::bandwidth, "B/s",
                                        best.bytes, best.m,
                                        describe("hbm_write_kernel", best, all,
                                                 "bytes = buffer size (whole 32-byte sectors "
                                                 "written, no read for ownership)")));
  }
  if (want_copy) {
    std::vector<Candidate> all;
    for (const HbmVariant& v : hbm_copy_variants()) {
      const int blocks =
          v.persistent ? ctx.sms * hbm_copy_blocks_per_sm(v) : hbm_blocks_for(v, count);
      all.push_back(time_candidate(
          ctx, v.name, blocks, 2.0 * static_cast<double>(bytes),
          [&, v, blocks](cudaStream_t s) {
            launch_hbm_copy(v, src.get(), dst.get(), count, blocks, s);
          },
          v.threads));
    }
    const Candidate& best = best_of(all);
    out.ceilings.push_back(make_ceiling(
        ceiling::kHbmCopy, CeilingKind::bandwidth, "B/s", best.bytes, best.m,
        describe("hbm_copy_kernel", best, all, "bytes = 2 x buffer size (read + write)")));
    sustain(ctx, best, out.ceilings.back());
    // The ld_el_* variants leave source lines at evict_last priority in L2: back to
    // normal before anything else is measured.
    TR_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  }
}

// ---- caches --------------------------------------------------------------------

// Passes per launch so that one launch lasts about `target_s`.
int passes_for_target(Context& ctx, double target_s, const std::function<void(int)>& launch) {
  constexpr int kProbePasses = 8;
  const double probe_s =
      ceiling_support::time_one_call([&](cudaStream_t) { launch(kProbePasses); }, ctx.stream);
  return static_cast<int>(
      ceiling_support::count_for_target(probe_s, kProbePasses, target_s, 1, 1 << 24));
}

// The L2 read roof: the best of a search over block size, loads in flight, the
// cache operator and the access pattern (tiles or strided), on working sets of
// L2/4 and L2/2 (both partitions). Why a search: on an H100 the single variant of
// earlier versions (256 threads, 8 loads, tiles) read 7.1 TB/s while the
// working-set sweep's pattern reached 8.0-8.2 and simple code with 1024-thread
// blocks 8.1-8.7 (issue 15); which shape wins differs between chips. Searched on
// an H100 with ncu (2 to 25 MiB, 128-1024 threads, 4-32 loads, cg / nc, all or
// half the resident blocks): of distinct data, strided 256 x 8 with half the
// blocks loaded the most, 8.28 TB/s (loads; the slices served 5-20% less of such
// strided reads, hence the roof's served count below); the 9-10 TB/s of working sets below one grid
// of loads (2 MiB) were requests merged before the slices (the slices saw half
// the sectors), as are the published figures of blocks re-reading one chunk.
std::vector<L2Variant> l2_search(bool quick) {
  std::vector<L2Variant> out;
  const std::vector<std::pair<int, int>> shapes =
      quick
          ? std::vector<std::pair<int, int>>{{256, 8}, {1024, 8}}
          : std::vector<std::pair<int, int>>{{256, 8}, {256, 16}, {512, 16}, {1024, 4}, {1024, 8}};
  for (const L2Load load : {L2Load::cg, L2Load::nc_no_allocate}) {
    if (quick && load != L2Load::cg) continue;
    // Blocks sharing tiles (L2Variant::sharing) are left out: on an H100 4 blocks
    // reading one tile at once "read" 17-25 TB/s, above the L2 slices' peak
    // (lts__t_bytes, 13 TB/s): requests of several SMs for one line are merged
    // before the slices, so that is not the bandwidth of distinct data.
    for (const auto& [threads, unroll] : shapes) {
      out.push_back({load, threads, unroll, 1, false});
      out.push_back({load, threads, unroll, 1, true});
      if (!quick) out.push_back({load, threads, unroll, 1, true, true});
    }
    // Chunks of 512 KiB or 1 MiB read by a grid of many short blocks (gpu-benches'
    // pattern). On an H200 256-thread blocks of 4-16 loads loaded the most,
    // 10.1-10.8 TB/s, 512-thread ones 9.9-10.2, 1024-thread 8.6-9.2, 256 KiB
    // chunks 9.6-10.2; the slices served 84-98% of those loads (the rest merged
    // before them), at most 9.66 TB/s, the busiest L2 unit at 93-94% of its peak.
    // Cache-global loads only: ld.nc.L1::no_allocate chunks sent 8-15% of their
    // sectors across the partitions and were served 9.53-9.54 TB/s at best, below
    // cg in each of 3 runs. Each block starting its chunk at another tile (so the
    // blocks that read one chunk at once read different lines) raised the served
    // share to 98% and lowered the loads as much: served 9.61-9.66 against
    // 9.58-9.66 (H200, 3 runs), so it is not searched.
    if (!quick && load == L2Load::cg)
      for (const auto& [threads, unroll] :
           std::vector<std::pair<int, int>>{{256, 4}, {256, 8}, {256, 16}, {512, 16}})
        for (const int kib : {512, 1024})
          out.push_back({load, threads, unroll, 1, false, false,
                         kib * 1024 / (threads * unroll * static_cast<int>(kElement))});
  }
  return out;
}

std::string l2_variant_name(const L2Variant& v) {
  return concat(v.load == L2Load::cg ? "ld.cg" : "ld.nc.L1::no_allocate", " ", v.threads, "x",
                v.unroll,
                v.strided           ? " strided"
                : v.chunk_tiles > 0 ? concat(" chunks of ", v.chunk_tiles, " tiles")
                : v.sharing > 1     ? concat(" tiles/", v.sharing)
                                    : std::string(" tiles"),
                v.half_resident ? ", half the resident blocks" : "");
}

// What the counters say of an L2 variant (one launch, CUPTI): the sectors the
// SMs asked the L2 slices for, which is what the slices served (requests of
// several SMs for one line at once merge before the slices: a strided 512 x 16
// read of 16 MiB on an H100 counted 11% more bytes than reached them, working
// sets below one grid of loads twice as many), how busy the slices and the
// busiest L2 unit were against their peaks, the share that came across the
// partitions, and the hit rate.
struct L2Counters {
  double served_bytes = 0;  // lts__t_sectors_srcunit_tex x 32 B
  std::string text;
};

std::optional<L2Counters> l2_counters(const Context& ctx, const Candidate& c) {
  if (!ctx.request.profile) return std::nullopt;
  static const std::vector<std::string> metrics = {
      "lts__t_sectors_srcunit_tex.sum", "lts__t_sectors_srcunit_ltcfabric.sum",
      "lts__t_bytes.sum.pct_of_peak_sustained_elapsed",
      "lts__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sector_hit_rate.pct"};
  const std::vector<double> v = ctx.request.profile(metrics, c.launch);
  if (v.size() != metrics.size() || !(v[0] > 0)) return std::nullopt;
  constexpr double kSectorBytes = 32;
  const double served = v[0] * kSectorBytes;
  return L2Counters{
      served,
      concat(c.name, ": the slices served ", format_si(served, "B"),
             " (lts__t_sectors_srcunit_tex), ", format_number(served / c.bytes, hint::percent_1),
             " of the bytes loaded; their data at ", format_number(v[2] / 100, hint::percent_1),
             " of lts__t_bytes' peak, the busiest L2 unit at ",
             format_number(v[3] / 100, hint::percent_1),
             " of its peak (lts__throughput); sectors across the partitions ",
             format_number(v[1] / v[0], hint::percent_1), " (srcunit_ltcfabric); hit rate ",
             format_number(v[4] / 100, hint::percent_1))};
}

// With counters the roof is the bytes the slices served per second. The variants
// are profiled in order of bytes loaded until one loaded less than the best served
// rate so far: the slices serve no more than was loaded, so no later variant can
// win. Which variant serves the most is not which loads the most (H200: strided
// reads with half the resident blocks loaded 11.3 TB/s of which 72% was served, 1
// MiB chunks 10.4-10.6 of which 86-91%, 512 KiB ones 9.7-10.1 of which 95%), and
// which ones load the most moved between runs, so a fixed number of the fastest
// missed the best (9.07-9.37 TB/s against 9.63-9.67). kL2ProfiledMost bounds the
// cost: the roof took 22-23 s with 20 variants profiled (H200).
constexpr std::size_t kL2ProfiledMost = 48;

void measure_l2(Context& ctx, CeilingResults& out) {
  if (!ctx.request.wanted(ceiling::kL2Read)) return;
  const double target_s = ctx.request.quick ? 0.5e-3 : 2e-3;
  constexpr std::size_t kTileBytes = kElement * 1024 * 16;  // the largest tile of the search
  const std::size_t largest = round_down(ctx.l2_bytes / 2, kTileBytes);
  if (largest < kTileBytes) {
    out.skipped.push_back({ceiling::kL2Read, "L2 size unknown or too small"});
    return;
  }
  DeviceBuffer<uint4> data(largest / kElement);
  fill_pattern(data.get(), data.size(), 0x5eed0004u, ctx.stream);

  std::vector<Candidate> all;
  for (const std::size_t divisor : {std::size_t{4}, std::size_t{2}}) {
    for (const L2Variant& v : l2_search(ctx.request.quick)) {
      if (ctx.request.quick && divisor == 2) continue;
      // Tiles: a whole number of the largest tile; strided: a power of two.
      std::size_t bytes = round_down(ctx.l2_bytes / divisor, kTileBytes);
      if (v.strided) bytes = std::bit_floor(bytes);
      if (v.chunk_tiles > 0) bytes = round_down(bytes, l2_chunk_elements(v) * kElement);
      const std::size_t count = bytes / kElement;
      if (v.chunk_tiles > 0) {
        // One read of a chunk per block; the grid, a whole number of rounds over
        // the chunks, grows to the target time.
        const int chunks = static_cast<int>(count / l2_chunk_elements(v));
        const auto launch = [&, count, v](int blocks, cudaStream_t s) {
          launch_l2_read(v, data.get(), count, 1, ctx.sums_for(blocks), blocks, s);
        };
        const int blocks = chunks * passes_for_target(ctx, target_s, [&](int r) {
                             launch(r * chunks, ctx.stream);
                           });
        all.push_back(time_candidate(
            ctx,
            concat(l2_variant_name(v), " ", format_binary_bytes(static_cast<double>(bytes)),
                   " grid ", blocks, " x ", v.threads),
            blocks, l2_read_bytes(v, count, 1, blocks),
            [launch, blocks](cudaStream_t s) { launch(blocks, s); }));
        continue;
      }
      const int blocks = ctx.sms * l2_read_blocks_per_sm(v) / v.sharing * v.sharing;
      if (blocks < v.sharing) continue;
      const auto launch = [&, count, blocks, v](int passes, cudaStream_t s) {
        launch_l2_read(v, data.get(), count, passes, ctx.sums_for(blocks), blocks, s);
      };
      const int passes = passes_for_target(ctx, target_s, [&](int p) { launch(p, ctx.stream); });
      const std::string name =
          concat(l2_variant_name(v), " ", format_binary_bytes(static_cast<double>(bytes)), " grid ",
                 blocks, " x ", v.threads, " x ", passes, " passes");
      all.push_back(time_candidate(ctx, name, blocks, l2_read_bytes(v, count, passes, blocks),
                                   [launch, passes](cudaStream_t s) { launch(passes, s); }));
    }
  }
  // The working-set sweep's own pattern (L1-cached loads, every thread a grid
  // apart) on the same sets, profiled beside the fastest variants but never the
  // roof by bytes loaded: its loads partly hit L1. The curve's L2 plateau read
  // 8.3-8.4 TB/s loaded on an H100, of which the slices served 82% (6.9 TB/s),
  // while the search's best served 7.9: the method gives both.
  std::vector<Candidate> pattern;
  if (!ctx.request.quick) {
    const int blocks = ctx.sms * sweep_read_blocks_per_sm();
    const double threads = static_cast<double>(blocks) * kMemoryThreadsPerBlock;
    for (const std::size_t divisor : {std::size_t{4}, std::size_t{2}}) {
      const std::size_t bytes = std::bit_floor(ctx.l2_bytes / divisor);
      const std::size_t count = bytes / kElement;
      const auto launch = [&, count, blocks](int loads, cudaStream_t s) {
        launch_sweep_read(data.get(), count, loads, ctx.sums_for(blocks), blocks, s);
      };
      constexpr int kUnroll = kCacheRegionUnroll;  // the kernel's loads per trip
      const int loads = kUnroll * passes_for_target(ctx, target_s, [&](int trips) {
                          launch(kUnroll * trips, ctx.stream);
                        });
      pattern.push_back(
          time_candidate(ctx,
                         concat("working-set pattern (sweep_read_kernel, L1-cached loads) ",
                                format_binary_bytes(static_cast<double>(bytes)), " grid ", blocks,
                                " x ", kMemoryThreadsPerBlock, " x ", loads, " loads"),
                         blocks, static_cast<double>(loads) * threads * kElement,
                         [launch, loads](cudaStream_t s) { launch(loads, s); }));
    }
  }
  std::vector<const Candidate*> by_loaded;
  for (const Candidate& c : all) by_loaded.push_back(&c);
  std::sort(by_loaded.begin(), by_loaded.end(),
            [](const Candidate* a, const Candidate* b) { return a->rate() > b->rate(); });
  const Candidate* best = by_loaded.front();
  double bytes = best->bytes;
  std::vector<std::string> profiled;
  bool counters = true;
  const auto profile = [&](const Candidate& c) {
    const std::optional<L2Counters> seen = counters ? l2_counters(ctx, c) : std::nullopt;
    if (!seen) {
      counters = false;
      return false;
    }
    profiled.push_back(seen->text);
    if (profiled.size() == 1 || seen->served_bytes / c.m.median_s > bytes / best->m.median_s) {
      best = &c;
      bytes = seen->served_bytes;
    }
    return true;
  };
  for (const Candidate* c : by_loaded) {
    if (profiled.size() == kL2ProfiledMost ||
        (!profiled.empty() && c->rate() <= bytes / best->m.median_s))
      break;
    if (!profile(*c)) break;
  }
  const std::size_t profiled_variants = profiled.size();
  for (const Candidate& c : pattern)
    if (!profile(c)) break;
  std::string counted = "bytes = 16-byte loads issued (no counters)";
  if (!profiled.empty()) {
    counted =
        concat("bytes = what the L2 slices served (CUPTI, one launch each of ", profiled_variants,
               " variants in order of bytes loaded, until one loaded less than the best "
               "served rate (at most ",
               kL2ProfiledMost, ")", pattern.empty() ? "" : ", and of the working-set pattern",
               "; the best kept): ");
    for (std::size_t i = 0; i < profiled.size(); ++i) counted += (i ? "; " : "") + profiled[i];
  }
  out.ceilings.push_back(make_ceiling(
      ceiling::kL2Read, CeilingKind::bandwidth, "B/s", bytes, best->m,
      concat(best->name.starts_with("working-set") ? "" : "l2_read_kernel ", best->name,
             " (16-byte loads, L1 bypassed unless named, warm L2 after 3 warm-up launches; "
             "strided: a thread's loads one grid apart, else tiles); median of ",
             best->m.repeats, " event-timed launches; best of ", all.size(),
             " variants by bytes loaded: ", list_rates(all),
             pattern.empty() ? "" : concat("; working-set pattern: ", list_rates(pattern)), "; ",
             counted)));
}

void measure_l1_and_shared(Context& ctx, CeilingResults& out) {
  const bool want_l1 = ctx.request.wanted(ceiling::kL1Read);
  const bool want_shared = ctx.request.wanted(ceiling::kSharedRead);
  if (!want_l1 && !want_shared) return;
  const double target_s = ctx.request.quick ? 0.5e-3 : 2e-3;
  DeviceBuffer<uint4> region(kCacheRegionElements);
  fill_pattern(region.get(), region.size(), 0x5eed0005u, ctx.stream);
  const double region_bytes = static_cast<double>(kCacheRegionElements * kElement);

  if (want_l1) {
    const int blocks_per_sm = l1_read_blocks_per_sm();
    const int blocks = ctx.sms * blocks_per_sm;
    const auto launch = [&, blocks](int passes, cudaStream_t s) {
      launch_l1_read(region.get(), kCacheRegionElements, passes, ctx.sums_for(blocks), blocks, s);
    };
    const int passes = passes_for_target(ctx, target_s, [&](int p) { launch(p, ctx.stream); });
    const double bytes = region_bytes * passes * blocks;
    const Measurement m = measure_on_stream([&, passes](cudaStream_t s) { launch(passes, s); },
                                            ctx.stream, ctx.request.timing());
    out.ceilings.push_back(make_ceiling(
        ceiling::kL1Read, CeilingKind::bandwidth, "B/s", bytes, m,
        concat("l1_read_kernel: grid ", blocks, " x ", kMemoryThreadsPerBlock, " (", blocks_per_sm,
               " blocks/SM), every block reads one common ", format_binary_bytes(region_bytes),
               " region ", passes,
               " times with 8 x 16-byte ld.global (LDG.E.128, L1-cached) in flight per thread; "
               "bytes = region x passes x blocks; median of ",
               m.repeats, " event-timed launches")));
  }
  if (want_shared) {
    const int blocks_per_sm = shared_read_blocks_per_sm();
    const int blocks = ctx.sms * blocks_per_sm;
    const auto launch = [&, blocks](int passes, cudaStream_t s) {
      launch_shared_read(region.get(), passes, ctx.sums_for(blocks), blocks, s);
    };
    const int passes = passes_for_target(ctx, target_s, [&](int p) { launch(p, ctx.stream); });
    const double bytes = region_bytes * passes * blocks;
    const Measurement m = measure_on_stream([&, passes](cudaStream_t s) { launch(passes, s); },
                                            ctx.stream, ctx.request.timing());
    out.ceilings.push_back(make_ceiling(
        ceiling::kSharedRead, CeilingKind::bandwidth, "B/s", bytes, m,
        concat("shared_read_kernel: grid ", blocks, " x ", kMemoryThreadsPerBlock, " (",
               blocks_per_sm, " blocks/SM), every block reads its ",
               format_binary_bytes(region_bytes), " of shared memory ", passes,
               " times, 8 conflict-free LDS.128 in flight per thread (consecutive threads on "
               "consecutive 16-byte words); bytes = shared bytes loaded (the one fill from "
               "global memory not counted); median of ",
               m.repeats, " event-timed launches")));
  }
}

// ---- working-set sweep -----------------------------------------------------------

void measure_working_set(Context& ctx, CeilingResults& out) {
  if (!ctx.request.wanted(ceiling::kWorkingSet)) return;
  const bool quick = ctx.request.quick;
  constexpr std::size_t kSmallest = 16 * 1024;
  const std::size_t step = quick ? 4 : 2;
  // Full: 16 KiB .. 4 GiB; quick: up to the first size on the x4 ladder >= 4 x L2.
  std::size_t largest = kSmallest;
  while (largest < (quick ? 4 * ctx.l2_bytes : 4 * kGiB)) largest *= step;
  const std::size_t free = free_device_bytes();
  while (largest > kSmallest && largest + kHeadroom > free) largest /= step;
  if (largest + kHeadroom > free) {
    out.skipped.push_back({ceiling::kWorkingSet, "no free device memory for the sweep"});
    return;
  }
  DeviceBuffer<uint4> data(largest / kElement);
  fill_pattern(data.get(), data.size(), 0x5eed0006u, ctx.stream);

  const int blocks = ctx.sms * sweep_read_blocks_per_sm();
  const std::size_t threads = static_cast<std::size_t>(blocks) * kMemoryThreadsPerBlock;
  // Enough traffic per launch that the launch itself does not count.
  const std::size_t min_loads = (quick ? 256 * kMiB : kGiB) / kElement;
  for (std::size_t bytes = kSmallest; bytes <= largest; bytes *= step) {
    const std::size_t count = bytes / kElement;
    const std::size_t wanted = std::max(count, min_loads);
    const int loads = static_cast<int>(round_up((wanted + threads - 1) / threads, 8));
    const Measurement m = measure_on_stream(
        [&, count, loads](cudaStream_t s) {
          launch_sweep_read(data.get(), count, loads, ctx.sums_for(blocks), blocks, s);
        },
        ctx.stream, ctx.request.timing());
    const double moved = static_cast<double>(loads) * static_cast<double>(threads * kElement);
    out.working_set.push_back({static_cast<double>(bytes), moved / m.median_s});
  }
}

}  // namespace

void measure_memory_ceilings(const CeilingRequest& request, CeilingResults& out) {
  const int sms = ceiling_support::select_device_and_count_sms(request);
  std::size_t l2 = request.gpu.l2_bytes > 0 ? static_cast<std::size_t>(request.gpu.l2_bytes) : 0;
  if (l2 == 0) {
    int l2_attribute = 0;
    TR_CUDA_CHECK(cudaDeviceGetAttribute(&l2_attribute, cudaDevAttrL2CacheSize, request.device));
    l2 = static_cast<std::size_t>(l2_attribute);
  }
  Context ctx{request, sms, l2, request.stream,
              DeviceBuffer<std::uint32_t>(static_cast<std::size_t>(sms) * kMaxBlocksPerSm)};
  measure_hbm(ctx, out);  // each step frees its buffers before the next allocates
  measure_l2(ctx, out);
  measure_l1_and_shared(ctx, out);
  measure_working_set(ctx, out);
}

}  // namespace timeroof
