#include "sweeps/runner.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

#include "counters/activity_tracer.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/l2_flush.hpp"
#include "sweeps/cudnn_handles.hpp"

namespace timeroof {

namespace {

OperatorNeeds needs_of(const Operator& op) {
  using P = OperatorNeeds::Precision;
  OperatorNeeds needs;
  const std::string precision = op.precision();
  needs.precision = precision == "fp16"   ? P::fp16
                    : precision == "bf16" ? P::bf16
                    : precision == "tf32" ? P::tf32
                    : precision == "fp64" ? P::fp64
                                          : P::fp32;
  needs.math = op.math_mode() == "fma_only" ? OperatorNeeds::Math::fma_only
                                            : OperatorNeeds::Math::tensor_cores;
  return needs;
}

std::string point_label(const OperatorFamily& family, int seq, const nlohmann::json& params) {
  std::string label = family.name + " #" + std::to_string(seq);
  for (const auto& [key, value] : params.items())
    label += " " + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  return label;
}

}  // namespace

struct SweepRunner::State {
  GpuInfo gpu;
  RunnerOptions options;
  Stream stream;
  std::shared_ptr<CudnnHandle> cudnn = std::make_shared<CudnnHandle>();
  std::optional<L2Flusher> flusher;
  // Counters: one session per sweep, created on first use; if it cannot be
  // created, every point says why and keeps its timing.
  std::unique_ptr<ProfilerSession> profiler;
  std::string counters_unavailable;
  std::map<std::string, CollectionPlan> plans;  // by precision/math

  void flush_if_cold() {
    if (flusher) flusher->flush(stream.get());
  }

  ProfilerSession* session() {
    if (!options.counters || !counters_unavailable.empty()) return nullptr;
    if (profiler) return profiler.get();
    if (!gpu.counters.available) {
      counters_unavailable = gpu.counters.reason;
      return nullptr;
    }
    try {
      profiler = std::make_unique<ProfilerSession>();
    } catch (const CounterAccessError& e) {
      counters_unavailable = e.reason() + (e.fix().empty() ? "" : "; fix: " + e.fix());
    }
    return profiler.get();
  }

  const CollectionPlan& plan_for(ProfilerSession& session, const Operator& op) {
    const std::string key = op.precision() + "/" + op.math_mode();
    auto found = plans.find(key);
    if (found == plans.end()) {
      found = plans
                  .emplace(key, plan_collection(session.chip(), quantities_for(needs_of(op)),
                                                session.counter_availability()))
                  .first;
    }
    return found->second;
  }

  void timing_pass(Operator& op, Point& point) {
    const cudaStream_t s = stream.get();
    for (int i = 0; i < options.warmup_calls; ++i) op.run(s);
    TR_CUDA_CHECK(cudaStreamSynchronize(s));
    const Event start, stop;
    const ClockReader clocks(gpu.index);
    const Measurement m = measure_until_stable(
        options.timing, [&](int n, std::vector<double>& samples, std::vector<Clocks>& readings) {
          for (int i = 0; i < n; ++i) {
            flush_if_cold();
            start.record(s);
            op.run(s);
            stop.record(s);
            if (i == 0) readings.push_back(clocks.read());
            stop.synchronize();
            samples.push_back(stop.seconds_since(start));
          }
        });
    point.timing.wall_median_s = m.median_s;
    point.timing.wall_spread = m.spread;
    point.timing.repeats = m.repeats;
    point.details["timing"] = {
        {"method", "CUDA events around each call, median until stable"},
        {"min_s", m.min_s},
        {"max_s", m.max_s},
        {"sm_clock_hz", m.sm_clock_hz ? nlohmann::json(*m.sm_clock_hz) : nlohmann::json(nullptr)},
        {"l2", flusher ? "cold" : "warm"}};
  }

  void trace_pass(Operator& op, Point& point) {
    const cudaStream_t s = stream.get();
    ActivityTracer tracer;
    tracer.start();
    for (int i = 0; i < options.trace_calls; ++i) {
      tracer.mark_call();
      op.run(s);
    }
    const Trace trace = tracer.stop();
    const TraceSummary summary = summarize_calls(trace, options.trace_calls);
    const Timing traced = summary.timing();
    point.timing.kernel_time_s = traced.kernel_time_s;
    point.timing.launches = traced.launches;
    point.timing.api_time_s = traced.api_time_s;
    point.timing.launch_gap_s = traced.launch_gap_s;
    point.timing.h2d_bytes = traced.h2d_bytes;
    point.timing.h2d_time_s = traced.h2d_time_s;
    point.timing.d2h_bytes = traced.d2h_bytes;
    point.timing.d2h_time_s = traced.d2h_time_s;
    std::vector<KernelRecord> kernels = kernel_records(trace);
    const auto per_call = static_cast<std::size_t>(summary.launches);
    if (kernels.size() > per_call) kernels.resize(per_call);  // the first call's kernels
    point.kernels = std::move(kernels);
    point.details["trace"] = {{"calls", options.trace_calls},
                              {"dropped_records", trace.dropped_records}};
    if (summary.launch_latency_ns)
      point.details["trace"]["launch_latency_s"] = *summary.launch_latency_ns * 1e-9;
  }

