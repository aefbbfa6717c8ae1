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
#include <generated_cuda_meta.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/quantities.hpp"
#include "counters/activity_tracer.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/check_cupti.hpp"

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

// The thread id CUPTI's activity records carry, so a kernel_counters record
// names its thread as the trace does.
std::uint32_t cupti_thread_id() {
  CUpti_ActivityThreadIdType type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  if (cuptiGetThreadIdType(&type) == CUPTI_SUCCESS && type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
    return static_cast<std::uint32_t>(::syscall(SYS_gettid));
  return static_cast<std::uint32_t>(pthread_self());
}

std::uint64_t timestamp() {
  std::uint64_t now = 0;
  TR_CUPTI_CHECK(cuptiGetTimestamp(&now));
  return now;
}

const char* text_or_empty(const char* text) {
  return text ? text : "";
}

// The correlation id of the launch this thread is measuring, between its enter
// and exit callbacks: any other callback of this thread then comes from inside
// the measurement (CUPTI's replay, the session's own calls) and is ignored.
thread_local std::optional<std::uint32_t> t_measured_launch;
// This thread is inside the profiler session's own CUPTI calls.
thread_local bool t_in_session = false;
// The launching thread's NVTX push/pop stack (--nvtx).
thread_local std::vector<std::string> t_pushed_ranges;

}  // namespace

class KernelCounters::Impl {
 public:
  Impl(const KernelSelectionOptions& options, Writer write)
      : extra_metrics_(options.metrics), selector_(options), write_(std::move(write)) {}

