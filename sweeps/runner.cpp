#include "sweeps/runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/elapsed.hpp"
#include "core/format.hpp"
#include "core/json_io.hpp"
#include "core/pinned_thread.hpp"
#include "counters/activity_tracer.hpp"
#include "counters/counter_access.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/check.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "measure/back_to_back.hpp"
#include "measure/counter_collection.hpp"
#include "measure/graph_replay.hpp"
#include "measure/host_probe.hpp"
#include "measure/interleaved.hpp"
#include "measure/l2_flush.hpp"
#include "measure/synchronized.hpp"
#include "measure/trace_calls.hpp"
#include "measure/warmup.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/timing_worker.hpp"

namespace timeroof {

namespace {

// A measured value, or null where there is none.
template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

OperatorNeeds needs_of(const Operator& op) {
  OperatorNeeds needs;
  needs.precision = op.precision();
  needs.math = op.math_mode();
  return needs;
}

std::string point_label(const OperatorFamily& family, int seq, const nlohmann::json& params) {
  const std::string text = params_text(params);
  return family.name + " #" + std::to_string(seq) + (text.empty() ? "" : " " + text);
}

// Host memory of one transferred tensor: page-locked (cudaMallocHost), or ordinary
// pageable heap memory, page-aligned as a host allocator hands out large blocks and
// touched once, so no first-touch page fault lands in a timed call.
class HostBuffer {
 public:
  HostBuffer(std::size_t bytes, bool pinned) {
    if (pinned) {
      pinned_ = PinnedBuffer<std::byte>(bytes);
      return;
    }
    const long page_size = sysconf(_SC_PAGESIZE);
    const std::size_t page = page_size > 0 ? static_cast<std::size_t>(page_size) : 4096;
    const std::size_t rounded = (bytes + page - 1) / page * page;  // aligned_alloc's rule
    if (rounded == 0) return;
    void* memory = std::aligned_alloc(page, rounded);
    if (!memory) throw std::bad_alloc();  // a point status of out_of_memory
    pageable_.reset(static_cast<std::byte*>(memory));
    std::memset(memory, 0, rounded);
  }
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

// details["transfer"]: the mode and the analytic bytes one call copies.
nlohmann::json transfer_details(const Operator& op, const RunnerOptions& options) {
  const bool any = options.transfer != TransferMode::none;
  const bool back = options.transfer == TransferMode::h2d_input_d2h_output;
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  std::size_t h2d = 0, d2h = 0;
  for (const DeviceTensor& t : any ? op.inputs() : std::vector<DeviceTensor>{}) {
    inputs.push_back({{"role", t.role}, {"bytes", t.bytes}});
    h2d += t.bytes;
  }
  for (const DeviceTensor& t : back ? op.outputs() : std::vector<DeviceTensor>{}) {
    outputs.push_back({{"role", t.role}, {"bytes", t.bytes}});
    d2h += t.bytes;
  }
  return {{"mode", to_string(options.transfer)},
          {"host", any ? nlohmann::json(to_string(options.pinned_host ? HostMemory::pinned
                                                                      : HostMemory::pageable))
                       : nlohmann::json(nullptr)},
          {"h2d_bytes", h2d},
          {"d2h_bytes", d2h},
          {"inputs", inputs},
          {"outputs", outputs}};
}

// Wall seconds of each step of a point, into details["runner_seconds"]: where a
// sweep's time goes, and what --dry-run's time model is calibrated against.
class StepClock {
 public:
  explicit StepClock(Point& point) : point_(point) {}
  // Ends the current step as `name` and starts the next.
  void lap(const char* name) {
    point_.details["runner_seconds"][name] = seconds_since(start_);
    start_ = std::chrono::steady_clock::now();
  }

 private:
  Point& point_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The point's params with the algorithm a selection ("heuristic", "exhaustive")
// chose written in, so another process or a later window runs the same plan.
nlohmann::json with_algorithm_pinned(const nlohmann::json& params, const std::string& algorithm) {
  nlohmann::json pinned = params;
  const std::string selection = pinned.value("algorithm", std::string());
  if (selection == "heuristic" || selection == "exhaustive") pinned["algorithm"] = algorithm;
  return pinned;
}

// Operators with the same key are profiled with the same metrics.
std::string plan_key(const Operator& op) {
  return std::string(to_string(op.precision())) + "/" + to_string(op.math_mode());
}

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

// A window's record in details["timing"]["windows"]: when it began (seconds on
// the runner's clock), where it ran, its host-side times and the host speed and
// steal beside them.
nlohmann::json window_record(const Timing& timing, const nlohmann::json& timing_details,
                             double at_s) {
  auto stats = [](const std::optional<TimeStats>& t) {
    return t ? nlohmann::json(*t) : nlohmann::json(nullptr);
  };
  return {{"at_s", at_s},
          {"process", timing_details.value("process", "runner")},
          {"call", stats(timing.call)},
          {"issue", stats(timing.issue)},
          {"stream", stats(timing.stream)},
          {"steal_s", timing_details.value("steal_s", nlohmann::json(nullptr))},
          {"host_probe_s", timing_details.value("host_probe_s", nlohmann::json(nullptr))}};
}

}  // namespace

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
  // Points a run() with LastBatch::keep left waiting for their counters.
  std::vector<PendingPoint> kept;
  std::size_t kept_waiting = 0;
  std::string kept_plan;
  std::vector<PendingPoint> kept_windowing;  // and those waiting for their windows

