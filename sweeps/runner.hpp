// The sweep runner: measures each point of a sweep and hands it to a sink (the
// results store) as soon as it is done, so a killed sweep keeps every finished
// point and --resume continues it. Per point, in this order:
//   1. build the operator (no GPU work) and describe it (analytic FLOPs/bytes);
//   2. prepare: allocate, fill random data, choose the algorithm;
//   3. check the output once (CPU reference or a second algorithm);
//   4. warm up (measure/warmup.hpp);
//   5. timing: T_call with the host issue time, T_stream and T_graph
//      (measure/synchronized.hpp, back_to_back.hpp, graph_replay.hpp), each until
//      the 95% interval of its median is within +-1% or its budget is spent, the
//      thread pinned to its core; L2 flushed before each call when cold. Run in
//      the timing worker (timing_worker.hpp: a process CUPTI never attached to,
//      the algorithm chosen here pinned) where RunnerOptions::timing_worker
//      names one; here otherwise, or where the worker fails (details say why).
//      This is the first of the point's timing windows: see host_windows;
//   6. trace pass (measure/trace_calls.hpp): CUPTI activity records of a few calls
//      -> kernels, launches, API time (and every API name per call), gaps,
//      transfers (times: the median over the calls);
//   7. counter pass: one range per kernel of one call, the call replayed per pass
//      (the catalog's plan for the operator's precision), or the point is marked
//      counters_unavailable with the reason and keeps its timing. run() collects
//      the counters of up to RunnerOptions::counter_batch consecutive points with
//      the same plan in one collection: those points keep their operators (and
//      device memory) until then, and are written to the sink after it, in order;
//      the batch ends early when half the device memory is in use.
// Host-side windows: T_call, the issue time and T_stream of a launch-bound call
// follow the host's speed, which on the shared GPU machines drifts over seconds
// (two runs minutes apart: LSTM T_stream 0.47-1.79x, neighbouring points moving
// together), so one window's interval held the other run's median for fewer
// than half the points. A point whose host part matters (host_part_matters:
// issue >= 2% of T_call, or T_stream >= 1.02 T_graph) is therefore timed again
// in RunnerOptions::host_windows - 1 revisits of T_call and T_stream alone,
// taken between later points once its latest window is window_spacing_s old
// (at the sweep's end for the last points), and its three times are the
// windows combined (core/statistics.hpp combine_windows);
// details["timing"]["windows"] keeps each window. A point is written once its
// windows are taken. A stop (Ctrl-C) skips revisits not yet taken and says so.
// With a transfer mode, a "call" of steps 4-6 is: a cudaMemcpyAsync host -> device
// of each of the operator's inputs(), run(), then (h2d_input_d2h_output) a
// cudaMemcpyAsync device -> host of each outputs(), all on the runner's stream, from
// and into host buffers allocated once per point; the host inputs start as copies
// of the device inputs, so every call computes what the check verified. Step 7
// profiles run() alone (copies are not kernels); step 3 is unchanged.
// A point that fails ends with its status and the library's reason; the sweep
// goes on. details["runner_seconds"] holds the wall time of each step (prepare,
// check, timing, trace, and counters: the point's share of its batch), and
// details["timing"]["phase_seconds"] the phases of the first timing window in the
// process that ran it: host_probes (pinning, the host probes, NVML's clock reader
// on first use), warm_up (warm_up_first_call: lazy module loading lands there),
// graph_setup (T_graph's captures and pilots, listed in details["timing"]["graph"]
// ["pilots"]), call, stream, graph (each pass's own rounds), passes_other and
// total; in the timing worker also build, prepare, host_buffers and teardown.
// details["timing"]["worker_wall_s"] is the worker's round trip seen from here.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "core/statistics.hpp"
#include "measure/warmup.hpp"
#include "sweeps/family.hpp"
#include "sweeps/operator.hpp"
#include "sweeps/spec.hpp"  // TransferMode

