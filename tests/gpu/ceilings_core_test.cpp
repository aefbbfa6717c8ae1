// GPU tier, ceilings: the CUDA-core, memory, transfer and launch families. Each
// kernel is checked to do its work (results against a CPU reference), the
// families to return plausible roofs in full and quick mode and to honour the
// `wanted` filter. The SASS test needs no GPU: it reads this binary's own sm_90
// machine code with cuobjdump and runs wherever cuobjdump is installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/statistics.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/cuda_core.hpp"
#include "kernels/launch.hpp"
#include "kernels/memory.hpp"
#include "kernels/transfer.hpp"
#include "measure/l2_flush.hpp"
#include "measure/machine.hpp"
#include "tests/gpu/gpu_test_support.hpp"

namespace timeroof {
namespace {

// ---- helpers -----------------------------------------------------------------

template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& buffer) {
  std::vector<T> host(buffer.size());
  TR_CUDA_CHECK(cudaMemcpy(host.data(), buffer.get(), buffer.bytes(), cudaMemcpyDeviceToHost));
  return host;
}

// Rounds a normal, non-zero double to `bits` significant bits, ties to even (the
// default rounding mode): the result of one IEEE operation in that precision.
double round_to_bits(double value, int bits) {
  int exponent = 0;
  const double mantissa = std::frexp(value, &exponent);  // [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, bits)), exponent - bits);
}

// The chain of kernels/cuda_core.hpp, recomputed on the CPU. Every intermediate is
// exact in double before the rounding (operands have <= 24 bits, a = 0.875 has 3),
// so rounding the exact double to the precision's width is the GPU's single rounding.
double cuda_core_reference(const CudaCoreKernel& k, unsigned thread, int trips) {
  const double a = kChainMultiplier, b = kChainAddend;
  const int bits = k.mantissa_bits;
  const bool is_fma = k.flop_per_lane == 2.0;
  double sum = 0;
  for (int c = 0; c < kCudaCoreChains; ++c) {
    for (int lane = 0; lane < k.lanes; ++lane) {
      double x = 1.0 + static_cast<double>((thread + 7u * c + 61u * lane) & 127u) / 128.0;
      for (int trip = 0; trip < trips; ++trip) {
        if (is_fma) {
          for (int s = 0; s < kCudaCoreInstructionsPerTrip; ++s)
            x = bits == 53 ? std::fma(x, a, b) : round_to_bits(x * a + b, bits);  // exact
        } else {
          for (int s = 0; s < kCudaCoreInstructionsPerTrip; s += 2) {
            x = round_to_bits(x + b, bits);
            x = round_to_bits(x * a, bits);
          }
        }
      }
      sum += x;
    }
  }
  return sum;
}

std::uint32_t pattern_sum(std::size_t first_element, std::size_t elements, std::uint32_t seed) {
  std::uint32_t sum = 0;
  for (std::size_t j = 4 * first_element; j < 4 * (first_element + elements); ++j)
    sum += pattern_word(j, seed);
  return sum;
}

std::uint32_t total(const std::vector<std::uint32_t>& block_sums) {
  std::uint32_t sum = 0;
  for (std::uint32_t s : block_sums) sum += s;
  return sum;
}

void expect_pattern(const std::vector<uint4>& data, std::uint32_t seed, const std::string& what) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < data.size() && wrong < 5; ++i) {
    const std::array<std::uint32_t, 4> got{data[i].x, data[i].y, data[i].z, data[i].w};
    for (std::size_t k = 0; k < 4; ++k) {
      if (got[k] != pattern_word(4 * i + k, seed)) {
        ++wrong;
        ADD_FAILURE() << what << ": element " << i << " word " << k << " = " << got[k];
      }
    }
  }
}

CeilingRequest request_for_gpu0(bool quick) {
  CeilingRequest request;
  request.device = 0;
  request.quick = quick;
  request.gpu = query_gpu(0);
  return request;
}

CeilingResults measure_core_families(const CeilingRequest& request) {
  CeilingResults results;
  measure_host_timed_ceilings(request, results);
  measure_transfer_ceilings(request, results);
  measure_memory_ceilings(request, results);
  measure_cuda_core_ceilings(request, results);
  return results;
}

const std::vector<std::string>& core_names() {
  static const std::vector<std::string> names = {
      "launch_async", "launch_sync",  "launch_graph_node", "h2d_pinned",  "d2h_pinned",
      "h2d_pageable", "d2h_pageable", "hbm_read",          "hbm_write",   "hbm_copy",
      "l2_read",      "l1_read",      "shared_read",       "fp64_fma",    "fp32_fma",
      "fp16_fma",     "bf16_fma",     "fp64_addmul",       "fp32_addmul", "fp16_addmul",
      "bf16_addmul"};
  return names;
}

std::map<std::string, Ceiling> by_name(const CeilingResults& results) {
  std::map<std::string, Ceiling> map;
  for (const Ceiling& c : results.ceilings) map[c.name] = c;
  return map;
}

// sm_90 FLOP per clock per SM under the convention of kernels/cuda_core.hpp. Packed
// FP16/BF16 (HFMA2) runs at the FP32 FLOP rate on GH100, each HFMA2 taking both FMA
// pipes (README); at twice that, the peak check below could not catch a roof above
// 100% (an H100, 2026-11-26: fp16_fma 66.66 TFLOP/s = 99.6% at 1.97998 GHz, 49.8% of
// the doubled figure).
double sm90_flop_per_clock_per_sm(const std::string& name) {
  static const std::map<std::string, double> table = {
      {"fp64_fma", 128},   {"fp32_fma", 256},    {"fp16_fma", 256},    {"bf16_fma", 256},
      {"fp64_addmul", 64}, {"fp32_addmul", 128}, {"fp16_addmul", 128}, {"bf16_addmul", 128}};
  return table.at(name);
}

