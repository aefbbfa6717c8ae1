#include "counters/activity_tracer.hpp"

#include <cuda_runtime_api.h>
#include <cupti_activity.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <variant>

#include "core/error.hpp"
#include "core/intervals.hpp"
#include "counters/activity_records.hpp"
#include "counters/launch_namer.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cupti.hpp"

namespace timeroof {

// ---------------------------------------------------------------------------
// Collection: CUPTI's buffer callbacks are process-wide C functions, so the
// tracer that is tracing is reached through one global pointer.

namespace {

// Records of one tracing session, filled by the buffer-completed callback.
struct Collector {
  Trace trace;
  ActivityDecoder decoder;
};

std::mutex g_mutex;             // guards g_active and the active collector
Collector* g_active = nullptr;  // the collector of the tracer that is tracing
bool g_callbacks_registered = false;
bool g_latency_timestamps = false;
std::atomic<std::size_t> g_buffer_bytes{std::size_t{8} << 20};
std::atomic<std::uint64_t> g_records_outside{0};

constexpr std::size_t kRecordAlignment = 8;

bool untimed(std::uint64_t start, std::uint64_t end) {
  return start == 0 && end == 0;
}

// Files each decoded record into the trace's vector of its kind.
void decode(const CUpti_Activity* record, Collector& c) {
  Trace& t = c.trace;
  auto count_untimed = [&t](const auto& r) {
    if (untimed(r.start_ns, r.end_ns)) ++t.untimed_records;
  };
  DecodedActivity decoded = c.decoder.decode(record);
  if (auto* k = std::get_if<KernelActivity>(&decoded)) {
    count_untimed(*k);
    if (k->named_at_launch) ++t.kernels_named_at_launch;
    if (k->cupti_name) ++t.kernels_renamed;
    t.kernels.push_back(std::move(*k));
  } else if (auto* m = std::get_if<MemcpyActivity>(&decoded)) {
    count_untimed(*m);
    t.memcpys.push_back(*m);
  } else if (auto* ms = std::get_if<MemsetActivity>(&decoded)) {
    count_untimed(*ms);
    t.memsets.push_back(*ms);
  } else if (auto* a = std::get_if<ApiActivity>(&decoded)) {
    count_untimed(*a);
    t.api_calls.push_back(std::move(*a));
  } else if (auto* y = std::get_if<SyncActivity>(&decoded)) {
    count_untimed(*y);
    t.syncs.push_back(*y);
  } else {
    ++t.other_records;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  const std::size_t bytes = g_buffer_bytes.load();
  // Declining (nullptr) makes CUPTI drop records, which it counts: never silent.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, bytes));
  *size = *buffer ? bytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                               size_t /*size*/, size_t valid_size) {
  std::size_t dropped = 0;
  const CUptiResult dropped_status =
      cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    CUpti_Activity* record = nullptr;
    while (buffer != nullptr &&
           cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      if (g_active) {
        decode(record, *g_active);
      } else {
        g_records_outside.fetch_add(1);
      }
    }
    if (dropped_status == CUPTI_SUCCESS && dropped > 0) {
      if (g_active) {
        g_active->trace.dropped_records += dropped;
      } else {
        g_records_outside.fetch_add(dropped);
      }
    }
  }
  std::free(buffer);
}

std::uint64_t timestamp_now() {
  std::uint64_t ns = 0;
  TR_CUPTI_CHECK(cuptiGetTimestamp(&ns));
  return ns;
}

template <typename T>
void sort_by_start(std::vector<T>& records) {
  std::stable_sort(records.begin(), records.end(), [](const T& a, const T& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  });
}

}  // namespace

// ---------------------------------------------------------------------------
// ActivityTracer

struct ActivityTracer::State {
  Options options;
  Collector collector;
  bool tracing = false;
  std::vector<CUpti_ActivityKind> enabled;  // in the order they were enabled
  // Kernel names read at each launch (launch_namer.hpp), while tracing.
  LaunchNames launch_names;
  LaunchNamer namer{launch_names};
  std::optional<CuptiSubscriber> subscriber;