  void start(CuptiSubscriber& subscriber) {
    for (CUpti_CallbackId cbid : kernel_launch_callbacks())
      subscriber.enable(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    subscriber.enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (selector_.wants_nvtx())
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
        if (is_kernel_launch_callback(cbid))
          begin_measurement(cbid, *static_cast<const CUpti_CallbackData*>(data));
      } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
        on_nvtx(cbid, *static_cast<const CUpti_NvtxData*>(data));
      } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) return;
        std::lock_guard<std::mutex> lock(mutex_);
        contexts_.erase(static_cast<const CUpti_ResourceData*>(data)->context);
      }
    } catch (const std::exception& e) {
      stop(e.what());
    } catch (...) {  // nothing may leave a CUPTI callback
      stop("an unknown exception");
    }
  }

 private:
  struct ContextCounters {
    std::unique_ptr<ProfilerSession> session;
    CollectionPlan plan;
    std::uint32_t device = 0;
  };

  // The launch between its enter and exit callbacks.
  struct Measured {
    std::string name;
    LaunchShape shape;
    ContextCounters* counters = nullptr;
    std::uint64_t start_ns = 0;
    std::uint32_t correlation_id = 0;
    ProfilerPhaseSeconds phases_before;  // the session's totals when it began
  };

  // Enter callback of any launch: measures it when the selector picks it.
  void begin_measurement(CUpti_CallbackId cbid, const CUpti_CallbackData& call) {
    if (call.callbackSite != CUPTI_API_ENTER || exhausted_.load(std::memory_order_relaxed)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    const std::string& name = demangled(text_or_empty(call.symbolName));
    const LaunchShape shape = shape_of(cbid, call.functionParams);
    const bool selected = selector_.select(name, shape, open_ranges());
    if (selector_.exhausted()) exhausted_ = true;
    if (!selected) return;
    try {
      ContextCounters& counters = counters_for(call.context);
      const std::uint64_t start_ns = timestamp();
      const ProfilerPhaseSeconds before = counters.session->phase_seconds();
      const SessionCalls session_calls;
      counters.session->begin_launch(counters.plan.config);
      measured_ = Measured{name, shape, &counters, start_ns, call.correlationId, before};
    } catch (...) {
      selector_.measurement_failed(name, shape);
      throw;
    }
    t_measured_launch = call.correlationId;
    held_ = std::move(lock);  // until the exit callback of this launch
  }

  // Exit callback of the measured launch, on its thread.
  void end_measurement() {
    t_measured_launch.reset();
    const std::unique_lock<std::mutex> lock = std::move(held_);
    if (!measured_) return;
    const Measured launch = std::move(*measured_);
    measured_.reset();
    const SessionCalls session_calls;
    ProfileResult result = launch.counters->session->end_launch();
    if (stopped_.load()) return;
    if (result.ranges.size() != 1) {
      selector_.measurement_failed(launch.name, launch.shape);
      exhausted_ = selector_.exhausted();
      report_once("a measured launch of " + launch.name + " gave " +
                  std::to_string(result.ranges.size()) + " counter ranges instead of 1; skipped");
      return;
    }
    write_(record(launch, result, timestamp()));
  }

  // Marks this thread as inside the session's own CUPTI calls for its scope.
  struct SessionCalls {
    SessionCalls() { t_in_session = true; }
    ~SessionCalls() { t_in_session = false; }
    SessionCalls(const SessionCalls&) = delete;
    SessionCalls& operator=(const SessionCalls&) = delete;
  };

  TraceEvent record(const Measured& launch, const ProfileResult& result, std::uint64_t end_ns) {
    std::map<std::string, double> values;
    for (std::size_t i = 0; i < result.metrics.size(); ++i)
      values[result.metrics[i]] = result.ranges.front().values.at(i);
    const CollectionPlan& plan = launch.counters->plan;
    const ProfilerPhaseSeconds& after = launch.counters->session->phase_seconds();
    const ProfilerPhaseSeconds& before = launch.phases_before;
    // Where this measurement's host time went (what the counters cost the program).
    const nlohmann::json cost = {{"enable", after.enable - before.enable},
                                 {"configure", after.configure - before.configure},
                                 {"start_stop", after.start_stop - before.start_stop},
                                 {"replay", after.replay - before.replay},
                                 {"decode", after.decode - before.decode},
                                 {"disable", after.disable - before.disable}};
    nlohmann::json quantities = nlohmann::json::object();
    for (const auto& [quantity, value] : evaluate(plan, values))
      quantities[to_string(quantity)] = value;
    nlohmann::json extra = nlohmann::json::object();
    for (const ExtraMetric& metric : plan.extra) extra[metric.name] = values.at(metric.name);

    TraceEvent e;
    e.kind = TraceKind::kernel_counters;
    e.name = launch.name;
    e.start_ns = launch.start_ns;
    e.end_ns = end_ns;
    e.device = launch.counters->device;
    e.correlation_id = launch.correlation_id;
    e.process_id = static_cast<std::uint32_t>(getpid());
    e.thread_id = cupti_thread_id();
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
        t_pushed_ranges.emplace_back(
            text_or_empty(static_cast<const nvtxRangePushA_params*>(p)->message));
        break;
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
        t_pushed_ranges.push_back(
            message_of(static_cast<const nvtxRangePushEx_params*>(p)->eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        t_pushed_ranges.push_back(
            message_of(static_cast<const nvtxDomainRangePushEx_params*>(p)->core.eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        if (!t_pushed_ranges.empty()) t_pushed_ranges.pop_back();
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

  void start_range(const CUpti_NvtxData& call, std::string message) {
    if (!call.functionReturnValue) return;
    const nvtxRangeId_t id = *static_cast<const nvtxRangeId_t*>(call.functionReturnValue);
    std::lock_guard<std::mutex> lock(ranges_mutex_);
    started_ranges_[id] = std::move(message);
  }

  void end_range(nvtxRangeId_t id) {
    std::lock_guard<std::mutex> lock(ranges_mutex_);
    started_ranges_.erase(id);
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
  // ended by its own exit callback, which still runs.
  void stop(const std::string& why) noexcept {
    if (stopped_.exchange(true)) return;
    std::fprintf(stderr, "timeroof profile: kernel counters stop: %s\n", why.c_str());
  }

  std::vector<std::string> extra_metrics_;  // the user's --metrics, in every plan
  KernelSelector selector_;
  Writer write_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> exhausted_{false};  // no later launch can be selected
  std::atomic<bool> reported_{false};

  std::mutex mutex_;  // selector_, contexts_, measured_
  std::unique_lock<std::mutex> held_;
  std::optional<Measured> measured_;
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

}  // namespace timeroof::inject