void print_results(const CeilingResults& results, const GpuInfo& gpu) {
  const bool sm90 = gpu.cc_major == 9 && gpu.cc_minor == 0;
  std::printf("%-18s %14s %8s %7s %s\n", "ceiling", "measured", "sm GHz", "of peak", "method");
  for (const Ceiling& c : results.ceilings) {
    std::string share = "-";
    if (sm90 && c.kind == CeilingKind::compute && c.sm_clock_hz) {
      const double peak = sm90_flop_per_clock_per_sm(c.name) * gpu.sm_count * *c.sm_clock_hz;
      char text[32];
      std::snprintf(text, sizeof text, "%.1f%%", 100 * c.measured / peak);
      share = text;
    }
    std::printf("%-18s %14.4g %8.3f %7s %s\n", c.name.c_str(), c.measured,
                c.sm_clock_hz ? *c.sm_clock_hz * 1e-9 : 0.0, share.c_str(), c.method.c_str());
  }
  for (const WorkingSetSample& s : results.working_set)
    std::printf("working set %12.0f B: %.4g B/s\n", s.bytes, s.bytes_per_second);
  for (const CeilingSkip& s : results.skipped)
    std::printf("skipped %s: %s\n", s.name.c_str(), s.reason.c_str());
}

// ---- kernels do their work -------------------------------------------------------

TEST(CeilingsCore, CudaCoreChainsMatchTheCpuReference) {
  TR_REQUIRE_GPU();
  constexpr int kBlocks = 3, kThreads = 64, kTrips = 5;
  DeviceBuffer<double> out(kBlocks * kThreads);
  for (const CudaCoreKernel& k : cuda_core_kernels()) {
    TR_CUDA_CHECK(cudaMemset(out.get(), 0xff, out.bytes()));  // NaN: unwritten shows
    launch_cuda_core_kernel(k.roof, kBlocks, kThreads, kTrips, out.get(), nullptr, nullptr);
    TR_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<double> got = to_host(out);
    int wrong = 0;
    for (unsigned t = 0; t < got.size() && wrong < 5; ++t) {
      const double want = cuda_core_reference(k, t, kTrips);
      if (got[t] != want) {
        ++wrong;
        ADD_FAILURE() << k.kernel << " thread " << t << ": " << got[t] << " != " << want;
      }
    }
    EXPECT_DOUBLE_EQ(cuda_core_flops(k.roof, kBlocks, kThreads, kTrips),
                     1.0 * kBlocks * kThreads * kTrips * kCudaCoreChains *
                         kCudaCoreInstructionsPerTrip * k.lanes * k.flop_per_lane);
  }
}

TEST(CeilingsCore, HbmKernelsReadWriteAndCopyEveryElement) {
  TR_REQUIRE_GPU();
  // Not a multiple of any tile, and a small grid: the grid-stride loop and the tail run.
  constexpr std::size_t kCount = (std::size_t{1} << 20) + 77;
  constexpr int kBlocks = 7;
  DeviceBuffer<uint4> src(kCount), dst(kCount);
  DeviceBuffer<std::uint32_t> sums(kBlocks);
  fill_pattern(src.get(), kCount, 11, nullptr);
  const std::uint32_t want_sum = pattern_sum(0, kCount, 11);
  for (const HbmVariant& v : hbm_read_variants()) {
    TR_CUDA_CHECK(cudaMemset(sums.get(), 0, sums.bytes()));
    launch_hbm_read(v, src.get(), kCount, sums.get(), kBlocks, nullptr);
    TR_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(total(to_host(sums)), want_sum) << "hbm_read " << v.name;
    EXPECT_GT(hbm_read_blocks_per_sm(v), 0) << v.name;
  }
  for (const HbmVariant& v : hbm_write_variants()) {
    fill_pattern(dst.get(), kCount, 99, nullptr);  // poison
    launch_hbm_write(v, dst.get(), kCount, 12, kBlocks, nullptr);
    TR_CUDA_CHECK(cudaDeviceSynchronize());
    expect_pattern(to_host(dst), 12, std::string("hbm_write ") + v.name);
    EXPECT_GT(hbm_write_blocks_per_sm(v), 0) << v.name;
  }
  for (const HbmVariant& v : hbm_copy_variants()) {
    // The small grid (grid-stride), then the grid the ceiling launches (one block
    // per tile, or SMs x resident blocks), each over a poisoned destination.
    int sms = 0;
    TR_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int launched = v.persistent ? sms * hbm_copy_blocks_per_sm(v) : hbm_blocks_for(v, kCount);
    for (const int blocks : {kBlocks, launched}) {
      fill_pattern(dst.get(), kCount, 99, nullptr);
      launch_hbm_copy(v, src.get(), dst.get(), kCount, blocks, nullptr);
      TR_CUDA_CHECK(cudaDeviceSynchronize());
      expect_pattern(
          to_host(dst), 11,
          std::string("hbm_copy ") + v.name + " on " + std::to_string(blocks) + " blocks");
    }
    EXPECT_GT(hbm_copy_blocks_per_sm(v), 0) << v.name;
  }
}

