#include "inject/api_calls.hpp"

#include <cupti_activity.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "inject/fork_guard.hpp"

namespace timeroof::inject {
namespace {

// How deep this thread is in recorded calls of each API (runtime, driver).
thread_local int t_depth[2] = {0, 0};

int domain_index(ApiDomain domain) {
  return domain == ApiDomain::runtime ? 0 : 1;
}

}  // namespace

std::uint32_t cupti_thread_id() {
  CUpti_ActivityThreadIdType type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  if (cuptiGetThreadIdType(&type) == CUPTI_SUCCESS && type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
    return static_cast<std::uint32_t>(::syscall(SYS_gettid));
  return static_cast<std::uint32_t>(pthread_self());
}

ApiCallRecorder::ApiCallRecorder(Clock clock)
    : clock_(clock),
      runtime_calls_(static_cast<std::size_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE), false),
      driver_calls_(static_cast<std::size_t>(CUPTI_DRIVER_TRACE_CBID_SIZE), false) {}

std::uint64_t cupti_timestamp() noexcept {
  std::uint64_t now = 0;
  cuptiGetTimestamp(&now);  // cannot fail once CUPTI is loaded; 0 would only misplace a record
  return now;
}

void ApiCallRecorder::record(ApiDomain domain, CUpti_CallbackId cbid) {
  std::vector<bool>& calls = domain == ApiDomain::runtime ? runtime_calls_ : driver_calls_;
  if (cbid >= calls.size()) calls.resize(cbid + 1, false);  // a newer CUPTI's id
  calls[cbid] = true;
}

bool ApiCallRecorder::records(ApiDomain domain, CUpti_CallbackId cbid) const noexcept {
  const std::vector<bool>& calls = domain == ApiDomain::runtime ? runtime_calls_ : driver_calls_;
  return cbid < calls.size() && calls[cbid];
}

void ApiCallRecorder::on_callback(CUpti_CallbackDomain callback_domain, CUpti_CallbackId cbid,
                                  const CUpti_CallbackData& call) noexcept {
  if (callback_domain != CUPTI_CB_DOMAIN_RUNTIME_API &&
      callback_domain != CUPTI_CB_DOMAIN_DRIVER_API)
    return;
  const ApiDomain domain =
      callback_domain == CUPTI_CB_DOMAIN_RUNTIME_API ? ApiDomain::runtime : ApiDomain::driver;
  // The shared subscriber also brings the calls the namer and the counters enabled.
  if (!records(domain, cbid) || call.correlationData == nullptr) return;
  int& depth = t_depth[domain_index(domain)];
  if (call.callbackSite == CUPTI_API_ENTER) {
    // CUPTI's activity records leave out the driver calls a runtime call makes.
    const bool outermost = depth++ == 0 && (domain == ApiDomain::runtime ||
                                            t_depth[domain_index(ApiDomain::runtime)] == 0);
    // The start, or 0 for a call not recorded; the exit reads it back.
    *call.correlationData = outermost && !stopped_.load(std::memory_order_relaxed)
                                ? std::max<std::uint64_t>(clock_(), 1)
                                : 0;
    return;
  }
  if (depth > 0) --depth;
  const std::uint64_t start_ns = *call.correlationData;
  if (start_ns == 0 || stopped_.load(std::memory_order_relaxed)) return;
  std::uint32_t return_value = 0;
  if (call.functionReturnValue != nullptr)  // a cudaError_t or a CUresult, both 32-bit enums
    std::memcpy(&return_value, call.functionReturnValue, sizeof return_value);
  thread_local const std::uint32_t thread_id = cupti_thread_id();
  ApiActivity done;
  done.domain = domain;
  done.cbid = cbid;
  done.start_ns = start_ns;
  done.end_ns = std::max(clock_(), start_ns);
  done.correlation_id = call.correlationId;
  done.thread_id = thread_id;
  done.return_value = return_value;
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_.size() >= kMaxPending) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    pending_.push_back(std::move(done));
  } catch (...) {  // no memory: the call goes unrecorded, counted
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ApiCallRecorder::keep_records_out_of_forked_children() {
  hold_across_fork(mutex_, [this] { pending_.clear(); });
}

std::vector<ApiActivity> ApiCallRecorder::take() {
  std::vector<ApiActivity> calls;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    calls.swap(pending_);
  }
  const auto process_id = static_cast<std::uint32_t>(getpid());
  for (ApiActivity& call : calls) call.process_id = process_id;
  return calls;
}

}  // namespace timeroof::inject