  PendingPoint measure_until_counters(const OperatorFamily& family, const nlohmann::json& params,
                                      const std::string& sweep, int seq);

  // Less than half the device memory free: points waiting for their counters
  // should give theirs back before the next point allocates.
  bool memory_is_tight() const {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return true;
    return free < total / 2;
  }

  const ClockReader& clocks() {
    if (!clock_reader) clock_reader = std::make_unique<ClockReader>(gpu.index);
    return *clock_reader;
  }

  void flush_if_cold() {
    if (flusher) flusher->flush(stream.get());
  }

  ProfilerSession* session() {
    if (!options.counters || !counters_unavailable.empty()) return nullptr;
    if (profiler) return profiler.get();
    if (!gpu.counters.available && !(gpu.counters.busy && wait_for_counters())) {
      counters_unavailable = gpu.counters.reason + waited_text();
      return nullptr;
    }
    for (;;) {
      try {
        profiler = std::make_unique<ProfilerSession>();
        return profiler.get();
      } catch (const CounterAccessError& e) {
        if (e.busy() && wait_for_counters()) continue;
        counters_unavailable =
            e.reason() + waited_text() + (e.fix().empty() ? "" : "; fix: " + e.fix());
        return nullptr;
      }
    }
  }

  // Another process holds the GPU's counters (a profiler, another timeroof)
  // before this sweep's profiler session exists: probe again every second until
  // they are free. The waiting budget, options.counter_wait_s, is for the whole
  // sweep, shared with collect_waiting: CUPTI holds the counters per
  // collection, so processes take turns and a sweep may find them taken more
  // than once. With the budget spent, points keep their timing and say why.
  bool wait_for_counters() {
    if (counter_wait_s >= options.counter_wait_s) return false;
    std::fprintf(stderr,
                 "timeroof: the GPU's hardware counters are in use by another process; waiting "
                 "up to %.0f s for them (--no-counters measures timing only)\n",
                 options.counter_wait_s - counter_wait_s);
    const double waited_before = counter_wait_s;
    const auto start = std::chrono::steady_clock::now();
    while (waited_before + seconds_since(start) < options.counter_wait_s) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const CounterAccess probed = probe_counter_access();
      counter_wait_s = waited_before + seconds_since(start);
      if (probed.available || !probed.busy) {
        const bool freed = probed.available;
        std::fprintf(stderr, "timeroof: hardware counters %s after %.0f s\n",
                     freed ? "free again" : "unavailable for another reason",
                     counter_wait_s - waited_before);
        gpu.counters = probed;
        return freed;
      }
    }
    counter_wait_s = options.counter_wait_s;
    return false;
  }

  // Runs one counter collection; when another process takes the counters
  // before or during it, tries again every second within the sweep's waiting
  // budget. The collection itself is the probe: probe_counter_access would
  // initialize and tear down CUPTI's profiler in this process under the
  // runner's own session. Counters that stay taken make the points
  // counters_unavailable, not failed.
  template <typename Collect>
  Outcome collect_waiting(Collect&& collect) {
    double waited = 0;
    for (;;) {
      try {
        collect();
        if (waited > 0)
          std::fprintf(stderr, "timeroof: hardware counters free again after %.0f s\n", waited);
        return {};
      } catch (const CounterAccessError& e) {
        if (e.busy() && counter_wait_s + 1 <= options.counter_wait_s) {
          if (waited == 0)
            std::fprintf(stderr,
                         "timeroof: the GPU's hardware counters were taken by another process; "
                         "trying again for up to %.0f s (--no-counters measures timing only)\n",
                         options.counter_wait_s - counter_wait_s);
          std::this_thread::sleep_for(std::chrono::seconds(1));
          waited += 1;
          counter_wait_s += 1;
          continue;
        }
        return {PointStatus::counters_unavailable,
                e.reason() + waited_text() + (e.fix().empty() ? "" : "; fix: " + e.fix())};
      } catch (...) {
        return outcome_of_current_exception();
      }
    }
  }

  std::string waited_text() const {
    if (counter_wait_s <= 0) return "";  // never waited
    char text[64];
    std::snprintf(text, sizeof text, " (waited %.0f s for them)", counter_wait_s);
    return text;
  }

  const CollectionPlan& plan_for(ProfilerSession& session, const Operator& op) {
    const std::string key = plan_key(op);
    auto found = plans.find(key);
    if (found == plans.end()) {
      found =
          plans
              .emplace(key, plan_collection(session.chip(), quantities_for(needs_of(op)),
                                            session.counter_availability(), options.extra_metrics))
              .first;
    }
    return found->second;
  }

