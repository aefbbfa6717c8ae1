// The sweep runner's state and the steps of one point, private to the runner's
// three files: runner.cpp (the sweep loop), runner_timing.cpp (the copies and the
// timing windows) and runner_counters.cpp (the CUPTI trace and counter passes).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "measure/l2_flush.hpp"
#include "measure/warmup.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/runner.hpp"
#include "sweeps/timing_worker.hpp"

namespace timeroof {

// Host memory of one transferred tensor: page-locked (cudaMallocHost), or ordinary
// pageable heap memory, page-aligned as a host allocator hands out large blocks and
// touched once, so no first-touch page fault lands in a timed call.
class HostBuffer {
 public:
  HostBuffer(std::size_t bytes, bool pinned);
  void* get() const noexcept {
    return pageable_ ? static_cast<void*>(pageable_.get()) : static_cast<void*>(pinned_.get());
  }

 private:
  struct Free {
    void operator()(std::byte* memory) const noexcept { std::free(memory); }
  };
  PinnedBuffer<std::byte> pinned_;
  std::unique_ptr<std::byte, Free> pageable_;
};

// One tensor copied with each call, and its host side.
struct HostCopy {
  DeviceTensor tensor;
  HostBuffer host;
};

// The copies around each call of one point (RunnerOptions::transfer).
struct Transfers {
  std::vector<HostCopy> h2d;  // before run(): the operator's inputs()
  std::vector<HostCopy> d2h;  // after run(): its outputs(), for h2d_input_d2h_output
};
// A point whose timing and trace are done, waiting for its counters with its
// operator (and the operator's device memory) kept alive; `op` is null once the
// point is final.
struct PendingPoint {
  std::unique_ptr<Operator> op;
  Point point;
  // Host-side windows (runner.hpp): the revisits taken so far, each a Timing
  // of T_call, issue and T_stream with its record for details["timing"]
  // ["windows"]; `windows_wanted` counts the first; `windows_end` says why the
  // revisits stopped early ("" while none did).
  int windows_wanted = 1;
  std::vector<Timing> revisits;
  std::vector<nlohmann::json> revisit_records;
  std::string windows_end;
  bool needs_revisit() const {
    return windows_end.empty() && 1 + static_cast<int>(revisits.size()) < windows_wanted;
  }
  // When its latest window began (seconds on the runner's clock).
  double last_window_at_s() const {
    if (!revisit_records.empty()) return revisit_records.back().value("at_s", 0.0);
    const nlohmann::json& timing = point.details.value("timing", nlohmann::json::object());
    return timing.value("at_s", 0.0);
  }
};

struct SweepRunner::State {
  GpuInfo gpu;
  RunnerOptions options;
  Stream stream;
  // Created on first use by the first operator that calls each library.
  std::shared_ptr<LibraryHandles> libraries = std::make_shared<LibraryHandles>();
  std::optional<L2Flusher> flusher;
  std::unique_ptr<ClockReader> clock_reader;  // NVML loaded once per runner, on first use
  // CUPTI has been used in this process (a trace or a counter collection): it
  // stays attached, and on an H100 host-side times after it read up to 1.5x
  // those of a process that never used it (bench/harness_overhead E1), so each
  // point records whether its timing ran after it.
  bool cupti_attached = false;
  // The timing worker, started on first use; once it fails, every later point
  // is timed here and says why.
  std::unique_ptr<TimingWorker> worker;
  std::string worker_failure;
  // The runner's clock: timing windows say when they began, in seconds on it.
  const std::chrono::steady_clock::time_point clock_origin = std::chrono::steady_clock::now();
  // Counters: one session per sweep, created on first use; if it cannot be
  // created, every point says why and keeps its timing.
  std::unique_ptr<ProfilerSession> profiler;
  std::string counters_unavailable;
  double counter_wait_s = 0;                    // how long it waited, in all
  std::map<std::string, CollectionPlan> plans;  // by precision/math
  // Points a run() with LastBatch::keep left waiting for their counters, and
  // how many of them wait under each plan_key.
  std::vector<PendingPoint> kept;
  std::map<std::string, std::size_t> kept_waiting;
  std::vector<PendingPoint> kept_windowing;  // and those waiting for their windows

  // Operators with the same key are profiled with the same metrics.
  static std::string plan_key(const Operator& op);

  // The sweep loop (runner.cpp).
  // Steps 1-6 of a point (runner.hpp); the operator stays with the point when
  // its counters are still to be collected.
  PendingPoint measure_until_counters(const OperatorFamily& family, const nlohmann::json& params,
                                      const std::string& sweep, int seq);
  // Less than half the device memory free: points waiting for their counters
  // should give theirs back before the next point allocates.
  bool memory_is_tight() const;

