// libtimeroof_inject.so: loaded into any CUDA program through CUDA_INJECTION64_PATH
// (`timeroof profile` sets it), it traces the program with the CUPTI Activity
// API and appends each record as one JSON line (a TraceEvent) to
// $TIMEROOF_PROFILE_DIR/journal-<pid>.jsonl while the program runs.
//
// Why it is built the way it is:
//  - One write() per completed CUPTI buffer, of whole lines, to a file opened
//    O_APPEND: a program killed at any moment leaves only whole lines, except at
//    worst a last one cut by a full disk, which the reader tolerates.
//  - Records reach the file while the program runs: CUPTI hands back only
//    buffers that are full or flushed, so a thread flushes every 100 ms (a
//    non-forced flush returns the buffers whose records are all complete);
//    exit() and a return from main flush the rest (atexit, forced flush).
//  - CUPTI's buffer callback only queues a buffer; a writer thread converts and
//    writes it, so the flush that delivers it never waits on the conversion.
//  - Only the API calls `--api` names are traced (TIMEROOF_PROFILE_API): each is
//    a record, and a framework makes many per kernel. A chosen subset (the
//    default, launches) is recorded from CUPTI's callbacks (api_calls.hpp), and
//    without CUPTI's synchronization kind (its cost: core/api_tracing.hpp).
//  - Never crash the host program: every failure is one stderr line
//    "timeroof profile: ..." and tracing stops; nothing throws out of here.
//  - A forked child gets its own journal (the pid is checked at each write).
//  - At exit, the CUDA libraries the process loaded and their versions go to
//    libraries-<pid>.json (loaded_libraries.hpp): the program's own cuDNN and
//    cuBLAS made its kernels, whichever timeroof was built with.
//  - Kernel records are named at their launch (counters/launch_namer.hpp): CUPTI's
//    own name can be another kernel's where a module was unloaded. The one CUPTI
//    callback subscriber a process may have serves the namer and the counters.
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/api_tracing.hpp"
#include "core/kernel_selection.hpp"
#include "counters/launch_namer.hpp"
#include "gpu/check_cupti.hpp"
#include "inject/api_calls.hpp"
#include "inject/files.hpp"
#include "inject/kernel_counters.hpp"
#include "inject/loaded_libraries.hpp"
#include "inject/nvtx_records.hpp"
#include "inject/thread_cpu.hpp"
#include "inject/trace_records.hpp"

namespace timeroof::inject {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;  // small: a flush carries little
constexpr std::size_t kRecordAlignment = 8;
constexpr std::uint32_t kFlushPeriodMs = 100;

void report(const std::string& problem) noexcept {
  std::fprintf(stderr, "timeroof profile: %s\n", problem.c_str());
}

// This process's journal; opened on the first write, and again after a fork.
class Journal {
 public:
  explicit Journal(std::string directory) : directory_(std::move(directory)) {}

  // Writes whole lines in one write() (looping only if the kernel takes part
  // of them). Throws timeroof::Error naming the file on failure.
  void append(const std::string& lines) {
    if (lines.empty()) return;
    const pid_t pid = getpid();
    if (pid != pid_) open_for(pid);
    write_all(fd_, lines, path_);
  }

 private:
  void open_for(pid_t pid) {
    path_ = directory_ + "/journal-" + std::to_string(pid) + ".jsonl";
    fd_ = open_for_writing(path_, O_APPEND);
    pid_ = pid;
  }

  std::string directory_;
  std::string path_;
  UniqueFd fd_;
  pid_t pid_ = 0;
};

// Every kind this library may enable (stop() disables them all); the API kinds
// and SYNCHRONIZATION as --api says (enable_api_domain, traces_synchronization).
constexpr CUpti_ActivityKind kTracedKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                               CUPTI_ACTIVITY_KIND_MEMCPY,
                                               CUPTI_ACTIVITY_KIND_MEMSET,
                                               CUPTI_ACTIVITY_KIND_RUNTIME,
                                               CUPTI_ACTIVITY_KIND_DRIVER,
                                               CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                               CUPTI_ACTIVITY_KIND_MARKER,
                                               CUPTI_ACTIVITY_KIND_MARKER_DATA};
constexpr CUpti_ActivityKind kGpuKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                            CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