// The cold-L2 prelude of the sweeps (and of counters_check): a buffer that fits in
// L2 and was just read comes from L2 again; after L2Flusher::flush it comes from
// DRAM. Measured with the counters, each read right after its prelude inside the
// pass (L2 does not survive between passes).
TEST(L2Flusher, LeavesNoDataOfEarlierWorkInL2) {
  TR_REQUIRE_GPU();
  const GpuInfo gpu = query_gpu(0);
  const std::size_t bytes = std::size_t{8} << 20;  // a sixth of an H100's L2
  DeviceBuffer<uint4> data(bytes / sizeof(uint4));
  const HbmVariant& variant = hbm_read_variants().front();
  const int blocks = hbm_blocks_for(variant, data.size());
  DeviceBuffer<std::uint32_t> sums(static_cast<std::size_t>(blocks));
  fill_pattern(data.get(), data.size(), 5, nullptr);
  const L2Flusher flusher(gpu.l2_bytes);
  auto read = [&] {
    launch_hbm_read(variant, data.get(), data.size(), sums.get(), blocks, nullptr);
  };

  ProfilerSession session;
  // DRAM bytes of a read of `data` right after a read of it and `then`.
  auto dram_read_after = [&](const std::function<void()>& then, std::size_t then_kernels) {
    BatchedCall call;
    call.prelude = [&] {
      read();
      if (then) then();
    };
    call.prelude_kernels = 1 + then_kernels;
    call.run = read;
    call.kernels = 1;
    const std::vector<ProfileResult> results =
        session.profile_call_batch({"dram__bytes_read.sum"}, {call});
    return results.at(0).ranges.at(0).values.at(0);
  };
  const double warm = dram_read_after(nullptr, 0);
  const double flushed =
      dram_read_after([&] { flusher.flush(nullptr); }, L2Flusher::kernels_per_flush);
  std::printf("8 MiB buffer read from DRAM: %.4g B after a read of it, %.4g B after a flush (%s)\n",
              warm, flushed, gpu.name.c_str());
  EXPECT_LT(warm, 0.05 * bytes) << "a buffer read just before should be in L2";
  EXPECT_GT(flushed, 0.95 * bytes) << "after a flush the buffer should come from DRAM";
}

TEST(CeilingsCore, CacheKernelsReadWhatTheySay) {
  TR_REQUIRE_GPU();
  constexpr int kBlocks = 5;
  DeviceBuffer<std::uint32_t> sums(kBlocks);
  // L2, tiles: every element `sharing` times per pass; strided: each thread's
  // loads one grid apart, wrapping at the element count.
  {
    constexpr std::size_t kCount = 2 * 8192;  // whole tiles of 2,048, 4,096 and 8,192
    constexpr int kPasses = 3;
    DeviceBuffer<uint4> data(kCount);
    fill_pattern(data.get(), kCount, 21, nullptr);
    for (const L2Load load : {L2Load::cg, L2Load::nc_no_allocate}) {
      for (const L2Variant v :
           {L2Variant{load, 256, 8, 1}, L2Variant{load, 1024, 4, 5}, L2Variant{load, 512, 16, 1}}) {
        TR_CUDA_CHECK(cudaMemset(sums.get(), 0, sums.bytes()));
        launch_l2_read(v, data.get(), kCount, kPasses, sums.get(), kBlocks, nullptr);
        TR_CUDA_CHECK(cudaDeviceSynchronize());
        EXPECT_EQ(total(to_host(sums)),
                  static_cast<std::uint32_t>(v.sharing * kPasses) * pattern_sum(0, kCount, 21))
            << v.threads << " threads, sharing " << v.sharing;
        EXPECT_EQ(l2_read_bytes(v, kCount, kPasses, kBlocks),
                  v.sharing * kPasses * static_cast<double>(kCount) * sizeof(uint4));
      }
      const L2Variant strided{load, 256, 4, 1, true};
      constexpr std::size_t kMaskCount = 4096;  // a power of two
      TR_CUDA_CHECK(cudaMemset(sums.get(), 0, sums.bytes()));
      launch_l2_read(strided, data.get(), kMaskCount, 2, sums.get(), kBlocks, nullptr);
      TR_CUDA_CHECK(cudaDeviceSynchronize());
      std::uint32_t expected = 0;
      const std::size_t grid = kBlocks * 256;
      for (std::size_t t = 0; t < grid; ++t)
        for (std::size_t j = 0; j < 8; ++j)
          expected += pattern_sum((t + j * grid) & (kMaskCount - 1), 1, 21);
      EXPECT_EQ(total(to_host(sums)), expected);
      EXPECT_EQ(l2_read_bytes(strided, kMaskCount, 2, kBlocks), 2.0 * 4 * grid * sizeof(uint4));
      // Chunks of 2 tiles of 256 x 4: two chunks, so the 5 blocks read chunks 0, 1,
      // 0, 1, 0, each `passes` times.
      const L2Variant chunks{load, 256, 4, 1, false, false, 2};
      constexpr std::size_t kChunk = 2 * 256 * 4;
      ASSERT_EQ(l2_chunk_elements(chunks), kChunk);
      TR_CUDA_CHECK(cudaMemset(sums.get(), 0, sums.bytes()));
      launch_l2_read(chunks, data.get(), 2 * kChunk, 3, sums.get(), kBlocks, nullptr);
      TR_CUDA_CHECK(cudaDeviceSynchronize());
      EXPECT_EQ(total(to_host(sums)),
                3u * (3u * pattern_sum(0, kChunk, 21) + 2u * pattern_sum(kChunk, kChunk, 21)));
      EXPECT_EQ(l2_read_bytes(chunks, 2 * kChunk, 3, kBlocks),
                3.0 * kBlocks * kChunk * sizeof(uint4));
      EXPECT_THROW(launch_l2_read(chunks, data.get(), kChunk + 1, 1, sums.get(), kBlocks, nullptr),
                   std::invalid_argument);
    }
  }
  // L1: two windows; even passes read the first, odd passes the second.
  {
    constexpr int kPasses = 5;
    DeviceBuffer<uint4> region(2 * kCacheRegionElements);
    fill_pattern(region.get(), region.size(), 22, nullptr);
    launch_l1_read(region.get(), region.size(), kPasses, sums.get(), kBlocks, nullptr);
    TR_CUDA_CHECK(cudaDeviceSynchronize());
    const std::uint32_t per_block = 3 * pattern_sum(0, kCacheRegionElements, 22) +
                                    2 * pattern_sum(kCacheRegionElements, kCacheRegionElements, 22);
    EXPECT_EQ(total(to_host(sums)), kBlocks * per_block);
  }
  // Shared memory: the whole region every pass, in every block.
  {
    constexpr int kPasses = 4;
    DeviceBuffer<uint4> region(kCacheRegionElements);
    fill_pattern(region.get(), region.size(), 23, nullptr);
    launch_shared_read(region.get(), kPasses, sums.get(), kBlocks, nullptr);
    TR_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(total(to_host(sums)), kBlocks * kPasses * pattern_sum(0, kCacheRegionElements, 23));
  }
  // Sweep: thread t loads (t + k T) mod count.
  {
    constexpr std::size_t kCount = 4096;
    constexpr int kLoads = 16;
    DeviceBuffer<uint4> data(kCount);
    fill_pattern(data.get(), kCount, 24, nullptr);
    launch_sweep_read(data.get(), kCount, kLoads, sums.get(), kBlocks, nullptr);
    TR_CUDA_CHECK(cudaDeviceSynchronize());
    const std::size_t threads = kBlocks * kMemoryThreadsPerBlock;
    std::uint32_t want = 0;
    for (std::size_t t = 0; t < threads; ++t)
      for (std::size_t k = 0; k < kLoads; ++k)
        want += pattern_sum((t + k * threads) % kCount, 1, 24);
    EXPECT_EQ(total(to_host(sums)), want);
  }
}

