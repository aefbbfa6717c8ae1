// CUPTI Activity API tracer: kernel, memcpy, memset, synchronization and CUDA
// runtime / driver API records with timestamps, and the per-operator timing
// derived from them (launches, kernel time, API time, launch latency, GPU gaps,
// host transfers).
//
// Usage:
//   ActivityTracer tracer;
//   tracer.start();
//   for (int i = 0; i < calls; ++i) { tracer.mark_call(); op(); }
//   const Trace trace = tracer.stop();          // tracing is fully off again
//   const TraceSummary per_call = summarize_calls(trace, calls);
//   point.timing = per_call.timing();           // plus the timing pass's wall time
//
// CUPTI's activity buffers are process-wide, so only one ActivityTracer may trace
// at a time in a process: start() while another tracer is tracing throws
// timeroof::Error. Tracing adds overhead to every launch and API call, so stop()
// disables every activity kind start() enabled; a timing pass run after stop()
// runs untraced.
//
// Timestamps are nanoseconds in the cuptiGetTimestamp domain (the same clock for
// host API records and GPU records). A record CUPTI could not time (start and end
// both 0, e.g. for lack of device memory) is kept, counted in
// Trace::untimed_records and left out of every time in the summary.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api_tracing.hpp"
#include "core/results.hpp"
#include "counters/launch_names.hpp"