// cuptiActivityEnableRuntimeApi / cuptiActivityEnableDriverApi of the CUPTI this
// process traces with, looked up by name: the program may have loaded an older
// CUPTI by the same soname (PyTorch's), and a missing symbol must not stop the
// library from loading.
using EnableApiCall = CUptiResult(CUPTIAPI*)(CUpti_CallbackId, uint8_t);
EnableApiCall cupti_function(const char* name) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 || !info.dli_fname)
    return nullptr;
  void* cupti = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (cupti == nullptr) return nullptr;
  void* symbol = dlsym(cupti, name);
  dlclose(cupti);  // NOLOAD took a reference to a library that stays loaded
  return reinterpret_cast<EnableApiCall>(symbol);
}

// The process's one CUPTI callback subscriber: every launch is named for the
// trace, measured where counters were asked for, and the API calls --api
// launches names are recorded. Never freed: CUPTI may call it until exit.
struct LaunchCallbacks {
  LaunchNames names;
  LaunchNamer namer{names};
  std::atomic<KernelCounters*> counters{nullptr};
  ApiCallRecorder api_calls;
  NvtxRecorder nvtx;
  std::optional<CuptiSubscriber> subscriber;
};

// Whether the environment sets `name` to `value` (the diagnostics below).
bool environment_is(const char* name, std::string_view value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::string_view(set) == value;
}

// A diagnostic for scripts/device/tracing_cost.py: TIMEROOF_PROFILE_NVTX_RECORDS=callbacks
// records NVTX ranges and marks from CUPTI's NVTX callbacks (NvtxRecorder) instead of
// its MARKER activity records, to measure what each costs. Not the default: it was
// no cheaper on an H200 (docs/design.md, 2026-12-02).
bool nvtx_callbacks_asked_by_environment() {
  return environment_is("TIMEROOF_PROFILE_NVTX_RECORDS", "callbacks");
}

// A diagnostic for scripts/device/tracing_cost.py: TIMEROOF_PROFILE_API_RECORDS=activity
// records the calls --api chose one by one through CUPTI's activity API (as before
// the callbacks did), to measure what that costs. Not a user option.
bool activity_records_forced_by_environment() {
  return environment_is("TIMEROOF_PROFILE_API_RECORDS", "activity");
}

// Enables the records of the calls of `domain` that `tracing` traces: the whole
// activity kind, or else each chosen call's callback (ApiCallRecorder), or where
// there is no subscriber, each chosen call's activity records.
void enable_api_domain(ApiTracing tracing, ApiDomain domain, LaunchCallbacks& callbacks) {
  const bool runtime = domain == ApiDomain::runtime;
  const CUpti_ActivityKind kind =
      runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
  if (tracing == ApiTracing::none) return;
  if (tracing == ApiTracing::all || (runtime && tracing == ApiTracing::runtime) ||
      (!runtime && tracing == ApiTracing::driver)) {
    TR_CUPTI_CHECK(cuptiActivityEnable(kind));
    return;
  }
  const CUpti_CallbackDomain callback_domain =
      runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  const CUpti_CallbackId size = runtime
                                    ? static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                    : static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE);
  // The calls of `domain` that `tracing` chose, by CUPTI's names for them; an id
  // this CUPTI does not know has no name.
  std::vector<CUpti_CallbackId> chosen;
  for (CUpti_CallbackId cbid = 1; cbid < size; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(callback_domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr)
      continue;
    if (traces_api_call(tracing, domain, name)) chosen.push_back(cbid);
  }
  if (callbacks.subscriber && !activity_records_forced_by_environment()) {
    for (const CUpti_CallbackId cbid : chosen) {
      callbacks.api_calls.record(domain, cbid);
      callbacks.subscriber->enable(callback_domain, cbid);
    }
    return;
  }
  const EnableApiCall enable =
      cupti_function(runtime ? "cuptiActivityEnableRuntimeApi" : "cuptiActivityEnableDriverApi");
  if (enable == nullptr) {
    report(std::string("this CUPTI cannot trace single ") + to_string(domain) +
           " API calls; every one is traced (--api " + to_string(tracing) + " asked for fewer)");
    TR_CUPTI_CHECK(cuptiActivityEnable(kind));
    return;
  }
  for (const CUpti_CallbackId cbid : chosen) TR_CUPTI_CHECK(enable(cbid, 1));
}