  void counter_pass(Operator& op, Point& point) {
    ProfilerSession* profiler_session = session();
    if (!profiler_session) {
      if (options.counters) {
        point.status = PointStatus::counters_unavailable;
        point.reason = counters_unavailable;
      }
      point.details["counters"] = {{"collected", false}, {"reason", counters_unavailable}};
      return;
    }
    const CollectionPlan& plan = plan_for(*profiler_session, op);
    const cudaStream_t s = stream.get();
    UserRange range{"point", [&] { op.run(s); }, nullptr};
    if (flusher) range.setup = [this] { flush_if_cold(); };
    const ProfileResult result = profiler_session->profile_ranges(plan.metrics, {range});
    if (result.ranges.size() != 1) {
      point.status = PointStatus::counters_unavailable;
      point.reason = "the range profiler returned " + std::to_string(result.ranges.size()) +
                     " ranges for one call (dropped: " + std::to_string(result.dropped_ranges) +
                     ")";
      return;
    }
    std::map<std::string, double> values;
    for (std::size_t i = 0; i < result.metrics.size(); ++i)
      values[result.metrics[i]] = result.ranges[0].values[i];
    point.counters = values;
    for (const auto& [quantity, value] : evaluate(plan, values))
      point.counters[to_string(quantity)] = value;
    point.details["counters"] = {{"collected", true},
                                 {"chip", plan.chip},
                                 {"passes", result.passes},
                                 {"l2", flusher ? "cold" : "warm"}};
  }
};

SweepRunner::SweepRunner(GpuInfo gpu, RunnerOptions options) : state_(std::make_unique<State>()) {
  state_->gpu = std::move(gpu);
  state_->options = options;
  if (options.cold_l2) state_->flusher.emplace(state_->gpu.l2_bytes);
}

SweepRunner::~SweepRunner() = default;

Point SweepRunner::measure_point(const OperatorFamily& family, const nlohmann::json& params,
                                 const std::string& sweep, int seq) {
  std::unique_ptr<Operator> op = family.make(params, state_->cudnn);
  Point point = describe(*op);
  point.sweep = sweep;
  point.seq = seq;
  point.params = params;

  const Outcome prepared = guarded([&] { op->prepare(state_->stream.get()); });
  if (prepared.status != PointStatus::ok) {
    point.status = prepared.status;
    point.reason = prepared.reason;
    return point;
  }
  point.algorithm = op->algorithm();
  point.details["operator"] = op->details();

  CheckResult check;
  const Outcome checked = guarded([&] { check = op->check(); });
  if (checked.status != PointStatus::ok) {
    point.status = checked.status;
    point.reason = "output check: " + checked.reason;
    return point;
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
    return point;
  }

  const Outcome measured = guarded([&] {
    state_->timing_pass(*op, point);
    state_->trace_pass(*op, point);
    state_->counter_pass(*op, point);
  });
  if (measured.status != PointStatus::ok) {
    point.status = measured.status;
    point.reason = measured.reason;
  }
  return point;
}

SweepOutcome SweepRunner::run(const SweepPlan& plan, const std::set<int>& finished, PointSink& sink,
                              const std::atomic<bool>& stop,
                              const std::function<void(const SweepProgress&)>& progress) {
  SweepOutcome outcome;
  SweepProgress status;
  for (int seq = 0; seq < static_cast<int>(plan.points.size()); ++seq)
    status.total += finished.count(seq) ? 0 : 1;
  const auto started = std::chrono::steady_clock::now();
  for (int seq = 0; seq < static_cast<int>(plan.points.size()); ++seq) {
    if (finished.count(seq)) {
      ++outcome.already_finished;
      continue;
    }
    if (stop.load()) {
      outcome.interrupted = true;
      break;
    }
    status.current = point_label(*plan.family, seq, plan.points[seq]);
    if (progress) progress(status);
    Point point = measure_point(*plan.family, plan.points[seq], plan.name, seq);
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
    ++status.done;
    status.elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  if (progress) {
    status.current.clear();
    progress(status);
  }
  return outcome;
}

}  // namespace timeroof
