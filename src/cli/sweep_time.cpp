#include "src/cli/sweep_time.hpp"

#include <algorithm>
#include <cmath>

#include "core/format.hpp"

namespace timeroof::cli {

namespace {

double step(const nlohmann::json& steps, const char* name) {
  const auto it = steps.find(name);
  return it != steps.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string seconds_text(const char* label, double seconds) {
  return std::string(label) + " " + format_time(seconds);  // the console's one time format
}

}  // namespace

void SweepTime::add(const Point& point) {
  ++points;
  const nlohmann::json& details = point.details;
  if (!details.is_object()) return;
  if (const auto steps = details.find("runner_seconds");
      steps != details.end() && steps->is_object()) {
    timing_s += step(*steps, "timing");
    counters_s += step(*steps, "counters");
    trace_s += step(*steps, "trace");
    check_s += step(*steps, "check");
    prepare_s += step(*steps, "prepare");
  }
  if (const auto counters = details.find("counters");
      counters != details.end() && counters->is_object()) {
    const auto batch = counters->find("batch_size");
    if (batch != counters->end() && batch->is_number() && batch->get<double>() >= 1)
      collections += 1 / batch->get<double>();
  }
}

std::string sweep_time_text(const SweepTime& time, double worker_s) {
  if (time.points == 0) return "";
  const long collections = std::lround(time.collections);
  std::string text =
      seconds_text("timing", time.timing_s) + ", " + seconds_text("counters", time.counters_s) +
      " (" + std::to_string(collections) +
      (collections == 1 ? " collection), " : " collections), ") +
      seconds_text("trace", time.trace_s) + ", " + seconds_text("checks", time.check_s) + ", " +
      seconds_text("set-up", time.prepare_s);
  return text + ", " + seconds_text("other", std::max(0.0, worker_s - time.steps_s()));
}

}  // namespace timeroof::cli