namespace timeroof {

// Where a memory operation's source or destination lives (CUpti_ActivityMemoryKind).
enum class MemoryKind {
  unknown,
  pageable,  // host, pageable
  pinned,    // host, page-locked
  device,
  array,
  managed,
  device_static,
  managed_static,
};

enum class CopyDirection { h2d, d2h, d2d, other };

enum class SyncType {
  unknown,
  event_synchronize,
  stream_wait_event,
  stream_synchronize,
  context_synchronize
};

// One struct per CUPTI record kind, each its record's fields by name: they share
// timestamps and ids by design (CUPTI's records do), not by copying.

// One kernel execution (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).
struct KernelActivity {
  std::string name;  // demangled, templates intact; the raw name if it does not demangle
  // `name` is the launched function's, read at its launch (launch_names.hpp); false
  // where no launch callback named it (graph launches, launch naming off): CUPTI's.
  bool named_at_launch = false;
  // CUPTI's own name for the record (demangled) where it differed from the
  // launch's: a stale name the launch's corrected.
  std::optional<std::string> cupti_name;
  std::array<int, 3> grid{1, 1, 1};
  std::array<int, 3> block{1, 1, 1};
  // Registers per thread as allocated (CUPTI's registersPerThread): the compiled
  // count rounded up to the allocation unit (H200: 12 compiled -> 16).
  int registers = 0;
  int static_shared_bytes = 0;
  int dynamic_shared_bytes = 0;
  // When the launch entered the command buffer and when that buffer was handed to
  // the GPU; CUPTI collects them only with latency timestamps on
  // (Trace::latency_timestamps), else std::nullopt.
  std::optional<std::uint64_t> queued_ns;
  std::optional<std::uint64_t> submitted_ns;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;  // equals that of the API call that launched it
  std::uint32_t stream_id = 0;
  std::uint32_t device_id = 0;
};

// One memory copy (CUPTI_ACTIVITY_KIND_MEMCPY).
struct MemcpyActivity {
  CopyDirection direction = CopyDirection::other;
  MemoryKind src_kind = MemoryKind::unknown;
  MemoryKind dst_kind = MemoryKind::unknown;
  // The host side is page-locked: source of an H2D copy, destination of a D2H
  // copy; false for every other direction.
  bool pinned = false;
  std::uint64_t bytes = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;          // of the driver API call (CUPTI's definition)
  std::uint32_t runtime_correlation_id = 0;  // of the runtime API call; 0 if there was none
  std::uint32_t stream_id = 0;
  std::uint32_t device_id = 0;
  std::uint32_t cupti_copy_kind = 0;  // CUpti_ActivityMemcpyKind, for copy_kind_name
};

// One memset executed on the GPU (CUPTI_ACTIVITY_KIND_MEMSET).
struct MemsetActivity {
  MemoryKind memory_kind = MemoryKind::unknown;
  std::uint32_t value = 0;
  std::uint64_t bytes = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t stream_id = 0;
  std::uint32_t device_id = 0;
};

// One CUDA runtime or driver API call (CUPTI_ACTIVITY_KIND_RUNTIME / DRIVER).
struct ApiActivity {
  // cuptiGetCallbackName; runtime names without their version suffix
  // ("cudaLaunchKernel", not "cudaLaunchKernel_v7000"), driver names as exported
  // ("cuMemcpyHtoD_v2"); per-thread-stream variants keep "_ptsz" / "_ptds".
  std::string name;
  ApiDomain domain = ApiDomain::runtime;
  std::uint32_t cbid = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t thread_id = 0;
  std::uint32_t return_value = 0;  // cudaError_t or CUresult
  std::uint32_t process_id = 0;
};

// One host synchronization (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION): how long the
// host waited in cu*Synchronize / cuStreamWaitEvent.
struct SyncActivity {
  SyncType type = SyncType::unknown;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t stream_id = 0;  // CUPTI_SYNCHRONIZATION_INVALID_VALUE where not applicable
};

// Everything CUPTI delivered between start() and stop(). Each vector is sorted by
// start time.
struct Trace {
  std::uint64_t start_ns = 0;  // cuptiGetTimestamp at start() and at stop()
  std::uint64_t stop_ns = 0;
  std::vector<KernelActivity> kernels;
  std::vector<MemcpyActivity> memcpys;
  std::vector<MemsetActivity> memsets;
  std::vector<ApiActivity> api_calls;
  std::vector<SyncActivity> syncs;
  // ActivityTracer::mark_call() timestamps: the host start of each operator call.
  std::vector<std::uint64_t> call_marks_ns;
  // Records CUPTI could not store for lack of buffer space
  // (cuptiActivityGetNumDroppedRecords). Non-zero means every count and sum in
  // this trace is too low.
  std::uint64_t dropped_records = 0;
  std::uint64_t untimed_records = 0;  // kept, but with start = end = 0
  std::uint64_t other_records = 0;    // of kinds this tracer does not decode
  // Kernel names (launch_names.hpp): records named at their launch, and of those
  // the ones whose CUPTI name differed (KernelActivity::cupti_name). Empty
  // launch_naming_problem: kernels were named at launch; else why not (e.g.
  // another CUPTI subscriber in the process) and every record keeps CUPTI's name.
  std::uint64_t kernels_named_at_launch = 0;
  std::uint64_t kernels_renamed = 0;
  std::string launch_naming_problem;
  // How the traced launches were named: from the name cache, by asking the
  // driver, and how often unloads emptied the cache (launch_names.hpp).
  NameCacheCounts launch_name_cache;
  bool latency_timestamps = false;  // queued_ns / submitted_ns were requested from CUPTI
};

class ActivityTracer {
 public:
  struct Options {
    std::size_t buffer_bytes = std::size_t{8} << 20;  // per CUPTI activity buffer
    // Ask CUPTI for queued/submitted kernel timestamps (cuptiActivityEnableLatencyTimestamps,
    // set once per process and left on; it costs nothing while kernels are not traced).
    bool latency_timestamps = true;
    bool synchronization = true;  // CUPTI_ACTIVITY_KIND_SYNCHRONIZATION records
    // Name each kernel record at its launch (launch_names.hpp); off, every record
    // keeps CUPTI's name (Trace::launch_naming_problem says so).
    bool name_kernels_at_launch = true;
  };

  ActivityTracer();
  explicit ActivityTracer(const Options& options);
  // A tracer destroyed while tracing stops tracing and discards its records.
  ~ActivityTracer();
  ActivityTracer(const ActivityTracer&) = delete;
  ActivityTracer& operator=(const ActivityTracer&) = delete;
  ActivityTracer(ActivityTracer&& other) noexcept;
  ActivityTracer& operator=(ActivityTracer&& other) noexcept;