  // Subscribes the namer to the launches; where CUPTI refuses (another
  // subscriber), tracing goes on with CUPTI's names and the trace says why.
  void name_launches();

  // Turns everything off and hands back the records; runs every step even after
  // a failure, then rethrows the first failure (quiet: prints it to stderr).
  Trace finish(bool quiet);
};

namespace {

// Runs one step of a shutdown, keeping the first failure for later.
template <typename Step>
void keep_going(std::exception_ptr& first, Step&& step) {
  try {
    step();
  } catch (...) {
    if (!first) first = std::current_exception();
  }
}

bool is_api_kind(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_RUNTIME || kind == CUPTI_ACTIVITY_KIND_DRIVER ||
         kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
}

}  // namespace

namespace {

// The tracer's callback subscriber: every callback it enabled is the namer's
// (launches, and the unloads that empty its name cache).
void CUPTIAPI on_launch_callback(void* namer, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    static_cast<LaunchNamer*>(namer)->on_driver_callback(
        cbid, *static_cast<const CUpti_CallbackData*>(data));
  else if (domain == CUPTI_CB_DOMAIN_RESOURCE)
    static_cast<LaunchNamer*>(namer)->on_resource_callback(cbid);
}

}  // namespace

void ActivityTracer::State::name_launches() {
  if (!options.name_kernels_at_launch) {
    collector.trace.launch_naming_problem =
        "kernel records keep CUPTI's names: naming at launch was turned off";
    return;
  }
  try {
    subscriber.emplace(&on_launch_callback, &namer);
    namer.enable_on(*subscriber);
  } catch (const std::exception& e) {
    subscriber.reset();
    collector.trace.launch_naming_problem =
        std::string("kernel records keep CUPTI's names (not read at launch): ") + e.what();
  }
}

Trace ActivityTracer::State::finish(bool quiet) {
  std::exception_ptr first;
  // 1. Host-side records off first, so our own synchronize is not recorded; no
  //    more launches to name.
  for (CUpti_ActivityKind kind : enabled)
    if (is_api_kind(kind)) keep_going(first, [&] { TR_CUPTI_CHECK(cuptiActivityDisable(kind)); });
  const NameCacheCounts name_cache = subscriber ? namer.cache_counts() : NameCacheCounts{};
  keep_going(first, [&] { subscriber.reset(); });
  // 2. Every kernel, copy and memset launched since start() completes and is timed.
  keep_going(first, [] { TR_CUDA_CHECK(cudaDeviceSynchronize()); });
  // 3. Deliver every buffer, 4. turn the device-side kinds off, 5. deliver stragglers.
  keep_going(first,
             [] { TR_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)); });
  for (CUpti_ActivityKind kind : enabled)
    if (!is_api_kind(kind)) keep_going(first, [&] { TR_CUPTI_CHECK(cuptiActivityDisable(kind)); });
  enabled.clear();
  keep_going(first,
             [] { TR_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)); });
  std::size_t dropped = 0;
  keep_going(first,
             [&] { TR_CUPTI_CHECK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped)); });
  std::uint64_t stop_ns = 0;
  keep_going(first, [&] { stop_ns = timestamp_now(); });

  Trace trace;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    trace = std::move(collector.trace);
    collector.trace = Trace{};
    collector.decoder.name_kernels_from(nullptr);
    if (g_active == &collector) g_active = nullptr;
  }
  launch_names.clear();  // launches whose kernel record never came
  tracing = false;
  trace.dropped_records += dropped;
  trace.launch_name_cache = name_cache;
  trace.stop_ns = stop_ns;
  sort_by_start(trace.kernels);
  sort_by_start(trace.memcpys);
  sort_by_start(trace.memsets);
  sort_by_start(trace.api_calls);
  sort_by_start(trace.syncs);
  if (first) {
    if (!quiet) std::rethrow_exception(first);
    try {
      std::rethrow_exception(first);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "timeroof: activity tracer stopped with an error: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "timeroof: activity tracer stopped with an unknown error\n");
    }
  }
  return trace;
}

