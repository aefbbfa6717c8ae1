// The analysis of a profiled program (issue 17): what `timeroof profile -- CMD`
// traced, summed per kernel, copy direction and API function, the NVTX range
// tree per thread with the GPU work each range caused, and the breakdown of a
// repeated range (an iteration) into kernel, copy and GPU-idle time. Computed
// once per run from the flat trace (core/trace_events.hpp); every printer (the
// console, the report, the Perfetto export) reads this one result. Host-only.
//
// Times are nanoseconds in CUPTI's clock, as the trace has them, so totals are
// exact; printers turn them into seconds.
//
// How GPU work is tied to ranges: kernels run asynchronously, so a kernel
// belongs to the range in which its *launching API call* started (the runtime or
// driver call with the kernel's correlation id, on the range's thread), not to
// the range its GPU time overlaps. A kernel or copy with correlation id 0, or
// with no such call in the trace, is counted as unattributed.
//
// How ranges nest: on one (process, thread), a range inside another's span is
// its child (push/pop ranges always nest). A start/end range that overlaps
// another without being inside it cannot nest: it stays a sibling of the one it
// overlaps and is flagged `nested == false`. A range never closed (end before
// start, e.g. 0, or past the last record of the trace) ends at the trace's end
// and is flagged `closed == false`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/trace_events.hpp"

namespace timeroof::roofline {

// Per-kernel counters from the range profiler (FLOPs, bytes per memory level).
// Left empty until that step fills them from measured counters; never guessed.
// The roofline bounds of kernels and ranges come once these exist.
struct KernelCounters {
  std::optional<double> flops;
  std::optional<double> l1_bytes;
  std::optional<double> l2_bytes;
  std::optional<double> dram_bytes;
};

// One kernel name over the trace.
struct KernelSummary {
  std::string name;
  std::uint64_t calls = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t median_ns = 0;  // of the calls' durations (lower middle for an even count)
  std::uint64_t min_ns = 0;
  std::uint64_t max_ns = 0;
  double share_of_busy = 0;  // total_ns / ProfileAnalysis::gpu_busy_ns
  std::optional<KernelCounters> counters;
};

// One copy direction ("HtoD", "DtoH", ...; memsets as "memset").
struct CopySummary {
  std::string direction;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::uint64_t total_ns = 0;
  std::optional<double> bytes_per_s;  // achieved: bytes / total time; none where time is 0
};

// One runtime or driver API function (or synchronization) over all threads.
struct ApiSummary {
  TraceKind kind = TraceKind::runtime_api;
  std::string name;
  std::uint64_t count = 0;
  std::uint64_t total_ns = 0;  // host time summed over the calls
};

// The GPU work a range caused and the host time it spent.
struct RangeWork {
  std::uint64_t kernels = 0;    // kernel launches attributed to the range
  std::uint64_t copies = 0;     // memcpy and memset calls attributed
  std::uint64_t kernel_ns = 0;  // their GPU time, summed
  std::uint64_t copy_ns = 0;
  std::uint64_t api_ns = 0;  // API time on the range's thread inside its span (union)
  // Time within the span with none of its process's GPU work running on any device.
  std::uint64_t gpu_idle_ns = 0;
};

// A node of the range tree: the instances of one path ("step/forward/layer0")
// among their siblings, aggregated.
struct RangeNode {
  std::string name;
  std::string path;    // names from the top-level range, joined by '/'
  std::string domain;  // details.domain, empty for the default domain
  std::uint64_t calls = 0;
  std::uint64_t wall_ns = 0;  // summed over the calls
  // wall_ns / the wall time of its top-level ancestor's node (1 for a top-level node)
  double share_of_top = 0;
  RangeWork work;
  std::uint64_t not_nested = 0;            // calls that overlapped a sibling (start/end ranges)
  std::uint64_t unclosed = 0;              // calls never closed, ended at the trace's end
  std::optional<KernelCounters> counters;  // summed over its kernels, once measured
  std::vector<RangeNode> children;         // by first start
};

struct ThreadRanges {
  std::uint32_t process_id = 0;
  std::uint32_t thread_id = 0;
  std::vector<RangeNode> roots;  // by first start
};

// One NVTX range as it was recorded, placed on its thread: the tree before
// aggregation (the Perfetto export draws these).
struct RangeInstance {
  std::size_t event = 0;              // index into the trace
  std::optional<std::size_t> parent;  // index into the instances
  std::size_t depth = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;  // the trace's end where never closed
  bool nested = true;
  bool closed = true;
};

// Per record of `events`, for a kernel, copy or memset: the index of the API
// call that launched it (same correlation id; the runtime call where the driver
// call it made has the id too); none for other records and unattributed work.
std::vector<std::optional<std::size_t>> launching_calls(const std::vector<TraceEvent>& events);

// Every NVTX range of `events`, in order of (process, thread, start).
std::vector<RangeInstance> range_instances(const std::vector<TraceEvent>& events);

// One instance of the iteration range: its wall time split so that
// kernel_ns + copy_ns + idle_ns == wall_ns.
struct Iteration {
  std::uint64_t start_ns = 0;
  std::uint64_t wall_ns = 0;
  std::uint64_t kernel_ns = 0;  // some kernel of its process runs
  std::uint64_t copy_ns = 0;    // a copy runs and no kernel does
  std::uint64_t idle_ns = 0;    // no GPU work of its process runs: host-only time
};

// A quantity over the iterations.
struct IterationSpread {
  std::uint64_t median_ns = 0;  // lower middle for an even count
  std::uint64_t min_ns = 0;
  std::uint64_t max_ns = 0;
};

struct IterationBreakdown {
  std::string range;                  // the top-level range name
  std::vector<Iteration> iterations;  // by start
  IterationSpread wall, kernel, copy, idle;
};

struct ProfileOptions {
  // The top-level range whose instances are the iterations; empty: the most
  // repeated top-level range name (ties: the longer total wall time, then the name).
  std::string iteration_range;
};

struct ProfileAnalysis {
  std::size_t records = 0;
  std::uint64_t origin_ns = 0;  // the first record's start
  std::uint64_t end_ns = 0;     // the last end of a record (unclosed ranges aside)
  std::uint64_t span_ns() const { return end_ns - origin_ns; }
  // Union of all GPU records' intervals per device, summed over devices.
  std::uint64_t gpu_busy_ns = 0;
  std::uint64_t kernel_ns = 0;         // kernel durations, summed
  std::uint64_t copy_ns = 0;           // memcpy and memset durations, summed
  std::vector<KernelSummary> kernels;  // most total time first
  std::vector<CopySummary> copies;     // most total time first
  std::vector<ApiSummary> api;         // most total time first
  std::vector<ThreadRanges> threads;   // by (process, thread)
  // GPU work with no launching API call in the trace (correlation 0 or unmatched).
  RangeWork unattributed;
  std::optional<IterationBreakdown> iterations;  // none without a top-level range
};

ProfileAnalysis analyze_profile(const std::vector<TraceEvent>& events,
                                const ProfileOptions& options = {});

}  // namespace timeroof::roofline
