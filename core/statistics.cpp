#include "core/statistics.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "core/elapsed.hpp"

namespace timeroof {

double quantile_of_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

namespace {

// The median of `values`, reordering them (nth_element, linear time).
double median_in_place(std::vector<double>& values) {
  const std::size_t n = values.size();
  if (n == 0) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), middle, values.end());
  const double upper = *middle;
  if (n % 2 == 1) return upper;
  return (*std::max_element(values.begin(), middle) + upper) / 2;
}

}  // namespace

double median_of(std::span<const double> samples) {
  std::vector<double> copy(samples.begin(), samples.end());
  return median_in_place(copy);
}

MedianInterval bootstrap_median_interval(std::span<const double> samples, int resamples,
                                         double level, std::uint64_t seed) {
  MedianInterval interval;
  interval.median = median_of(samples);
  interval.low = interval.high = interval.median;
  if (samples.size() < 2 || resamples < 1) return interval;
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<std::size_t> pick(0, samples.size() - 1);
  std::vector<double> medians(static_cast<std::size_t>(resamples));
  std::vector<double> draw(samples.size());
  for (double& median : medians) {
    for (double& value : draw) value = samples[pick(generator)];
    median = median_in_place(draw);
  }
  std::sort(medians.begin(), medians.end());
  interval.low = quantile_of_sorted(medians, (1 - level) / 2);
  interval.high = quantile_of_sorted(medians, (1 + level) / 2);
  return interval;
}

TimeStats time_stats(std::span<const double> samples, int calls_per_sample, bool converged) {
  TimeStats stats;
  stats.samples = static_cast<int>(samples.size());
  stats.calls_per_sample = calls_per_sample;
  stats.converged = converged;
  if (samples.empty()) return stats;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  const MedianInterval interval = bootstrap_median_interval(samples);
  stats.median_s = interval.median;
  stats.ci_low_s = interval.low;
  stats.ci_high_s = interval.high;
  stats.mean_s =
      std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  stats.min_s = sorted.front();
  stats.max_s = sorted.back();
  stats.spread =
      stats.median_s > 0
          ? (quantile_of_sorted(sorted, 0.9) - quantile_of_sorted(sorted, 0.1)) / stats.median_s
          : 0;
  return stats;
}

TimeStats combine_windows(std::span<const TimeStats> windows) {
  if (windows.empty()) return {};
  if (windows.size() == 1) return windows.front();
  TimeStats combined;
  combined.calls_per_sample = windows.front().calls_per_sample;
  combined.converged = true;
  combined.min_s = windows.front().min_s;
  combined.max_s = windows.front().max_s;
  std::vector<double> medians;
  double weighted_mean = 0;
  int mean_samples = 0;
  bool every_mean = true;
  bool every_interval = true;
  for (const TimeStats& w : windows) {
    medians.push_back(w.median_s);
    combined.samples += w.samples;
    combined.converged = combined.converged && w.converged;
    combined.min_s = std::min(combined.min_s, w.min_s);
    combined.max_s = std::max(combined.max_s, w.max_s);
    combined.spread = std::max(combined.spread, w.spread);
    if (w.mean_s) {
      weighted_mean += *w.mean_s * w.samples;
      mean_samples += w.samples;
    } else {
      every_mean = false;
    }
    every_interval = every_interval && w.ci_low_s && w.ci_high_s;
  }
  combined.median_s = median_of(medians);
  const auto [lowest, highest] = std::minmax_element(medians.begin(), medians.end());
  if (combined.median_s > 0)
    combined.spread = std::max(combined.spread, (*highest - *lowest) / combined.median_s);
  if (every_mean && mean_samples > 0) combined.mean_s = weighted_mean / mean_samples;
  // A window without an interval (an older record) leaves the combined time
  // without one: an envelope of the others would claim more than is known.
  if (every_interval) {
    combined.ci_low_s = combined.median_s;
    combined.ci_high_s = combined.median_s;
    for (const TimeStats& w : windows) {
      combined.ci_low_s = std::min(*combined.ci_low_s, *w.ci_low_s);
      combined.ci_high_s = std::max(*combined.ci_high_s, *w.ci_high_s);
    }
  }
  return combined;
}

bool interval_converged(std::span<const double> samples, const StopRule& rule) {
  if (static_cast<int>(samples.size()) < std::max(rule.min_samples, 2)) return false;
  const MedianInterval interval = bootstrap_median_interval(samples, 250);
  if (interval.median <= 0) return true;  // nothing to resolve
  return (interval.high - interval.low) / (2 * interval.median) <= rule.target_relative_ci;
}

void sample_interleaved(std::span<Sampler> samplers, double slice) {
  bool any_running = true;
  while (any_running) {
    any_running = false;
    for (Sampler& s : samplers) {
      if (s.stopped) continue;
      const int have = static_cast<int>(s.samples.size());
      int wanted = std::max({s.first_round, have / 4, s.rule.min_samples - have, 1});
      if (have > 0 && s.spent_s > 0) {
        const double per_sample = s.spent_s / have;
        const double fits = std::floor(slice * s.rule.budget_s / per_sample);
        wanted = std::min(wanted, static_cast<int>(std::clamp(fits, 1.0, 1e9)));
      }
      const auto start = std::chrono::steady_clock::now();
      s.round(std::min(wanted, std::max(s.rule.max_samples - have, 1)), s.samples);
      ++s.rounds;
      s.converged = interval_converged(s.samples, s.rule);
      s.spent_s += seconds_since(start);  // the check is part of the pass's cost
      s.stopped = s.converged || static_cast<int>(s.samples.size()) >= s.rule.max_samples ||
                  s.spent_s >= s.rule.budget_s;
      any_running = any_running || !s.stopped;
    }
  }
}

bool sample_until_converged(const StopRule& rule, std::vector<double>& samples,
                            const std::function<void(int, std::vector<double>&)>& round,
                            int first_round) {
  Sampler alone{rule, round, first_round, std::move(samples)};
  sample_interleaved(std::span(&alone, 1), 1e9);  // rounds never capped
  samples = std::move(alone.samples);
  return alone.converged;
}

}  // namespace timeroof
