// GPU tier, activity tracer: a known sequence of kernels, copies and a memset
// comes back record for record (shapes, bytes, pinned flags, correlated API
// calls, ordering); the per-call summary is consistent with wall time; stop()
// really turns tracing off; a second tracer is refused; kernel records carry the
// launched function's name also where modules are unloaded and others loaded
// (#17/#18), at a bounded cost per launch.
#include <cuda.h>
#include <cupti_activity.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/elapsed.hpp"
#include "counters/activity_tracer.hpp"
#include "counters/probe_kernel.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cupti.hpp"
#include "gpu/driver.hpp"
#include "gpu/handles.hpp"
#include "tests/gpu/gpu_test_support.hpp"

namespace timeroof {
namespace trace_test {
// tests/gpu/activity_trace_kernels.cu
void launch_scale(float* data, float factor, int n, dim3 grid, dim3 block, unsigned dynamic_shared,
                  cudaStream_t stream);
cudaFuncAttributes scale_attributes();
}  // namespace trace_test

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
const FfmaProbe kProbes[3] = {{32, 64, 64}, {64, 128, 128}, {96, 256, 256}};

// The top-level API call (on its thread) that contains the call with this
// correlation id: cudaLaunchKernel for a kernel even where CUPTI correlates the
// kernel with a driver call nested inside it.
const ApiActivity* launching_call(const Trace& trace, std::uint32_t correlation_id) {
  const ApiActivity* direct = nullptr;
  for (const ApiActivity& a : trace.api_calls)
    if (a.correlation_id == correlation_id && (!direct || a.start_ns < direct->start_ns))
      direct = &a;
  if (!direct) return nullptr;
  const ApiActivity* outer = direct;
  for (const ApiActivity& a : trace.api_calls)
    if (a.thread_id == direct->thread_id && a.start_ns <= direct->start_ns &&
        a.end_ns >= direct->end_ns && a.start_ns <= outer->start_ns)
      outer = &a;
  return outer;
}

std::map<std::string, int> count_api(const Trace& trace, ApiDomain domain) {
  std::map<std::string, int> counts;
  for (const ApiActivity& a : trace.api_calls)
    if (a.domain == domain) ++counts[a.name];
  return counts;
}

void print_api_counts(const Trace& trace) {
  for (ApiDomain domain : {ApiDomain::runtime, ApiDomain::driver}) {
    std::printf("  %s API records:", to_string(domain));
    for (const auto& [name, n] : count_api(trace, domain)) std::printf(" %s x%d", name.c_str(), n);
    std::printf("\n");
  }
}

void print_name_cache(const Trace& trace) {
  std::printf(
      "  launch name cache: %llu launches named from the cache, %llu asked the driver, "
      "%llu clears by unloads\n",
      static_cast<unsigned long long>(trace.launch_name_cache.hits),
      static_cast<unsigned long long>(trace.launch_name_cache.queries),
      static_cast<unsigned long long>(trace.launch_name_cache.clears));
}

void print_summary(const char* label, const TraceSummary& s) {
  std::printf(
      "%s (per call over %d calls): launches %.2f, kernel %.2f us (busy %.2f us), "
      "API %.2f us in %.1f top-level calls, sync %.2f us, tracer API %.2f us, "
      "launch->start median %.2f us "
      "(max %.2f us), GPU gaps %.2f us, H2D %.0f B in %.2f us, D2H %.0f B in %.2f us, "
      "memset %.0f B in %.2f us, dropped %llu\n",
      label, s.calls, s.launches, s.kernel_ns * 1e-3, s.kernel_busy_ns * 1e-3, s.api_ns * 1e-3,
      s.api_calls, s.sync_ns * 1e-3, s.tracer_api_ns * 1e-3,
      s.launch_latency_ns.value_or(-1e3) * 1e-3, s.launch_latency_max_ns.value_or(-1e3) * 1e-3,
      s.gap_ns * 1e-3, s.h2d_bytes, s.h2d_ns * 1e-3, s.d2h_bytes, s.d2h_ns * 1e-3, s.memset_bytes,
      s.memset_ns * 1e-3, static_cast<unsigned long long>(s.dropped_records));
}

TEST(ActivityTracerGpu, RecordsAKnownSequence) {
  TR_REQUIRE_GPU();
  Stream stream;
  DeviceBuffer<float> out(static_cast<std::size_t>(96) * 256);
  PinnedBuffer<char> pinned(4 * kMiB);
  DeviceBuffer<char> device(4 * kMiB);
  std::vector<char> pageable(1 * kMiB);
  // Module load and first-launch costs stay outside the trace.
  launch_ffma_probe(kProbes[0], out.get(), stream.get());
  stream.synchronize();

  ActivityTracer tracer;
  tracer.start();
  EXPECT_TRUE(tracer.tracing());
  const auto t0 = std::chrono::steady_clock::now();
  for (const FfmaProbe& p : kProbes) launch_ffma_probe(p, out.get(), stream.get());
  TR_CUDA_CHECK(
      cudaMemcpyAsync(device.get(), pinned.get(), 4 * kMiB, cudaMemcpyHostToDevice, stream.get()));
  TR_CUDA_CHECK(cudaMemcpyAsync(pageable.data(), device.get(), 1 * kMiB, cudaMemcpyDeviceToHost,
                                stream.get()));
  TR_CUDA_CHECK(cudaMemsetAsync(device.get(), 0, 2 * kMiB, stream.get()));
  stream.synchronize();
  const double wall_s = seconds_since(t0);
  const Trace trace = tracer.stop();
  EXPECT_FALSE(tracer.tracing());

  EXPECT_EQ(trace.dropped_records, 0u);
  EXPECT_EQ(trace.untimed_records, 0u);
  EXPECT_LT(trace.start_ns, trace.stop_ns);
  std::printf(
      "launch names (runtime launches): %llu of %zu records named at launch, %llu "
      "corrected%s%s\n",
      static_cast<unsigned long long>(trace.kernels_named_at_launch), trace.kernels.size(),
      static_cast<unsigned long long>(trace.kernels_renamed),
      trace.launch_naming_problem.empty() ? "" : "; ", trace.launch_naming_problem.c_str());
  print_name_cache(trace);
  EXPECT_EQ(trace.launch_naming_problem, "");
  EXPECT_EQ(trace.kernels_named_at_launch, 3u);
  EXPECT_EQ(trace.kernels_renamed, 0u);
  // One kernel launched three times: the driver is asked once.
  EXPECT_EQ(trace.launch_name_cache.queries, 1u);
  EXPECT_EQ(trace.launch_name_cache.hits, 2u);

  // Kernels: exact count, shapes, order, one stream.
  ASSERT_EQ(trace.kernels.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const KernelActivity& k = trace.kernels[i];
    SCOPED_TRACE("kernel " + std::to_string(i) + ": " + k.name);
    EXPECT_NE(k.name.find("ffma_probe_kernel(float*, int, float, float)"), std::string::npos);
    EXPECT_EQ(k.name.rfind("_Z", 0), std::string::npos) << "demangled";
    EXPECT_TRUE(k.named_at_launch) << "a runtime launch is named at its launch";
    EXPECT_FALSE(k.cupti_name.has_value()) << *k.cupti_name;
    EXPECT_EQ(k.grid, (std::array<int, 3>{kProbes[i].blocks, 1, 1}));
    EXPECT_EQ(k.block, (std::array<int, 3>{kProbes[i].threads, 1, 1}));
    EXPECT_GT(k.registers, 0);
    EXPECT_EQ(k.static_shared_bytes, 0);
    EXPECT_EQ(k.dynamic_shared_bytes, 0);
    EXPECT_LE(trace.start_ns, k.start_ns);
    EXPECT_LT(k.start_ns, k.end_ns);
    EXPECT_LE(k.end_ns, trace.stop_ns);
    EXPECT_EQ(k.stream_id, trace.kernels[0].stream_id);
    if (i > 0) {
      EXPECT_LE(trace.kernels[i - 1].end_ns, k.start_ns) << "one stream runs in order";
    }
    if (k.queued_ns && k.submitted_ns) {
      EXPECT_LE(*k.queued_ns, *k.submitted_ns);
      EXPECT_LE(*k.submitted_ns, k.start_ns);
    }
    // The launching call: cudaLaunchKernel, which starts before the kernel.
    const ApiActivity* launch = launching_call(trace, k.correlation_id);
    ASSERT_NE(launch, nullptr) << "no API record with correlation id " << k.correlation_id;
    EXPECT_EQ(launch->name, "cudaLaunchKernel");
    EXPECT_EQ(launch->domain, ApiDomain::runtime);
    EXPECT_LE(launch->start_ns, k.start_ns);
  }
  const KernelActivity& k0 = trace.kernels[0];
  std::printf("kernel 0: %s, %d registers, device %u, stream %u, queued %s, submitted %s\n",
              k0.name.c_str(), k0.registers, k0.device_id, k0.stream_id,
              k0.queued_ns ? "recorded" : "absent", k0.submitted_ns ? "recorded" : "absent");
  for (const KernelActivity& k : trace.kernels) {
    bool direct_runtime = false;
    bool direct_driver = false;
    for (const ApiActivity& a : trace.api_calls) {
      if (a.correlation_id != k.correlation_id) continue;
      (a.domain == ApiDomain::runtime ? direct_runtime : direct_driver) = true;
    }
    std::printf("  kernel correlation %u: runtime record %s, driver record %s, %.2f us\n",
                k.correlation_id, direct_runtime ? "yes" : "no", direct_driver ? "yes" : "no",
                static_cast<double>(k.end_ns - k.start_ns) * 1e-3);
  }

  // Copies: direction, bytes, memory kinds, pinned flag, stream order.
  ASSERT_EQ(trace.memcpys.size(), 2u);
  const MemcpyActivity& h2d = trace.memcpys[0];
  EXPECT_EQ(h2d.direction, CopyDirection::h2d);
  EXPECT_EQ(h2d.bytes, 4 * kMiB);
  EXPECT_EQ(h2d.src_kind, MemoryKind::pinned);
  EXPECT_EQ(h2d.dst_kind, MemoryKind::device);
  EXPECT_TRUE(h2d.pinned);
  const MemcpyActivity& d2h = trace.memcpys[1];
  EXPECT_EQ(d2h.direction, CopyDirection::d2h);
  EXPECT_EQ(d2h.bytes, 1 * kMiB);
  EXPECT_EQ(d2h.src_kind, MemoryKind::device);
  EXPECT_EQ(d2h.dst_kind, MemoryKind::pageable);
  EXPECT_FALSE(d2h.pinned);
  for (const MemcpyActivity& m : trace.memcpys) {
    EXPECT_LT(m.start_ns, m.end_ns);
    EXPECT_LE(trace.kernels[2].end_ns, m.start_ns);
    EXPECT_EQ(m.stream_id, k0.stream_id);
    const std::uint32_t id = m.runtime_correlation_id ? m.runtime_correlation_id : m.correlation_id;
    const ApiActivity* call = launching_call(trace, id);
    ASSERT_NE(call, nullptr);
    EXPECT_EQ(call->name, "cudaMemcpyAsync");
  }
  EXPECT_LE(h2d.end_ns, d2h.start_ns);
  std::printf("H2D pinned 4 MiB: %.2f us (%.1f GB/s); D2H pageable 1 MiB: %.2f us (%.1f GB/s)\n",
              static_cast<double>(h2d.end_ns - h2d.start_ns) * 1e-3,
              static_cast<double>(h2d.bytes) / static_cast<double>(h2d.end_ns - h2d.start_ns),
              static_cast<double>(d2h.end_ns - d2h.start_ns) * 1e-3,
              static_cast<double>(d2h.bytes) / static_cast<double>(d2h.end_ns - d2h.start_ns));

  ASSERT_EQ(trace.memsets.size(), 1u);
  const MemsetActivity& memset = trace.memsets[0];
  EXPECT_EQ(memset.bytes, 2 * kMiB);
  EXPECT_EQ(memset.value, 0u);
  EXPECT_EQ(memset.memory_kind, MemoryKind::device);
  EXPECT_LT(memset.start_ns, memset.end_ns);
  EXPECT_LE(d2h.end_ns, memset.start_ns);
  const ApiActivity* memset_call = launching_call(trace, memset.correlation_id);
  ASSERT_NE(memset_call, nullptr);
  EXPECT_EQ(memset_call->name, "cudaMemsetAsync");

  // API records: the calls made, well-formed, inside the trace window.
  const std::map<std::string, int> runtime = count_api(trace, ApiDomain::runtime);
  EXPECT_EQ(runtime.count("cudaLaunchKernel") ? runtime.at("cudaLaunchKernel") : 0, 3);
  EXPECT_EQ(runtime.count("cudaMemcpyAsync") ? runtime.at("cudaMemcpyAsync") : 0, 2);
  EXPECT_EQ(runtime.count("cudaMemsetAsync") ? runtime.at("cudaMemsetAsync") : 0, 1);
  EXPECT_EQ(runtime.count("cudaStreamSynchronize") ? runtime.at("cudaStreamSynchronize") : 0, 1);
  for (const ApiActivity& a : trace.api_calls) {
    EXPECT_LE(a.start_ns, a.end_ns) << a.name;
    EXPECT_LE(trace.start_ns, a.start_ns) << a.name;
    EXPECT_LE(a.end_ns, trace.stop_ns) << a.name;
    EXPECT_NE(a.thread_id, 0u) << a.name;
    EXPECT_EQ(a.name.find("_cbid_"), std::string::npos) << "every cbid has a name";
  }
  print_api_counts(trace);
  std::printf("  synchronization records: %zu", trace.syncs.size());
  for (const SyncActivity& s : trace.syncs)
    std::printf(" [%s %.2f us]", to_string(s.type),
                static_cast<double>(s.end_ns - s.start_ns) * 1e-3);
  std::printf("\n");
  EXPECT_GE(trace.syncs.size(), 1u) << "cudaStreamSynchronize";

  // The summary of this one call.
  const TraceSummary s = summarize_calls(trace, 1);
  print_summary("known sequence", s);
  EXPECT_EQ(s.launches, 3.0);
  EXPECT_GT(s.kernel_ns, 0.0);
  EXPECT_LE(s.kernel_ns * 1e-9, wall_s);
  EXPECT_LE(s.kernel_busy_ns, s.kernel_ns);
  EXPECT_GE(s.gap_ns, 0.0);
  EXPECT_GT(s.api_ns, 0.0);
  EXPECT_LE((s.api_ns + s.sync_ns) * 1e-9, wall_s);
  ASSERT_TRUE(s.launch_latency_ns.has_value());
  EXPECT_GT(*s.launch_latency_ns, 0.0);
  EXPECT_EQ(s.h2d_bytes, 4.0 * kMiB);
  EXPECT_EQ(s.d2h_bytes, 1.0 * kMiB);
  EXPECT_GT(s.h2d_ns, 0.0);
  EXPECT_GT(s.d2h_ns, 0.0);
  EXPECT_EQ(s.memset_bytes, 2.0 * kMiB);
  const Timing timing = s.timing();
  EXPECT_EQ(timing.launches, 3);
  EXPECT_DOUBLE_EQ(*timing.kernel_time_s, s.kernel_ns * 1e-9);
  EXPECT_EQ(*timing.h2d_bytes, 4.0 * kMiB);

  const std::vector<KernelRecord> records = kernel_records(trace);
  ASSERT_EQ(records.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(records[i].name, trace.kernels[i].name);
    EXPECT_EQ(records[i].grid[0], kProbes[i].blocks);
    EXPECT_EQ(records[i].block[0], kProbes[i].threads);
    EXPECT_GT(records[i].duration_s, 0.0);
  }
  EXPECT_GT(records[2].duration_s, records[0].duration_s) << "more work, longer kernel";
}

TEST(ActivityTracerGpu, KeepsTemplateNamesSharedMemoryAndLaunchShape) {
  TR_REQUIRE_GPU();
  Stream stream;
  const dim3 grid(4, 2, 3);
  const dim3 block(32, 2, 1);
  const int n = 4 * 2 * 3 * 32 * 2;
  DeviceBuffer<float> data(static_cast<std::size_t>(n));
  TR_CUDA_CHECK(cudaMemsetAsync(data.get(), 0, data.bytes(), stream.get()));
  trace_test::launch_scale(data.get(), 2.0f, n, grid, block, 256, stream.get());  // warm-up
  stream.synchronize();
  const cudaFuncAttributes attributes = trace_test::scale_attributes();

  ActivityTracer tracer;
  tracer.start();
  trace_test::launch_scale(data.get(), 2.0f, n, grid, block, 256, stream.get());
  stream.synchronize();
  const Trace trace = tracer.stop();

  ASSERT_EQ(trace.kernels.size(), 1u);
  const KernelActivity& k = trace.kernels[0];
  std::printf("templated kernel: %s, %d registers, shared static %d B dynamic %d B\n",
              k.name.c_str(), k.registers, k.static_shared_bytes, k.dynamic_shared_bytes);
  EXPECT_NE(k.name.find("timeroof::trace_test::scale_kernel<float, 4>(float*, float, int)"),
            std::string::npos)
      << k.name;
  EXPECT_EQ(k.grid, (std::array<int, 3>{4, 2, 3}));
  EXPECT_EQ(k.block, (std::array<int, 3>{32, 2, 1}));
  EXPECT_EQ(k.static_shared_bytes, static_cast<int>(attributes.sharedSizeBytes));
  EXPECT_EQ(k.static_shared_bytes, 4 * 32 * static_cast<int>(sizeof(float)));
  EXPECT_EQ(k.dynamic_shared_bytes, 256);
  // CUPTI reports registers as allocated: the compiled count (cudaFuncGetAttributes)
  // rounded up to the allocation unit of 8 per thread (seen on H200: 12 -> 16).
  EXPECT_GE(k.registers, attributes.numRegs);
  EXPECT_LT(k.registers, attributes.numRegs + 8);
  EXPECT_EQ(k.registers % 8, 0);
  EXPECT_EQ(kernel_records(trace)[0].grid, (std::array<int, 3>{4, 2, 3}));
}

TEST(ActivityTracerGpu, SummarizesRepeatedCalls) {
  TR_REQUIRE_GPU();
  constexpr int calls = 5;
  Stream stream;
  DeviceBuffer<float> out(static_cast<std::size_t>(96) * 256);
  PinnedBuffer<char> host_in(4 * kMiB);
  PinnedBuffer<char> host_out(1 * kMiB);
  DeviceBuffer<char> device(4 * kMiB);
  launch_ffma_probe(kProbes[0], out.get(), stream.get());
  stream.synchronize();

  ActivityTracer tracer;
  tracer.start();
  std::vector<double> walls;
  for (int c = 0; c < calls; ++c) {
    const auto t0 = std::chrono::steady_clock::now();
    tracer.mark_call();
    TR_CUDA_CHECK(cudaMemcpyAsync(device.get(), host_in.get(), 4 * kMiB, cudaMemcpyHostToDevice,
                                  stream.get()));
    for (const FfmaProbe& p : kProbes) launch_ffma_probe(p, out.get(), stream.get());
    TR_CUDA_CHECK(cudaMemcpyAsync(host_out.get(), device.get(), 1 * kMiB, cudaMemcpyDeviceToHost,
                                  stream.get()));
    stream.synchronize();
    walls.push_back(seconds_since(t0));
  }
  const Trace trace = tracer.stop();
  std::sort(walls.begin(), walls.end());
  const double wall_median_s = walls[calls / 2];

  EXPECT_EQ(trace.dropped_records, 0u);
  EXPECT_EQ(trace.call_marks_ns.size(), static_cast<std::size_t>(calls));
  ASSERT_EQ(trace.kernels.size(), 3u * calls);
  ASSERT_EQ(trace.memcpys.size(), 2u * calls);
  for (const MemcpyActivity& m : trace.memcpys) EXPECT_TRUE(m.pinned);

  const TraceSummary s = summarize_calls(trace, calls);
  print_summary("5 calls of [H2D 4 MiB, 3 kernels, D2H 1 MiB]", s);
  std::printf("  wall median per call %.2f us; H2D %.1f GB/s, D2H %.1f GB/s (pinned)\n",
              wall_median_s * 1e6, s.h2d_bytes / s.h2d_ns, s.d2h_bytes / s.d2h_ns);
  EXPECT_EQ(s.launches, 3.0);
  EXPECT_GT(s.kernel_ns, 0.0);
  EXPECT_LE(s.kernel_ns * 1e-9, walls.back());
  EXPECT_LE(s.kernel_busy_ns, s.kernel_ns + 1e-9);
  EXPECT_GE(s.gap_ns, 0.0);
  EXPECT_LE(s.gap_ns * 1e-9, walls.back()) << "gaps are within a call";
  EXPECT_EQ(s.h2d_bytes, 4.0 * kMiB);
  EXPECT_EQ(s.d2h_bytes, 1.0 * kMiB);
  EXPECT_LE((s.h2d_ns + s.d2h_ns + s.kernel_ns) * 1e-9, walls.back()) << "one stream: serial";
  ASSERT_TRUE(s.launch_latency_ns.has_value());
  EXPECT_GT(*s.launch_latency_ns, 0.0);
  EXPECT_GT(s.api_ns, 0.0);
  EXPECT_GT(s.sync_ns, 0.0);
  EXPECT_LE((s.api_ns + s.sync_ns) * 1e-9, walls.back());
  EXPECT_GE(s.api_calls, 6.0) << "2 copies + 3 launches + ...";
  const Timing timing = s.timing();
  EXPECT_EQ(timing.launches, 3);
  EXPECT_DOUBLE_EQ(*timing.api_time_s, s.api_ns * 1e-9);
  EXPECT_DOUBLE_EQ(*timing.launch_gap_s, s.gap_ns * 1e-9);
  EXPECT_DOUBLE_EQ(*timing.d2h_time_s, s.d2h_ns * 1e-9);
  EXPECT_FALSE(timing.call.has_value()) << "wall time comes from the timing pass";
}

TEST(ActivityTracerGpu, LaunchBoundBurstShowsGapsAndLatency) {
  TR_REQUIRE_GPU();
  constexpr int calls = 3;
  constexpr int kernels_per_call = 20;
  const FfmaProbe tiny{1, 32, 1};
  Stream stream;
  DeviceBuffer<float> out(32);
  launch_ffma_probe(tiny, out.get(), stream.get());
  stream.synchronize();

  ActivityTracer tracer;
  tracer.start();
  for (int c = 0; c < calls; ++c) {
    tracer.mark_call();
    for (int i = 0; i < kernels_per_call; ++i) launch_ffma_probe(tiny, out.get(), stream.get());
    stream.synchronize();
  }
  const Trace trace = tracer.stop();
  const TraceSummary s = summarize_calls(trace, calls);
  print_summary("3 calls of 20 tiny kernels", s);
  std::printf("  per kernel: %.2f us on the GPU, %.2f us idle before the next\n",
              s.kernel_ns / kernels_per_call * 1e-3, s.gap_ns / (kernels_per_call - 1) * 1e-3);
  EXPECT_EQ(trace.dropped_records, 0u);
  EXPECT_EQ(s.launches, kernels_per_call);
  EXPECT_GT(s.gap_ns, 0.0) << "tiny kernels finish faster than the host launches them";
  EXPECT_GE(s.api_calls, kernels_per_call);
  // Without the call marks, the host time between calls counts as gap too: the
  // one span holds every call's gaps and more. With marks gap_ns is the median
  // call's, and at least calls / 2 + 1 calls have a gap >= the median.
  Trace unmarked = trace;
  unmarked.call_marks_ns.clear();
  EXPECT_GE(summarize_calls(unmarked, calls).gap_ns * calls, s.gap_ns * (calls / 2 + 1));
}

// Host time per asynchronous launch, averaged over `n` launches.
double launch_cost_s(const FfmaProbe& probe, float* out, cudaStream_t stream, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) launch_ffma_probe(probe, out, stream);
  const double s = seconds_since(t0) / n;
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  return s;
}