ActivityTracer::ActivityTracer() : ActivityTracer(Options{}) {}

ActivityTracer::ActivityTracer(const Options& options) : state_(std::make_unique<State>()) {
  state_->options = options;
}

ActivityTracer::~ActivityTracer() {
  if (state_ && state_->tracing) {
    try {
      state_->finish(/*quiet=*/true);
    } catch (...) {
      // finish(quiet) does not throw; nothing may escape a destructor.
    }
  }
}

ActivityTracer::ActivityTracer(ActivityTracer&& other) noexcept = default;

ActivityTracer& ActivityTracer::operator=(ActivityTracer&& other) noexcept {
  if (this != &other) {
    if (state_ && state_->tracing) {
      try {
        state_->finish(/*quiet=*/true);
      } catch (...) {
      }
    }
    state_ = std::move(other.state_);
  }
  return *this;
}

bool ActivityTracer::tracing() const noexcept {
  return state_ && state_->tracing;
}

std::uint64_t ActivityTracer::records_outside_tracing() noexcept {
  return g_records_outside.load();
}

void ActivityTracer::start() {
  if (!state_)
    throw Error(ExitCode::environment, "activity tracer: start() on a moved-from tracer");
  if (state_->tracing)
    throw Error(ExitCode::environment, "activity tracer: start() while already tracing");
  if (state_->options.buffer_bytes < 1024 || state_->options.buffer_bytes % kRecordAlignment)
    throw Error(ExitCode::usage, "activity tracer: buffer_bytes must be a multiple of 8, >= 1 KiB");
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_active != nullptr)
      throw Error(ExitCode::environment,
                  "activity tracer: another ActivityTracer is already tracing in this process; "
                  "CUPTI activity buffers are process-wide, so stop() that one first");
    if (!g_callbacks_registered) {
      TR_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
      g_callbacks_registered = true;
    }
    if (state_->options.latency_timestamps && !g_latency_timestamps) {
      // CUPTI wants this before CUDA initialises; where it refuses, queued and
      // submitted timestamps are simply absent (std::nullopt), not an error.
      g_latency_timestamps = cuptiActivityEnableLatencyTimestamps(1) == CUPTI_SUCCESS;
    }
    g_buffer_bytes.store(state_->options.buffer_bytes);
    state_->collector.trace = Trace{};
    state_->collector.trace.latency_timestamps = g_latency_timestamps;
    state_->collector.decoder.name_kernels_from(&state_->launch_names);
    g_active = &state_->collector;
  }
  state_->tracing = true;
  try {
    state_->name_launches();  // before any kind is on: every traced launch is named
    state_->collector.trace.start_ns = timestamp_now();
    std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                             CUPTI_ACTIVITY_KIND_MEMCPY,
                                             CUPTI_ACTIVITY_KIND_MEMSET};
    if (state_->options.synchronization) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
    kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
    for (CUpti_ActivityKind kind : kinds) {
      TR_CUPTI_CHECK(cuptiActivityEnable(kind));
      state_->enabled.push_back(kind);
    }
  } catch (...) {
    state_->finish(/*quiet=*/true);
    throw;
  }
}

void ActivityTracer::mark_call() {
  if (!tracing())
    throw Error(ExitCode::environment, "activity tracer: mark_call() while not tracing");
  const std::uint64_t now = timestamp_now();
  std::lock_guard<std::mutex> lock(g_mutex);
  state_->collector.trace.call_marks_ns.push_back(now);
}

