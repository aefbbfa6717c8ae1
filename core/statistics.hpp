// Statistics of repeated time samples: the median, its bootstrap confidence
// interval, the spread, and the stopping rule the runner's timing strategies use.
// Host-only and deterministic (a fixed-seed generator), so a set of samples
// always gives the same interval.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/results.hpp"

namespace timeroof {

// The q-quantile (0 <= q <= 1) of `sorted` (ascending) by linear interpolation
// between order statistics; 0 for an empty span.
double quantile_of_sorted(std::span<const double> sorted, double q);

// The median (the mean of the two middle values for an even count); 0 when empty.
double median_of(std::span<const double> samples);

struct MedianInterval {
  double median = 0;
  double low = 0;
  double high = 0;
};

// Percentile bootstrap: `resamples` samples of the same size drawn with
// replacement, the median of each, and their (1 - level) / 2 and (1 + level) / 2
// quantiles. Why a bootstrap: call times are skewed (a slow tail from host
// preemption, clock changes), so a normal-theory interval on the mean would be
// wrong twice, on the statistic and on its shape. For one sample the interval is
// that sample.
MedianInterval bootstrap_median_interval(std::span<const double> samples, int resamples = 1000,
                                         double level = 0.95, std::uint64_t seed = 0x7133u);

// TimeStats of per-call samples (seconds; each the mean over `calls_per_sample`
// calls): median, bootstrap 95% interval, spread (p90 - p10) / median, min, max.
TimeStats time_stats(std::span<const double> samples, int calls_per_sample, bool converged);

// One time measured in several windows spread over a run. On the shared GPU
// machines the host's speed drifts over seconds (two runs minutes apart: an
// LSTM's T_stream 0.47-1.79x, neighbouring points moving together), so one
// window's interval describes that window only and held the next run's median
// for fewer than half the host-bound points. Combined:
// - median: the median of the windows' medians, each window one vote (a window
//   at a passing slow level is outvoted; a fast level, which fits more samples
//   in a window's budget, gets no extra weight);
// - interval: from the lowest window's low to the highest window's high, so the
//   drift between windows is inside it;
// - spread: the largest of the windows' spreads and the windows' medians' range
//   over the median;
// - mean: over all samples; min, max, samples: over all windows; converged: every
//   window converged; calls_per_sample: the first window's. Without an interval
//   in every window, none.
// One window is returned as it is; no windows give an empty TimeStats.
TimeStats combine_windows(std::span<const TimeStats> windows);

// When to stop sampling a time: at least `min_samples` samples, and the 95%
// interval of the median within +-`target_relative_ci` of it; or, whatever the
// interval, `max_samples` or `budget_s` seconds spent (converged = false then).
struct StopRule {
  int min_samples = 20;
  int max_samples = 2000;
  double target_relative_ci = 0.01;
  double budget_s = 0.25;
};

// True when the interval of `samples` is narrow enough under `rule`. The check
// uses fewer resamples than the reported interval (it runs after every round).
bool interval_converged(std::span<const double> samples, const StopRule& rule);

// One time sampled in rounds: `round(n, samples)` appends n new samples. It
// stops under its own `rule`: converged, or max_samples or its budget (counted
// over its own rounds only) spent.
struct Sampler {
  StopRule rule;
  std::function<void(int, std::vector<double>&)> round;
  int first_round = 10;
  std::vector<double> samples;
  bool converged = false;
  bool stopped = false;
  double spent_s = 0;  // seconds in its own rounds
  int rounds = 0;
};

// Takes one round of each sampler that has not stopped, in turn, until all have.
// Rounds grow with the samples (a quarter of them, at least `first_round`), so
// each interval is checked O(log n) times, but a round is capped at about
// `slice` x its budget (from its own seconds per sample so far): the passes over
// one call then alternate many times, and a drift in clocks, power or the host's
// speed falls on all of them alike instead of on whichever ran last.
void sample_interleaved(std::span<Sampler> samplers, double slice = 0.125);

// One sampler alone (no cap on its rounds): calls `round` until `rule` stops it.
// Returns whether the interval converged; false means the budget or max_samples
// ended it.
bool sample_until_converged(const StopRule& rule, std::vector<double>& samples,
                            const std::function<void(int, std::vector<double>&)>& round,
                            int first_round = 10);

}  // namespace timeroof
