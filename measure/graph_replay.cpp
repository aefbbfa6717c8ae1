#include "measure/graph_replay.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>

#include "core/elapsed.hpp"
#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "measure/sequence_timing.hpp"

namespace timeroof {

namespace {

std::string cuda_failure(const char* call, cudaError_t status) {
  return std::string(call) + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
}

struct Captured {
  GraphExec exec;
  std::size_t nodes = 0;
  std::string failure;  // empty when exec is ready
};

// `copies` calls captured into one graph, instantiated and uploaded.
Captured capture(const CallUnderTest& call, cudaStream_t stream, int copies) {
  Captured captured;
  TR_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  std::string failure;
  try {
    for (int i = 0; i < copies; ++i) call.enqueue(stream);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  cudaGraph_t raw = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &raw);  // always: leaves capture mode
  const Graph graph(raw);
  if (failure.empty() && ended != cudaSuccess)
    failure = cuda_failure("cudaStreamEndCapture", ended);
  if (failure.empty()) {
    TR_CUDA_CHECK(cudaGraphGetNodes(graph.get(), nullptr, &captured.nodes));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph.get(), 0);
    if (made == cudaSuccess)
      captured.exec = GraphExec(exec);
    else
      failure = cuda_failure("cudaGraphInstantiate", made);
  }
  if (!failure.empty()) {
    (void)cudaGetLastError();  // a failed capture leaves a non-sticky error behind
    captured.failure = "the call cannot be captured into a CUDA graph: " + failure;
    return captured;
  }
  TR_CUDA_CHECK(cudaGraphUpload(captured.exec.get(), stream));
  return captured;
}

void launch(const GraphExec& exec, cudaStream_t stream) {
  TR_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
}

// GPU seconds per replay, over a few replays launched back to back.
double pilot_seconds(const GraphExec& exec, cudaStream_t stream) {
  constexpr int kWarm = 2, kTimed = kPilotReplays - kWarm;
  for (int i = 0; i < kWarm; ++i) launch(exec, stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  const Event start, stop;
  start.record(stream);
  for (int i = 0; i < kTimed; ++i) launch(exec, stream);
  stop.record(stream);
  stop.synchronize();
  return stop.seconds_since(start) / kTimed;
}

}  // namespace

bool larger_graph_pilot_fits(double per_replay_s, int copies, int larger_copies,
                             const GraphReplayOptions& options) {
  if (copies < 1 || !(per_replay_s >= 0)) return false;
  const double pilot_s = kPilotReplays * larger_copies * (per_replay_s / copies);
  return pilot_s <= options.max_pilot_seconds;
}

struct GraphReplaySampler::Prepared {
  const CallUnderTest& call;
  GraphReplay replay;  // copies, nodes, unavailable
  Captured captured;
  std::optional<SequenceSampler> sequence;
  int launches_per_sample = 1;
};

GraphReplaySampler::GraphReplaySampler(const CallUnderTest& call, cudaStream_t stream,
                                       const GraphReplayOptions& options,
                                       std::function<void()> while_busy)
    : prepared_(std::make_unique<Prepared>(Prepared{call, {}, {}})) {
  const auto start = std::chrono::steady_clock::now();
  Prepared& p = *prepared_;
  p.captured = capture(call, stream, 1);
  if (!p.captured.failure.empty()) {
    p.replay.unavailable = p.captured.failure;
    p.replay.setup_s = seconds_since(start);
    return;
  }
  p.replay.copies = 1;
  p.replay.nodes_per_call = p.captured.nodes;
  double per_replay = pilot_seconds(p.captured.exec, stream);
  p.replay.pilots.push_back({1, per_replay, seconds_since(start)});
  if (!call.prelude) {
    // More copies per graph (x8 at a time) while they lower the pilot's time per
    // call by 2% or more: what remains is the device's floor, not the host's
    // cudaGraphLaunch. Judged on the measured time, not on the host's share: a
    // graph launch whose host cost grows with the graph's nodes is never hidden
    // by copies (an H100 LSTM of 2 kernels and cross-stream events read 17.9 us
    // per call with 1 copy, 41.7 us with 256), and one that looked hidden still
    // cost a small conv 8% (H100, batch 2: 8.8 us with 1 copy, 8.1 with 8).
    const int node_cap = static_cast<int>(
        std::max<std::size_t>(1, options.max_nodes / std::max<std::size_t>(1, p.captured.nodes)));
    const int cap = std::min(options.max_copies, node_cap);
    while (p.replay.copies < cap) {
      const int copies = std::min(cap, p.replay.copies * 8);
      if (!larger_graph_pilot_fits(per_replay, p.replay.copies, copies, options)) break;
      const auto tried = std::chrono::steady_clock::now();
      Captured larger = capture(call, stream, copies);
      if (!larger.failure.empty()) break;  // keep the smaller graph
      const double larger_per_replay = pilot_seconds(larger.exec, stream);
      p.replay.pilots.push_back({copies, larger_per_replay / copies, seconds_since(tried)});
      if (larger_per_replay / copies > (1 - options.min_gain) * per_replay / p.replay.copies) break;
      p.captured = std::move(larger);
      p.replay.copies = copies;
      per_replay = larger_per_replay;
    }
  }
  SequenceOptions sequence;
  sequence.calls_per_launch = p.replay.copies;
  sequence.launches_per_sample =
      launches_for(options.sample_seconds, per_replay, options.max_launches_per_sample);
  p.launches_per_sample = sequence.launches_per_sample;
  const GraphExec& exec = p.captured.exec;
  p.sequence.emplace([&exec](cudaStream_t s) { launch(exec, s); }, call.prelude, stream, sequence,
                     std::move(while_busy));
  p.replay.setup_s = seconds_since(start);
}

GraphReplaySampler::~GraphReplaySampler() = default;

bool GraphReplaySampler::available() const {
  return prepared_->sequence.has_value();
}

void GraphReplaySampler::round(int n, std::vector<double>& samples) {
  prepared_->sequence->round(n, samples);
}

GraphReplay GraphReplaySampler::result(std::span<const double> samples, bool converged) const {
  const Prepared& p = *prepared_;
  GraphReplay replay = p.replay;
  if (!available()) return replay;
  MeasuredTime time;
  time.stats = time_stats(samples, p.sequence->calls_per_sample(), converged);
  time.method =
      "the call captured " + std::to_string(replay.copies) +
      (replay.copies == 1 ? " time" : " times") +
      " into one CUDA graph (thread-local stream capture), the graph replayed back to "
      "back" +
      (p.call.prelude ? " with the prelude (L2 flush) before each replay, events around each"
                      : ", events every " + std::to_string(p.launches_per_sample) + " replays");
  replay.time = std::move(time);
  return replay;
}

GraphReplay time_graph_replay(const CallUnderTest& call, cudaStream_t stream, const StopRule& rule,
                              const GraphReplayOptions& options) {
  GraphReplaySampler sampler(call, stream, options);
  if (!sampler.available()) return sampler.result({}, false);
  std::vector<double> samples;
  const bool converged = sample_until_converged(
      rule, samples, [&](int n, std::vector<double>& s) { sampler.round(n, s); },
      SequenceOptions{}.samples_per_chunk);
  return sampler.result(samples, converged);
}

}  // namespace timeroof
