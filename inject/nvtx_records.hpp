// The NVTX ranges and marks of a profiled program recorded from CUPTI's NVTX
// callbacks rather than its MARKER activity records (#17): the same
// TraceEvents (message, domain, category, color, process and thread, CUPTI's
// clock; gpu_profile_test compares the two ways). A diagnostic until measured
// on the GPU, TIMEROOF_PROFILE_NVTX_RECORDS=callbacks: on a PyTorch ResNet-50
// the 184 per-module ranges of an iteration were the suspect for most of what
// tracing without API records costs (docs/design.md).
//
// The callback runs on the program's thread once the NVTX call is made: one
// clock reading, then under one lock a push onto the thread's stack, or an
// ended range or a mark appended. The tracer's flusher takes them out.
#pragma once

#include <cupti_callbacks.h>
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/trace_events.hpp"
#include "inject/api_calls.hpp"

namespace timeroof::inject {

struct NvtxForms;  // the callback ids of a call's forms (nvtx_records.cpp)

class NvtxRecorder {
 public:
  using Clock = std::uint64_t (*)();
  // `clock`: CUPTI's; a test passes its own.
  explicit NvtxRecorder(Clock clock = &cupti_timestamp) : clock_(clock) {}
  NvtxRecorder(const NvtxRecorder&) = delete;
  NvtxRecorder& operator=(const NvtxRecorder&) = delete;

  // The NVTX callbacks it reads: ranges, marks, and the names of domains and
  // registered strings. The caller enables them, then calls record().
  static std::span<const CUpti_CallbackId> callbacks() noexcept;
  // Records from now on; until then (and after stop()) callbacks are ignored:
  // the counters' --nvtx selection shares the subscriber.
  void record() noexcept { recording_.store(true, std::memory_order_relaxed); }
  void stop() noexcept { recording_.store(false, std::memory_order_relaxed); }
  bool recording() const noexcept { return recording_.load(std::memory_order_relaxed); }

  // One NVTX callback (made after the call: RangeStart's id is its return value).
  void on_callback(CUpti_CallbackId cbid, const CUpti_NvtxData& call) noexcept;

  // The ranges ended and the marks made since the last take, in that order, as
  // TraceEvents of this process.
  std::vector<TraceEvent> take();
  // The ranges still open, ending at `now_ns` with details.unclosed = true; forgets them.
  std::vector<TraceEvent> take_open(std::uint64_t now_ns);
  // Ranges and marks not recorded because kMaxPending were waiting.
  std::size_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  // A forked child starts with nothing waiting or open (the parent's), its
  // domains and registered strings kept. For a recorder a process never destroys.
  void keep_records_out_of_forked_children();

  static constexpr std::size_t kMaxPending = std::size_t{1} << 20;

 private:
  struct Record {
    TraceKind kind = TraceKind::nvtx_range;
    std::string name;
    nvtxDomainHandle_t domain = nullptr;  // the default domain
    std::uint64_t start_ns = 0;
    std::uint64_t end_ns = 0;
    std::uint32_t thread_id = 0;
    std::uint32_t category = 0;
    std::optional<std::uint32_t> color;  // ARGB, where the call set one
    std::uint32_t id = 0;
  };
  // What a call's attributes say, its message resolved (call under the lock).
  Record from_attributes(const nvtxEventAttributes_t* attributes) const;
  // What a marking, pushing or starting call says in any of its forms (under the lock).
  template <typename Ascii, typename Wide, typename Attributes, typename InDomain>
  Record described(CUpti_CallbackId cbid, const NvtxForms& forms, const CUpti_NvtxData& call) const;
  void push(std::uint32_t thread_id, Record range);
  void pop(std::uint32_t thread_id, nvtxDomainHandle_t domain, std::uint64_t now);
  void start(nvtxRangeId_t id, Record range);
  void end(nvtxRangeId_t id, std::uint64_t now);
  void finished(Record record);  // under the lock
  TraceEvent event_of(Record record) const;

  Clock clock_;
  std::atomic<bool> recording_{false};
  std::atomic<std::size_t> dropped_{0};
  std::mutex mutex_;  // everything below
  std::vector<Record> done_;
  std::unordered_map<std::uint32_t, std::vector<Record>> pushed_;  // by thread
  std::unordered_map<nvtxRangeId_t, Record> started_;
  std::unordered_map<nvtxDomainHandle_t, std::string> domains_;
  std::unordered_map<nvtxStringHandle_t, std::string> strings_;
  std::uint32_t next_id_ = 1;
};

}  // namespace timeroof::inject