namespace timeroof {

struct RunnerOptions {
  bool counters = true;  // false: timing and trace only (--no-counters)
  bool cold_l2 = false;  // flush L2 before every timed call and every counted range
  // Host<->device copies timed with each call (see the top of this file); an
  // operator without tensors to move makes its points unsupported, with the reason.
  TransferMode transfer = TransferMode::none;
  bool pinned_host = true;  // host buffers page-locked (cudaMallocHost), else pageable heap
  // Warm-up before the timing pass: at least this many calls and this much wall
  // time, so the SM clock has left its idle state when timing starts.
  WarmupPolicy warmup{.min_calls = 3, .min_seconds = 0.02};
  // When each time stops: its interval within +-1% of the median, or its budget
  // spent (then TimeStats::converged is false). T_call's samples are single
  // synchronized calls, the noisiest, so it gets the most samples and time.
  StopRule call_rule{.min_samples = 30, .max_samples = 3000, .budget_s = 0.3};
  StopRule stream_rule{.min_samples = 16, .max_samples = 1000, .budget_s = 0.2};
  StopRule graph_rule{.min_samples = 16, .max_samples = 1000, .budget_s = 0.2};
  // Windows of a host-bound point's host-side times (see the top of this file);
  // 1: the first window alone. A revisit samples under call_rule and
  // stream_rule with revisit_budget_share of their budget and sample limit.
  int host_windows = 3;
  double revisit_budget_share = 0.5;
  // A revisit waits until the point's latest window is this old: the host's
  // speed holds a level for a few seconds (an H100's LSTM revisits 2-3 s apart
  // read the same slow level), so closer windows would vote together. The last
  // points of a sweep get theirs at its end, without waiting.
  double window_spacing_s = 8;
  int trace_calls = 5;
  // The executable of `timeroof timing-worker` (sweeps/timing_worker.hpp): step 5
  // runs there, in a process CUPTI never attached to; empty: in this process.
  std::string timing_worker;
  // How long to wait for the GPU's counters while another process holds them
  // (CounterAccess::busy), probing every second, in all over a sweep (it may
  // find them taken more than once), before points go timing-only.
  double counter_wait_s = 60;
  // Points of a sweep whose counters are collected together (one CUPTI collection
  // costs ~0.2 s per pass on an H200, whatever it holds); 1 = one per point.
  int counter_batch = 16;
  // Raw CUPTI metrics added to every point's collection plan (--metrics): stored
  // per kernel and as operator totals in Point::counters (measure/counter_collection.hpp).
  std::vector<std::string> extra_metrics;
};

// A point's timing window: the first (the three times) or a revisit (T_call
// with the issue time and T_stream, under the revisit rules).
enum class TimingWindow { first, revisit };

// Whether a point's host-side times can move by more than the repeatability
// target (3%) when the host's speed moves ~1.5x: its issue time is at least 2%
// of T_call, or T_stream is at least 1.02x T_graph (or there is no T_graph).
bool host_part_matters(const Timing& timing);

// What a sweep measures: a family and its points (params objects), in order.
struct SweepPlan {
  std::string name;  // the sweep's name in the store
  const OperatorFamily* family = nullptr;
  std::vector<nlohmann::json> points;
};

// Receives each finished point (the store writes it in one transaction).
class PointSink {
 public:
  virtual ~PointSink() = default;
  virtual void write(Point& point) = 0;
};

struct SweepProgress {
  int done = 0;   // points finished in this invocation, resumed ones excluded
  int total = 0;  // points to measure in this invocation
  double elapsed_s = 0;
  // "conv2d #12 batch=64 ...", or "hardware counters of 16 point(s)" during a
  // counter collection (tests/gpu/fault_injection_test.cpp kills a sweep there).
  std::string current;
};

struct SweepOutcome {
  int measured = 0;          // points measured now
  int already_finished = 0;  // skipped because the store had them (--resume)
  int not_ok = 0;            // measured, with a status other than ok
  // Measured with timing only though counters were asked for (status
  // counters_unavailable): the run is partial.
  int without_counters = 0;
  bool interrupted = false;  // stopped by the stop flag before the end
  double seconds = 0;        // wall time of this invocation
};

class SweepRunner {
 public:
  // `gpu` is the inspected device (its counters field says whether to try counters).
  SweepRunner(GpuInfo gpu, RunnerOptions options);
  ~SweepRunner();
  SweepRunner(const SweepRunner&) = delete;
  SweepRunner& operator=(const SweepRunner&) = delete;

  // What run() does with the points still waiting for their counters when it
  // ends: collect and write them, or keep them for the next run() of the same
  // sweep (a GPU worker measuring its points in chunks: a collection costs
  // ~0.2 s whatever it holds, so chunks must not cut batches short).
  enum class LastBatch { write, keep };

  // Measures every point whose seq is not in `finished`. Checks `stop` between
  // points: the current point, and those waiting for their counters, are
  // finished and written first. Points kept by the previous call are written
  // by this one (a call with every seq finished writes just them).
  SweepOutcome run(const SweepPlan& plan, const std::set<int>& finished, PointSink& sink,
                   const std::atomic<bool>& stop,
                   const std::function<void(const SweepProgress&)>& progress = nullptr,
                   LastBatch last_batch = LastBatch::write);

  // Measures one point (exposed for tests and benchmarks); its host-side windows
  // follow one another.
  Point measure_point(const OperatorFamily& family, const nlohmann::json& params,
                      const std::string& sweep, int seq);
  // Steps 1, 2, 4 and 5 of one point (build, prepare, warm up, time), in this
  // process: what the timing worker runs (the first window: three times; a
  // revisit: T_call with the issue time and T_stream); the point carries its status.
  Point time_point(const OperatorFamily& family, const nlohmann::json& params,
                   TimingWindow window = TimingWindow::first);
  // Steps 4-5 alone (warm-up and timing pass) on an operator the caller
  // prepared: the point's three times and details["timing"] (for benchmarks of
  // the method).
  Point time_prepared(Operator& op);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace timeroof
