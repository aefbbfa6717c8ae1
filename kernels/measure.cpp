#include "kernels/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/elapsed.hpp"
#include "gpu/check.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"

namespace timeroof {

namespace {

double percentile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] * (1 - fraction) + sorted[upper] * fraction;
}

std::optional<double> median_of(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return percentile(values, 0.5);
}

}  // namespace

Measurement measure_until_stable(
    const TimingPolicy& policy,
    const std::function<void(int, std::vector<double>&, std::vector<Clocks>&)>& run_round) {
  std::vector<double> samples;
  std::vector<Clocks> clocks;
  const auto start = std::chrono::steady_clock::now();
  double previous_median = -1;
  while (true) {
    run_round(policy.round, samples, clocks);
    const double median = *median_of(samples);
    const double elapsed = seconds_since(start);
    const bool stable = previous_median > 0 &&
                        static_cast<int>(samples.size()) >= policy.min_repeats &&
                        std::fabs(median - previous_median) <= policy.stable_tolerance * median;
    if (stable || static_cast<int>(samples.size()) >= policy.max_repeats ||
        elapsed >= policy.max_seconds)
      break;
    previous_median = median;
  }
  Measurement m = summarize(samples);
  std::vector<double> sm, mem;
  std::vector<PowerSample> power;
  for (const Clocks& c : clocks) {
    if (c.sm_hz) sm.push_back(*c.sm_hz);
    if (c.mem_hz) mem.push_back(*c.mem_hz);
    if (c.power) power.push_back(*c.power);
  }
  m.sm_clock_hz = median_of(sm);
  if (!sm.empty()) m.sm_clock_highest_hz = *std::max_element(sm.begin(), sm.end());
  m.mem_clock_hz = median_of(mem);
  m.power = summarize_power(power);
  if (m.power.watts) m.power.joules_per_call = *m.power.watts * m.median_s;
  return m;
}

namespace {

int current_device() {
  int device = 0;
  TR_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

// Samples the clocks and the power for as long as the work on `stream` runs:
// under a power cap the SM clock settles below its starting value a few
// milliseconds in.
void sample_until_idle(const ClockReader& reader, cudaStream_t stream,
                       std::vector<Clocks>& clocks) {
  clocks.push_back(reader.read_with_power());
  while (cudaStreamQuery(stream) == cudaErrorNotReady) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    clocks.push_back(reader.read_with_power());
  }
  clocks.push_back(reader.read_with_power());
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

Measurement summarize(std::vector<double> seconds) {
  Measurement m;
  if (seconds.empty()) return m;
  std::sort(seconds.begin(), seconds.end());
  m.repeats = static_cast<int>(seconds.size());
  m.min_s = seconds.front();
  m.max_s = seconds.back();
  m.median_s = percentile(seconds, 0.5);
  m.spread =
      m.median_s > 0 ? (percentile(seconds, 0.9) - percentile(seconds, 0.1)) / m.median_s : 0;
  return m;
}

Measurement measure_on_stream(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                              const TimingPolicy& policy) {
  const int device = current_device();
  for (int i = 0; i < policy.warmup; ++i) launch(stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<Event> starts, stops;
  for (int i = 0; i < policy.round; ++i) {
    starts.emplace_back();
    stops.emplace_back();
  }
  const ClockReader clock_reader(device);
  Measurement m = measure_until_stable(
      policy, [&](int n, std::vector<double>& samples, std::vector<Clocks>& clocks) {
        for (int i = 0; i < n; ++i) {
          starts[i].record(stream);
          launch(stream);
          stops[i].record(stream);
        }
        sample_until_idle(clock_reader, stream, clocks);
        for (int i = 0; i < n; ++i) samples.push_back(stops[i].seconds_since(starts[i]));
      });
  m.power.power_limit_w = clock_reader.power_limit_w();
  return m;
}

SustainedMeasurement measure_sustained(const std::function<void(cudaStream_t)>& launch,
                                       cudaStream_t stream, double seconds) {
  const ClockReader clock_reader(current_device());
  launch(stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Batches of launches between host checks; the GPU idles only for the few
  // microseconds between one batch's end and the next one's first launch.
  constexpr int kBatch = 16;
  std::vector<Event> starts(kBatch), stops(kBatch);
  struct Timed {
    double started_at_s;  // steady clock at the batch's enqueue
    double seconds;
  };
  std::vector<Timed> timed;
  std::vector<Clocks> clocks;
  const auto now_s = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  const double start = now_s();
  while (now_s() - start < seconds) {
    const double batch_start = now_s();
    for (int i = 0; i < kBatch; ++i) {
      starts[i].record(stream);
      launch(stream);
      stops[i].record(stream);
    }
    sample_until_idle(clock_reader, stream, clocks);
    for (int i = 0; i < kBatch; ++i)
      timed.push_back({batch_start, stops[i].seconds_since(starts[i])});
  }
  SustainedMeasurement m;
  m.seconds = now_s() - start;
  const double second_half = start + m.seconds / 2;
  std::vector<double> times, sm;
  std::vector<PowerSample> power;
  for (const Timed& t : timed)
    if (t.started_at_s >= second_half) times.push_back(t.seconds);
  for (const Clocks& c : clocks) {
    if (!c.power || c.power->at_s < second_half) continue;
    if (c.sm_hz) sm.push_back(*c.sm_hz);
    power.push_back(*c.power);
  }
  // A load shorter than two batches has no second half of its own: use it all.
  if (times.empty())
    for (const Timed& t : timed) times.push_back(t.seconds);
  m.launches = static_cast<int>(times.size());
  m.median_s = median_of(times).value_or(0);
  m.sm_clock_hz = median_of(sm);
  m.power = summarize_power(power);
  m.power.power_limit_w = clock_reader.power_limit_w();
  if (m.power.watts) m.power.joules_per_call = *m.power.watts * m.median_s;
  return m;
}

SustainedRoof sustained_roof(double amount_per_call, const SustainedMeasurement& m) {
  SustainedRoof roof;
  roof.measured = m.median_s > 0 ? amount_per_call / m.median_s : 0;
  roof.seconds = m.seconds;
  roof.sm_clock_hz = m.sm_clock_hz;
  roof.power = m.power;
  return roof;
}

Measurement measure_on_host(const std::function<void()>& work, const TimingPolicy& policy) {
  const ClockReader clock_reader(current_device());
  for (int i = 0; i < policy.warmup; ++i) work();
  return measure_until_stable(
      policy, [&](int n, std::vector<double>& samples, std::vector<Clocks>& clocks) {
        for (int i = 0; i < n; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          work();
          samples.push_back(seconds_since(t0));
        }
        clocks.push_back(clock_reader.read());
      });
}

Ceiling make_ceiling(const std::string& name, CeilingKind kind, const std::string& unit,
                     double amount_per_call, const Measurement& m, const std::string& method) {
  Ceiling c;
  c.name = name;
  c.kind = kind;
  c.unit = unit;
  c.measured = kind == CeilingKind::latency ? m.median_s : amount_per_call / m.median_s;
  c.method = method;
  c.repeats = m.repeats;
  c.spread = m.spread;
  c.sm_clock_hz = m.sm_clock_hz;
  c.mem_clock_hz = m.mem_clock_hz;
  c.power = m.power;
  return c;
}

}  // namespace timeroof