TEST(CeilingsCore, SpinKernelHoldsTheStreamUntilReleased) {
  TR_REQUIRE_GPU();
  PinnedBuffer<int> flag(2);
  flag.get()[0] = 0;
  flag.get()[1] = 0;
  void* device = nullptr;
  TR_CUDA_CHECK(cudaHostGetDevicePointer(&device, flag.get(), 0));
  Stream stream;
  Event done;
  launch_spin_until_flag(static_cast<const volatile int*>(device), static_cast<int*>(device) + 1,
                         4'000'000'000LL, stream.get());
  done.record(stream.get());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cudaEventQuery(done.get()), cudaErrorNotReady) << "the spin kernel holds the stream";
  static_cast<volatile int*>(flag.get())[0] = 1;
  done.synchronize();
  EXPECT_EQ(static_cast<volatile int*>(flag.get())[1], 0) << "released, not timed out";
}

TEST(CeilingsCore, EmptyKernelGraphReplays) {
  TR_REQUIRE_GPU();
  const EmptyKernelGraph graph(16);
  EXPECT_EQ(graph.nodes(), 16);
  graph.launch(nullptr);
  graph.launch(nullptr);
  TR_CUDA_CHECK(cudaDeviceSynchronize());
}

// ---- the families --------------------------------------------------------------