  // Host buffers for the point's copies. The host inputs start as copies of the
  // device inputs, so every call's H2D rewrites the same data and the operator
  // computes what check() verified (zeros would also run faster than real data).
  Transfers transfers_for(const Operator& op) {
    Transfers transfers;
    if (options.transfer == TransferMode::none) return transfers;
    auto allocate = [&](const std::vector<DeviceTensor>& tensors, std::vector<HostCopy>& into) {
      for (const DeviceTensor& tensor : tensors) {
        if (!tensor.data && tensor.bytes)
          throw std::logic_error(op.op() + ": tensor '" + tensor.role +
                                 "' has no device buffer after prepare()");
        into.push_back({tensor, HostBuffer(tensor.bytes, options.pinned_host)});
      }
    };
    allocate(op.inputs(), transfers.h2d);
    if (options.transfer == TransferMode::h2d_input_d2h_output)
      allocate(op.outputs(), transfers.d2h);
    const cudaStream_t s = stream.get();
    for (const HostCopy& c : transfers.h2d)
      TR_CUDA_CHECK(
          cudaMemcpyAsync(c.host.get(), c.tensor.data, c.tensor.bytes, cudaMemcpyDeviceToHost, s));
    TR_CUDA_CHECK(cudaStreamSynchronize(s));
    return transfers;
  }

  // One call as the timing and trace passes measure it: the inputs' copies, the
  // operator, the outputs' copies, in order on `s`.
  static void call(Operator& op, const Transfers& transfers, cudaStream_t s) {
    for (const HostCopy& c : transfers.h2d)
      TR_CUDA_CHECK(
          cudaMemcpyAsync(c.tensor.data, c.host.get(), c.tensor.bytes, cudaMemcpyHostToDevice, s));
    op.run(s);
    for (const HostCopy& c : transfers.d2h)
      TR_CUDA_CHECK(
          cudaMemcpyAsync(c.host.get(), c.tensor.data, c.tensor.bytes, cudaMemcpyDeviceToHost, s));
  }

  // What precedes each timed and counted call: the L2 flush when cold.
  std::function<void(cudaStream_t)> prelude() {
    if (!flusher) return nullptr;
    return [this](cudaStream_t s) { flusher->flush(s); };
  }
  // The call with its copies (timing and trace), or run() alone (counters:
  // copies are not kernels).
  CallUnderTest call_under_test(Operator& op, const Transfers& transfers) {
    return {[&op, &transfers](cudaStream_t s) { call(op, transfers, s); }, prelude()};
  }
  CallUnderTest run_alone(Operator& op) {
    return {[&op](cudaStream_t s) { op.run(s); }, prelude()};
  }

  // Step 5: warm-up, then T_call (with the host issue time), T_stream and
  // T_graph in alternating rounds (measure/interleaved.hpp), each until its
  // interval is narrow enough or its budget is spent, the measuring thread
  // pinned to its core.
  void timing_pass(Operator& op, const Transfers& transfers, Point& point,
                   TimingWindow window = TimingWindow::first) {
    const cudaStream_t s = stream.get();
    const CallUnderTest under_test = call_under_test(op, transfers);
    ThreeTimeRules rules{options.call_rule, options.stream_rule, options.graph_rule};
    if (window == TimingWindow::revisit) {
      for (StopRule* rule : {&rules.call, &rules.stream}) {
        rule->budget_s *= options.revisit_budget_share;
        rule->max_samples = std::max(
            rule->min_samples,
            static_cast<int>(std::lround(rule->max_samples * options.revisit_budget_share)));
      }
      rules.with_graph = false;
    }
    const PinnedThread pinned;
    const HostProbe probe_before = probe_host();
    const int core = pinned.core().value_or(-1);
    const std::optional<double> steal_before = steal_seconds(core);
    warm_up(under_test, s, options.warmup);
    const ClockReader& reader = clocks();
    const ThreeTimes three =
        time_three_interleaved(under_test, s, rules, [&reader] { return reader.read().sm_hz; });
    const SynchronizedTimes& synchronized = three.synchronized;
    const MeasuredTime& back_to_back = three.stream;
    const GraphReplay& graph = three.graph;
    const HostProbe probe_after = probe_host();
    const std::optional<double> steal_after = steal_seconds(core);

    Timing& t = point.timing;
    t.call = synchronized.call.stats;
    t.issue = synchronized.issue.stats;
    t.stream = back_to_back.stats;
    if (graph.time) t.graph = graph.time->stats;
    t.graph_unavailable = graph.unavailable;
    nlohmann::json graph_details = {{"copies_per_graph", graph.copies},
                                    {"nodes_per_call", graph.nodes_per_call}};
    if (graph.time)
      graph_details["method"] = graph.time->method;
    else
      graph_details["unavailable"] = graph.unavailable;
    point.details["timing"] = {
        {"call", {{"method", synchronized.call.method}}},
        {"issue", {{"method", synchronized.issue.method}}},
        {"stream", {{"method", back_to_back.method}}},
        {"graph", graph_details},
        {"copies", transfers.h2d.empty() && transfers.d2h.empty()
                       ? "none"
                       : "each call includes its host<->device copies"},
        {"window", window == TimingWindow::first ? "first" : "revisit"},
        {"stop_rule",
         {{"target_relative_ci", rules.call.target_relative_ci},
          {"budget_s",
           {{"call", rules.call.budget_s},
            {"stream", rules.stream.budget_s},
            {"graph",
             rules.with_graph ? nlohmann::json(rules.graph.budget_s) : nlohmann::json(nullptr)}}}}},
        // NVML's SM clock, the median of one reading per round of each pass.
        {"sm_clock_hz",
         {{"call", optional_json(synchronized.call.sm_clock_hz)},
          {"stream", optional_json(back_to_back.sm_clock_hz)},
          {"graph", graph.time ? optional_json(graph.time->sm_clock_hz) : nlohmann::json()}}},
        {"rounds",
         {{"call", three.call_rounds},
          {"stream", three.stream_rounds},
          {"graph", three.graph_rounds}}},
        {"pinned_core", optional_json(pinned.core())},
        // The host's speed before and after (measure/host_probe.hpp): host-bound
        // times scale with it.
        {"host_probe_s", {probe_before.compute_s, probe_after.compute_s}},
        {"host_memory_probe_s", {probe_before.memory_s, probe_after.memory_s}},
        {"host_kernel_probe_s", {probe_before.kernel_s, probe_after.kernel_s}},
        // Time the hypervisor took from the pinned core (all cores where it is
        // not pinned) during the passes: a slow host-bound time with steal > 0
        // was the host's being taken away.
        {"steal_s", steal_before && steal_after
                        ? nlohmann::json(std::max(0.0, *steal_after - *steal_before))
                        : nlohmann::json(nullptr)},
        {"l2", flusher ? "cold" : "warm"},
        {"after_cupti", cupti_attached}};
    if (!pinned.core()) point.details["timing"]["pin_failure"] = pinned.failure();
  }