// The choice `timeroof profile --api` passed; a value it could not have written
// traces every call (nothing is lost) and says so.
ApiTracing api_tracing_from_environment() {
  const char* value = std::getenv(kApiVariable);
  if (value == nullptr) return kDefaultApiTracing;
  if (const auto tracing = find_api_tracing(value)) return *tracing;
  report(std::string(kApiVariable) + "='" + value + "' is none of " + api_tracing_choices() +
         "; every API call is traced");
  return ApiTracing::all;
}

// A diagnostic for scripts/device/tracing_cost.py: TIMEROOF_PROFILE_SYNC=0 leaves
// CUPTI's synchronization records off under --api runtime, driver or all (launches has
// none), to measure what they cost.
// Not a user option: the analysis then misses which waits the host made.
bool synchronization_disabled_by_environment() {
  return environment_is("TIMEROOF_PROFILE_SYNC", "0");
}

// A diagnostic for scripts/device/tracing_cost.py: TIMEROOF_PROFILE_NAMES=0 leaves
// kernels unnamed at their launch (no driver callback per launch), to measure what
// naming costs. Not a user option: kernels then keep CUPTI's names, and no
// counters can be collected.
bool launch_names_disabled_by_environment() {
  return environment_is("TIMEROOF_PROFILE_NAMES", "0");
}

// A diagnostic for scripts/device/tracing_cost.py: TIMEROOF_PROFILE_WRITE=0 frees
// CUPTI's buffers and the callbacks' records unread, to measure what converting and
// writing them costs the program. Not a user option: the run holds no trace.
bool writing_disabled_by_environment() {
  return environment_is("TIMEROOF_PROFILE_WRITE", "0");
}

// A diagnostic for scripts/device/tracing_cost.py: TIMEROOF_PROFILE_CPU=1 reports at
// exit where the process's CPU went, thread by thread, and the writer's share of
// converting, formatting and writing, to place what tracing costs a host-bound program.
bool cpu_report_asked_by_environment() {
  return environment_is("TIMEROOF_PROFILE_CPU", "1");
}

