// T_graph: the call captured into a CUDA graph (stream capture, thread-local
// mode: a library call that is not capturable fails the capture instead of
// corrupting it) and the graph replayed back to back (sequence_timing.hpp). The
// host's per-launch work is gone; what remains is the device's time per call:
// kernels, the gaps between them, and the graph's own per-node cost (~0.5 us).
// Where one replay is so short that the host's cudaGraphLaunch cannot keep
// ahead of the GPU, the graph holds several copies of the call: x8 at a time
// while that lowers a pilot's time per call by min_gain or more, at most
// max_copies and max_nodes graph nodes, so the replay measures the device and
// not the host's graph-launch rate, and only while the larger graph's pilot fits
// in max_pilot_seconds (larger_graph_pilot_fits). With a prelude (cold L2) the
// graph holds one copy and the prelude runs outside it, before each replay.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/statistics.hpp"
#include "measure/call_under_test.hpp"

namespace timeroof {

struct GraphReplayOptions {
  double sample_seconds = 200e-6;
  int max_launches_per_sample = 1000;
  int max_copies = 256;
  int max_nodes = 20000;
  double min_gain = 0.02;  // more copies are kept only if they lower the time per call this much
  // A larger graph is tried only when its pilot is expected to take at most this
  // long. A long call has nothing to gain: a replay's launch costs microseconds, so
  // a call of 1 ms would need 20 us of it per replay to gain min_gain; and its pilot
  // costs seconds: an fp32 8192^3 GEMM (22 ms a call, H100) spent 14 s on the pilot
  // of 64 copies after a 2% drift between two pilots had let 8 copies through.
  double max_pilot_seconds = 0.05;
};

// The replays of one pilot (two untimed, eight timed): what a graph of more copies
// costs before it is kept or dropped.
inline constexpr int kPilotReplays = 10;

// Whether a graph of `larger_copies` copies may be tried after one of `copies`
// copies replayed in `per_replay_s`: its pilot, kPilotReplays replays of
// larger_copies x (per_replay_s / copies), fits in options.max_pilot_seconds.
bool larger_graph_pilot_fits(double per_replay_s, int copies, int larger_copies,
                             const GraphReplayOptions& options);

// One graph tried while choosing the copies: its copies, its pilot's time per
// call, and the wall seconds of its capture, instantiation, upload and pilot.
struct GraphPilot {
  int copies = 0;
  double per_call_s = 0;
  double seconds = 0;
};

struct GraphReplay {
  std::optional<MeasuredTime> time;  // per call
  std::string unavailable;           // why there is no time (capture failed, ...)
  int copies = 0;                    // calls captured into the graph
  std::size_t nodes_per_call = 0;    // graph nodes one call captured
  std::vector<GraphPilot> pilots;    // the graphs tried, in order (none with a prelude)
  double setup_s = 0;                // capture, pilots and upload: wall seconds before sampling
};

// The graph built once (capture, copies chosen by pilots, uploaded), then timed
// in rounds (core/statistics.hpp Sampler) by round(n, samples). Throws only for
// failures outside the capture (a broken stream, a failed replay); a call that
// cannot be captured leaves available() false, with why in result(), and the
// stream usable.
class GraphReplaySampler {
 public:
  GraphReplaySampler(const CallUnderTest& call, cudaStream_t stream,
                     const GraphReplayOptions& options = {},
                     std::function<void()> while_busy = nullptr);
  ~GraphReplaySampler();
  GraphReplaySampler(const GraphReplaySampler&) = delete;
  GraphReplaySampler& operator=(const GraphReplaySampler&) = delete;

  bool available() const;
  void round(int n, std::vector<double>& samples);
  // The copies and nodes, and the time of `samples` (none when unavailable).
  GraphReplay result(std::span<const double> samples, bool converged) const;

 private:
  struct Prepared;
  std::unique_ptr<Prepared> prepared_;
};

GraphReplay time_graph_replay(const CallUnderTest& call, cudaStream_t stream, const StopRule& rule,
                              const GraphReplayOptions& options = {});

}  // namespace timeroof