  // `window` of a point timed in the timing worker (timing_worker.hpp) with
  // `algorithm` pinned, so both processes run the same plan: true with `timed`'s
  // times and details["timing"] set; false where there is no worker or it
  // failed, with `why_here` saying why ("" when none is configured).
  bool time_in_worker(const OperatorFamily& family, const nlohmann::json& params,
                      const std::string& algorithm, TimingWindow window, Point& timed,
                      std::string& why_here) {
    why_here = options.timing_worker.empty() ? "" : worker_failure;
    if (options.timing_worker.empty() || !worker_failure.empty()) return false;
    try {
      if (!worker) worker = std::make_unique<TimingWorker>(options.timing_worker, gpu.index);
      const nlohmann::json reply =
          worker->time(family.name, with_algorithm_pinned(params, algorithm), options, window);
      const std::string chosen = reply.value("algorithm", std::string());
      if (reply.at("status") == "ok" && chosen == algorithm) {
        const Timing times = reply.at("timing").get<Timing>();
        timed.timing.call = times.call;
        timed.timing.stream = times.stream;
        timed.timing.graph = times.graph;
        timed.timing.issue = times.issue;
        timed.timing.graph_unavailable = times.graph_unavailable;
        timed.details["timing"] = reply.at("details");
        timed.details["timing"]["process"] = "timing worker";
        return true;
      }
      why_here = reply.at("status") != "ok"
                     ? "the timing worker: " + reply.at("status").get<std::string>() + ": " +
                           reply.value("reason", std::string())
                     : "the timing worker chose " + chosen + ", not " + algorithm;
    } catch (const std::exception& e) {
      worker_failure = e.what();  // the worker is gone: time here from now on
      worker.reset();
      why_here = worker_failure;
    }
    return false;
  }

  // Step 5, the point's first timing window: in the timing worker, or in this
  // process where there is none or it fails, saying why.
  void timing_step(const OperatorFamily& family, const nlohmann::json& params, Operator& op,
                   const Transfers& transfers, Point& point) {
    const double at_s = seconds_since(clock_origin);
    std::string why_here;
    if (!time_in_worker(family, params, op.algorithm(), TimingWindow::first, point, why_here)) {
      timing_pass(op, transfers, point);
      point.details["timing"]["process"] = "runner";
      if (!why_here.empty()) point.details["timing"]["worker_failure"] = why_here;
    }
    point.details["timing"]["at_s"] = at_s;
  }

  // Build, prepare and time a point in this process (the timing worker's job;
  // a revisit here where there is no worker).
  Point time_here(const OperatorFamily& family, const nlohmann::json& params, TimingWindow window) {
    std::unique_ptr<Operator> op = make_operator(family, params, libraries);
    Point point = describe(*op);
    point.params = params;
    const std::string no_transfer = transfer_unavailable(op->problem(), options.transfer);
    if (!no_transfer.empty()) {
      point.status = PointStatus::unsupported;
      point.reason = no_transfer;
      return point;
    }
    const Outcome timed = guarded([&] {
      op->prepare(stream.get());
      point.algorithm = op->algorithm();
      const Transfers transfers = transfers_for(*op);
      timing_pass(*op, transfers, point, window);
    });
    point.status = timed.status;
    point.reason = timed.reason;
    return point;
  }

