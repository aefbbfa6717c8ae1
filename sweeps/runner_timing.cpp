// The runner's copies and timing windows of a point: the host buffers, the timing
// pass here or in the timing worker, and the revisits of host-bound points joined
// into one time (runner.hpp, steps 4-5 and host windows).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/elapsed.hpp"
#include "core/json_io.hpp"
#include "core/pinned_thread.hpp"
#include "gpu/check.hpp"
#include "measure/back_to_back.hpp"
#include "measure/graph_replay.hpp"
#include "measure/host_probe.hpp"
#include "measure/interleaved.hpp"
#include "measure/synchronized.hpp"
#include "sweeps/runner_state.hpp"

namespace timeroof {

namespace {

// A measured value, or null where there is none.
template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

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
          {"seconds", timing_details.value("phase_seconds", nlohmann::json::object())
                          .value("total", nlohmann::json(nullptr))},
          {"host_probe_s", timing_details.value("host_probe_s", nlohmann::json(nullptr))}};
}

// details["timing"]["phase_seconds"] of a timing pass (runner.hpp says what each
// phase holds); the window's build, prepare, host_buffers and teardown are added
// where the pass ran in a window of its own (time_here).
nlohmann::json pass_phases(double host_probes_s, double warm_up_s, double first_call_s,
                           double passes_s, const ThreeTimes& three) {
  const double sampled =
      three.graph.setup_s + three.call_seconds + three.stream_seconds + three.graph_seconds;
  return {{"host_probes", host_probes_s},
          {"warm_up", warm_up_s},
          {"warm_up_first_call", first_call_s},
          {"graph_setup", three.graph.setup_s},
          {"call", three.call_seconds},
          {"stream", three.stream_seconds},
          {"graph", three.graph_seconds},
          {"passes_other", std::max(0.0, passes_s - sampled)},
          {"total", host_probes_s + warm_up_s + passes_s}};
}

}  // namespace

HostBuffer::HostBuffer(std::size_t bytes, bool pinned) {
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

const ClockReader& SweepRunner::State::clocks() {
  if (!clock_reader) clock_reader = std::make_unique<ClockReader>(gpu.index);
  return *clock_reader;
}

Transfers SweepRunner::State::transfers_for(const Operator& op) {
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
  if (options.transfer == TransferMode::h2d_input_d2h_output) allocate(op.outputs(), transfers.d2h);
  const cudaStream_t s = stream.get();
  for (const HostCopy& c : transfers.h2d)
    TR_CUDA_CHECK(
        cudaMemcpyAsync(c.host.get(), c.tensor.data, c.tensor.bytes, cudaMemcpyDeviceToHost, s));
  TR_CUDA_CHECK(cudaStreamSynchronize(s));
  return transfers;
}

void SweepRunner::State::call(Operator& op, const Transfers& transfers, cudaStream_t s) {
  for (const HostCopy& c : transfers.h2d)
    TR_CUDA_CHECK(
        cudaMemcpyAsync(c.tensor.data, c.host.get(), c.tensor.bytes, cudaMemcpyHostToDevice, s));
  op.run(s);
  for (const HostCopy& c : transfers.d2h)
    TR_CUDA_CHECK(
        cudaMemcpyAsync(c.host.get(), c.tensor.data, c.tensor.bytes, cudaMemcpyDeviceToHost, s));
}

std::function<void(cudaStream_t)> SweepRunner::State::prelude() {
  if (!flusher) return nullptr;
  return [this](cudaStream_t s) { flusher->flush(s); };
}

CallUnderTest SweepRunner::State::call_under_test(Operator& op, const Transfers& transfers) {
  return {[&op, &transfers](cudaStream_t s) { call(op, transfers, s); }, prelude()};
}

CallUnderTest SweepRunner::State::run_alone(Operator& op) {
  return {[&op](cudaStream_t s) { op.run(s); }, prelude()};
}

void SweepRunner::State::timing_pass(Operator& op, const Transfers& transfers, Point& point,
                                     TimingWindow window) {
  const cudaStream_t s = stream.get();
  const CallUnderTest under_test = call_under_test(op, transfers);
  ThreeTimeRules rules{options.call_rule, options.stream_rule, options.graph_rule};
  if (window == TimingWindow::revisit) {
    for (StopRule* rule : {&rules.call, &rules.stream}) {
      rule->budget_s *= options.revisit_budget_share;
      rule->max_samples =
          std::max(rule->min_samples,
                   static_cast<int>(std::lround(rule->max_samples * options.revisit_budget_share)));
    }
    rules.with_graph = false;
  }
  LapClock clock;
  const PinnedThread pinned;
  const HostProbe probe_before = probe_host();
  const int core = pinned.core().value_or(-1);
  const std::optional<double> steal_before = steal_seconds(core);
  const ClockReader& reader = clocks();
  double host_probes_s = clock.lap();
  const WarmupResult warm = warm_up(under_test, s, options.warmup);
  const double warm_up_s = clock.lap();
  const ThreeTimes three =
      time_three_interleaved(under_test, s, rules, [&reader] { return reader.read().sm_hz; });
  const double passes_s = clock.lap();
  const SynchronizedTimes& synchronized = three.synchronized;
  const MeasuredTime& back_to_back = three.stream;
  const GraphReplay& graph = three.graph;
  const HostProbe probe_after = probe_host();
  const std::optional<double> steal_after = steal_seconds(core);
  host_probes_s += clock.lap();

  Timing& t = point.timing;
  t.call = synchronized.call.stats;
  t.issue = synchronized.issue.stats;
  t.stream = back_to_back.stats;
  if (graph.time) t.graph = graph.time->stats;
  t.graph_unavailable = graph.unavailable;
  nlohmann::json pilots = nlohmann::json::array();
  for (const GraphPilot& pilot : graph.pilots)
    pilots.push_back(
        {{"copies", pilot.copies}, {"per_call_s", pilot.per_call_s}, {"seconds", pilot.seconds}});
  nlohmann::json graph_details = {{"copies_per_graph", graph.copies},
                                  {"nodes_per_call", graph.nodes_per_call},
                                  {"pilots", pilots}};
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
      {"after_cupti", cupti_attached},
      {"warm_up_calls", warm.calls},
      {"phase_seconds", pass_phases(host_probes_s, warm_up_s, warm.first_call_s, passes_s, three)}};
  if (!pinned.core()) point.details["timing"]["pin_failure"] = pinned.failure();
}