// This thread's CPU time so far, in seconds.
double thread_cpu_seconds() noexcept {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// A diagnostic for scripts/device/tracing_cost.py: TIMEROOF_PROFILE_API_DOMAIN=runtime
// (or driver) records the chosen calls of that API only, to measure what each
// domain's records cost. Not a user option: the analysis needs both.
bool api_domain_disabled_by_environment(ApiDomain domain) {
  const char* value = std::getenv("TIMEROOF_PROFILE_API_DOMAIN");
  return value != nullptr && *value != '\0' && std::string_view(value) != to_string(domain);
}

// The process-wide tracing state: CUPTI's buffer callbacks are plain C
// functions, so they reach it through tracer(). Never destroyed: CUPTI's own
// thread may deliver a buffer while static destructors run.
class Tracer {
 public:
  explicit Tracer(std::string directory) : journal_(std::move(directory)) {}

  // `callbacks` records the API calls `api` chose where its subscriber can.
  void start(ApiTracing api, LaunchCallbacks& callbacks) {
    started_by_ = getpid();
    writer_ = std::thread([this] { write_queued(); });
    pthread_setname_np(writer_.native_handle(), "tr-writer");  // named in top, perf, Perfetto
    TR_CUPTI_CHECK(cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed));
    api_calls_ = &callbacks.api_calls;
    // The whole kind first: enabling it later would override the per-call choice.
    for (const ApiDomain domain : {ApiDomain::runtime, ApiDomain::driver})
      if (!api_domain_disabled_by_environment(domain)) enable_api_domain(api, domain, callbacks);
    if (traces_synchronization(api) && !synchronization_disabled_by_environment())
      TR_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
    for (CUpti_ActivityKind kind : kGpuKinds) TR_CUPTI_CHECK(cuptiActivityEnable(kind));
    if (callbacks.subscriber && nvtx_callbacks_asked_by_environment()) {
      for (const CUpti_CallbackId cbid : NvtxRecorder::callbacks())
        callbacks.subscriber->enable(CUPTI_CB_DOMAIN_NVTX, cbid);
      nvtx_ = &callbacks.nvtx;
      nvtx_->record();
    } else {
      TR_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER));
      if (const CUptiResult status = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER_DATA);
          status != CUPTI_SUCCESS) {
        // Ranges are still traced, only without their colors and categories.
        report("NVTX colors and categories are not traced (" + check_detail::cupti_message(status) +
               ")");
      }
    }
    TR_CUPTI_CHECK(cuptiActivityFlushPeriod(kFlushPeriodMs));
    flusher_ = std::thread([this] { flush_periodically(); });
    pthread_setname_np(flusher_.native_handle(), "tr-flusher");
  }

  // Kernel records take the names read at their launch from `launches`.
  void name_kernels_from(LaunchNames* launches) {
    std::lock_guard<std::mutex> lock(mutex_);
    converter_.name_kernels_from(launches);
  }

  // At exit: the flusher ends, every buffer is delivered, open ranges are written.
  void finish() noexcept {
    // Before the writer and the flusher end: a joined thread leaves /proc.
    if (cpu_report_asked_by_environment()) report_cpu();
    {
      std::lock_guard<std::mutex> lock(flusher_mutex_);
      finishing_ = true;
    }
    flusher_wakeup_.notify_all();
    // A forked child has the thread object but not the thread.
    if (getpid() == started_by_ && flusher_.joinable() &&
        flusher_.get_id() != std::this_thread::get_id())
      flusher_.join();
    if (stopped_.load()) return;
    try {
      TR_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
      finish_writing();
      write_callback_records();
      std::uint64_t now = 0;
      TR_CUPTI_CHECK(cuptiGetTimestamp(&now));
      std::lock_guard<std::mutex> lock(mutex_);
      write_events(converter_.take_open_ranges(now));
      if (nvtx_) write_events(nvtx_->take_open(now));
      const std::size_t dropped = dropped_;
      if (dropped > 0)
        report(std::to_string(dropped) + " records were dropped by CUPTI (buffers full)");
      if (const std::size_t calls = api_calls_ ? api_calls_->dropped() : 0; calls > 0)
        report(std::to_string(calls) + " API calls were not recorded (" +
               std::to_string(ApiCallRecorder::kMaxPending) + " waited to be written)");
      if (const std::size_t marks = nvtx_ ? nvtx_->dropped() : 0; marks > 0)
        report(std::to_string(marks) + " NVTX ranges and marks were not recorded (" +
               std::to_string(NvtxRecorder::kMaxPending) + " waited to be written)");
    } catch (const std::exception& e) {
      stop(e.what());
    }
  }

  // Writes records that do not come from CUPTI's buffers: measured launches'
  // counters, when their window of the range profiler ends. CUPTI never times a
  // kernel it replays for counters (its record keeps zero timestamps), and a
  // buffer holding such a record counts as incomplete: the periodic flush held
  // it, and everything after it, until exit (a kill -9 lost the whole trace, seen
  // on an H100). So every span is noted first, then the buffers are flushed by
  // force, while the GPU is idle (the replays serialized the launches and the
  // work before them), and each kernel record takes its launch call's span (consume()).
  void write(const std::vector<TraceEvent>& events) noexcept {
    if (stopped_.load()) return;
    bool measured = false;
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const TraceEvent& event : events) {
        if (event.kind != TraceKind::kernel_counters) continue;
        replayed_spans_[event.correlation_id] = {event.start_ns, event.end_ns};
        measured = true;
      }
      write_events(events);
    } catch (const std::exception& e) {
      stop(e.what());
      return;
    }
    if (measured)
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // a failure only delays records
  }

  // Takes a completed buffer from CUPTI: queued for the writer thread, which
  // frees it. CUPTI calls this inside a flush (its own, the flusher thread's, or
  // one the program's thread triggers when a buffer fills), and converting a
  // buffer takes milliseconds (JSON, demangling): the flush never waits on that.
  // A forked child, without the writer thread, writes it here.
  void hand_over(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                 size_t valid_size) noexcept {
    if (buffer == nullptr) return;
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
      dropped_ += dropped;
    if (discarding_) {
      std::free(buffer);
      return;
    }
    if (getpid() == started_by_) {
      try {
        {
          std::lock_guard<std::mutex> lock(queue_mutex_);
          if (!writer_done_) {
            queue_.push_back({buffer, valid_size});
            buffer = nullptr;
          }
        }
        queue_changed_.notify_all();
      } catch (const std::exception&) {  // no memory for the queue: written here
      }
    }
    if (buffer == nullptr) return;
    consume(buffer, valid_size);
    std::free(buffer);
  }

  // Converts and writes one completed buffer; the caller frees it.
  void consume(uint8_t* buffer, size_t valid_size) noexcept {
    if (stopped_.load() || buffer == nullptr) return;
    try {
      std::vector<TraceEvent> events;
      std::lock_guard<std::mutex> lock(mutex_);
      const double started = thread_cpu_seconds();
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS)
        converter_.convert(record, events);
      converter_.end_of_buffer(events);
      converting_s_ += thread_cpu_seconds() - started;
      for (TraceEvent& e : events)
        if (e.kind == TraceKind::kernel && e.start_ns == 0 && e.end_ns == 0) time_replayed(e);
      write_events(events);
    } catch (const std::exception& e) {
      stop(e.what());
    }
  }

 private:
  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                        size_t size, size_t valid_size);

  // The API calls and NVTX ranges recorded from callbacks since the last time,
  // into the journal.
  void write_callback_records() {
    if (stopped_.load()) return;
    std::vector<ApiActivity> calls = api_calls_->take();
    std::vector<TraceEvent> events = nvtx_ ? nvtx_->take() : std::vector<TraceEvent>{};
    if (discarding_ || (calls.empty() && events.empty())) return;
    events.reserve(events.size() + calls.size());
    std::lock_guard<std::mutex> lock(mutex_);
    for (ApiActivity& call : calls) converter_.convert(std::move(call), events);
    write_events(events);
  }

  // Under mutex_.
  void write_events(const std::vector<TraceEvent>& events) {
    const double started = thread_cpu_seconds();
    std::string lines;
    // Names are the program's bytes: invalid UTF-8 is replaced, not a failure.
    for (const TraceEvent& event : events) append_journal_line(lines, event);
    const double formatted = thread_cpu_seconds();
    journal_.append(lines);
    formatting_s_ += formatted - started;
    writing_s_ += thread_cpu_seconds() - formatted;
    records_written_ += events.size();
  }

  void report_cpu() noexcept {
    try {
      std::string text = "CPU by thread: " +
                         describe_threads_cpu(threads_cpu(), static_cast<std::uint32_t>(getpid()));
      std::lock_guard<std::mutex> lock(mutex_);
      char split[256];
      std::snprintf(split, sizeof split,
                    "; records: %.2f s converting CUPTI's, %.2f s formatting lines, %.2f s "
                    "writing the journal (%zu records so far)",
                    converting_s_, formatting_s_, writing_s_, records_written_);
      report(text + split);
    } catch (const std::exception&) {  // a diagnostic: nothing to lose
    }
  }

  // A kernel replayed for counters: its time is the launch call's (which holds
  // the replay passes), flagged so the analysis takes the kernel's time elsewhere.
  void time_replayed(TraceEvent& kernel) {
    kernel.details["replayed"] = true;
    const auto span = replayed_spans_.find(kernel.correlation_id);
    if (span == replayed_spans_.end()) return;
    std::tie(kernel.start_ns, kernel.end_ns) = span->second;
    replayed_spans_.erase(span);
  }

  // The writer thread: writes the queued buffers in order until finish_writing().
  void write_queued() noexcept {
    std::unique_lock<std::mutex> lock(queue_mutex_);
    for (;;) {
      queue_changed_.wait(lock, [this] { return writer_done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      const CompletedBuffer next = queue_.front();
      queue_.pop_front();
      lock.unlock();
      consume(next.data, next.valid_size);
      std::free(next.data);
      lock.lock();
    }
  }

  // Every queued buffer written, the writer thread ended; later buffers are
  // written by hand_over itself.
  void finish_writing() noexcept {
    if (getpid() != started_by_) return;  // a forked child has no writer (nor its lock's state)
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      writer_done_ = true;
    }
    queue_changed_.notify_all();
    if (writer_.joinable() && writer_.get_id() != std::this_thread::get_id()) writer_.join();
  }

  void flush_periodically() noexcept {
    std::unique_lock<std::mutex> lock(flusher_mutex_);
    while (!finishing_) {
      flusher_wakeup_.wait_for(lock, std::chrono::milliseconds(kFlushPeriodMs));
      if (finishing_ || stopped_.load()) break;
      lock.unlock();
      cuptiActivityFlushAll(0);  // a failure here only delays records
      try {
        write_callback_records();
      } catch (const std::exception& e) {
        stop(e.what());
      }
      lock.lock();
    }
  }

  // Tracing stops for good after the first failure, said once.
  void stop(const std::string& why) noexcept {
    if (stopped_.exchange(true)) return;
    report(why + "; tracing stops");
    for (CUpti_ActivityKind kind : kTracedKinds) cuptiActivityDisable(kind);
    if (api_calls_) api_calls_->stop();
    if (nvtx_) nvtx_->stop();
  }

  ApiCallRecorder* api_calls_ = nullptr;  // set by start()
  NvtxRecorder* nvtx_ = nullptr;          // set by start() where NVTX comes from callbacks
  const bool discarding_ = writing_disabled_by_environment();
  std::mutex mutex_;  // converter_, journal_, replayed_spans_, the CPU seconds below
  TraceRecordConverter converter_;
  // The CPU seconds of the threads that converted and wrote records, and the records
  // written (report_cpu).
  double converting_s_ = 0;
  double formatting_s_ = 0;
  double writing_s_ = 0;
  std::size_t records_written_ = 0;
  // Measured launches' [start, end] by correlation id, until their kernel record comes.
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> replayed_spans_;
  Journal journal_;
  std::atomic<std::size_t> dropped_{0};
  std::atomic<bool> stopped_{false};

  // Completed buffers waiting for the writer thread, in CUPTI's order.
  struct CompletedBuffer {
    uint8_t* data = nullptr;
    size_t valid_size = 0;
  };
  std::thread writer_;
  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;
  std::deque<CompletedBuffer> queue_;
  bool writer_done_ = false;

  std::thread flusher_;
  std::mutex flusher_mutex_;
  std::condition_variable flusher_wakeup_;
  bool finishing_ = false;
  pid_t started_by_ = 0;
};