  // Enables kernel (concurrent), memcpy, memset, synchronization, runtime and
  // driver API records, and subscribes to the kernel launches to name them
  // (CUPTI's one callback subscriber of the process, until stop()). Throws timeroof::Error if any
  // tracer in this process is already tracing, GpuError if CUPTI refuses (e.g. another CUPTI client
  // such as Nsight Systems holds the activity API); on failure nothing stays enabled.
  void start();
  // Marks the host start of one operator call (see summarize_calls).
  void mark_call();
  // Turns API records off, waits for the current device's work (so every kernel
  // launched since start() has finished and is recorded), flushes CUPTI's buffers
  // (cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)), disables every kind
  // start() enabled and returns all records since start().
  Trace stop();
  bool tracing() const noexcept;

  // Records CUPTI delivered while no tracer was tracing, over the process
  // lifetime. Stays 0 when stop() really turns tracing off.
  static std::uint64_t records_outside_tracing() noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Per operator call, from a trace of `calls` calls of the operator.
//
// How a figure becomes "per call": each record is attributed to one call by
// Trace::call_marks_ns. An API call belongs to the call whose mark precedes its
// start; device work (kernel, copy, memset) to the call whose mark precedes the
// start of the top-level API call that issued it (the one containing the call
// with its correlation id; its own start where no API record has that id), so a
// kernel still running after the next mark stays in its own call. Anything
// before the first mark belongs to the first call.
//  - With marks (one per call), the times kernel_ns, kernel_busy_ns, api_ns,
//    sync_ns, tracer_api_ns, gap_ns, h2d_ns, d2h_ns, other_copy_ns and memset_ns
//    are computed for each call and reported as the MEDIAN over the calls (the
//    mean of the middle two for an even count), so one slow call does not move
//    them. The counts launches and api_calls and the byte counts h2d_bytes,
//    d2h_bytes, other_copy_bytes and memset_bytes stay the trace's sum divided
//    by `calls` (the mean: exact when every call does the same work).
//    launch_latency_ns is the median over all kernels of the trace, not per
//    call. Medians of different fields come from different calls and need not
//    add up (kernel_ns + h2d_ns + d2h_ns may exceed the median call's sum).
//    kernel_ns_per_call keeps each call's kernel_ns in call order, so T_k can be
//    given with the interval the calls span.
//  - Without marks, every figure is the trace's sum divided by `calls`, and the
//    whole trace is one span for gap_ns (see there); kernel_ns_per_call is empty.
// Definitions (per call):
//  - launches: kernel records.
//  - kernel_ns: the sum of (end - start) over kernels; concurrent kernels each
//    count in full (docs/design.md's T_k). kernel_busy_ns: the length of the union of
//    the call's kernel intervals per device, summed over devices (<= kernel_ns).
//  - api_ns: host time in top-level CUDA API calls, per thread, summed over
//    threads. A call is top-level if no other API call of the same thread
//    encloses it, so a driver call nested in a runtime call (cudaLaunchKernel ->
//    cuLaunchKernel) is not counted twice; partial overlaps count their union
//    (in the call of the enclosing top-level call).
//    Top-level synchronization calls (cuda/cu Device, Context, Stream, Event
//    Synchronize) are left out of api_ns and summed in sync_ns: their time is
//    the host waiting for the GPU, not launch overhead. A synchronous cudaMemcpy
//    is an API call and counts in api_ns in full. Top-level driver calls that
//    CUPTI itself makes to name kernel records (cuKernelGetName, cuFuncGetName;
//    on H200 one per traced launch, outside the runtime call) are tracing
//    overhead an untraced run does not have: summed in tracer_api_ns, not in
//    api_ns. So are those calls nested in another (the launch namer's, inside
//    each launch: launch_names.hpp): their time leaves the enclosing call's.
//    api_calls: the top-level calls counted in api_ns.
//  - launch_latency_ns: median over kernels of (kernel start - start of the
//    top-level API call that launched it: the call with the kernel's correlation
//    id, or the call enclosing it on its thread, so a cuLaunchKernel nested in
//    cudaLaunchKernel measures from cudaLaunchKernel); std::nullopt when no
//    kernel has a correlated API record. It includes the launch call's own host
//    time and any queueing behind earlier work on the stream.
//    launch_latency_max_ns: the largest over the trace.
//  - gap_ns: idle device time between kernels: per device, the span from the
//    call's first kernel start to its last kernel end minus the union of all
//    device activity (kernels, memcpys, memsets, of any call) inside that span;
//    summed over devices. A copy between two kernels is busy time, not a gap (it
//    is counted in the transfer figures). Without marks the whole trace is one
//    span, so host time between calls (e.g. a synchronize) shows up as gap.
//  - h2d_bytes / h2d_ns, d2h_bytes / d2h_ns: summed bytes and (end - start) of
//    host-to-device and device-to-host copies; d2d and other copies are in
//    other_copy_bytes / other_copy_ns, memsets in memset_bytes / memset_ns.
// Throws timeroof::Error if calls < 1, or if the trace has call marks but not
// exactly `calls` of them.
struct TraceSummary {
  int calls = 1;
  double launches = 0;
  double kernel_ns = 0;
  double kernel_busy_ns = 0;
  std::vector<double> kernel_ns_per_call;  // with marks only
  double api_ns = 0;
  double api_calls = 0;
  double sync_ns = 0;
  double tracer_api_ns = 0;
  std::optional<double> launch_latency_ns;
  std::optional<double> launch_latency_max_ns;
  double gap_ns = 0;
  double h2d_bytes = 0;
  double h2d_ns = 0;
  double d2h_bytes = 0;
  double d2h_ns = 0;
  double other_copy_bytes = 0;
  double other_copy_ns = 0;
  double memset_bytes = 0;
  double memset_ns = 0;
  std::uint64_t dropped_records = 0;  // of the whole trace, not per call