TEST(ActivityTracerGpu, StopTurnsTracingOff) {
  TR_REQUIRE_GPU();
  Stream stream;
  const FfmaProbe tiny{1, 32, 1};
  DeviceBuffer<float> out(32);
  PinnedBuffer<char> host(kMiB);
  DeviceBuffer<char> device(kMiB);
  launch_ffma_probe(tiny, out.get(), stream.get());
  stream.synchronize();
  const std::uint64_t outside_before = ActivityTracer::records_outside_tracing();

  {
    ActivityTracer a;
    a.start();
    launch_ffma_probe(tiny, out.get(), stream.get());
    stream.synchronize();
    const Trace ta = a.stop();
    EXPECT_EQ(ta.kernels.size(), 1u);
  }

  // Untraced work; a forced flush would deliver any record CUPTI still made.
  const double untraced_s = launch_cost_s(tiny, out.get(), stream.get(), 200);
  for (int i = 0; i < 5; ++i) {
    TR_CUDA_CHECK(
        cudaMemcpyAsync(device.get(), host.get(), kMiB, cudaMemcpyHostToDevice, stream.get()));
    TR_CUDA_CHECK(cudaMemsetAsync(device.get(), 0, kMiB, stream.get()));
  }
  stream.synchronize();
  TR_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  EXPECT_EQ(ActivityTracer::records_outside_tracing(), outside_before)
      << "CUPTI recorded activity after stop()";

  // A new tracer that sees no work gets no records: nothing was left pending.
  ActivityTracer b;
  b.start();
  const Trace tb = b.stop();
  EXPECT_TRUE(tb.kernels.empty());
  EXPECT_TRUE(tb.memcpys.empty());
  EXPECT_TRUE(tb.memsets.empty());
  EXPECT_TRUE(tb.api_calls.empty()) << tb.api_calls.front().name;
  EXPECT_TRUE(tb.syncs.empty());
  EXPECT_EQ(tb.dropped_records, 0u);

  // The cost tracing adds to a launch, and that it is gone after stop().
  ActivityTracer c;
  c.start();
  const double traced_s = launch_cost_s(tiny, out.get(), stream.get(), 200);
  const Trace tc = c.stop();
  EXPECT_EQ(tc.kernels.size(), 200u);
  const double after_s = launch_cost_s(tiny, out.get(), stream.get(), 200);
  std::printf("host cost per async launch: untraced %.2f us, traced %.2f us, after stop %.2f us\n",
              untraced_s * 1e6, traced_s * 1e6, after_s * 1e6);
  EXPECT_EQ(ActivityTracer::records_outside_tracing(), outside_before);
}