Tracer* g_tracer = nullptr;  // set once by InitializeInjection, never freed

void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  auto* callbacks = static_cast<LaunchCallbacks*>(userdata);
  const auto* call = domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API
                         ? static_cast<const CUpti_CallbackData*>(data)
                         : nullptr;
  // A recorded call's span holds what happens here: a measured launch's replay.
  if (call && call->callbackSite == CUPTI_API_ENTER)
    callbacks->api_calls.on_callback(domain, cbid, *call);
  if (domain == CUPTI_CB_DOMAIN_NVTX)
    callbacks->nvtx.on_callback(cbid, *static_cast<const CUpti_NvtxData*>(data));
  // The name first: a measured launch is replayed inside the counters' callback.
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    callbacks->namer.on_driver_callback(cbid, *call);
  else if (domain == CUPTI_CB_DOMAIN_RESOURCE)
    callbacks->namer.on_resource_callback(cbid);
  if (KernelCounters* counters = callbacks->counters.load(std::memory_order_acquire))
    counters->on_callback(domain, cbid, data);
  if (call && call->callbackSite == CUPTI_API_EXIT)
    callbacks->api_calls.on_callback(domain, cbid, *call);
}

// Subscribes the namer before any kind is traced; where CUPTI refuses (another
// subscriber in the program), kernels keep CUPTI's names.
void name_launches(LaunchCallbacks& callbacks, Tracer& tracer) noexcept {
  try {
    callbacks.subscriber.emplace(&on_callback, &callbacks);
    callbacks.namer.enable_on(*callbacks.subscriber);
    tracer.name_kernels_from(&callbacks.names);
  } catch (const std::exception& e) {
    callbacks.subscriber.reset();
    report(std::string(e.what()) + "; kernel records keep CUPTI's names (not read at launch)");
  }
}