Trace ActivityTracer::stop() {
  if (!tracing()) throw Error(ExitCode::environment, "activity tracer: stop() while not tracing");
  return state_->finish(/*quiet=*/false);
}

// ---------------------------------------------------------------------------
// Summary

// Seen on H200 (CUDA 13): CUPTI's as one top-level cuKernelGetName per traced
// launch, enclosed by no runtime call.
bool is_tracer_api(const ApiActivity& a) {
  return a.domain == ApiDomain::driver &&
         (a.name == "cuKernelGetName" || a.name == "cuFuncGetName");
}

namespace {

using Interval = NsInterval;

std::uint64_t duration(std::uint64_t start, std::uint64_t end) {
  return end > start ? end - start : 0;
}

// The API name without a per-thread-stream suffix.
std::string base_api_name(std::string name) {
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    const std::size_t n = std::char_traits<char>::length(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0)
      name.resize(name.size() - n);
  }
  return name;
}

bool is_synchronization_api(const std::string& name) {
  static const char* const names[] = {"cudaDeviceSynchronize", "cudaStreamSynchronize",
                                      "cudaEventSynchronize",  "cudaThreadSynchronize",
                                      "cuCtxSynchronize",      "cuStreamSynchronize",
                                      "cuEventSynchronize",    "cuCtxSynchronize_v2"};
  const std::string base = base_api_name(name);
  for (const char* n : names)
    if (base == n) return true;
  return false;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void check_calls(const Trace& trace, int calls, const char* function) {
  if (calls < 1)
    throw Error(ExitCode::usage,
                std::string(function) + ": calls must be >= 1, got " + std::to_string(calls));
  if (!trace.call_marks_ns.empty() && trace.call_marks_ns.size() != static_cast<std::size_t>(calls))
    throw Error(ExitCode::usage, std::string(function) + ": the trace has " +
                                     std::to_string(trace.call_marks_ns.size()) +
                                     " call marks but calls = " + std::to_string(calls));
}

// Where a top-level API call's time goes (see TraceSummary).
enum class ApiBucket { api, sync, tracer };

struct TopLevelCall {
  std::uint64_t start_ns = 0;
  double ns = 0;  // its own duration plus what calls nested in it run past its end
  ApiBucket bucket = ApiBucket::api;
  // Tracer calls nested in it (the launch namer's name queries inside a launch):
  // part of `ns`, but tracing overhead, so counted in tracer_api_ns instead.
  double nested_tracer_ns = 0;
};

struct ApiTimeline {
  std::vector<TopLevelCall> top_level;  // per thread in start order, threads one after another
  // Correlation id -> start of the top-level call that contains the call with that id.
  std::unordered_map<std::uint32_t, std::uint64_t> launch_start;
};

// The top-level API calls of each thread: a call is top-level if no earlier call
// of the same thread is still open when it starts.
ApiTimeline api_timeline(const Trace& trace) {
  ApiTimeline timeline;
  std::map<std::uint32_t, std::vector<const ApiActivity*>> by_thread;
  for (const ApiActivity& a : trace.api_calls)
    if (!untimed(a.start_ns, a.end_ns)) by_thread[a.thread_id].push_back(&a);
  for (auto& [thread, records] : by_thread) {
    std::sort(records.begin(), records.end(), [](const ApiActivity* a, const ApiActivity* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    bool open = false;
    std::uint64_t open_end = 0;
    for (const ApiActivity* a : records) {
      if (open && a->start_ns < open_end) {  // nested in (or overlapping) the open call
        if (is_tracer_api(*a) && a->end_ns <= open_end)
          timeline.top_level.back().nested_tracer_ns +=
              static_cast<double>(duration(a->start_ns, a->end_ns));
        if (a->end_ns > open_end) {
          timeline.top_level.back().ns += static_cast<double>(a->end_ns - open_end);
          open_end = a->end_ns;
        }
      } else {
        open = true;
        open_end = std::max(a->end_ns, a->start_ns);
        const ApiBucket bucket = is_synchronization_api(a->name) ? ApiBucket::sync
                                 : is_tracer_api(*a)             ? ApiBucket::tracer
                                                                 : ApiBucket::api;
        timeline.top_level.push_back(
            {a->start_ns, static_cast<double>(duration(a->start_ns, a->end_ns)), bucket});
      }
      const std::uint64_t open_start = timeline.top_level.back().start_ns;
      auto [it, inserted] = timeline.launch_start.emplace(a->correlation_id, open_start);
      if (!inserted) it->second = std::min(it->second, open_start);
    }
  }
  return timeline;
}

// The operator call (index into Trace::call_marks_ns) that host time `host_ns`
// belongs to: the call whose mark precedes it; before the first mark, and in a
// trace without marks, the first call (0).
std::size_t call_at(const Trace& trace, std::uint64_t host_ns) {
  const std::vector<std::uint64_t>& marks = trace.call_marks_ns;
  const auto mark = std::upper_bound(marks.begin(), marks.end(), host_ns);
  return mark == marks.begin() ? 0 : static_cast<std::size_t>(mark - marks.begin()) - 1;
}

// The call that issued a piece of device work (kernel, copy, memset): placed by
// the start of its launching top-level API call, or by its own start where no
// API record has its correlation id. A kernel that runs after the next call's
// mark stays in the call that launched it.
std::size_t call_of_work(const Trace& trace, const ApiTimeline& timeline,
                         std::uint32_t correlation_id, std::uint64_t start_ns) {
  const auto api = timeline.launch_start.find(correlation_id);
  return call_at(trace, api != timeline.launch_start.end() ? api->second : start_ns);
}

// The fields of TraceSummary that summarize_calls measures per call (the others are
// counts and bytes over the whole trace).
constexpr double TraceSummary::*kPerCallTimes[] = {
    &TraceSummary::kernel_ns, &TraceSummary::kernel_busy_ns, &TraceSummary::api_ns,
    &TraceSummary::sync_ns,   &TraceSummary::tracer_api_ns,  &TraceSummary::gap_ns,
    &TraceSummary::h2d_ns,    &TraceSummary::d2h_ns,         &TraceSummary::other_copy_ns,
    &TraceSummary::memset_ns};

}  // namespace

TraceSummary summarize_calls(const Trace& trace, int calls) {
  check_calls(trace, calls, "summarize_calls");
  TraceSummary s;
  s.calls = calls;
  s.dropped_records = trace.dropped_records;

  // With marks, the times of each call (kPerCallTimes), reported as the median over
  // calls (one slow call does not move it); without, of the whole trace, divided by calls.
  const bool marked = !trace.call_marks_ns.empty();
  std::vector<TraceSummary> per_call(marked ? static_cast<std::size_t>(calls) : 1);
  const ApiTimeline timeline = api_timeline(trace);

  // API time: top-level calls, in the call their start falls in.
  double api_calls = 0;
  for (const TopLevelCall& c : timeline.top_level) {
    TraceSummary& times = per_call[call_at(trace, c.start_ns)];
    const double nested_tracer_ns = c.bucket == ApiBucket::tracer ? 0.0 : c.nested_tracer_ns;
    times.tracer_api_ns += nested_tracer_ns;
    switch (c.bucket) {
      case ApiBucket::api:
        times.api_ns += c.ns - nested_tracer_ns;
        api_calls += 1;
        break;
      case ApiBucket::sync:
        times.sync_ns += c.ns - nested_tracer_ns;
        break;
      case ApiBucket::tracer:
        times.tracer_api_ns += c.ns;
        break;
    }
  }

  // Kernels: summed time per call, and per (call, device) the kernel intervals
  // (busy union) and span (first start to last end, for the gaps).
  std::map<std::pair<std::size_t, std::uint32_t>, std::vector<Interval>> kernels_by_call;
  std::map<std::pair<std::size_t, std::uint32_t>, Interval> spans;
  std::map<std::uint32_t, std::vector<Interval>> activity_by_device;  // all device activity
  std::vector<double> latencies;
  for (const KernelActivity& k : trace.kernels) {
    if (untimed(k.start_ns, k.end_ns)) continue;
    const auto key =
        std::make_pair(call_of_work(trace, timeline, k.correlation_id, k.start_ns), k.device_id);
    per_call[key.first].kernel_ns += static_cast<double>(duration(k.start_ns, k.end_ns));
    kernels_by_call[key].push_back({k.start_ns, k.end_ns});
    activity_by_device[k.device_id].push_back({k.start_ns, k.end_ns});
    auto [it, inserted] = spans.emplace(key, Interval{k.start_ns, k.end_ns});
    if (!inserted) {
      it->second.start = std::min(it->second.start, k.start_ns);
      it->second.end = std::max(it->second.end, k.end_ns);
    }
    // Launch latency: kernel start - start of the top-level API call that launched it.
    const auto api = timeline.launch_start.find(k.correlation_id);
    if (api != timeline.launch_start.end())
      latencies.push_back(static_cast<double>(k.start_ns) - static_cast<double>(api->second));
  }
  for (const auto& [key, intervals] : kernels_by_call)
    per_call[key.first].kernel_busy_ns +=
        static_cast<double>(union_length(intervals, 0, UINT64_MAX));
  if (!latencies.empty()) {
    s.launch_latency_ns = median(latencies);
    s.launch_latency_max_ns = *std::max_element(latencies.begin(), latencies.end());
  }

  // Transfers and memsets: bytes over the trace, times per call.
  for (const MemcpyActivity& m : trace.memcpys) {
    const double bytes = static_cast<double>(m.bytes);
    const double ns = static_cast<double>(duration(m.start_ns, m.end_ns));
    TraceSummary& times = per_call[call_of_work(trace, timeline, m.correlation_id, m.start_ns)];
    switch (m.direction) {
      case CopyDirection::h2d:
        s.h2d_bytes += bytes;
        times.h2d_ns += ns;
        break;
      case CopyDirection::d2h:
        s.d2h_bytes += bytes;
        times.d2h_ns += ns;
        break;
      default:
        s.other_copy_bytes += bytes;
        times.other_copy_ns += ns;
        break;
    }
    if (!untimed(m.start_ns, m.end_ns))
      activity_by_device[m.device_id].push_back({m.start_ns, m.end_ns});
  }
  for (const MemsetActivity& m : trace.memsets) {
    s.memset_bytes += static_cast<double>(m.bytes);
    per_call[call_of_work(trace, timeline, m.correlation_id, m.start_ns)].memset_ns +=
        static_cast<double>(duration(m.start_ns, m.end_ns));
    if (!untimed(m.start_ns, m.end_ns))
      activity_by_device[m.device_id].push_back({m.start_ns, m.end_ns});
  }

  // Gaps: per call and device, kernel span minus the union of device activity in it.
  for (const auto& [key, span] : spans) {
    const std::uint64_t busy = union_length(activity_by_device[key.second], span.start, span.end);
    const std::uint64_t length = duration(span.start, span.end);
    per_call[key.first].gap_ns += static_cast<double>(length - std::min(busy, length));
  }

  if (marked)
    for (const TraceSummary& times : per_call) s.kernel_ns_per_call.push_back(times.kernel_ns);
  const double n = calls;
  for (double TraceSummary::*field : kPerCallTimes) {
    if (!marked) {
      s.*field = per_call[0].*field / n;
      continue;
    }
    std::vector<double> values;
    values.reserve(per_call.size());
    for (const TraceSummary& times : per_call) values.push_back(times.*field);
    s.*field = median(std::move(values));
  }
  s.launches = static_cast<double>(trace.kernels.size()) / n;
  s.api_calls = api_calls / n;
  s.h2d_bytes /= n;
  s.d2h_bytes /= n;
  s.other_copy_bytes /= n;
  s.memset_bytes /= n;
  return s;
}

Timing TraceSummary::timing() const {
  Timing t;
  t.kernel_time_s = kernel_ns * 1e-9;
  t.launches = std::llround(launches);
  t.api_time_s = api_ns * 1e-9;
  t.launch_gap_s = gap_ns * 1e-9;
  t.h2d_bytes = h2d_bytes;
  t.h2d_time_s = h2d_ns * 1e-9;
  t.d2h_bytes = d2h_bytes;
  t.d2h_time_s = d2h_ns * 1e-9;
  return t;
}

namespace {

KernelRecord kernel_record(const KernelActivity& k) {
  KernelRecord r;
  r.name = k.name;
  r.grid = k.grid;
  r.block = k.block;
  r.duration_s = static_cast<double>(duration(k.start_ns, k.end_ns)) * 1e-9;
  return r;
}

// Launch order: by correlation id, which CUPTI hands out to API calls in the
// order they are made, so a kernel launched later has a larger id even when a
// side stream starts it first. Kernels that share an id (one API call launched
// several, e.g. a graph launch) keep their start order.
void in_launch_order(std::vector<const KernelActivity*>& kernels) {
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const KernelActivity* a, const KernelActivity* b) {
                     return a->correlation_id < b->correlation_id;
                   });
}

}  // namespace

