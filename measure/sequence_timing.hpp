// The event-sequence loop T_stream and T_graph share: a unit of work (one call,
// or one replay of a captured graph) launched back to back, the host running
// ahead of the GPU, timed by CUDA events between the launches.
// - Warm (no prelude): each chunk first launches `lead_launches` untimed units
//   (the host gets ahead while the GPU runs them), then records an event after
//   every `launches_per_sample` units; a sample is the time between two
//   consecutive events over the calls between them. Host issue and GPU work
//   overlap as in a training loop: a call whose host issue is slower than its
//   GPU work is timed at the host's rate, which is what such a loop pays.
// - Cold (a prelude, e.g. an L2 flush, before every unit): an event pair around
//   each unit, the prelude outside the pair; still issued back to back, so the
//   host enqueues the next unit while the GPU runs the prelude.
// Only one host synchronization per chunk, at its end.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "core/results.hpp"
#include "core/statistics.hpp"
#include "gpu/handles.hpp"

namespace timeroof {

struct SequenceOptions {
  int launches_per_sample = 1;  // warm only; cold samples are one unit each
  int lead_launches = 2;
  int samples_per_chunk = 16;
  int calls_per_launch = 1;  // calls in one unit (graph copies): samples are per call
};

// The sequence loop in rounds (core/statistics.hpp Sampler): round(n, samples)
// appends n per-call samples, in chunks of at most samples_per_chunk with one
// synchronization each. `while_busy`, if set, runs once per chunk after its
// launches are enqueued, while the GPU works through them.
class SequenceSampler {
 public:
  SequenceSampler(std::function<void(cudaStream_t)> launch,
                  std::function<void(cudaStream_t)> prelude, cudaStream_t stream,
                  const SequenceOptions& options, std::function<void()> while_busy = nullptr);
  void round(int n, std::vector<double>& samples);
  int calls_per_sample() const { return calls_per_sample_; }

 private:
  int chunk(int samples_wanted, std::vector<double>& samples);

  std::function<void(cudaStream_t)> launch_, prelude_;
  cudaStream_t stream_;
  SequenceOptions options_;
  std::function<void()> while_busy_;
  int launches_per_sample_;
  int calls_per_sample_;
  std::vector<Event> events_;
};

// Per-call samples until `rule` stops.
TimeStats time_sequence(const std::function<void(cudaStream_t)>& launch,
                        const std::function<void(cudaStream_t)>& prelude, cudaStream_t stream,
                        const StopRule& rule, const SequenceOptions& options,
                        const std::function<void()>& while_busy = nullptr);

// Launches per sample so that a sample spans about `sample_seconds` when one
// launch takes `launch_estimate_s`; between 1 and `max_launches`.
int launches_for(double sample_seconds, double launch_estimate_s, int max_launches = 1000);

}  // namespace timeroof