void CUPTIAPI Tracer::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // Declining (nullptr) makes CUPTI drop records, which it counts.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI Tracer::buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                       size_t /*size*/, size_t valid_size) {
  if (g_tracer)
    g_tracer->hand_over(context, stream_id, buffer, valid_size);
  else
    std::free(buffer);
}

const char* environment_value(const char* name) {
  return std::getenv(name);
}

// The per-kernel counters the selection in the environment asks for; a failure
// leaves the trace running without them.
void start_counters(Tracer& tracer, LaunchCallbacks& callbacks) noexcept {
  try {
    const KernelSelectionOptions options = selection_from_environment(&environment_value);
    if (!options.enabled) return;
    if (const auto problem = selection_problem(options)) throw Error(ExitCode::usage, *problem);
    if (!callbacks.subscriber)
      throw Error(ExitCode::environment, "CUPTI gave this library no callback subscriber");
    auto counters = std::make_unique<KernelCounters>(
        options, [&tracer](const std::vector<TraceEvent>& events) { tracer.write(events); });
    counters->start(*callbacks.subscriber);
    callbacks.counters.store(counters.release(), std::memory_order_release);
  } catch (const std::exception& e) {
    report(std::string(e.what()) + "; the program is traced without kernel counters");
  }
}

LaunchCallbacks* g_callbacks = nullptr;  // set once by InitializeInjection, never freed

