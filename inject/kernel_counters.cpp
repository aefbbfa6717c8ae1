// generated_cuda_meta.h (the launch functions' parameter structs) names the
// legacy v1 types, which cuda.h declares only for this; nothing here calls the
// driver API, so its function-name mapping does not matter.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "inject/kernel_counters.hpp"

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_nvtx_cbid.h>
#include <cupti_profiler_target.h>
#include <dlfcn.h>
#include <generated_cuda_meta.h>
#include <generated_nvtx_meta.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/quantities.hpp"
#include "counters/activity_tracer.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/check_cupti.hpp"
#include "inject/api_calls.hpp"

namespace timeroof::inject {

namespace {

constexpr CUpti_CallbackId kNvtxCallbacks[] = {
    CUPTI_CBID_NVTX_nvtxRangePushA,        CUPTI_CBID_NVTX_nvtxRangePushEx,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangePop,    CUPTI_CBID_NVTX_nvtxRangeStartA,
    CUPTI_CBID_NVTX_nvtxRangeStartEx,      CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
    CUPTI_CBID_NVTX_nvtxRangeEnd,          CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
};

LaunchShape shape_of(CUpti_CallbackId cbid, const void* params) {
  LaunchShape shape;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    const CUlaunchConfig* c = static_cast<const cuLaunchKernelEx_params*>(params)->config;
    if (c)
      shape = {{c->gridDimX, c->gridDimY, c->gridDimZ}, {c->blockDimX, c->blockDimY, c->blockDimZ}};
    return shape;
  }
  // cuLaunchKernel and cuLaunchCooperativeKernel (and their _ptsz) share the layout.
  const auto* p = static_cast<const cuLaunchKernel_params*>(params);
  return {{p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ}};
}

// The message of an NVTX range's attributes when it is text; registered and
// wide strings are not matched by --nvtx.
std::string message_of(const nvtxEventAttributes_t* attributes) {
  if (attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII && attributes->message.ascii)
    return attributes->message.ascii;
  return {};
}

std::uint64_t timestamp() {
  std::uint64_t now = 0;
  TR_CUPTI_CHECK(cuptiGetTimestamp(&now));
  return now;
}

const char* text_or_empty(const char* text) {
  return text ? text : "";
}

// The driver calls iteration replay makes, from the libcuda the program has
// loaded (this library links no driver; its static runtime must not start a
// second runtime in the program).
struct ContextCalls {
  CUresult (*get_current)(CUcontext*) = nullptr;
  CUresult (*push_current)(CUcontext) = nullptr;
  CUresult (*pop_current)(CUcontext*) = nullptr;
  CUresult (*synchronize)() = nullptr;

  static const ContextCalls& get() {
    static const ContextCalls calls = [] {
      ContextCalls c;
      void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (!cuda) return c;
      c.get_current = reinterpret_cast<decltype(c.get_current)>(dlsym(cuda, "cuCtxGetCurrent"));
      c.push_current =
          reinterpret_cast<decltype(c.push_current)>(dlsym(cuda, "cuCtxPushCurrent_v2"));
      c.pop_current = reinterpret_cast<decltype(c.pop_current)>(dlsym(cuda, "cuCtxPopCurrent_v2"));
      c.synchronize = reinterpret_cast<decltype(c.synchronize)>(dlsym(cuda, "cuCtxSynchronize"));
      return c;
    }();
    return calls;
  }
  bool complete() const { return get_current && push_current && pop_current && synchronize; }