bool SweepRunner::State::time_in_worker(const OperatorFamily& family, const nlohmann::json& params,
                                        const std::string& algorithm, TimingWindow window,
                                        Point& timed, std::string& why_here) {
  why_here = options.timing_worker.empty() ? "" : worker_failure;
  if (options.timing_worker.empty() || !worker_failure.empty()) return false;
  try {
    const auto asked = std::chrono::steady_clock::now();
    if (!worker) worker = std::make_unique<TimingWorker>(options.timing_worker, gpu.index);
    const nlohmann::json reply = worker->time(
        family.name, with_algorithm_pinned(family, params, algorithm), options, window);
    const double worker_wall_s = seconds_since(asked);
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
      // From the request to the reply, the worker's start included on first use:
      // beside phase_seconds.total, what the process boundary costs.
      timed.details["timing"]["worker_wall_s"] = worker_wall_s;
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

void SweepRunner::State::timing_step(const OperatorFamily& family, const nlohmann::json& params,
                                     Operator& op, const Transfers& transfers, Point& point) {
  const double at_s = seconds_since(clock_origin);
  std::string why_here;
  if (!time_in_worker(family, params, op.algorithm(), TimingWindow::first, point, why_here)) {
    timing_pass(op, transfers, point);
    point.details["timing"]["process"] = "runner";
    if (!why_here.empty()) point.details["timing"]["worker_failure"] = why_here;
  }
  point.details["timing"]["at_s"] = at_s;
}

Point SweepRunner::State::time_here(const OperatorFamily& family, const nlohmann::json& params,
                                    TimingWindow window) {
  const auto started = std::chrono::steady_clock::now();
  LapClock clock;
  std::unique_ptr<Operator> op = make_operator(family, params, libraries);
  nlohmann::json window_phases = {{"build", clock.lap()}};
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
    window_phases["prepare"] = clock.lap();
    point.algorithm = op->algorithm();
    const Transfers transfers = transfers_for(*op);
    window_phases["host_buffers"] = clock.lap();
    timing_pass(*op, transfers, point, window);
    clock.lap();  // the pass records its own phases
  });
  op.reset();  // and the host buffers above: the device and host memory given back
  window_phases["teardown"] = clock.lap();
  point.status = timed.status;
  point.reason = timed.reason;
  if (point.details.contains("timing")) {
    nlohmann::json& phases = point.details["timing"]["phase_seconds"];
    phases.update(window_phases);
    phases["total"] = seconds_since(started);
  }
  return point;
}

void SweepRunner::State::plan_windows(PendingPoint& pending) const {
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

void SweepRunner::State::revisit(const OperatorFamily& family, PendingPoint& pending) {
  const Point& point = pending.point;
  const double at_s = seconds_since(clock_origin);
  Point timed;
  std::string why_here;
  try {
    if (!time_in_worker(family, point.params, point.algorithm, TimingWindow::revisit, timed,
                        why_here)) {
      timed = time_here(family, with_algorithm_pinned(family, point.params, point.algorithm),
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

void SweepRunner::State::join_windows(PendingPoint& pending) {
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

void SweepRunner::State::revisit_pass(std::vector<PendingPoint>& points,
                                      const OperatorFamily& family, const std::atomic<bool>& stop,
                                      double min_age_s,
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

void SweepRunner::State::remaining_windows(
    std::vector<PendingPoint>& points, const OperatorFamily& family, const std::atomic<bool>& stop,
    const std::function<void(const std::string&)>& announce) {
  for (int pass = 1; pass < options.host_windows; ++pass)
    revisit_pass(points, family, stop, 0, announce);
}

}  // namespace timeroof
