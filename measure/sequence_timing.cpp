#include "measure/sequence_timing.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/check.hpp"
#include "gpu/handles.hpp"

namespace timeroof {

int launches_for(double sample_seconds, double launch_estimate_s, int max_launches) {
  if (!(launch_estimate_s > 0)) return 1;
  const double launches = std::ceil(sample_seconds / launch_estimate_s);
  return static_cast<int>(std::clamp(launches, 1.0, static_cast<double>(max_launches)));
}

TimeStats time_sequence(const std::function<void(cudaStream_t)>& launch,
                        const std::function<void(cudaStream_t)>& prelude, cudaStream_t stream,
                        const StopRule& rule, const SequenceOptions& options,
                        const std::function<void()>& while_busy) {
  const bool cold = static_cast<bool>(prelude);
  const int per_sample = cold ? 1 : std::max(1, options.launches_per_sample);
  const int chunk = std::max(1, options.samples_per_chunk);
  // Warm: chunk + 1 events mark chunk samples; cold: a start and a stop per sample.
  std::vector<Event> events(static_cast<std::size_t>(cold ? 2 * chunk : chunk + 1));
  const double calls_per_sample = static_cast<double>(per_sample) * options.calls_per_launch;

  auto run_chunk = [&](int samples_wanted, std::vector<double>& samples) {
    const int m = std::min(samples_wanted, chunk);
    if (cold) {
      for (int j = 0; j < m; ++j) {
        prelude(stream);
        events[2 * j].record(stream);
        launch(stream);
        events[2 * j + 1].record(stream);
      }
    } else {
      for (int i = 0; i < options.lead_launches; ++i) launch(stream);
      events[0].record(stream);
      for (int j = 1; j <= m; ++j) {
        for (int i = 0; i < per_sample; ++i) launch(stream);
        events[j].record(stream);
      }
    }
    if (while_busy) while_busy();
    events[cold ? 2 * m - 1 : m].synchronize();
    for (int j = 0; j < m; ++j) {
      const double seconds = cold ? events[2 * j + 1].seconds_since(events[2 * j])
                                  : events[j + 1].seconds_since(events[j]);
      samples.push_back(seconds / calls_per_sample);
    }
    return m;
  };
  auto round = [&](int n, std::vector<double>& samples) {
    while (n > 0) n -= run_chunk(n, samples);
  };
  std::vector<double> samples;
  const bool converged = sample_until_converged(rule, samples, round, chunk);
  return time_stats(samples, static_cast<int>(calls_per_sample), converged);
}

}  // namespace timeroof