  // Copies and timing windows (runner_timing.cpp).
  const ClockReader& clocks();
  // Host buffers for the point's copies. The host inputs start as copies of the
  // device inputs, so every call's H2D rewrites the same data and the operator
  // computes what check() verified (zeros would also run faster than real data).
  Transfers transfers_for(const Operator& op);
  // One call as the timing and trace passes measure it: the inputs' copies, the
  // operator, the outputs' copies, in order on `s`.
  static void call(Operator& op, const Transfers& transfers, cudaStream_t s);
  // What precedes each timed and counted call: the L2 flush when cold.
  std::function<void(cudaStream_t)> prelude();
  // The call with its copies (timing and trace), or run() alone (counters:
  // copies are not kernels).
  CallUnderTest call_under_test(Operator& op, const Transfers& transfers);
  CallUnderTest run_alone(Operator& op);
  // Step 5: warm-up, then T_call (with the host issue time), T_stream and
  // T_graph in alternating rounds (measure/interleaved.hpp), each until its
  // interval is narrow enough or its budget is spent, the measuring thread
  // pinned to its core.
  void timing_pass(Operator& op, const Transfers& transfers, Point& point,
                   TimingWindow window = TimingWindow::first);
  // `window` of a point timed in the timing worker (timing_worker.hpp) with
  // `algorithm` pinned, so both processes run the same plan: true with `timed`'s
  // times and details["timing"] set; false where there is no worker or it
  // failed, with `why_here` saying why ("" when none is configured).
  bool time_in_worker(const OperatorFamily& family, const nlohmann::json& params,
                      const std::string& algorithm, TimingWindow window, Point& timed,
                      std::string& why_here);
  // Step 5, the point's first timing window: in the timing worker, or in this
  // process where there is none or it fails, saying why.
  void timing_step(const OperatorFamily& family, const nlohmann::json& params, Operator& op,
                   const Transfers& transfers, Point& point);
  // Build, prepare and time a point in this process (the timing worker's job;
  // a revisit here where there is no worker).
  Point time_here(const OperatorFamily& family, const nlohmann::json& params, TimingWindow window);
  // How many windows a timed point gets (runner.hpp), and why, into
  // details["timing"]["host_windows"].
  void plan_windows(PendingPoint& pending) const;
  // One more window of a point's host-side times, where its first ran; a
  // revisit that fails ends the point's windows and says why.
  void revisit(const OperatorFamily& family, PendingPoint& pending);
  // A point's T_call, issue time and T_stream from all its windows
  // (combine_windows), each window kept in details["timing"]["windows"].
  static void join_windows(PendingPoint& pending);
  // One revisit of each point that wants one and whose latest window began at
  // least `min_age_s` ago, in order; skipped, and said, once `stop` is set.
  // `announce` names the step for the progress line.
  void revisit_pass(std::vector<PendingPoint>& points, const OperatorFamily& family,
                    const std::atomic<bool>& stop, double min_age_s,
                    const std::function<void(const std::string&)>& announce);
  // Every window still wanted, without waiting: the end of a sweep.
  void remaining_windows(std::vector<PendingPoint>& points, const OperatorFamily& family,
                         const std::atomic<bool>& stop,
                         const std::function<void(const std::string&)>& announce);

  // The CUPTI trace and counter passes (runner_counters.cpp).
  ProfilerSession* session();
  // Another process holds the GPU's counters (a profiler, another timeroof)
  // before this sweep's profiler session exists: probe again every second until
  // they are free. The waiting budget, options.counter_wait_s, is for the whole
  // sweep, shared with collect_waiting: CUPTI holds the counters per
  // collection, so processes take turns and a sweep may find them taken more
  // than once. With the budget spent, points keep their timing and say why.
  bool wait_for_counters();
  // Runs one counter collection; when another process takes the counters
  // before or during it, tries again every second within the sweep's waiting
  // budget. The collection itself is the probe: probe_counter_access would
  // initialize and tear down CUPTI's profiler in this process under the
  // runner's own session. Counters that stay taken make the points
  // counters_unavailable, not failed.
  template <typename Collect>
  Outcome collect_waiting(Collect&& collect);
  std::string waited_text() const;
  const CollectionPlan& plan_for(ProfilerSession& session, const Operator& op);
  void trace_pass(Operator& op, const Transfers& transfers, Point& point);
  // Marks the point when no counters can be collected; false then.
  bool counters_possible(Point& point);
  // A point whose counters stayed taken by another process keeps its timing.
  static void mark_timing_only(Point& point, const std::string& reason);
  // The fallback: one collection for one point (profile_call_kernels), with the
  // L2 flush, if cold, outside the counters before each pass. Warm is then only
  // the L2 CUPTI leaves between passes: on an H200 it had evicted the call's
  // data (a batch-4 conv read its whole input from DRAM, 0 B with a prelude).
  void counter_pass_alone(Operator& op, Point& point, const std::string& why);
  // The counters of points that share a collection plan, in one collection
  // (profile_call_batch; a single point is a batch of one). Before each call a
  // prelude inside the pass puts L2 where the timing pass found it: a flush when
  // cold; when warm, one call of the same operator, as the timed calls run back
  // to back. Falls back to one collection per point when the batch cannot be
  // profiled as declared (a call launched other kernels than its trace showed).
  void counter_batch(const std::vector<PendingPoint*>& batch);
  // counter_pass_alone, its failure the point's status.
  void run_guarded(PendingPoint& pending, const std::string& why);
  // Collects the counters of every point in `points` that waits for them, in
  // batches of points with the same collection plan, and releases their operators.
  void collect_counters(std::vector<PendingPoint>& points);
  void flush_if_cold();
};

}  // namespace timeroof
