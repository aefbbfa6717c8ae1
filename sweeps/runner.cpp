#include "sweeps/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/elapsed.hpp"
#include "core/format.hpp"
#include "gpu/check.hpp"
#include "sweeps/runner_state.hpp"

namespace timeroof {

namespace {

std::string point_label(const OperatorFamily& family, int seq, const nlohmann::json& params) {
  const std::string text = params_text(params);
  return family.name + " #" + std::to_string(seq) + (text.empty() ? "" : " " + text);
}

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
  void lap(const char* name) { point_.details["runner_seconds"][name] = clock_.lap(); }

 private:
  Point& point_;
  LapClock clock_;
};

}  // namespace

bool SweepRunner::State::memory_is_tight() const {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return true;
  return free < total / 2;
}

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
  // Points wait for one counter collection per batch (`pending`, with their
  // operators): a batch is the points of one metric plan (plan_key), collected
  // once counter_batch of them wait, so points of several plans in turn (a
  // GEMM sweep's precisions, a --devices chunk) do not cut each other's
  // batches. Then they wait for their host-side windows (`windowing`, the
  // revisits taken once a point's latest window is window_spacing_s old); then
  // they are written. What waits when the sweep stops is collected and written
  // first (revisits not yet taken are skipped), so Ctrl-C loses nothing; a
  // crash loses the points waiting for counters or for windows.
  std::vector<PendingPoint> pending = std::move(state_->kept);  // from the last call
  std::vector<PendingPoint> windowing = std::move(state_->kept_windowing);
  std::map<std::string, std::size_t> waiting = std::move(state_->kept_waiting);  // per plan_key
  state_->kept.clear();
  state_->kept_windowing.clear();
  state_->kept_waiting.clear();
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
  // Collects the counters of the pending points `chosen` picks and moves them on
  // to their windows.
  auto collect = [&](const std::function<bool(const PendingPoint&)>& chosen) {
    std::vector<PendingPoint> batch, rest;
    for (PendingPoint& p : pending) (chosen(p) ? batch : rest).push_back(std::move(p));
    pending = std::move(rest);
    // A collection takes ~0.2 s per pass whatever it holds: the progress line
    // says so, not the label of the last point timed.
    if (!batch.empty() && state_->options.counters && state_->counters_unavailable.empty())
      announce("hardware counters of " + std::to_string(batch.size()) + " point(s)");
    state_->collect_counters(batch);
    for (PendingPoint& p : batch) windowing.push_back(std::move(p));
    write_ready();
  };
  auto finish_all = [&] {
    collect([](const PendingPoint&) { return true; });
    waiting.clear();
  };
  auto finish_plan = [&](const std::string& key) {
    collect([&](const PendingPoint& p) { return p.op && State::plan_key(*p.op) == key; });
    waiting.erase(key);
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
    if (!waiting.empty() && state_->memory_is_tight()) finish_all();
    status.current = point_label(*plan.family, seq, plan.points[seq]);
    if (progress) progress(status);
    PendingPoint measured =
        state_->measure_until_counters(*plan.family, plan.points[seq], plan.name, seq);
    if (measured.point.status == PointStatus::out_of_memory && !waiting.empty()) {
      finish_all();  // the waiting points' memory was in the way: once more without it
      measured = state_->measure_until_counters(*plan.family, plan.points[seq], plan.name, seq);
    }
    if (!measured.op) {
      windowing.push_back(std::move(measured));  // nothing to collect
    } else {
      const std::string key = State::plan_key(*measured.op);
      pending.push_back(std::move(measured));
      if (++waiting[key] >= static_cast<std::size_t>(std::max(1, state_->options.counter_batch)))
        finish_plan(key);
    }
    due_windows();
  }
  if (last_batch == LastBatch::keep && !outcome.interrupted && !stop.load()) {
    state_->kept = std::move(pending);
    state_->kept_windowing = std::move(windowing);
    state_->kept_waiting = std::move(waiting);
  } else {
    finish_all();
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
