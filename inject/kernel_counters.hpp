// Per-kernel hardware counters of a profiled program (issue 17): the launches
// KernelSelector picks are measured with the CUPTI range profiler in kernel
// replay, bracketed by CUPTI's launch callbacks, and each becomes one
// `kernel_counters` TraceEvent (core/trace_events.hpp) in the journal, tied to
// its `kernel` record by (process_id, correlation_id). Part of the injection
// library of `timeroof profile`.
//
// Why it is built the way it is:
//  - Kernel replay runs inside the launch call: the range profiler is started in
//    the launch's enter callback and stopped in its exit callback, so nothing of
//    the program changes but the time that launch takes (and its kernel record's
//    duration, which the analysis does not use for measured launches).
//  - One measured launch at a time per process: a mutex is held from the enter
//    to the exit callback, so no other thread's kernel lands in the range.
//  - Selected launches in a row share one window of the range profiler (its
//    Start and Stop cost ~145 ms, more than a short kernel's passes); the window
//    ends before any launch that does not join it, so unselected kernels run
//    unprofiled. A kill loses the records of the window still open.
//  - Every quantity of core/quantities.hpp (no sparse work), since a program's
//    kernels come with no precision; the user's --metrics join the same passes.
//  - Failures never reach the program: the first one is one stderr line and the
//    counters stop; the trace goes on.
#pragma once

#include <cupti_callbacks.h>

#include <functional>
#include <memory>
#include <vector>

#include "core/kernel_selection.hpp"
#include "core/trace_events.hpp"
#include "counters/launch_namer.hpp"

namespace timeroof::inject {

class KernelCounters {
 public:
  // Appends records to the journal: a window's launches at once, so that each
  // replayed kernel's span is known before CUPTI's buffers holding it are flushed.
  using Writer = std::function<void(const std::vector<TraceEvent>&)>;

  KernelCounters(const KernelSelectionOptions& options, Writer write);
  ~KernelCounters();
  KernelCounters(const KernelCounters&) = delete;
  KernelCounters& operator=(const KernelCounters&) = delete;

  // Enables the launch callbacks (and NVTX's, for --nvtx) on the process's one
  // subscriber (shared with the launch namer), whose callback passes every
  // callback to on_callback. Throws GpuError when CUPTI refuses.
  void start(CuptiSubscriber& subscriber);
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) noexcept;
  // At exit: records the launches of a window still open (see the .cpp's Window).
  void finish() noexcept;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace timeroof::inject