  // How many windows a timed point gets (runner.hpp), and why, into
  // details["timing"]["host_windows"].
  void plan_windows(PendingPoint& pending) const {
    Point& point = pending.point;
    if (!point.timing.call || !point.details.contains("timing")) return;
    const bool matters = host_part_matters(point.timing);
    pending.windows_wanted = matters ? std::max(1, options.host_windows) : 1;
    point.details["timing"]["host_windows"] = {
        {"wanted", pending.windows_wanted},
        {"why", matters ? "host-bound: the issue time is >= 2% of T_call or T_stream >= 1.02x "
                          "T_graph, so the host's speed moves the times"
                        : "GPU-bound: the host's speed cannot move the times by 3%"}};
  }

  // One more window of a point's host-side times, where its first ran; a
  // revisit that fails ends the point's windows and says why.
  void revisit(const OperatorFamily& family, PendingPoint& pending) {
    const Point& point = pending.point;
    const double at_s = seconds_since(clock_origin);
    Point timed;
    std::string why_here;
    try {
      if (!time_in_worker(family, point.params, point.algorithm, TimingWindow::revisit, timed,
                          why_here)) {
        timed = time_here(family, with_algorithm_pinned(point.params, point.algorithm),
                          TimingWindow::revisit);
        if (timed.status != PointStatus::ok) {
          pending.windows_end = "a revisit failed: " + timed.reason;
          return;
        }
        if (timed.algorithm != point.algorithm) {
          pending.windows_end = "a revisit ran " + timed.algorithm + ", not " + point.algorithm;
          return;
        }
        timed.details["timing"]["process"] = "runner";
        if (!why_here.empty()) timed.details["timing"]["worker_failure"] = why_here;
      }
    } catch (const std::exception& e) {
      pending.windows_end = std::string("a revisit failed: ") + e.what();
      return;
    }
    pending.revisits.push_back(timed.timing);
    pending.revisit_records.push_back(window_record(timed.timing, timed.details["timing"], at_s));
  }

  // A point's T_call, issue time and T_stream from all its windows
  // (combine_windows), each window kept in details["timing"]["windows"].
  static void join_windows(PendingPoint& pending) {
    Point& point = pending.point;
    if (!point.details.contains("timing") || !point.details["timing"].contains("host_windows"))
      return;
    nlohmann::json& details = point.details["timing"];
    nlohmann::json records = nlohmann::json::array();
    records.push_back(window_record(point.timing, details, details.value("at_s", 0.0)));
    for (const nlohmann::json& record : pending.revisit_records) records.push_back(record);
    auto joined = [&](std::optional<TimeStats> Timing::*time) -> std::optional<TimeStats> {
      if (!(point.timing.*time)) return std::nullopt;
      std::vector<TimeStats> windows{*(point.timing.*time)};
      for (const Timing& revisit : pending.revisits)
        if (revisit.*time) windows.push_back(*(revisit.*time));
      return combine_windows(windows);
    };
    point.timing.call = joined(&Timing::call);
    point.timing.issue = joined(&Timing::issue);
    point.timing.stream = joined(&Timing::stream);
    nlohmann::json& summary = details["host_windows"];
    summary["taken"] = records.size();
    summary["combined"] =
        "T_call, issue and T_stream: the median of the windows' medians, the 95% interval from "
        "the lowest window's low to the highest window's high";
    if (!pending.windows_end.empty()) summary["ended"] = pending.windows_end;
    details["windows"] = std::move(records);
  }

  void trace_pass(Operator& op, const Transfers& transfers, Point& point) {
    cupti_attached = true;
    TracedCalls traced =
        trace_calls(call_under_test(op, transfers), stream.get(), options.trace_calls);
    Timing& t = point.timing;
    t.kernel_time_s = traced.timing.kernel_time_s;
    t.launches = traced.timing.launches;
    t.api_time_s = traced.timing.api_time_s;
    t.launch_gap_s = traced.timing.launch_gap_s;
    t.h2d_bytes = traced.timing.h2d_bytes;
    t.h2d_time_s = traced.timing.h2d_time_s;
    t.d2h_bytes = traced.timing.d2h_bytes;
    t.d2h_time_s = traced.timing.d2h_time_s;
    point.kernels = std::move(traced.kernels);
    point.details["trace"] = std::move(traced.details);
  }

  // Marks the point when no counters can be collected; false then.
  bool counters_possible(Point& point) {
    if (session()) return true;
    if (options.counters) {
      point.status = PointStatus::counters_unavailable;
      point.reason = counters_unavailable;
    }
    point.details["counters"] = {{"collected", false}, {"reason", counters_unavailable}};
    return false;
  }

  // A point whose counters stayed taken by another process keeps its timing.
  static void mark_timing_only(Point& point, const std::string& reason) {
    point.status = PointStatus::counters_unavailable;
    point.reason = reason;
    point.details["counters"] = {{"collected", false}, {"reason", reason}};
  }

