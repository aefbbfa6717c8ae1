#include "measure/sequence_timing.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "gpu/check.hpp"

namespace timeroof {

int launches_for(double sample_seconds, double launch_estimate_s, int max_launches) {
  if (!(launch_estimate_s > 0)) return 1;
  const double launches = std::ceil(sample_seconds / launch_estimate_s);
  return static_cast<int>(std::clamp(launches, 1.0, static_cast<double>(max_launches)));
}

SequenceSampler::SequenceSampler(std::function<void(cudaStream_t)> launch,
                                 std::function<void(cudaStream_t)> prelude, cudaStream_t stream,
                                 const SequenceOptions& options, std::function<void()> while_busy)
    : launch_(std::move(launch)),
      prelude_(std::move(prelude)),
      stream_(stream),
      options_(options),
      while_busy_(std::move(while_busy)),
      // Cold samples are one unit each.
      launches_per_sample_(prelude_ ? 1 : std::max(1, options.launches_per_sample)),
      calls_per_sample_(launches_per_sample_ * std::max(1, options.calls_per_launch)) {
  options_.samples_per_chunk = std::max(1, options.samples_per_chunk);
  // Warm: chunk + 1 events mark chunk samples; cold: a start and a stop per sample.
  const int chunk = options_.samples_per_chunk;
  events_.resize(static_cast<std::size_t>(prelude_ ? 2 * chunk : chunk + 1));
}

int SequenceSampler::chunk(int samples_wanted, std::vector<double>& samples) {
  const int m = std::min(samples_wanted, options_.samples_per_chunk);
  const bool cold = static_cast<bool>(prelude_);
  if (cold) {
    for (int j = 0; j < m; ++j) {
      prelude_(stream_);
      events_[2 * j].record(stream_);
      launch_(stream_);
      events_[2 * j + 1].record(stream_);
    }
  } else {
    for (int i = 0; i < options_.lead_launches; ++i) launch_(stream_);
    events_[0].record(stream_);
    for (int j = 1; j <= m; ++j) {
      for (int i = 0; i < launches_per_sample_; ++i) launch_(stream_);
      events_[j].record(stream_);
    }
  }
  if (while_busy_) while_busy_();
  events_[cold ? 2 * m - 1 : m].synchronize();
  for (int j = 0; j < m; ++j) {
    const double seconds = cold ? events_[2 * j + 1].seconds_since(events_[2 * j])
                                : events_[j + 1].seconds_since(events_[j]);
    samples.push_back(seconds / calls_per_sample_);
  }
  return m;
}

void SequenceSampler::round(int n, std::vector<double>& samples) {
  while (n > 0) n -= chunk(n, samples);
}

TimeStats time_sequence(const std::function<void(cudaStream_t)>& launch,
                        const std::function<void(cudaStream_t)>& prelude, cudaStream_t stream,
                        const StopRule& rule, const SequenceOptions& options,
                        const std::function<void()>& while_busy) {
  SequenceSampler sampler(launch, prelude, stream, options, while_busy);
  std::vector<double> samples;
  const bool converged = sample_until_converged(
      rule, samples, [&](int n, std::vector<double>& s) { sampler.round(n, s); },
      options.samples_per_chunk);
  return time_stats(samples, sampler.calls_per_sample(), converged);
}

}  // namespace timeroof