void finish_at_exit() {
  // The counters' last window first: its records go into the trace.
  if (g_callbacks)
    if (KernelCounters* counters = g_callbacks->counters.load(std::memory_order_acquire))
      counters->finish();
  if (g_tracer) g_tracer->finish();
  // At exit, when the program has loaded every library it was going to.
  if (const char* directory = std::getenv("TIMEROOF_PROFILE_DIR")) {
    try {
      write_loaded_libraries(directory, loaded_cuda_libraries());
    } catch (const std::exception& e) {
      report(std::string("the program's CUDA libraries are not recorded: ") + e.what());
    }
  }
}

// NVTX hands its calls to the library NVTX_INJECTION64_PATH names, read at the
// program's first NVTX call. `timeroof profile` names its own libcupti, but a
// program may have loaded another copy by the same soname first (PyTorch loads
// pip's nvidia/cuda_cupti through kineto; this library's CUPTI then resolves to
// it): NVTX would load the named file as a second CUPTI whose activity is off,
// and no range would reach the trace (H100, PyTorch 2.11: none did). So point
// NVTX at the CUPTI this process actually traces with.
void point_nvtx_at_this_cupti() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 || !info.dli_fname) return;
  const char* named = std::getenv("NVTX_INJECTION64_PATH");
  if (named && std::string_view(named) == info.dli_fname) return;
  setenv("NVTX_INJECTION64_PATH", info.dli_fname, 1);
}

}  // namespace
}  // namespace timeroof::inject

// The CUDA driver calls this once per process, from cuInit, when
// CUDA_INJECTION64_PATH names this library.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace timeroof::inject;
  if (g_tracer) return 1;
  const char* directory = std::getenv("TIMEROOF_PROFILE_DIR");
  if (directory == nullptr || *directory == '\0') {
    report(
        "TIMEROOF_PROFILE_DIR is not set, so there is nowhere to write the trace; run the "
        "program through `timeroof profile -- CMD`");
    return 0;
  }
  LaunchCallbacks* callbacks = nullptr;  // never freed: CUPTI may call it until exit
  try {
    callbacks = new LaunchCallbacks;
    callbacks->api_calls.keep_records_out_of_forked_children();
    callbacks->nvtx.keep_records_out_of_forked_children();
    auto* tracer = new Tracer(directory);
    if (!launch_names_disabled_by_environment()) name_launches(*callbacks, *tracer);
    tracer->start(api_tracing_from_environment(), *callbacks);
    g_tracer = tracer;
    g_callbacks = callbacks;
    std::atexit(finish_at_exit);
    start_counters(*tracer, *callbacks);
    point_nvtx_at_this_cupti();
    return 1;
  } catch (const std::exception& e) {
    report(std::string(e.what()) + "; the program runs untraced");
    if (callbacks) callbacks->subscriber.reset();
    for (CUpti_ActivityKind kind : kTracedKinds) cuptiActivityDisable(kind);
    return 0;
  }
}
