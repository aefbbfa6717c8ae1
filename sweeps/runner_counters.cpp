// The runner's CUPTI passes: the trace of a few calls, and the hardware counters
// of points batched by collection plan, waiting while another process holds them
// (runner.hpp, steps 6-7).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/elapsed.hpp"
#include "core/json_io.hpp"
#include "counters/counter_access.hpp"
#include "measure/counter_collection.hpp"
#include "measure/trace_calls.hpp"
#include "sweeps/runner_state.hpp"

namespace timeroof {

namespace {

OperatorNeeds needs_of(const Operator& op) {
  OperatorNeeds needs;
  needs.precision = op.precision();
  needs.math = op.math_mode();
  return needs;
}

}  // namespace

std::string SweepRunner::State::plan_key(const Operator& op) {
  return std::string(to_string(op.precision())) + "/" + to_string(op.math_mode());
}

ProfilerSession* SweepRunner::State::session() {
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

bool SweepRunner::State::wait_for_counters() {
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

template <typename Collect>
Outcome SweepRunner::State::collect_waiting(Collect&& collect) {
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

std::string SweepRunner::State::waited_text() const {
  if (counter_wait_s <= 0) return "";  // never waited
  char text[64];
  std::snprintf(text, sizeof text, " (waited %.0f s for them)", counter_wait_s);
  return text;
}

const CollectionPlan& SweepRunner::State::plan_for(ProfilerSession& session, const Operator& op) {
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

void SweepRunner::State::trace_pass(Operator& op, const Transfers& transfers, Point& point) {
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

bool SweepRunner::State::counters_possible(Point& point) {
  if (session()) return true;
  if (options.counters) {
    point.status = PointStatus::counters_unavailable;
    point.reason = counters_unavailable;
  }
  point.details["counters"] = {{"collected", false}, {"reason", counters_unavailable}};
  return false;
}

void SweepRunner::State::mark_timing_only(Point& point, const std::string& reason) {
  point.status = PointStatus::counters_unavailable;
  point.reason = reason;
  point.details["counters"] = {{"collected", false}, {"reason", reason}};
}

void SweepRunner::State::counter_pass_alone(Operator& op, Point& point, const std::string& why) {
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

void SweepRunner::State::counter_batch(const std::vector<PendingPoint*>& batch) {
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

void SweepRunner::State::run_guarded(PendingPoint& pending, const std::string& why) {
  const Outcome outcome =
      collect_waiting([&] { counter_pass_alone(*pending.op, pending.point, why); });
  if (outcome.status == PointStatus::counters_unavailable) {
    mark_timing_only(pending.point, outcome.reason);
  } else if (outcome.status != PointStatus::ok) {
    pending.point.status = outcome.status;
    pending.point.reason = outcome.reason;
  }
}

void SweepRunner::State::collect_counters(std::vector<PendingPoint>& points) {
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

void SweepRunner::State::flush_if_cold() {
  if (flusher) flusher->flush(stream.get());
}

}  // namespace timeroof