  // The core Timing fields a trace measures (seconds, per call): kernel_time_s,
  // launches (rounded), api_time_s (= api_ns), launch_gap_s, h2d/d2h bytes and
  // times. Wall time, spread and repeats come from the timing pass and stay empty.
  Timing timing() const;
};

TraceSummary summarize_calls(const Trace& trace, int calls);

// Driver calls made by tracing itself to name kernels (cuKernelGetName,
// cuFuncGetName): CUPTI's for its records, the launch namer's at each launch.
// An untraced run does not make them.
bool is_tracer_api(const ApiActivity& a);

// One KernelRecord per kernel of the trace, in start order: name, grid, block,
// duration (end - start) in seconds; metrics empty.
std::vector<KernelRecord> kernel_records(const Trace& trace);

// The kernels of one call of a trace of `calls` calls, each with the median
// duration over the calls: the calls' kernels are attributed as in
// summarize_calls and taken in LAUNCH order within each call (by correlation
// id; kernels of one API call in start order), not start order: the range
// profiler's auto ranges come in launch order and are matched to these records
// by position, and a kernel a library puts on a side stream can start before
// one launched earlier (cuDNN LSTM, issue #20). Nothing downstream needs start
// order (gaps are computed from the trace itself). When every call has
// the same number of kernels and the kernel at each position has the same name,
// grid and block in every call, returns one KernelRecord per position with that
// name, grid and block and as duration the median over the calls of that
// position's (end - start) (untimed records left out; 0 if none is timed).
// Otherwise (calls differ in kernel count or order, or the trace has no marks)
// returns the first kernels.size() / calls of the trace's kernels in launch
// order: the first call's kernels with their own durations, as when the trace
// was cut at the launches per call. Throws timeroof::Error as summarize_calls does.
std::vector<KernelRecord> median_call_kernels(const Trace& trace, int calls);

// A C++ symbol demangled with abi::__cxa_demangle ("_Z4fillIfLi4EEvPT_S0_" ->
// "void fill<float, 4>(float*, float)"); the input unchanged if it does not demangle.
std::string demangle(const char* symbol);

const char* to_string(MemoryKind kind);
const char* to_string(CopyDirection direction);
const char* to_string(SyncType type);

}  // namespace timeroof
