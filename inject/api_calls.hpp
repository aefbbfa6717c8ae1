// The API calls `timeroof profile --api launches` records (launches, copies,
// waits), taken from CUPTI's callback API rather than single-call activity
// records (#17): the same calls and fields (correlation ids, CUPTI's clock and
// thread ids; gpu_profile_test compares the two), and on a PyTorch ResNet-50 it
// cost less in each of three H200 calls (docs/design.md: 0.11-0.30 of the
// untraced iteration, on a noisy machine). It needs no per-call activity functions
// of the CUPTI the program loaded; TIMEROOF_PROFILE_API_RECORDS=activity measures
// the old way again.
//
// The callbacks run on the program's threads: entering a recorded call takes a
// timestamp (kept in the call's correlation data), leaving it appends one
// record under a mutex (no allocation but the vector's growth); the tracer's
// flusher takes them out every 100 ms and names them.
#pragma once

#include <cupti_callbacks.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/api_tracing.hpp"
#include "counters/activity_tracer.hpp"

namespace timeroof::inject {

// The thread id CUPTI's activity records carry (pthread_self, or the system's
// thread id where the program chose CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), so a
// record made here names its thread as the trace does.
std::uint32_t cupti_thread_id();
// CUPTI's clock (cuptiGetTimestamp), the one its activity records carry.
std::uint64_t cupti_timestamp() noexcept;

class ApiCallRecorder {
 public:
  using Clock = std::uint64_t (*)();
  // `clock`: CUPTI's (cuptiGetTimestamp, the activity records' clock); a test
  // passes its own.
  explicit ApiCallRecorder(Clock clock = &cupti_timestamp);
  ApiCallRecorder(const ApiCallRecorder&) = delete;
  ApiCallRecorder& operator=(const ApiCallRecorder&) = delete;

  // Records the calls `cbid` of `domain` from now on; the caller enables their
  // callbacks. Call before the program's threads make them.
  void record(ApiDomain domain, CUpti_CallbackId cbid);
  bool records(ApiDomain domain, CUpti_CallbackId cbid) const noexcept;

  // A callback of the runtime or driver API (others are ignored). A call made
  // inside a recorded call of the same API on the same thread is not recorded: it
  // is the outer call's (CUPTI's own calls while it replays a measured launch).
  // Nor is a driver call made inside a recorded runtime call, as CUPTI's activity
  // records leave it out: the runtime call stands for it.
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                   const CUpti_CallbackData& call) noexcept;

  // The calls ended since the last take, in the order they ended; the name is
  // left to the caller (ActivityDecoder::api_name), the process id is this one's.
  std::vector<ApiActivity> take();
  // Calls not recorded because kMaxPending were waiting (nobody took them).
  std::size_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  // Records nothing more (tracing stopped after a failure).
  void stop() noexcept { stopped_.store(true, std::memory_order_relaxed); }
  // From now on a forked child starts with no records waiting (they are the
  // parent's, which writes them) and a lock no thread of the parent held at the
  // fork. For one recorder a process never destroys (fork handlers stay).
  void keep_records_out_of_forked_children();

  // A bound on the records waiting: a forked child has no flusher thread, and a
  // record is under 100 bytes.
  static constexpr std::size_t kMaxPending = std::size_t{1} << 20;

 private:
  Clock clock_;
  std::vector<bool> runtime_calls_;  // by callback id
  std::vector<bool> driver_calls_;
  std::atomic<bool> stopped_{false};
  std::atomic<std::size_t> dropped_{0};
  std::mutex mutex_;                  // pending_
  std::vector<ApiActivity> pending_;  // unnamed: names are looked up when written
};

}  // namespace timeroof::inject