std::vector<KernelRecord> kernel_records(const Trace& trace) {
  std::vector<KernelRecord> records;
  records.reserve(trace.kernels.size());
  for (const KernelActivity& k : trace.kernels) records.push_back(kernel_record(k));
  return records;
}

std::vector<KernelRecord> median_call_kernels(const Trace& trace, int calls) {
  check_calls(trace, calls, "median_call_kernels");
  std::vector<const KernelActivity*> launched;
  launched.reserve(trace.kernels.size());
  for (const KernelActivity& k : trace.kernels) launched.push_back(&k);
  in_launch_order(launched);
  std::vector<KernelRecord> first_call;
  const std::size_t per_call = trace.kernels.size() / static_cast<std::size_t>(calls);
  for (std::size_t i = 0; i < per_call; ++i) first_call.push_back(kernel_record(*launched[i]));
  if (trace.call_marks_ns.empty()) return first_call;

  // The kernels of each call, in launch order (see in_launch_order).
  const ApiTimeline timeline = api_timeline(trace);
  std::vector<std::vector<const KernelActivity*>> by_call(static_cast<std::size_t>(calls));
  for (const KernelActivity* k : launched)
    by_call[call_of_work(trace, timeline, k->correlation_id, k->start_ns)].push_back(k);

  // Position i must be the same kernel (name, grid, block) in every call.
  const std::vector<const KernelActivity*>& reference = by_call[0];
  for (const auto& kernels : by_call) {
    if (kernels.size() != reference.size()) return first_call;
    for (std::size_t i = 0; i < kernels.size(); ++i)
      if (kernels[i]->name != reference[i]->name || kernels[i]->grid != reference[i]->grid ||
          kernels[i]->block != reference[i]->block)
        return first_call;
  }

  std::vector<KernelRecord> records;
  records.reserve(reference.size());
  for (std::size_t i = 0; i < reference.size(); ++i) {
    std::vector<double> durations;
    for (const auto& kernels : by_call)
      if (!untimed(kernels[i]->start_ns, kernels[i]->end_ns))
        durations.push_back(
            static_cast<double>(duration(kernels[i]->start_ns, kernels[i]->end_ns)));
    KernelRecord r = kernel_record(*reference[i]);
    r.duration_s = durations.empty() ? 0.0 : median(std::move(durations)) * 1e-9;
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace timeroof