  // The calling thread's current context; null where it has none.
  CUcontext current() const {
    CUcontext context = nullptr;
    if (!get_current || get_current(&context) != CUDA_SUCCESS) return nullptr;
    return context;
  }
  // Waits for the context's work, from any thread.
  void synchronize_context(CUcontext context) const {
    const bool current_already = current() == context;
    if (!current_already && push_current(context) != CUDA_SUCCESS)
      throw std::runtime_error("cuCtxPushCurrent failed before the end of a counter pass");
    const CUresult status = synchronize();
    CUcontext popped = nullptr;
    if (!current_already) pop_current(&popped);
    if (status != CUDA_SUCCESS)
      throw std::runtime_error("cuCtxSynchronize failed at the end of a counter pass (CUresult " +
                               std::to_string(static_cast<int>(status)) + ")");
  }
};

// Driver calls that end a window of measured launches first (see Window), by
// name: those that put work on the GPU other than a launch, or change its memory.
// A copy or memset may run kernels of the driver's own (a range more than
// launches: a PyTorch ResNet-50 window was skipped so), and an allocation or free
// under a started profiler was followed by a heap corruption in the program (an
// H100). Queries, waits and event records leave it open: subscribing to every
// driver call instead made CUPTI's own calls 30% slower and PyTorch makes some
// other call between any two launches.
constexpr std::string_view kEndWindowPrefixes[] = {"cuMemcpy",
                                                   "cuMemset",
                                                   "cuMemAlloc",
                                                   "cuMemFree",
                                                   "cuMemCreate",
                                                   "cuMemMap",
                                                   "cuMemUnmap",
                                                   "cuMemRelease",
                                                   "cuMemAddress",
                                                   "cuMemSetAccess",
                                                   "cuMemHost",
                                                   "cuMemPrefetch",
                                                   "cuMemAdvise",
                                                   "cuMemDiscard",
                                                   "cuMemPool",
                                                   "cuMemBatch",
                                                   "cuMemExport",
                                                   "cuMemImport",
                                                   "cuIpc",
                                                   "cuMulticast",
                                                   "cuArray",
                                                   "cuMipmappedArray",
                                                   "cuGraphLaunch",
                                                   "cuGraphUpload",
                                                   "cuStreamBeginCapture",
                                                   "cuStreamEndCapture",
                                                   "cuStreamBatchMemOp",
                                                   "cuStreamWriteValue",
                                                   "cuStreamWaitValue",
                                                   "cuLaunchHostFunc",
                                                   "cuLaunchGrid",
                                                   "cuLaunchCooperativeKernelMultiDevice",
                                                   "cuModuleLoad",
                                                   "cuModuleUnload",
                                                   "cuLibraryLoad",
                                                   "cuLibraryUnload"};

// The driver callbacks whose names kEndWindowPrefixes names.
std::vector<CUpti_CallbackId> window_ending_callbacks() {
  std::vector<CUpti_CallbackId> out;
  for (std::uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS || !name)
      continue;
    const std::string_view text(name);
    for (std::string_view prefix : kEndWindowPrefixes)
      if (text.starts_with(prefix)) {
        out.push_back(cbid);
        break;
      }
  }
  return out;
}

// The correlation id of the launch this thread is measuring, between its enter
// and exit callbacks: any other callback of this thread then comes from inside
// the measurement (CUPTI's replay, the session's own calls) and is ignored.
thread_local std::optional<std::uint32_t> t_measured_launch;
// This thread is inside the profiler session's own CUPTI calls.
thread_local bool t_in_session = false;
// The launching thread's NVTX push/pop stack (the selection's context, --nvtx).
thread_local std::vector<std::string> t_pushed_ranges;

}  // namespace

class KernelCounters::Impl {
 public:
  Impl(const KernelSelectionOptions& options, Writer write)
      : extra_metrics_(options.metrics),
        selector_(options),
        write_(std::move(write)),
        skip_instances_(options.skip) {
    if (!options.iteration_range.empty())
      iteration_range_.emplace(options.iteration_range, std::regex::ECMAScript);
  }