TEST(CeilingsCore, FullModeRoofsArePlausible) {
  TR_REQUIRE_GPU();
  const CeilingRequest request = request_for_gpu0(false);
  const auto start = std::chrono::steady_clock::now();
  const CeilingResults results = measure_core_families(request);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_results(results, request.gpu);
  std::printf("full mode: %.1f s\n", seconds);
  EXPECT_LT(seconds, 60.0);

  const std::map<std::string, Ceiling> roofs = by_name(results);
  for (const std::string& name : core_names()) {
    ASSERT_EQ(roofs.count(name), 1u) << name << " missing";
    const Ceiling& c = roofs.at(name);
    EXPECT_TRUE(std::isfinite(c.measured) && c.measured > 0) << name << " = " << c.measured;
    EXPECT_FALSE(c.method.empty()) << name;
    EXPECT_GT(c.repeats, 0) << name;
  }
  const GpuInfo& gpu = request.gpu;
  const bool hopper = gpu.cc_major == 9 && gpu.cc_minor == 0;
  ASSERT_TRUE(gpu.sm_clock_max_hz.has_value());
  const double fp32_peak = gpu.sm_count * 256.0 * *gpu.sm_clock_max_hz;
  EXPECT_GT(roofs.at("fp32_fma").measured, 0.3 * fp32_peak);
  EXPECT_LT(roofs.at("fp32_fma").measured, 1.1 * fp32_peak);
  if (hopper) {
    for (const char* name : {"fp64_fma", "fp16_fma", "bf16_fma", "fp64_addmul", "fp32_addmul",
                             "fp16_addmul", "bf16_addmul"}) {
      const double peak = sm90_flop_per_clock_per_sm(name) * gpu.sm_count * *gpu.sm_clock_max_hz;
      EXPECT_GT(roofs.at(name).measured, 0.3 * peak) << name;
      EXPECT_LT(roofs.at(name).measured, 1.1 * peak) << name;
    }
    // No CUDA-core roof passes its peak at the clock it ran at: the higher of NVML's
    // and the kernel's own (issue 15: 100.65-100.68% at NVML's on an H100 whose GPU
    // timer ran slow against the SM clock).
    for (const char* name : {"fp64_fma", "fp32_fma", "fp16_fma", "bf16_fma", "fp64_addmul",
                             "fp32_addmul", "fp16_addmul", "bf16_addmul"}) {
      const Ceiling& c = roofs.at(name);
      ASSERT_TRUE(c.sm_clock_hz.has_value()) << name;
      EXPECT_NE(c.method.find("clock64"), std::string::npos) << name << ": " << c.method;
      const double peak = sm90_flop_per_clock_per_sm(name) * gpu.sm_count * *c.sm_clock_hz;
      EXPECT_LE(c.measured / peak, 1.005) << name << ": " << c.method;
    }
    for (const char* name : {"hbm_read", "hbm_write", "hbm_copy"}) {
      EXPECT_GT(roofs.at(name).measured, 1e12) << name;
      EXPECT_LT(roofs.at(name).measured, 10e12) << name;
    }
    // Cache levels above HBM, and each above the one below it.
    EXPECT_GT(roofs.at("l2_read").measured, roofs.at("hbm_read").measured);
    EXPECT_GT(roofs.at("l1_read").measured, roofs.at("l2_read").measured);
    EXPECT_GT(roofs.at("shared_read").measured, roofs.at("l2_read").measured);
  }
  for (const char* name : {"h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable"}) {
    EXPECT_GT(roofs.at(name).measured, 1e9) << name;
    EXPECT_LT(roofs.at(name).measured, 1e12) << name;
  }
  EXPECT_GT(roofs.at("h2d_pinned").measured, roofs.at("h2d_pageable").measured);
  EXPECT_GT(roofs.at("launch_async").measured, 0.5e-6);
  EXPECT_LT(roofs.at("launch_async").measured, 20e-6);
  EXPECT_GT(roofs.at("launch_sync").measured, roofs.at("launch_async").measured);
  EXPECT_LT(roofs.at("launch_sync").measured, 100e-6);
  EXPECT_GT(roofs.at("launch_graph_node").measured, 0.05e-6);
  EXPECT_LT(roofs.at("launch_graph_node").measured, 20e-6);
  // The host-timed launch roofs in 3 windows (one after another: the family alone);
  // the GPU-timed graph node in one.
  for (const char* name : {"launch_async", "launch_sync"}) {
    EXPECT_NE(roofs.at(name).method.find("measured in 3 windows"), std::string::npos)
        << name << ": " << roofs.at(name).method;
    EXPECT_NE(roofs.at(name).method.find("one after another"), std::string::npos) << name;
  }
  EXPECT_EQ(roofs.at("launch_graph_node").method.find("window"), std::string::npos);
  for (const Ceiling& c : results.ceilings)
    EXPECT_EQ(c.kind == CeilingKind::latency, c.unit == "s") << c.name;

  // The sweep: 16 KiB .. 4 GiB (or what fits), in x2 steps, every rate plausible.
  ASSERT_GE(results.working_set.size(), 15u);
  EXPECT_EQ(results.working_set.front().bytes, 16.0 * 1024);
  for (std::size_t i = 1; i < results.working_set.size(); ++i)
    EXPECT_EQ(results.working_set[i].bytes, 2 * results.working_set[i - 1].bytes);
  for (const WorkingSetSample& s : results.working_set)
    EXPECT_TRUE(std::isfinite(s.bytes_per_second) && s.bytes_per_second > 1e11) << s.bytes;
  EXPECT_GT(results.working_set.front().bytes_per_second,
            results.working_set.back().bytes_per_second)
      << "cache-resident working sets read faster than HBM-sized ones";
}

// The L2 read roof is a bandwidth of what the L2 slices served: with counters
// its bytes are the sectors the SMs asked the slices for, not the loads issued
// (requests of several SMs for one line merge before the slices: 11% of a
// strided read's loads on an H100), and the method shows both (issue 15).
TEST(CeilingsCore, L2RoofCountsTheBytesTheSlicesServed) {
  TR_REQUIRE_GPU();
  Machine machine;
  machine.gpu = query_gpu(0);
  MachineRequest request;
  request.quick = true;
  request.only = {"l2_read"};
  measure_machine(machine, request);
  ASSERT_EQ(machine.ceilings.size(), 1u);
  const Ceiling& l2 = machine.ceilings.front();
  std::printf("l2_read %.3f TB/s: %s\n", l2.measured * 1e-12, l2.method.c_str());
  if (!machine.gpu.counters.available) GTEST_SKIP() << machine.gpu.counters.reason;
  EXPECT_NE(l2.method.find("bytes = what the L2 slices served"), std::string::npos) << l2.method;
  static const std::regex served(
      R"(\(lts__t_sectors_srcunit_tex\), ([0-9.]+)% of the bytes loaded)");
  int variants = 0;
  for (std::sregex_iterator it(l2.method.begin(), l2.method.end(), served), end; it != end; ++it) {
    ++variants;
    const double share = std::stod((*it)[1]);
    EXPECT_GT(share, 40.0) << l2.method;
    EXPECT_LE(share, 101.0) << "the slices served more than was loaded: " << l2.method;
  }
  EXPECT_GE(variants, 1) << l2.method;
}

