// How every ceiling is timed: warm-up, then rounds of event-timed repeats until
// the median is stable; SM and memory clocks are read (NVML) while the GPU is
// busy with the timed work, so each figure carries the clock it ran at.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "gpu/device.hpp"

namespace timeroof {

struct TimingPolicy {
  int warmup = 3;
  int round = 10;  // repeats per round; the median is checked after each round
  // Stability is not judged before this many samples: with 20-30 samples a median
  // of a call whose times spread 10-30% still moved by 5-17% between runs (seen
  // on an H200 for the sweeps' 25-250 us cuDNN calls).
  int min_repeats = 20;
  int max_repeats = 200;
  double max_seconds = 2.0;         // wall budget for one measurement
  double stable_tolerance = 0.005;  // stop when a round moves the median by less than this
};

struct Measurement {
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
  int repeats = 0;
  double spread = 0;                          // (p90 - p10) / median
  std::optional<double> sm_clock_hz;          // median of readings taken while the GPU was busy
  std::optional<double> sm_clock_highest_hz;  // the highest of those readings
  std::optional<double> mem_clock_hz;
  PowerConditions power;  // measure_on_stream only: NVML sampled beside the clocks
};

// A load held for `seconds`, judged over its second half (after the clock and
// the power have settled): what a long run meets, against a short burst.
struct SustainedMeasurement {
  double seconds = 0;                 // how long the load ran
  double median_s = 0;                // of the launches that started in the second half
  int launches = 0;                   // in the second half
  std::optional<double> sm_clock_hz;  // median NVML reading over the second half
  PowerConditions power;              // over the second half
};

// Times `launch`, which enqueues one unit of work on `stream`, with a CUDA event
// pair per repeat. Throws on any CUDA error (including from the launched work).
Measurement measure_on_stream(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                              const TimingPolicy& policy = {});

// Launches `launch` back to back on `stream` for `seconds` (event-timed, NVML
// clocks and power sampled every half millisecond). Throws on any CUDA error.
SustainedMeasurement measure_sustained(const std::function<void(cudaStream_t)>& launch,
                                       cudaStream_t stream, double seconds);
// The roof a sustained load gives for `amount_per_call` (FLOPs or bytes).
SustainedRoof sustained_roof(double amount_per_call, const SustainedMeasurement& m);

// Times `work`, which runs synchronously on the host (launch + sync round trips,
// pageable copies), with a steady clock.
Measurement measure_on_host(const std::function<void()>& work, const TimingPolicy& policy = {});

// The loop both measure_* functions use, for timing schemes of their own:
// `run_round(n, samples, clocks)` appends n samples (seconds) and at least one
// clock reading taken while the GPU was busy; rounds repeat until a round moves
// the median by less than policy.stable_tolerance, or the repeats or time run out.
Measurement measure_until_stable(
    const TimingPolicy& policy,
    const std::function<void(int, std::vector<double>&, std::vector<Clocks>&)>& run_round);

// Summary statistics of samples in seconds (exposed for tests).
Measurement summarize(std::vector<double> seconds);

// A ceiling from an amount per call (FLOPs or bytes) over the median time; for
// latency ceilings (unit "s") the measured value is the median time itself.
Ceiling make_ceiling(const std::string& name, CeilingKind kind, const std::string& unit,
                     double amount_per_call, const Measurement& m, const std::string& method);

}  // namespace timeroof