  void start(CuptiSubscriber& subscriber) {
    for (CUpti_CallbackId cbid : kernel_launch_callbacks())
      subscriber.enable(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    if (!iteration_range_) {  // iteration replay has no windows to end
      window_ending_ = window_ending_callbacks();
      for (CUpti_CallbackId cbid : window_ending_)
        subscriber.enable(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    } else if (!ContextCalls::get().complete()) {
      throw std::runtime_error(
          "--iteration-range: the program's libcuda.so.1 lacks the context calls it needs");
    }
    subscriber.enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (selector_.wants_nvtx() || selector_.wants_context() || iteration_range_)
      for (CUpti_CallbackId cbid : kNvtxCallbacks) subscriber.enable(CUPTI_CB_DOMAIN_NVTX, cbid);
  }

  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) noexcept {
    try {
      if (t_measured_launch) {
        // Only the exit of the launch being measured; it ends the measurement
        // even after the counters stopped, so the lock and the profiler are freed.
        const auto* call = static_cast<const CUpti_CallbackData*>(data);
        if (domain == CUPTI_CB_DOMAIN_DRIVER_API && call->callbackSite == CUPTI_API_EXIT &&
            call->correlationId == *t_measured_launch)
          end_measurement();
        return;
      }
      if (t_in_session || stopped_.load(std::memory_order_relaxed)) return;
      if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        // The shared subscriber may bring driver callbacks others enabled.
        if (iteration_range_) {
          if (is_kernel_launch_callback(cbid))
            note_pass_launch(cbid, *static_cast<const CUpti_CallbackData*>(data));
        } else if (is_kernel_launch_callback(cbid)) {
          begin_measurement(cbid, *static_cast<const CUpti_CallbackData*>(data));
        } else if (window_open_.load(std::memory_order_acquire) &&
                   static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER &&
                   std::find(window_ending_.begin(), window_ending_.end(), cbid) !=
                       window_ending_.end()) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (window_) end_window();
        }
      } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
        on_nvtx(cbid, *static_cast<const CUpti_NvtxData*>(data));
      } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) return;
        const CUcontext context = static_cast<const CUpti_ResourceData*>(data)->context;
        std::lock_guard<std::mutex> lock(mutex_);
        if (window_ && window_->context == context) end_window();
        if (iterations_ && iterations_->context == context)
          abandon_iterations(too_few_passes("the program destroyed its CUDA context"));
        contexts_.erase(context);
      }
    } catch (const std::exception& e) {
      stop(e.what());
    } catch (...) {  // nothing may leave a CUPTI callback
      stop("an unknown exception");
    }
  }

  // At exit: the open window's launches are recorded.
  void finish() noexcept {
    try {
      end_open_window();
    } catch (const std::exception& e) {
      stop(e.what());
    } catch (...) {
      stop("an unknown exception");
    }
  }

 private:
  struct ContextCounters {
    std::unique_ptr<ProfilerSession> session;
    CollectionPlan plan;
    std::uint32_t device = 0;
  };

  // A measured launch, from its enter to its exit callback.
  struct Measured {
    std::string name;
    LaunchShape shape;
    std::string context;  // the selector's (KernelSelector::select)
    std::uint64_t start_ns = 0;
    std::uint64_t end_ns = 0;
    std::uint32_t correlation_id = 0;
  };

  // Selected launches in a row of one thread on one context share one window
  // of the range profiler (ProfilerSession::begin_launch): Start and Stop cost
  // more than a short kernel's passes. The window ends before any launch that
  // does not join it (not selected, another thread or context) and any driver
  // call kEndWindowPrefixes names, when it is full, when nothing more can be
  // selected, when its context goes, and at exit; its records are written then.
  struct Window {
    ContextCounters* counters = nullptr;
    CUcontext context = nullptr;
    std::thread::id thread;
    std::uint32_t cupti_thread = 0;      // the thread as the trace names it
    ProfilerPhaseSeconds phases_before;  // the session's totals when it began
    std::size_t room = 0;                // launches it has ranges for
    std::vector<Measured> launches;
  };
  // A window's room: CUPTI's configure, Start/Stop and Disable grow with the
  // ranges a collection has room for, and most windows are short (ResNet-50's
  // default selection: 89 launches in 57 windows). Room for 4
  // instead of 64 made its counters 16.4-16.9 s instead of 21.8-22.4 s (H200). A
  // window that fills gives the next one 4x its room, up to 64, so a long run of
  // selected launches still shares few windows; one that ends early, 4 again.
  static constexpr std::size_t kFirstWindowRoom = 4;
  static constexpr std::size_t kWindowLaunches = 64;
  std::size_t window_room_ = kFirstWindowRoom;

  // --iteration-range: CUPTI's counter passes are the range's consecutive
  // instances (ProfilerSession::begin_passes); each launch of a pass is a range.
  // The passes' kernels are not traced (their times are the profiler's); the
  // counters go to the launches of the traced instance just before them, which
  // must launch the same kernels.
  struct IterationPasses {
    CUcontext context = nullptr;
    std::uint32_t cupti_thread = 0;
    ContextCounters* counters = nullptr;  // from the first pass on
    ProfilerPhaseSeconds phases_before;
    // The open instance: a pushed range by its thread and depth, a started one
    // by id; `profiling` when it is a pass, else a traced instance (--skip).
    bool open = false;
    bool profiling = false;
    std::thread::id thread;
    std::size_t depth = 0;
    std::optional<nvtxRangeId_t> id;
    std::vector<Measured> current;    // the open instance's launches, in order
    std::vector<Measured> reference;  // the last traced instance's
    std::size_t passes = 0;           // passes begun
  };
  // Kernels an instance may launch at most: the counter data image holds one
  // range each.
  static constexpr std::size_t kIterationKernels = 4096;

  // Enter callback of any launch: measures it when the selector picks it.
  void begin_measurement(CUpti_CallbackId cbid, const CUpti_CallbackData& call) {
    if (call.callbackSite != CUPTI_API_ENTER || exhausted_.load(std::memory_order_relaxed)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    const std::string& name = demangled(text_or_empty(call.symbolName));
    const LaunchShape shape = shape_of(cbid, call.functionParams);
    static const std::string kOutsideRanges;
    const std::string& context = t_pushed_ranges.empty() ? kOutsideRanges : t_pushed_ranges.back();
    const bool selected = selector_.select(name, shape, context, open_ranges());
    if (selector_.exhausted()) exhausted_ = true;
    if (window_ && !(selected && window_->context == call.context &&
                     window_->thread == std::this_thread::get_id()))
      end_window();
    if (!selected) return;
    try {
      if (!window_) {
        ContextCounters& counters = counters_for(call.context);
        const ProfilerPhaseSeconds before = counters.session->phase_seconds();
        const SessionCalls session_calls;
        counters.session->begin_launch(counters.plan.config, window_room_);
        window_ = Window{.counters = &counters,
                         .context = call.context,
                         .thread = std::this_thread::get_id(),
                         .cupti_thread = cupti_thread_id(),
                         .phases_before = before,
                         .room = window_room_};
        window_open_ = true;
      }
      window_->launches.push_back(
          Measured{name, shape, context, timestamp(), 0, call.correlationId});
    } catch (...) {
      selector_.measurement_failed(name, shape, context);
      throw;
    }
    t_measured_launch = call.correlationId;
    held_ = std::move(lock);  // until the exit callback of this launch
  }

  // Exit callback of the measured launch, on its thread.
  void end_measurement() {
    t_measured_launch.reset();
    const std::unique_lock<std::mutex> lock = std::move(held_);
    if (!window_ || window_->launches.empty()) return;
    Measured& launch = window_->launches.back();
    launch.end_ns = timestamp();
    if (window_->launches.size() >= window_->room || exhausted_.load() || stopped_.load())
      end_window();
  }

  // Ends the open window unless this thread is inside a measured launch (its
  // exit callback ends it then): at exit and when the counters stop.
  void end_open_window() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (window_ && !t_measured_launch) end_window();
    if (iterations_) {
      abandon_iterations(too_few_passes("the program ended"));
    } else if (iteration_range_ && !iterations_done_.load()) {
      report_once("--iteration-range: the program opened " + std::to_string(instances_seen_) +
                  " instance(s) of the range on a thread with a CUDA context, --skip passes "
                  "over " +
                  std::to_string(skip_instances_) + "; no counters");
    }
  }

  // Ends the open window (mutex_ held): Stop, decode, one record per launch.
  // CUPTI's calls name the window's profiler object, so any thread may end it.
  void end_window() {
    Window window = std::move(*window_);
    window_.reset();
    window_open_ = false;
    window_room_ = window.launches.size() >= window.room
                       ? std::min(window.room * 4, kWindowLaunches)
                       : kFirstWindowRoom;
    const SessionCalls session_calls;
    ProfileResult result = window.counters->session->end_launch();
    if (stopped_.load()) return;
    if (result.ranges.size() != window.launches.size()) {
      for (const Measured& launch : window.launches)
        selector_.measurement_failed(launch.name, launch.shape, launch.context);
      exhausted_ = selector_.exhausted();
      report_once(std::to_string(window.launches.size()) + " measured launch(es) from " +
                  window.launches.front().name + " gave " + std::to_string(result.ranges.size()) +
                  " counter ranges; skipped");
      return;
    }
    const RecordSource source{*window.counters, window.cupti_thread, window.phases_before,
                              window.launches.size()};
    std::vector<TraceEvent> records;
    for (std::size_t i = 0; i < window.launches.size(); ++i) {
      const Measured& launch = window.launches[i];
      // enter to exit: the launch with CUPTI's passes
      const double replay_s = static_cast<double>(launch.end_ns - launch.start_ns) * 1e-9;
      records.push_back(record(source, launch, result, i, replay_s));
      records.back().details["window_launches"] = window.launches.size();
    }
    write_(records);
  }

  // Marks this thread as inside the session's own CUPTI calls for its scope.
  struct SessionCalls {
    SessionCalls() { t_in_session = true; }
    ~SessionCalls() { t_in_session = false; }
    SessionCalls(const SessionCalls&) = delete;
    SessionCalls& operator=(const SessionCalls&) = delete;
  };

  // The collection a record comes from: whose launches, and how many records
  // share its phases.
  struct RecordSource {
    const ContextCounters& counters;
    std::uint32_t cupti_thread = 0;      // the thread as the trace names it
    ProfilerPhaseSeconds phases_before;  // the session's totals when it began
    std::size_t sharing = 1;
  };

  // The record of `launch`, whose counters are range `range` of the result.
  TraceEvent record(const RecordSource& source, const Measured& launch, const ProfileResult& result,
                    std::size_t range, double replay_s) {
    std::map<std::string, double> values;
    for (std::size_t i = 0; i < result.metrics.size(); ++i)
      values[result.metrics[i]] = result.ranges.at(range).values.at(i);
    const CollectionPlan& plan = source.counters.plan;
    const ProfilerPhaseSeconds& after = source.counters.session->phase_seconds();
    const ProfilerPhaseSeconds& before = source.phases_before;
    // Where this measurement's host time went (what the counters cost the
    // program): its own replay, and its share of the collection's other phases.
    const double share = 1.0 / static_cast<double>(source.sharing);
    const nlohmann::json cost = {{"enable", (after.enable - before.enable) * share},
                                 {"configure", (after.configure - before.configure) * share},
                                 {"start_stop", (after.start_stop - before.start_stop) * share},
                                 {"replay", replay_s},
                                 {"decode", (after.decode - before.decode) * share},
                                 {"disable", (after.disable - before.disable) * share}};
    nlohmann::json quantities = nlohmann::json::object();
    for (const auto& [quantity, value] : evaluate(plan, values))
      quantities[to_string(quantity)] = value;
    nlohmann::json extra = nlohmann::json::object();
    for (const ExtraMetric& metric : plan.extra) extra[metric.name] = values.at(metric.name);

    TraceEvent e;
    e.kind = TraceKind::kernel_counters;
    e.name = launch.name;
    e.start_ns = launch.start_ns;
    e.end_ns = launch.end_ns;
    e.device = source.counters.device;
    e.correlation_id = launch.correlation_id;
    e.process_id = static_cast<std::uint32_t>(getpid());
    e.thread_id = source.cupti_thread;
    e.details = {{"chip", plan.chip},
                 {"passes", plan.passes()},
                 {"grid", launch.shape.grid},
                 {"block", launch.shape.block},
                 {"quantities", std::move(quantities)},
                 {"cost_s", cost}};
    if (!plan.extra.empty()) e.details["metrics"] = std::move(extra);
    return e;
  }

  // A launch's kernel name, demangled once per kernel: every launch passes here,
  // and demangling costs microseconds (it made a transformer step 50% slower).
  const std::string& demangled(const char* symbol) {
    const auto found = names_.find(std::string_view(symbol));
    if (found != names_.end()) return found->second;
    return names_.emplace(symbol, demangle(symbol)).first->second;
  }

  // The context's profiler session and plan, made on its first measured launch.
  // Throws (CounterAccessError with reason and fix) where its counters cannot be read.
  ContextCounters& counters_for(CUcontext context) {
    auto found = contexts_.find(context);
    if (found != contexts_.end()) return found->second;
    std::uint32_t device = 0;
    TR_CUPTI_CHECK(cuptiGetDeviceId(context, &device));
    const SessionCalls session_calls;
    auto session = std::make_unique<ProfilerSession>(context, static_cast<int>(device));
    CollectionPlan plan = plan_collection(session->chip(), quantities_for_any_kernel(),
                                          session->counter_availability(), extra_metrics_);
    return contexts_.emplace(context, ContextCounters{std::move(session), std::move(plan), device})
        .first->second;
  }

  void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& call) {
    const void* p = call.functionParams;
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA:
        pushed(text_or_empty(static_cast<const nvtxRangePushA_params*>(p)->message));
        break;
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
        pushed(message_of(static_cast<const nvtxRangePushEx_params*>(p)->eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        pushed(message_of(static_cast<const nvtxDomainRangePushEx_params*>(p)->core.eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        if (t_pushed_ranges.empty()) break;
        iteration_range_closing(t_pushed_ranges.size(), std::nullopt);
        t_pushed_ranges.pop_back();
        break;
      case CUPTI_CBID_NVTX_nvtxRangeStartA:
        start_range(call, text_or_empty(static_cast<const nvtxRangeStartA_params*>(p)->message));
        break;
      case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        start_range(call, message_of(static_cast<const nvtxRangeStartEx_params*>(p)->eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        start_range(
            call,
            message_of(static_cast<const nvtxDomainRangeStartEx_params*>(p)->core.eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxRangeEnd:
        end_range(static_cast<const nvtxRangeEnd_params*>(p)->id);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        end_range(static_cast<const nvtxDomainRangeEnd_params*>(p)->core.id);
        break;
      default:
        break;
    }
  }

  void pushed(std::string message) {
    t_pushed_ranges.push_back(std::move(message));
    iteration_range_opened(t_pushed_ranges.back(), t_pushed_ranges.size(), std::nullopt);
  }

  void start_range(const CUpti_NvtxData& call, std::string message) {
    if (!call.functionReturnValue) return;
    const nvtxRangeId_t id = *static_cast<const nvtxRangeId_t*>(call.functionReturnValue);
    iteration_range_opened(message, 0, id);
    std::lock_guard<std::mutex> lock(ranges_mutex_);
    started_ranges_[id] = std::move(message);
  }

  void end_range(nvtxRangeId_t id) {
    iteration_range_closing(0, id);
    std::lock_guard<std::mutex> lock(ranges_mutex_);
    started_ranges_.erase(id);
  }

  // An NVTX range opened: when it is an instance of --iteration-range and none
  // is open (a nested instance belongs to the outer one), it is traced while
  // --skip lasts, then it is a counter pass. depth: the thread's push/pop depth
  // with the range open, for a pushed range; id: a started one's.
  void iteration_range_opened(const std::string& message, std::size_t depth,
                              std::optional<nvtxRangeId_t> id) {
    if (!iteration_range_ || iterations_done_.load() || stopped_.load()) return;
    if (!std::regex_search(message, *iteration_range_)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (iterations_done_.load() || (iterations_ && iterations_->open)) return;
    const CUcontext context = ContextCalls::get().current();
    if (!context) return;  // no CUDA work on this thread yet: not an iteration of it
    if (!iterations_) {
      iterations_ = IterationPasses{.context = context, .cupti_thread = cupti_thread_id()};
    } else if (context != iterations_->context) {
      abandon_iterations(
          "an instance of the range ran on another CUDA context than the first; "
          "no counters (the instances must run on one context)");
      return;
    }
    IterationPasses& it = *iterations_;
    const bool profiling = ++instances_seen_ > skip_instances_;
    if (profiling && it.passes == 0) {
      if (it.reference.empty()) {
        abandon_iterations(
            "the traced instance before the passes launched no kernel on its "
            "context; no counters (--skip past the instances without kernels)");
        return;
      }
      const SessionCalls session_calls;
      ContextCalls::get().synchronize_context(context);  // the reference's records complete
      it.counters = &counters_for(context);
      it.phases_before = it.counters->session->phase_seconds();
      // Ranges for the reference's kernels only: CUPTI's configure, Start/Stop
      // and Disable grow with the ranges a pass may hold (room for 4096 with
      // ResNet-50's 347 kernels: configure 1.6-2.1 s, Start and Stop 1.2-1.3 s a
      // pass, H200). A pass that launches more differs from the reference, which
      // the pass's own launch list shows.
      it.counters->session->begin_passes(it.counters->plan.config,
                                         std::min(it.reference.size(), kIterationKernels));
      pause_kernel_trace(true);
    }
    if (profiling) {
      const SessionCalls session_calls;
      it.counters->session->start_pass();
      ++it.passes;
    }
    it.open = true;
    it.profiling = profiling;
    it.thread = std::this_thread::get_id();
    it.depth = depth;
    it.id = id;
    it.current.clear();
    pass_open_ = true;
  }

  // An NVTX range is closing (before its pop or end): the open instance ends
  // when it is that range; a pass's kernels complete first.
  void iteration_range_closing(std::size_t depth, std::optional<nvtxRangeId_t> id) {
    if (!pass_open_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!iterations_ || !iterations_->open) return;
    IterationPasses& it = *iterations_;
    const bool ends =
        id ? it.id == id : !it.id && it.thread == std::this_thread::get_id() && it.depth == depth;
    if (!ends) return;
    it.open = false;
    pass_open_ = false;
    if (!it.profiling) {
      it.reference = std::move(it.current);
      return;
    }
    const SessionCalls session_calls;
    ContextCalls::get().synchronize_context(it.context);
    const auto same_kernel = [](const Measured& a, const Measured& b) {
      return a.name == b.name && a.shape == b.shape;
    };
    if (!std::equal(it.reference.begin(), it.reference.end(), it.current.begin(), it.current.end(),
                    same_kernel)) {
      abandon_iterations("counter pass " + std::to_string(it.passes) + " (instance " +
                         std::to_string(instances_seen_) +
                         " of the range) launched other kernels than the traced instance "
                         "before the passes (" +
                         std::to_string(it.current.size()) + " against " +
                         std::to_string(it.reference.size()) +
                         "); no counters: the instances must launch the same kernels in order "
                         "(--skip more warm-up instances, or measure with kernel replay)");
      return;
    }
    if (it.counters->session->stop_pass()) finish_iterations();
  }

  // A launch on the context of the open instance: one of its ranges, in order.
  void note_pass_launch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) {
    if (!pass_open_.load(std::memory_order_acquire)) return;
    if (call.callbackSite != CUPTI_API_ENTER) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!iterations_ || !iterations_->open || call.context != iterations_->context) return;
    // A zero span: the launch was not replayed (analysis: no replay time in its range).
    const std::uint64_t now = timestamp();
    iterations_->current.push_back(Measured{demangled(text_or_empty(call.symbolName)),
                                            shape_of(cbid, call.functionParams),
                                            {},
                                            now,
                                            now,
                                            call.correlationId});
  }

  // CUPTI has every pass, each launching the reference's kernels (mutex_ held):
  // decode, one record per launch of the traced reference instance.
  void finish_iterations() {
    IterationPasses it = std::move(*iterations_);
    iterations_.reset();
    iterations_done_ = true;
    pause_kernel_trace(false);
    const SessionCalls session_calls;
    const ProfileResult result = it.counters->session->end_passes();
    if (result.ranges.size() != it.reference.size()) {
      report_once("--iteration-range: an instance launched " + std::to_string(it.reference.size()) +
                  " kernels on its context, the counters saw " +
                  std::to_string(result.ranges.size()) +
                  (it.reference.size() > kIterationKernels
                       ? " (at most " + std::to_string(kIterationKernels) + " a pass)"
                       : std::string(" (another thread launched on the context)")) +
                  "; no counters");
      return;
    }
    const RecordSource source{*it.counters, it.cupti_thread, it.phases_before, it.reference.size()};
    std::vector<TraceEvent> records;
    for (std::size_t i = 0; i < it.reference.size(); ++i) {
      // Nothing is replayed: the counters come from the passes' own launches.
      records.push_back(record(source, it.reference[i], result, i, 0.0));
      nlohmann::json& details = records.back().details;
      details["window_launches"] = it.reference.size();
      details["iteration_passes"] = it.passes;
    }
    write_(records);
  }

  // Iteration replay cannot finish (mutex_ held): the collection is torn down,
  // the kernel trace resumed, and `why` said.
  void abandon_iterations(const std::string& why) {
    IterationPasses it = std::move(*iterations_);
    iterations_.reset();
    iterations_done_ = true;
    pass_open_ = false;
    if (it.counters) {
      const SessionCalls session_calls;
      it.counters->session->abandon_passes();
      pause_kernel_trace(false);
    }
    report_once("--iteration-range: " + why);
  }
  // Why iteration replay ended before CUPTI had every pass.
  std::string too_few_passes(const std::string& why) const {
    const IterationPasses& it = *iterations_;
    const std::string needed =
        it.counters ? std::to_string(it.counters->plan.passes()) : std::string("the");
    return why + " after " + std::to_string(instances_seen_) + " instance(s) of the range, " +
           std::to_string(it.passes) + " of them counter passes of " + needed +
           " CUPTI needs (--skip " + std::to_string(skip_instances_) +
           " traced first); no counters: run more iterations";
  }

  // The passes' kernels are not traced: CUPTI's kernel activity during user
  // replay gave zero SASS counts, added a kernel of its own after each range and
  // timed the last pass's kernels ~50x too long (nvtx_layers, H200).
  void pause_kernel_trace(bool paused) {
    if (paused)
      TR_CUPTI_CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    else
      TR_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }

  std::vector<std::string> open_ranges() {
    if (!selector_.wants_nvtx()) return {};
    std::vector<std::string> open = t_pushed_ranges;
    std::lock_guard<std::mutex> lock(ranges_mutex_);
    for (const auto& [id, message] : started_ranges_) open.push_back(message);
    return open;
  }

  void report_once(const std::string& what) {
    if (!reported_.exchange(true)) std::fprintf(stderr, "timeroof profile: %s\n", what.c_str());
  }

  // The counters stop for good (the trace goes on). A launch being measured is
  // ended by its own exit callback, which still runs; an open window is ended
  // here, unrecorded, so no later kernel is replayed.
  void stop(const std::string& why) noexcept {
    if (stopped_.exchange(true)) return;
    std::fprintf(stderr, "timeroof profile: kernel counters stop: %s\n", why.c_str());
    try {
      end_open_window();
    } catch (...) {  // stopping already: nothing more to say
    }
  }

  std::vector<std::string> extra_metrics_;  // the user's --metrics, in every plan
  KernelSelector selector_;
  Writer write_;
  std::uint64_t skip_instances_ = 0;  // --iteration-range: instances passed over
  std::optional<std::regex> iteration_range_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> exhausted_{false};  // no later launch can be selected
  std::atomic<bool> reported_{false};

  std::mutex mutex_;  // selector_, contexts_, window_
  std::unique_lock<std::mutex> held_;
  std::optional<Window> window_;
  std::atomic<bool> window_open_{false};  // window_ is set: the unlocked check per driver call
  std::vector<CUpti_CallbackId> window_ending_;  // set by start(), read-only after
  std::optional<IterationPasses> iterations_;
  std::uint64_t instances_seen_ = 0;
  std::atomic<bool> iterations_done_{false};
  std::atomic<bool> pass_open_{false};  // iterations_->open: the unlocked check per launch
  std::map<CUcontext, ContextCounters> contexts_;
  // Mangled -> demangled kernel names (string_view lookups: no allocation per launch).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };
  std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> names_;

  std::mutex ranges_mutex_;
  std::map<nvtxRangeId_t, std::string> started_ranges_;
};

KernelCounters::KernelCounters(const KernelSelectionOptions& options, Writer write)
    : impl_(std::make_unique<Impl>(options, std::move(write))) {}

KernelCounters::~KernelCounters() = default;

void KernelCounters::start(CuptiSubscriber& subscriber) {
  impl_->start(subscriber);
}

void KernelCounters::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) noexcept {
  impl_->on_callback(domain, cbid, data);
}

void KernelCounters::finish() noexcept {
  impl_->finish();
}

}  // namespace timeroof::inject