// The host-timed roofs (launch_async, launch_sync, h2d_pageable, d2h_pageable) join
// kHostWindows windows (issue 15): each window sampled on its own, the stored roof
// the median of the windows' medians, inside their envelope interval.
TEST(CeilingsCore, HostTimedRoofsJoinTheirWindows) {
  TR_REQUIRE_GPU();
  const CeilingRequest request = request_for_gpu0(true);
  HostWindows windows(request);
  for (int i = 0; i < kHostWindows; ++i) windows.take(request);
  EXPECT_EQ(windows.taken(), kHostWindows);
  CeilingResults out;
  windows.finish(out, "test spacing");
  EXPECT_TRUE(out.skipped.empty());
  const std::map<std::string, Ceiling> roofs = by_name(out);
  ASSERT_EQ(windows.roofs().size(), 4u);
  ASSERT_EQ(roofs.size(), 4u);
  for (const WindowedRoof& roof : windows.roofs()) {
    SCOPED_TRACE(roof.name);
    const bool latency = roof.kind == CeilingKind::latency;
    EXPECT_EQ(latency, roof.name.rfind("launch_", 0) == 0);
    ASSERT_EQ(roof.windows.size(), static_cast<std::size_t>(kHostWindows));
    EXPECT_TRUE(roof.failures.empty());
    std::vector<TimeStats> stats;
    double lowest = roof.windows.front().stats.median_s, highest = lowest, previous_at = -1;
    for (const TimeWindow& w : roof.windows) {
      EXPECT_GE(w.stats.samples, latency ? 30 : 10);
      EXPECT_GT(w.at_s, previous_at) << "windows in the order taken";
      previous_at = w.at_s;
      lowest = std::min(lowest, w.stats.median_s);
      highest = std::max(highest, w.stats.median_s);
      stats.push_back(w.stats);
    }
    const TimeStats joined = combine_windows(stats);
    const Ceiling& c = roofs.at(roof.name);
    std::printf("%s %.4g %s (window medians %.3f - %.3f us per unit): %s\n", c.name.c_str(),
                c.measured, c.unit.c_str(), lowest * 1e6, highest * 1e6, c.method.c_str());
    // Latency roofs store the time, bandwidth roofs the bytes of one copy over it.
    const auto value_of = [&](double seconds) {
      return latency ? seconds : roof.amount_per_unit / seconds;
    };
    EXPECT_DOUBLE_EQ(c.measured, value_of(joined.median_s));
    EXPECT_GE(c.measured, std::min(value_of(lowest), value_of(highest)));
    EXPECT_LE(c.measured, std::max(value_of(lowest), value_of(highest)));
    ASSERT_TRUE(joined.ci_low_s && joined.ci_high_s);
    EXPECT_LE(*joined.ci_low_s, joined.median_s);
    EXPECT_GE(*joined.ci_high_s, joined.median_s);
    EXPECT_EQ(c.repeats, joined.samples);
    EXPECT_NE(c.method.find("measured in 3 windows"), std::string::npos) << c.method;
    EXPECT_NE(c.method.find("; test spacing"), std::string::npos) << c.method;
  }
  EXPECT_GT(roofs.at("h2d_pageable").measured, 1e9);
  EXPECT_LT(roofs.at("h2d_pageable").measured, 1e12);
}

// Through measure_ceilings, the pageable copies are taken in windows that begin at
// the launch family's turn, and still read among the transfer roofs, after the
// pinned ones, as when they were measured at the transfer family's turn.
TEST(CeilingsCore, PageableCopiesKeepTheirPlaceAmongTheTransferRoofs) {
  TR_REQUIRE_GPU();
  CeilingRequest request = request_for_gpu0(true);
  request.wanted = [](const std::string& name) {
    return name == "launch_sync" || name == "h2d_pinned" || name == "d2h_pageable" ||
           name == "h2d_pageable";
  };
  const CeilingResults results = measure_ceilings(request);
  std::vector<std::string> names;
  for (const Ceiling& c : results.ceilings) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"launch_sync", "h2d_pinned", "h2d_pageable",
                                             "d2h_pageable"}));
  EXPECT_TRUE(results.skipped.empty());
  for (const Ceiling& c : results.ceilings) {
    if (c.name == "h2d_pinned") continue;
    EXPECT_NE(c.method.find("measured in 3 windows"), std::string::npos) << c.method;
    // Two families ran: the windows lie between them, not one after another.
    EXPECT_NE(c.method.find("spread over the ceilings run"), std::string::npos) << c.method;
  }
}

// Through measure_ceilings with only launch roofs asked for: the windows still
// happen, one after another, and the method says so.
TEST(CeilingsCore, OnlyLaunchRoofsTakeTheirWindowsOneAfterAnother) {
  TR_REQUIRE_GPU();
  CeilingRequest request = request_for_gpu0(true);
  request.wanted = [](const std::string& name) { return name == "launch_async"; };
  const CeilingResults results = measure_ceilings(request);
  ASSERT_EQ(results.ceilings.size(), 1u);
  const Ceiling& c = results.ceilings.front();
  EXPECT_EQ(c.name, "launch_async");
  EXPECT_NE(c.method.find("measured in 3 windows"), std::string::npos) << c.method;
  EXPECT_NE(c.method.find("one after another"), std::string::npos) << c.method;
}

