// Launch-latency ceilings (kind latency, unit "s"; the measured value is the
// median time of one launch):
//   launch_async: N empty kernels enqueued back to back on one stream, host clock
//     around the N launches and one final synchronize, divided by N. In steady
//     state this is the larger of the host's cost to issue a launch and the GPU's
//     cost to run an empty kernel: the rate at which a stream of tiny kernels goes.
//   launch_sync: one launch + cudaStreamSynchronize round trip (host clock; 16 per
//     sample, divided by 16): what a launch costs when the host waits for it.
//   launch_graph_node: one replay of a captured graph of N empty kernels in a chain,
//     timed with events on the GPU, divided by N: the cost per node.
// Each is sampled as the runner's times are (measure/, docs/design.md): the
// measuring thread pinned to its core, samples until the bootstrap 95% interval
// of the median is within +-3% (or a budget runs out, then the method says so),
// and the method gives p10 / p50 / p90 and the interval. launch_async is how the
// runner's T_stream sees a call of one tiny kernel, launch_graph_node how its
// T_graph sees one graph node. Why: one median of 20 samples read 4.25 and 5.37 us
// for launch_async in two runs on an H100 (spreads 26-33%), and the launch roof
// decides every launch-bound verdict.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/ceiling_names.hpp"
#include "core/elapsed.hpp"
#include "core/format.hpp"
#include "core/pinned_thread.hpp"
#include "core/statistics.hpp"
#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/launch.hpp"

namespace timeroof {

namespace {

using ceiling_support::concat;

constexpr int kSyncRoundTripsPerSample = 16;

// Per-launch seconds of `units` launches per sample, until the interval is
// within +-3% or the budget is spent; the Measurement carries p10-p90 as spread.
struct LaunchSamples {
  Measurement measurement;
  TimeStats stats;
  double p10_s = 0, p90_s = 0;
};

LaunchSamples sample_launches(const std::function<double()>& sample_seconds, double units,
                              bool quick) {
  const StopRule rule{.min_samples = 30,
                      .max_samples = quick ? 400 : 4000,
                      .target_relative_ci = 0.03,
                      .budget_s = quick ? 0.3 : 2.0};
  std::vector<double> samples;
  const bool converged =
      sample_until_converged(rule, samples, [&](int n, std::vector<double>& out) {
        for (int i = 0; i < n; ++i) out.push_back(sample_seconds() / units);
      });
  LaunchSamples result;
  result.stats = time_stats(samples, static_cast<int>(units), converged);
  result.measurement = summarize(samples);
  std::sort(samples.begin(), samples.end());
  result.p10_s = quantile_of_sorted(samples, 0.1);
  result.p90_s = quantile_of_sorted(samples, 0.9);
  return result;
}

std::string distribution_text(const LaunchSamples& s) {
  const TimeStats& t = s.stats;
  return concat("; ", s.measurement.repeats, " samples, p10 / p50 / p90 ", format_si(s.p10_s, "s"),
                " / ", format_si(s.measurement.median_s, "s"), " / ", format_si(s.p90_s, "s"),
                ", 95% interval of the median ", format_si(t.ci_low_s, "s"), " - ",
                format_si(t.ci_high_s, "s"),
                t.converged ? "" : " (the budget ended sampling before +-3%)");
}

}  // namespace

void measure_launch_ceilings(const CeilingRequest& request, CeilingResults& out) {
  const bool want_async = request.wanted(ceiling::kLaunchAsync);
  const bool want_sync = request.wanted(ceiling::kLaunchSync);
  const bool want_graph = request.wanted(ceiling::kLaunchGraphNode);
  if (!want_async && !want_sync && !want_graph) return;
  ceiling_support::select_device_and_count_sms(request);
  const cudaStream_t stream = request.stream;
  const int launches = request.quick ? 256 : 1024;  // per sample; below the launch queue depth
  const PinnedThread pinned;

  // Warm up for a while, not a few launches: right after another GPU process the
  // launch path ran 10-25% slower for a moment (seen on an H200), while launches
  // measured in isolation agreed within 2% across processes.
  const auto warm_until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(request.quick ? 50 : 300);
  while (std::chrono::steady_clock::now() < warm_until) {
    for (int i = 0; i < 64; ++i) launch_empty_kernel(stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  const std::string pin =
      pinned.core() ? concat("; thread pinned to core ", *pinned.core()) : "; thread not pinned";

  if (want_async) {
    const LaunchSamples s = sample_launches(
        [&] {
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < launches; ++i) launch_empty_kernel(stream);
          TR_CUDA_CHECK(cudaStreamSynchronize(stream));
          return seconds_since(start);
        },
        launches, request.quick);
    out.ceilings.push_back(make_ceiling(
        ceiling::kLaunchAsync, CeilingKind::latency, "s", 1, s.measurement,
        concat("empty_kernel<<<1, 32>>> x ", launches,
               " enqueued back to back on one stream + one cudaStreamSynchronize, host "
               "steady_clock, / ",
               launches, distribution_text(s), pin)));
  }
  if (want_sync) {
    const LaunchSamples s = sample_launches(
        [&] {
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < kSyncRoundTripsPerSample; ++i) {
            launch_empty_kernel(stream);
            TR_CUDA_CHECK(cudaStreamSynchronize(stream));
          }
          return seconds_since(start);
        },
        kSyncRoundTripsPerSample, request.quick);
    out.ceilings.push_back(make_ceiling(
        ceiling::kLaunchSync, CeilingKind::latency, "s", 1, s.measurement,
        concat("empty_kernel<<<1, 32>>> + cudaStreamSynchronize round trip, host steady_clock, ",
               kSyncRoundTripsPerSample, " per sample, / ", kSyncRoundTripsPerSample,
               distribution_text(s), pin)));
  }
  if (want_graph) {
    const EmptyKernelGraph graph(launches);
    const Event start, stop;
    graph.launch(stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
    const LaunchSamples s = sample_launches(
        [&] {
          start.record(stream);
          graph.launch(stream);
          stop.record(stream);
          stop.synchronize();
          return stop.seconds_since(start);
        },
        launches, request.quick);
    out.ceilings.push_back(
        make_ceiling(ceiling::kLaunchGraphNode, CeilingKind::latency, "s", 1, s.measurement,
                     concat("cudaGraphLaunch of a captured chain of ", launches,
                            " empty_kernel<<<1, 32>>> nodes, event-timed on the GPU, / ", launches,
                            distribution_text(s), pin)));
  }
}

}  // namespace timeroof