  // The fallback: one collection for one point (profile_call_kernels), with the
  // L2 flush, if cold, outside the counters before each pass. Warm is then only
  // the L2 CUPTI leaves between passes: on an H200 it had evicted the call's
  // data (a batch-4 conv read its whole input from DRAM, 0 B with a prelude).
  void counter_pass_alone(Operator& op, Point& point, const std::string& why) {
    const CollectionPlan& plan = plan_for(*profiler, op);
    const cudaStream_t s = stream.get();
    UserRange call{"point", [&] { op.run(s); }, nullptr};
    if (flusher) call.setup = [this] { flush_if_cold(); };
    const auto launches = static_cast<std::size_t>(std::max(0L, point.timing.launches.value_or(0)));
    const ProfileResult result =
        profiler->profile_call_kernels(plan.metrics, call, 2 * launches + 64);
    if (result.ranges.empty() || result.dropped_ranges > 0) {
      point.status = PointStatus::counters_unavailable;
      point.reason = "the range profiler returned " + std::to_string(result.ranges.size()) +
                     " kernel ranges for one call and dropped " +
                     std::to_string(result.dropped_ranges);
      return;
    }
    apply_counters(plan, result,
                   {{"batch_size", 1},
                    {"prelude", flusher ? "L2 flush, before each pass" : "none"},
                    {"l2", flusher ? "cold" : "as CUPTI leaves it between passes"},
                    {"fallback", why}},
                   point);
  }

  // The counters of points that share a collection plan, in one collection
  // (profile_call_batch; a single point is a batch of one). Before each call a
  // prelude inside the pass puts L2 where the timing pass found it: a flush when
  // cold; when warm, one call of the same operator, as the timed calls run back
  // to back. Falls back to one collection per point when the batch cannot be
  // profiled as declared (a call launched other kernels than its trace showed).
  void counter_batch(const std::vector<PendingPoint*>& batch) {
    const cudaStream_t s = stream.get();
    std::vector<BatchedCall> calls;
    for (PendingPoint* pending : batch) {
      calls.push_back(counted_call(run_alone(*pending->op), s, pending->point.kernels.size(),
                                   L2Flusher::kernels_per_flush));
    }
    const CollectionPlan& plan = plan_for(*profiler, *batch.front()->op);
    std::vector<ProfileResult> results;
    double seconds = 0;
    const Outcome batched = collect_waiting([&] {
      const auto start = std::chrono::steady_clock::now();
      results = profiler->profile_call_batch(plan.metrics, calls);
      seconds = seconds_since(start);
    });
    if (batched.status == PointStatus::ok) {
      for (std::size_t i = 0; i < batch.size(); ++i) {
        apply_counters(plan, results[i],
                       {{"batch_size", batch.size()},
                        {"batch_seconds", seconds},
                        {"prelude", flusher ? "L2 flush" : "one call of the operator"},
                        {"l2", flusher ? "cold" : "warm"}},
                       batch[i]->point);
        // The batch's share; the whole collection is in details["counters"].
        batch[i]->point.details["runner_seconds"]["counters"] =
            seconds / static_cast<double>(batch.size());
      }
      return;
    }
    for (PendingPoint* pending : batch) {
      if (batched.status == PointStatus::counters_unavailable)
        mark_timing_only(pending->point, batched.reason);
      else
        run_guarded(*pending, batched.reason);
    }
  }

  // counter_pass_alone, its failure the point's status.
  void run_guarded(PendingPoint& pending, const std::string& why) {
    const Outcome outcome =
        collect_waiting([&] { counter_pass_alone(*pending.op, pending.point, why); });
    if (outcome.status == PointStatus::counters_unavailable) {
      mark_timing_only(pending.point, outcome.reason);
    } else if (outcome.status != PointStatus::ok) {
      pending.point.status = outcome.status;
      pending.point.reason = outcome.reason;
    }
  }

  // Collects the counters of every point in `points` that waits for them, in
  // batches of points with the same collection plan, and releases their operators.
  // One revisit of each point that wants one and whose latest window began at
  // least `min_age_s` ago, in order; skipped, and said, once `stop` is set.
  // `announce` names the step for the progress line.
  void revisit_pass(std::vector<PendingPoint>& points, const OperatorFamily& family,
                    const std::atomic<bool>& stop, double min_age_s,
                    const std::function<void(const std::string&)>& announce) {
    const double now = seconds_since(clock_origin);
    auto due = [&](const PendingPoint& p) {
      return p.needs_revisit() && now - p.last_window_at_s() >= min_age_s;
    };
    const auto wanting = std::count_if(points.begin(), points.end(), due);
    if (wanting == 0) return;
    if (announce) announce("timing windows of " + std::to_string(wanting) + " point(s)");
    for (PendingPoint& p : points) {
      if (!due(p)) continue;
      if (stop.load())
        p.windows_end = "the sweep was stopped before this point's remaining windows";
      else
        revisit(family, p);
    }
  }

  // Every window still wanted, without waiting: the end of a sweep.
  void remaining_windows(std::vector<PendingPoint>& points, const OperatorFamily& family,
                         const std::atomic<bool>& stop,
                         const std::function<void(const std::string&)>& announce) {
    for (int pass = 1; pass < options.host_windows; ++pass)
      revisit_pass(points, family, stop, 0, announce);
  }

