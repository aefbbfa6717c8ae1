#include "measure/interleaved.hpp"

#include <chrono>
#include <optional>
#include <vector>

#include "core/elapsed.hpp"
#include "measure/sequence_timing.hpp"

namespace timeroof {

namespace {

// A while_busy hook that appends a clock reading to `readings`.
std::function<void()> reading_into(const std::function<std::optional<double>()>& read,
                                   std::vector<double>& readings) {
  if (!read) return nullptr;
  return [&read, &readings] {
    if (const std::optional<double> hz = read()) readings.push_back(*hz);
  };
}

std::optional<double> median_reading(const std::vector<double>& readings) {
  if (readings.empty()) return std::nullopt;
  return median_of(readings);
}

}  // namespace

ThreeTimes time_three_interleaved(const CallUnderTest& call, cudaStream_t stream,
                                  const ThreeTimeRules& rules,
                                  const std::function<std::optional<double>()>& read_sm_clock,
                                  const BackToBackOptions& stream_options,
                                  const GraphReplayOptions& graph_options) {
  std::vector<double> call_clocks, stream_clocks, graph_clocks;
  SynchronizedSampler synchronized(call, stream, reading_into(read_sm_clock, call_clocks));
  std::vector<Sampler> samplers;
  samplers.reserve(3);  // the reference below stays valid
  samplers.push_back(
      {rules.call, [&](int n, std::vector<double>& s) { synchronized.round(n, s); }});
  Sampler& call_sampler = samplers.back();

  // A first round of T_call alone sizes T_stream's samples.
  const auto first = std::chrono::steady_clock::now();
  synchronized.round(std::max(rules.call.min_samples, call_sampler.first_round),
                     call_sampler.samples);
  call_sampler.spent_s = seconds_since(first);
  call_sampler.rounds = 1;

  const SequenceOptions sequence =
      back_to_back_sequence(median_of(call_sampler.samples), stream_options);
  SequenceSampler back_to_back(call.enqueue, call.prelude, stream, sequence,
                               reading_into(read_sm_clock, stream_clocks));
  std::optional<GraphReplaySampler> graph;
  if (rules.with_graph)
    graph.emplace(call, stream, graph_options, reading_into(read_sm_clock, graph_clocks));
  const bool graph_sampled = graph && graph->available();

  samplers.push_back({rules.stream,
                      [&](int n, std::vector<double>& s) { back_to_back.round(n, s); },
                      sequence.samples_per_chunk});
  if (graph_sampled)
    samplers.push_back({rules.graph, [&](int n, std::vector<double>& s) { graph->round(n, s); },
                        SequenceOptions{}.samples_per_chunk});
  sample_interleaved(samplers);

  ThreeTimes times;
  const Sampler& c = samplers[0];
  const Sampler& b = samplers[1];
  times.synchronized = synchronized.times(c.samples, c.converged, c.rule);
  times.synchronized.call.sm_clock_hz = median_reading(call_clocks);
  times.call_rounds = c.rounds;
  times.call_seconds = c.spent_s;
  times.stream.stats = time_stats(b.samples, back_to_back.calls_per_sample(), b.converged);
  times.stream.method = back_to_back_method(call, sequence);
  times.stream.sm_clock_hz = median_reading(stream_clocks);
  times.stream_rounds = b.rounds;
  times.stream_seconds = b.spent_s;
  if (graph_sampled) {
    const Sampler& g = samplers[2];
    times.graph = graph->result(g.samples, g.converged);
    times.graph.time->sm_clock_hz = median_reading(graph_clocks);
    times.graph_rounds = g.rounds;
    times.graph_seconds = g.spent_s;
  } else if (graph) {
    times.graph = graph->result({}, false);
  } else {
    times.graph.unavailable = "not measured in this window (host-side times only)";
  }
  return times;
}

}  // namespace timeroof