TEST(ActivityTracerGpu, SecondTracerIsAnError) {
  TR_REQUIRE_GPU();
  Stream stream;
  const FfmaProbe tiny{1, 32, 1};
  DeviceBuffer<float> out(32);

  ActivityTracer a;
  a.start();
  ActivityTracer b;
  try {
    b.start();
    ADD_FAILURE() << "a second tracer started while the first was tracing";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already tracing"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(b.tracing());
  EXPECT_TRUE(a.tracing());
  EXPECT_THROW(a.start(), Error);

  // The first tracer is unharmed, also after a move.
  ActivityTracer moved(std::move(a));
  EXPECT_TRUE(moved.tracing());
  launch_ffma_probe(tiny, out.get(), stream.get());
  stream.synchronize();
  const Trace t = moved.stop();
  EXPECT_EQ(t.kernels.size(), 1u);
  EXPECT_THROW(moved.stop(), Error);
  EXPECT_THROW(moved.mark_call(), Error);

  // Once it stopped, another may trace; one destroyed while tracing frees the slot.
  {
    ActivityTracer d;
    d.start();
    launch_ffma_probe(tiny, out.get(), stream.get());
  }
  b.start();
  launch_ffma_probe(tiny, out.get(), stream.get());
  stream.synchronize();
  EXPECT_EQ(b.stop().kernels.size(), 1u);
}

// The driver calls of the module tests, resolved at run time: the test links
// no libcuda, so it starts (and skips) where there is no driver.
struct ModuleDriver {
  decltype(&cuModuleLoadData) module_load = nullptr;
  decltype(&cuModuleGetFunction) module_function = nullptr;
  decltype(&cuModuleUnload) module_unload = nullptr;
  decltype(&cuLibraryLoadData) library_load = nullptr;
  decltype(&cuLibraryGetKernel) library_kernel = nullptr;
  decltype(&cuLibraryUnload) library_unload = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;
  decltype(&cuLaunchKernelEx) launch_ex = nullptr;
  decltype(&cuFuncGetName) function_name = nullptr;
  decltype(&cuKernelGetName) kernel_name = nullptr;

  ModuleDriver() {
    resolve_driver_function("cuModuleLoadData", module_load);
    resolve_driver_function("cuModuleGetFunction", module_function);
    resolve_driver_function("cuModuleUnload", module_unload);
    resolve_driver_function("cuLibraryLoadData", library_load);
    resolve_driver_function("cuLibraryGetKernel", library_kernel);
    resolve_driver_function("cuLibraryUnload", library_unload);
    resolve_driver_function("cuLaunchKernel", launch);
    resolve_driver_function("cuLaunchKernelEx", launch_ex);
    resolve_driver_function("cuFuncGetName", function_name);
    resolve_driver_function("cuKernelGetName", kernel_name);
  }
};

// A module or library loaded from PTX, unloaded with its owner (as cuDNN unloads
// a runtime-compiled kernel's module with its execution plan).
class LoadedCode {
 public:
  LoadedCode(const ModuleDriver& driver, const std::string& ptx, const std::string& entry,
             bool as_library)
      : driver_(&driver) {
    if (as_library) {
      TR_CU_CHECK(
          driver.library_load(&library_, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
      TR_CU_CHECK(driver.library_kernel(&kernel_, library_, entry.c_str()));
      TR_CU_CHECK(driver.kernel_name(&launched_name_, kernel_));
    } else {
      TR_CU_CHECK(driver.module_load(&module_, ptx.c_str()));
      CUfunction function = nullptr;
      TR_CU_CHECK(driver.module_function(&function, module_, entry.c_str()));
      kernel_ = reinterpret_cast<CUkernel>(function);
      TR_CU_CHECK(driver.function_name(&launched_name_, function));
    }
  }
  ~LoadedCode() {
    if (module_) TR_CU_WARN(driver_->module_unload(module_));
    if (library_) TR_CU_WARN(driver_->library_unload(library_));
  }
  LoadedCode(const LoadedCode&) = delete;
  LoadedCode& operator=(const LoadedCode&) = delete;

  // The launch handle: a CUfunction, or a library's CUkernel cast to one.
  CUfunction handle() const { return reinterpret_cast<CUfunction>(kernel_); }
  // What the driver names the handle before its launch: the truth a record must carry.
  std::string launched_name() const { return launched_name_ ? launched_name_ : ""; }

 private:
  const ModuleDriver* driver_;
  CUmodule module_ = nullptr;
  CUlibrary library_ = nullptr;
  CUkernel kernel_ = nullptr;
  const char* launched_name_ = nullptr;
};

// A kernel `entry`(int* out) that stores `value` to *out: which kernel ran shows
// in memory, whatever any record says.
std::string store_kernel_ptx(const std::string& entry, int value) {
  return ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry " + entry +
         "(.param .u64 out)\n{\n  .reg .b64 %rd<3>;\n  .reg .b32 %r<2>;\n"
         "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
         "  mov.u32 %r1, " +
         std::to_string(value) + ";\n  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";
}

void launch_store(const ModuleDriver& driver, CUfunction function, int** out, unsigned grid,
                  bool launch_ex, cudaStream_t stream) {
  void* args[] = {out};
  const auto cu_stream = reinterpret_cast<CUstream>(stream);
  if (!launch_ex) {
    TR_CU_CHECK(driver.launch(function, grid, 1, 1, 32, 1, 1, 0, cu_stream, args, nullptr));
    return;
  }
  CUlaunchConfig config{};
  config.gridDimX = grid;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = cu_stream;
  TR_CU_CHECK(driver.launch_ex(&config, function, args, nullptr));
}

// cuDNN's runtime-compiled kernels are unloaded with their plans; CUPTI once named
// such a kernel's record after another's (docs/design.md, "Kernel names can be
// stale"). Here each round loads a new kernel (alternately a module's CUfunction and
// a library's CUkernel, launched with cuLaunchKernel and cuLaunchKernelEx), runs
// it twice, and unloads it, so the driver may hand the next round the same
// handle: every record must carry the name the driver gave the launched handle.
// The namer's name cache serves each round's second launch, and each unload
// empties it, so each round's first launch asks the driver.
TEST(ActivityTracerGpu, NamesKernelsAtLaunchAcrossModuleReloads) {
  TR_REQUIRE_GPU();
  constexpr int kRounds = 24;
  const ModuleDriver driver;
  Stream stream;
  DeviceBuffer<int> out(kRounds);
  TR_CUDA_CHECK(cudaMemsetAsync(out.get(), 0xff, out.bytes(), stream.get()));
  {  // The first PTX compile and library load stay outside the trace.
    const LoadedCode warm(driver, store_kernel_ptx("tr_warm_kernel", 0), "tr_warm_kernel", true);
    int* slot = out.get();
    launch_store(driver, warm.handle(), &slot, 1, false, stream.get());
    stream.synchronize();
  }

  std::vector<std::string> launched(kRounds);
  std::vector<CUfunction> handles(kRounds);
  ActivityTracer tracer;
  tracer.start();
  for (int round = 0; round < kRounds; ++round) {
    const std::string entry = "tr_round_kernel_" + std::to_string(round);
    const LoadedCode code(driver, store_kernel_ptx(entry, round), entry, round % 2 == 1);
    launched[static_cast<std::size_t>(round)] = code.launched_name();
    handles[static_cast<std::size_t>(round)] = code.handle();
    int* slot = out.get() + round;
    for (int launch = 0; launch < 2; ++launch)
      launch_store(driver, code.handle(), &slot, static_cast<unsigned>(round % 5 + 1),
                   round % 4 >= 2, stream.get());
    stream.synchronize();  // the kernels ran before their code is unloaded
  }
  const Trace trace = tracer.stop();

  std::vector<int> stored(kRounds);
  TR_CUDA_CHECK(cudaMemcpy(stored.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost));
  int reused = 0;
  for (int round = 1; round < kRounds; ++round)
    reused +=
        handles[static_cast<std::size_t>(round)] == handles[static_cast<std::size_t>(round - 1)];
  std::printf(
      "module reloads: %d rounds, %d handles equal to the previous round's, %llu records named "
      "at launch, %llu CUPTI names corrected%s%s\n",
      kRounds, reused, static_cast<unsigned long long>(trace.kernels_named_at_launch),
      static_cast<unsigned long long>(trace.kernels_renamed),
      trace.launch_naming_problem.empty() ? "" : "; ", trace.launch_naming_problem.c_str());
  for (const KernelActivity& k : trace.kernels)
    if (k.cupti_name)
      std::printf("  corrected: CUPTI said %s, launched %s\n", k.cupti_name->c_str(),
                  k.name.c_str());
  print_api_counts(trace);
  print_name_cache(trace);

  constexpr std::uint64_t kLaunches = 2 * kRounds;
  EXPECT_EQ(trace.dropped_records, 0u);
  EXPECT_EQ(trace.launch_naming_problem, "");
  ASSERT_EQ(trace.kernels.size(), static_cast<std::size_t>(kLaunches));
  EXPECT_EQ(trace.kernels_named_at_launch, kLaunches);
  EXPECT_EQ(trace.launch_name_cache.queries, static_cast<std::uint64_t>(kRounds))
      << "each round's first launch asks the driver: the unload before it emptied the cache";
  EXPECT_EQ(trace.launch_name_cache.hits, static_cast<std::uint64_t>(kRounds))
      << "each round's second launch is named from the cache";
  EXPECT_GE(trace.launch_name_cache.clears, static_cast<std::uint64_t>(kRounds))
      << "every unload empties the cache";
  const std::vector<KernelRecord> records = kernel_records(trace);
  for (std::size_t i = 0; i < trace.kernels.size(); ++i) {
    const int round = static_cast<int>(i / 2);  // rounds ran one after another
    const std::size_t r = static_cast<std::size_t>(round);
    const KernelActivity& k = trace.kernels[i];
    SCOPED_TRACE("round " + std::to_string(round) + ", launch " + std::to_string(i % 2));
    EXPECT_EQ(stored[r], round) << "round " << round << "'s kernel ran";
    EXPECT_EQ(launched[r], "tr_round_kernel_" + std::to_string(round));
    EXPECT_EQ(k.name, launched[r]);
    EXPECT_EQ(records[i].name, launched[r]);
    EXPECT_TRUE(k.named_at_launch);
    EXPECT_EQ(k.grid, (std::array<int, 3>{round % 5 + 1, 1, 1}));
    if (k.cupti_name) {
      EXPECT_NE(*k.cupti_name, k.name);
    }
  }
}

// Naming a launch costs a cache lookup and a map insert (the driver is asked at
// a handle's first launch only): the host time per traced launch with it,
// against the same tracer without it.
TEST(ActivityTracerGpu, NamingAtLaunchCostsLittle) {
  TR_REQUIRE_GPU();
  Stream stream;
  const FfmaProbe tiny{1, 32, 1};
  DeviceBuffer<float> out(32);
  launch_ffma_probe(tiny, out.get(), stream.get());
  stream.synchronize();
  constexpr int kLaunches = 500;
  ActivityTracer::Options unnamed_options;
  unnamed_options.name_kernels_at_launch = false;
  std::vector<double> named_s, unnamed_s;
  Trace named_trace, unnamed_trace;
  for (int rep = 0; rep < 5; ++rep) {  // interleaved, so drift hits both alike
    ActivityTracer named;
    named.start();
    named_s.push_back(launch_cost_s(tiny, out.get(), stream.get(), kLaunches));
    named_trace = named.stop();
    ActivityTracer unnamed(unnamed_options);
    unnamed.start();
    unnamed_s.push_back(launch_cost_s(tiny, out.get(), stream.get(), kLaunches));
    unnamed_trace = unnamed.stop();
  }
  std::sort(named_s.begin(), named_s.end());
  std::sort(unnamed_s.begin(), unnamed_s.end());
  const double named_median = named_s[2];
  const double unnamed_median = unnamed_s[2];
  const TraceSummary named_summary = summarize_calls(named_trace, kLaunches);
  const TraceSummary unnamed_summary = summarize_calls(unnamed_trace, kLaunches);
  std::printf(
      "host cost per traced launch (median of 5 x %d): named at launch %.3f us, CUPTI's names "
      "%.3f us (+%.3f us); per launch API %.3f vs %.3f us, tracer API %.3f vs %.3f us\n",
      kLaunches, named_median * 1e6, unnamed_median * 1e6, (named_median - unnamed_median) * 1e6,
      named_summary.api_ns * 1e-3, unnamed_summary.api_ns * 1e-3,
      named_summary.tracer_api_ns * 1e-3, unnamed_summary.tracer_api_ns * 1e-3);
  print_api_counts(named_trace);
  print_name_cache(named_trace);
  EXPECT_EQ(named_trace.kernels_named_at_launch, static_cast<std::uint64_t>(kLaunches));
  EXPECT_EQ(named_trace.launch_name_cache.queries, 1u) << "one kernel: the driver is asked once";
  EXPECT_EQ(named_trace.launch_name_cache.hits, static_cast<std::uint64_t>(kLaunches - 1));
  EXPECT_EQ(unnamed_trace.kernels_named_at_launch, 0u);
  EXPECT_NE(unnamed_trace.launch_naming_problem.find("turned off"), std::string::npos);
  for (std::size_t i = 0; i < named_trace.kernels.size(); ++i)
    EXPECT_EQ(named_trace.kernels[i].name, unnamed_trace.kernels[i].name);
  // Generous: a launch costs a few microseconds traced; a regression to tens of
  // microseconds (a lock held across a slow call) would show here.
  EXPECT_LT(named_median - unnamed_median, 2e-6);
}

}  // namespace
}  // namespace timeroof