  void collect_counters(std::vector<PendingPoint>& points) {
    std::map<std::string, std::vector<PendingPoint*>> by_plan;
    for (PendingPoint& pending : points) {
      if (!pending.op || !counters_possible(pending.point)) continue;
      if (pending.point.kernels.empty())  // no kernel count to map ranges by
        run_guarded(pending, "the trace pass recorded no kernels");
      else
        by_plan[plan_key(*pending.op)].push_back(&pending);
    }
    for (const auto& [key, batch] : by_plan) counter_batch(batch);
    for (PendingPoint& pending : points) pending.op.reset();
  }
};

bool host_part_matters(const Timing& timing) {
  constexpr double kIssueShare = 0.02, kStreamOverGraph = 1.02;
  const std::optional<double> call = timing.call_s(), issue = timing.issue_s();
  const std::optional<double> stream = timing.stream_s(), graph = timing.graph_s();
  if (call && issue && *issue >= kIssueShare * *call) return true;
  return stream && (!graph || *stream >= kStreamOverGraph * *graph);
}

SweepRunner::SweepRunner(GpuInfo gpu, RunnerOptions options) : state_(std::make_unique<State>()) {
  state_->gpu = std::move(gpu);
  state_->options = options;
  if (options.cold_l2) state_->flusher.emplace(state_->gpu.l2_bytes);
}

SweepRunner::~SweepRunner() = default;

// Steps 1-6 of a point (see runner.hpp); the operator stays with the point when
// its counters are still to be collected.
PendingPoint SweepRunner::State::measure_until_counters(const OperatorFamily& family,
                                                        const nlohmann::json& params,
                                                        const std::string& sweep, int seq) {
  PendingPoint pending;
  std::unique_ptr<Operator> op = make_operator(family, params, libraries);
  Point& point = pending.point;
  point = describe(*op);
  StepClock clock(point);
  point.sweep = sweep;
  point.seq = seq;
  point.params = params;
  // A transfer mode for an operator with nothing to move is refused, not timed
  // without copies as if it had none.
  point.details["transfer"] = transfer_details(*op, options);
  const std::string no_transfer = transfer_unavailable(op->problem(), options.transfer);
  if (!no_transfer.empty()) {
    point.status = PointStatus::unsupported;
    point.reason = no_transfer;
    return pending;
  }

  const Outcome prepared = guarded([&] { op->prepare(stream.get()); });
  clock.lap("prepare");
  if (prepared.status != PointStatus::ok) {
    point.status = prepared.status;
    point.reason = prepared.reason;
    return pending;
  }
  point.algorithm = op->algorithm();
  point.details["operator"] = op->details();
  point.details["transfer"] = transfer_details(*op, options);  // prepared sizes

  CheckResult check;
  const Outcome checked = guarded([&] { check = op->check(); });
  clock.lap("check");
  if (checked.status != PointStatus::ok) {
    point.status = checked.status;
    point.reason = "output check: " + checked.reason;
    return pending;
  }
  // A NaN or infinite error means the output itself is not finite (e.g. fp16
  // overflow): stored as null, and the point fails with that reason.
  const bool finite_error = std::isfinite(check.relative_error);
  point.details["check"] = {{"status", to_string(check.status)},
                            {"method", check.method},
                            {"relative_error", finite_error ? nlohmann::json(check.relative_error)
                                                            : nlohmann::json(nullptr)},
                            {"tolerance", check.tolerance},
                            {"detail", check.detail}};
  if (check.status == CheckStatus::failed || !finite_error) {
    point.status = PointStatus::failed;
    point.reason = finite_error ? "wrong output: " + check.detail
                                : "output is not finite (NaN or Inf; e.g. " + point.precision +
                                      " overflow): " + check.detail;
    return pending;
  }

  const Outcome measured = guarded([&] {
    const Transfers transfers = transfers_for(*op);
    timing_step(family, params, *op, transfers, point);
    clock.lap("timing");
    trace_pass(*op, transfers, point);
    clock.lap("trace");
  });
  if (measured.status != PointStatus::ok) {
    point.status = measured.status;
    point.reason = measured.reason;
    return pending;
  }
  plan_windows(pending);
  if (options.counters && counters_unavailable.empty()) {
    // Kept for the counter pass, which profiles run() alone (copies are not
    // kernels). The profiler session is not created here: enabled, it would
    // stay attached through the next point's timing.
    pending.op = std::move(op);
  } else {
    counters_possible(point);  // says why there are none
  }
  return pending;
}

Point SweepRunner::time_point(const OperatorFamily& family, const nlohmann::json& params,
                              TimingWindow window) {
  return state_->time_here(family, params, window);
}

Point SweepRunner::time_prepared(Operator& op) {
  Point point = describe(op);
  state_->timing_pass(op, Transfers{}, point);
  return point;
}

Point SweepRunner::measure_point(const OperatorFamily& family, const nlohmann::json& params,
                                 const std::string& sweep, int seq) {
  std::vector<PendingPoint> one;
  one.push_back(state_->measure_until_counters(family, params, sweep, seq));
  state_->collect_counters(one);
  const std::atomic<bool> never_stopped{false};
  state_->remaining_windows(one, family, never_stopped, nullptr);
  State::join_windows(one.front());
  return std::move(one.front().point);
}

SweepOutcome SweepRunner::run(const SweepPlan& plan, const std::set<int>& finished, PointSink& sink,
                              const std::atomic<bool>& stop,
                              const std::function<void(const SweepProgress&)>& progress,
                              LastBatch last_batch) {
  SweepOutcome outcome;
  SweepProgress status;
  for (int seq = 0; seq < static_cast<int>(plan.points.size()); ++seq)
    status.total += finished.count(seq) ? 0 : 1;
  const auto started = std::chrono::steady_clock::now();
  auto write = [&](Point& point) {
    try {
      sink.write(point);
    } catch (const Error& refused) {
      // The point's data could not be stored as measured (a bug, not the user's
      // input): keep its identity and the reason, so the sweep goes on.
      Point failed = point;
      failed.status = PointStatus::failed;
      failed.reason = std::string("could not store the measurement: ") + refused.what();
      failed.timing = Timing{};
      failed.counters.clear();
      failed.kernels.clear();
      failed.details = nlohmann::json::object();
      sink.write(failed);
      point = failed;
    }
    ++outcome.measured;
    outcome.not_ok += point.status != PointStatus::ok;
    outcome.without_counters += point.status == PointStatus::counters_unavailable;
    ++status.done;
    status.elapsed_s = seconds_since(started);
  };
  // Points wait, in order, for one counter collection per batch (`pending`,
  // with their operators), then for their host-side windows (`windowing`, the
  // revisits taken once a point's latest window is window_spacing_s old); then
  // they are written. What waits when the sweep stops is collected and written
  // first (revisits not yet taken are skipped), so Ctrl-C loses nothing; a
  // crash loses at most a batch and the points still waiting for windows.
  std::vector<PendingPoint> pending = std::move(state_->kept);  // from the last call
  std::vector<PendingPoint> windowing = std::move(state_->kept_windowing);
  std::size_t waiting = state_->kept_waiting;    // pending points that still need counters
  std::string waiting_plan = state_->kept_plan;  // their plan_key
  state_->kept.clear();
  state_->kept_windowing.clear();
  state_->kept_waiting = 0;
  auto announce = [&](const std::string& step) {
    if (!progress) return;
    status.current = step;
    progress(status);
  };
  auto write_ready = [&] {
    std::size_t written = 0;
    while (written < windowing.size() && !windowing[written].needs_revisit()) {
      State::join_windows(windowing[written]);
      write(windowing[written].point);
      ++written;
    }
    windowing.erase(windowing.begin(), windowing.begin() + static_cast<std::ptrdiff_t>(written));
  };
  auto finish_pending = [&] {
    // A collection takes ~0.2 s per pass whatever it holds: the progress line
    // says so, not the label of the last point timed.
    if (waiting > 0 && state_->options.counters && state_->counters_unavailable.empty())
      announce("hardware counters of " + std::to_string(waiting) + " point(s)");
    state_->collect_counters(pending);
    for (PendingPoint& p : pending) windowing.push_back(std::move(p));
    pending.clear();
    waiting = 0;
    write_ready();
  };
  auto due_windows = [&] {
    const double spacing = state_->options.window_spacing_s;
    state_->revisit_pass(pending, *plan.family, stop, spacing, announce);
    state_->revisit_pass(windowing, *plan.family, stop, spacing, announce);
    write_ready();
  };
  for (int seq = 0; seq < static_cast<int>(plan.points.size()); ++seq) {
    if (finished.count(seq)) {
      ++outcome.already_finished;
      continue;
    }
    if (stop.load()) {
      outcome.interrupted = true;
      break;
    }
    // The next point must not run short of memory because of the waiting ones.
    if (waiting > 0 && state_->memory_is_tight()) finish_pending();
    status.current = point_label(*plan.family, seq, plan.points[seq]);
    if (progress) progress(status);
    PendingPoint measured =
        state_->measure_until_counters(*plan.family, plan.points[seq], plan.name, seq);
    if (measured.point.status == PointStatus::out_of_memory && waiting > 0) {
      finish_pending();  // the waiting points' memory was in the way: once more without it
      measured = state_->measure_until_counters(*plan.family, plan.points[seq], plan.name, seq);
    }
    if (measured.op) {
      if (waiting > 0 && plan_key(*measured.op) != waiting_plan)
        finish_pending();  // a batch shares one metric set
      waiting_plan = plan_key(*measured.op);
      ++waiting;
    }
    pending.push_back(std::move(measured));
    // On to the windows now if nothing waits for counters (or the batch is full).
    if (waiting == 0 || static_cast<int>(waiting) >= std::max(1, state_->options.counter_batch))
      finish_pending();
    due_windows();
  }
  if (last_batch == LastBatch::keep && !outcome.interrupted && !stop.load()) {
    state_->kept = std::move(pending);
    state_->kept_windowing = std::move(windowing);
    state_->kept_waiting = waiting;
    state_->kept_plan = waiting_plan;
  } else {
    finish_pending();
    state_->remaining_windows(windowing, *plan.family, stop, announce);
    write_ready();
  }
  outcome.seconds = seconds_since(started);
  if (progress) {
    status.current.clear();
    progress(status);
  }
  return outcome;
}

}  // namespace timeroof
