// Where a sweep's time went, summed over the points it measured: each point's
// runner steps (details.runner_seconds: timing, counters, trace, check, prepare)
// and its counter collection (details.counters: batch_size points shared one), so
// the closing line of a sweep says what took the time and how many collections
// there were (a --devices run sums every worker's).
#pragma once

#include <string>

#include "core/results.hpp"

namespace timeroof::cli {

struct SweepTime {
  int points = 0;
  double timing_s = 0, counters_s = 0, trace_s = 0, check_s = 0, prepare_s = 0;
  double collections = 0;  // sum of 1 / batch_size over the points with counters

  void add(const Point& point);
  double steps_s() const { return timing_s + counters_s + trace_s + check_s + prepare_s; }
};

// "timing 45 s, counters 32 s (10 collections), trace 1.0 s, checks 2.6 s,
// set-up 600 ms, other 62 s" (format_time) where `worker_s` is the time the measuring took
// (summed over workers); other = what no step accounts for (later timing
// windows, waits). "" when no point was measured.
std::string sweep_time_text(const SweepTime& time, double worker_s);

}  // namespace timeroof::cli