TEST(CeilingsCore, QuickModeReturnsEveryNameFast) {
  TR_REQUIRE_GPU();
  const CeilingRequest request = request_for_gpu0(true);
  const auto start = std::chrono::steady_clock::now();
  const CeilingResults results = measure_core_families(request);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_results(results, request.gpu);
  std::printf("quick mode: %.1f s\n", seconds);
  EXPECT_LT(seconds, 10.0) << "these four families must leave room in the 20 s quick budget";
  const std::map<std::string, Ceiling> roofs = by_name(results);
  for (const std::string& name : core_names()) {
    ASSERT_EQ(roofs.count(name), 1u) << name << " missing";
    EXPECT_TRUE(std::isfinite(roofs.at(name).measured) && roofs.at(name).measured > 0) << name;
  }
  EXPECT_EQ(results.ceilings.size(), core_names().size());
  EXPECT_TRUE(results.skipped.empty());
  // Quick sweep: x4 steps from 16 KiB up to the first size >= 4 x L2.
  ASSERT_GE(results.working_set.size(), 2u);
  for (std::size_t i = 1; i < results.working_set.size(); ++i)
    EXPECT_EQ(results.working_set[i].bytes, 4 * results.working_set[i - 1].bytes);
  EXPECT_GE(results.working_set.back().bytes, 4.0 * static_cast<double>(request.gpu.l2_bytes));
}

TEST(CeilingsCore, WantedFilterMeasuresOnlyTheNamedRoofs) {
  TR_REQUIRE_GPU();
  CeilingRequest request = request_for_gpu0(true);
  const std::set<std::string> wanted = {"fp32_fma", "launch_sync", "l1_read", "d2h_pinned"};
  std::set<std::string> asked;
  request.wanted = [&](const std::string& name) {
    asked.insert(name);
    return wanted.count(name) > 0;
  };
  const CeilingResults results = measure_core_families(request);
  std::set<std::string> got;
  for (const Ceiling& c : results.ceilings) got.insert(c.name);
  EXPECT_EQ(got, wanted);
  EXPECT_TRUE(results.working_set.empty()) << "the sweep is its own name: working_set";
  for (const std::string& name : core_names()) EXPECT_EQ(asked.count(name), 1u) << name;
  EXPECT_EQ(asked.count("working_set"), 1u);
}

// ---- SASS: the kernels are built from the instructions they claim ---------------

std::string find_cuobjdump() {
  for (const char* candidate : {"/usr/local/cuda/bin/cuobjdump"})
    if (std::filesystem::exists(candidate)) return candidate;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::filesystem::path candidate =
        std::filesystem::path(dirs.substr(begin, end - begin)) / "cuobjdump";
    if (end > begin && std::filesystem::exists(candidate)) return candidate.string();
    begin = end + 1;
  }
  return "";
}

// Function name -> opcode (with modifiers) -> count, for the sm_90 code of this binary.
using Opcodes = std::map<std::string, int>;
std::map<std::string, Opcodes> sm90_sass_of_this_binary(const std::string& cuobjdump) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = cuobjdump + " -sass -arch sm_90 '" + self + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::map<std::string, Opcodes> functions;
  std::string current;
  const std::regex function_line(R"(Function : (\S+))");
  const std::regex instruction_line(R"(^\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P[T0-9]\s+)?([A-Z0-9_.]+))");
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) {
    const std::string line = buffer.data();
    std::smatch match;
    if (std::regex_search(line, match, function_line)) {
      current = match[1];
    } else if (!current.empty() && std::regex_search(line, match, instruction_line)) {
      ++functions[current][match[1]];
    }
  }
  pclose(pipe);
  return functions;
}

// Opcodes summed over every function whose mangled name contains `kernel`.
Opcodes opcodes_of(const std::map<std::string, Opcodes>& functions, const std::string& kernel,
                   int* instances = nullptr) {
  Opcodes sum;
  int found = 0;
  for (const auto& [name, opcodes] : functions) {
    if (name.find(kernel) == std::string::npos) continue;
    ++found;
    for (const auto& [op, n] : opcodes) sum[op] += n;
  }
  if (instances) *instances = found;
  return sum;
}

int count_prefix(const Opcodes& opcodes, const std::string& prefix) {
  int n = 0;
  for (const auto& [op, count] : opcodes)
    if (op == prefix || op.rfind(prefix + ".", 0) == 0) n += count;
  return n;
}

TEST(CeilingsCoreSass, KernelsUseTheInstructionsTheyMeasure) {
  const std::string cuobjdump = find_cuobjdump();
  if (cuobjdump.empty())
    GTEST_SKIP() << "cuobjdump is neither on PATH nor in /usr/local/cuda/bin: cannot read SASS";
  const auto functions = sm90_sass_of_this_binary(cuobjdump);
  ASSERT_FALSE(functions.empty()) << "no sm_90 SASS found in this binary";
  const int per_trip = kCudaCoreChains * kCudaCoreInstructionsPerTrip;

  // FMA roofs: the loop is the unrolled trip, nothing but the named FMA.
  const Opcodes fp64 = opcodes_of(functions, "fp64_fma_kernel");
  const Opcodes fp32 = opcodes_of(functions, "fp32_fma_kernel");
  const Opcodes fp16 = opcodes_of(functions, "fp16_fma_kernel");
  const Opcodes bf16 = opcodes_of(functions, "bf16_fma_kernel");
  const auto expect_whole_trips = [&](const Opcodes& ops, const char* op, const char* kernel) {
    const int n = count_prefix(ops, op);
    EXPECT_GE(n, per_trip) << kernel << " " << op;
    EXPECT_EQ(n % per_trip, 0) << kernel << " " << op << ": only the unrolled trips";
  };
  expect_whole_trips(fp64, "DFMA", "fp64_fma_kernel");
  expect_whole_trips(fp32, "FFMA", "fp32_fma_kernel");
  expect_whole_trips(fp16, "HFMA2", "fp16_fma_kernel");          // packed fp16
  expect_whole_trips(bf16, "HFMA2.BF16_V2", "bf16_fma_kernel");  // packed bf16 on sm_90
  EXPECT_EQ(bf16.count("HFMA2"), 0u) << "bf16 must not run as fp16";

  // Add/mul roofs: half adds, half multiplies, and never an FMA.
  const Opcodes fp64_am = opcodes_of(functions, "fp64_addmul_kernel");
  const Opcodes fp32_am = opcodes_of(functions, "fp32_addmul_kernel");
  const Opcodes fp16_am = opcodes_of(functions, "fp16_addmul_kernel");
  const Opcodes bf16_am = opcodes_of(functions, "bf16_addmul_kernel");
  EXPECT_GE(count_prefix(fp64_am, "DADD"), per_trip / 2);
  EXPECT_GE(count_prefix(fp64_am, "DMUL"), per_trip / 2);
  EXPECT_EQ(count_prefix(fp64_am, "DFMA"), 0);
  EXPECT_GE(count_prefix(fp32_am, "FADD"), per_trip / 2);
  EXPECT_GE(count_prefix(fp32_am, "FMUL"), per_trip / 2);
  EXPECT_EQ(count_prefix(fp32_am, "FFMA"), 0);
  EXPECT_GE(fp16_am.count("HADD2") ? fp16_am.at("HADD2") : 0, per_trip / 2);
  EXPECT_GE(fp16_am.count("HMUL2") ? fp16_am.at("HMUL2") : 0, per_trip / 2);
  EXPECT_EQ(count_prefix(fp16_am, "HFMA2"), 0);
  EXPECT_GE(count_prefix(bf16_am, "HADD2.BF16_V2") + count_prefix(bf16_am, "HADD2.BF16"),
            per_trip / 2);
  EXPECT_GE(count_prefix(bf16_am, "HMUL2.BF16_V2") + count_prefix(bf16_am, "HMUL2.BF16"),
            per_trip / 2);
  EXPECT_EQ(count_prefix(bf16_am, "HFMA2"), 0);

  // Memory kernels: every global load and store of the HBM kernels is 128-bit.
  const auto global_accesses = [](const Opcodes& opcodes, const std::string& op, int* wide) {
    int all = 0;
    *wide = 0;
    for (const auto& [name, n] : opcodes) {
      if (name.rfind(op + ".", 0) != 0) continue;
      all += n;
      if (name.find(".128") != std::string::npos) *wide += n;
    }
    return all;
  };
  // Unroll 4 or 8 plus the tail; copy kernels of 512 or 1024 threads also unroll 2.
  const std::map<std::string, int> least_per_instance = {
      {"hbm_read_kernel", 4}, {"hbm_copy_kernel", 3},   {"l2_read_kernel", 4},
      {"l1_read_kernel", 4},  {"sweep_read_kernel", 4}, {"hbm_write_kernel", 4}};
  for (const char* kernel : {"hbm_read_kernel", "hbm_copy_kernel", "l2_read_kernel",
                             "l1_read_kernel", "sweep_read_kernel"}) {
    int instances = 0, wide = 0;
    const Opcodes ops = opcodes_of(functions, kernel, &instances);
    EXPECT_GT(instances, 0) << kernel;
    const int loads = global_accesses(ops, "LDG", &wide);
    EXPECT_GE(loads, least_per_instance.at(kernel) * instances) << kernel;
    EXPECT_EQ(wide, loads) << kernel << ": every LDG is LDG.*.128";
  }
  for (const char* kernel : {"hbm_write_kernel", "hbm_copy_kernel"}) {
    int instances = 0, wide = 0;
    const Opcodes ops = opcodes_of(functions, kernel, &instances);
    const int stores = global_accesses(ops, "STG", &wide);
    EXPECT_GE(stores, least_per_instance.at(kernel) * instances) << kernel;
    EXPECT_EQ(wide, stores) << kernel << ": every STG is STG.*.128";
  }
  // The L1 kernel's loads are plain (L1-cached) and the L2 kernel's bypass L1.
  const Opcodes l1 = opcodes_of(functions, "l1_read_kernel");
  EXPECT_GE(l1.count("LDG.E.128") ? l1.at("LDG.E.128") : 0, 8);
  const Opcodes l2 = opcodes_of(functions, "l2_read_kernel");
  EXPECT_GE(l2.count("LDG.E.128.STRONG.GPU") ? l2.at("LDG.E.128.STRONG.GPU") : 0, 8);
  EXPECT_GE(l2.count("LDG.E.NA.128.CONSTANT") ? l2.at("LDG.E.NA.128.CONSTANT") : 0, 8);
  const Opcodes shared = opcodes_of(functions, "shared_read_kernel");
  EXPECT_GE(shared.count("LDS.128") ? shared.at("LDS.128") : 0, 8) << "LDS.128 reads";
}

}  // namespace
}  // namespace timeroof
