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
#include <chrono>
#include <string>

#include "gpu/check.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/launch.hpp"

namespace timeroof {

namespace {

using ceiling_support::concat;
using ceiling_support::per_unit;

constexpr int kSyncRoundTripsPerSample = 16;

}  // namespace

void measure_launch_ceilings(const CeilingRequest& request, CeilingResults& out) {
  const bool want_async = request.wanted("launch_async");
  const bool want_sync = request.wanted("launch_sync");
  const bool want_graph = request.wanted("launch_graph_node");
  if (!want_async && !want_sync && !want_graph) return;
  ceiling_support::select_device_and_count_sms(request);
  const cudaStream_t stream = request.stream;
  const int launches = request.quick ? 256 : 1024;  // per sample; below the launch queue depth

  // Warm up for a while, not a few launches: right after another GPU process the
  // launch path ran 10-25% slower for a moment (seen on an H200), while launches
  // measured in isolation agreed within 2% across processes.
  const auto warm_until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(request.quick ? 50 : 300);
  while (std::chrono::steady_clock::now() < warm_until) {
    for (int i = 0; i < 64; ++i) launch_empty_kernel(stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  if (want_async) {
    const Measurement m = measure_on_host(
        [&] {
          for (int i = 0; i < launches; ++i) launch_empty_kernel(stream);
          TR_CUDA_CHECK(cudaStreamSynchronize(stream));
        },
        request.timing());
    out.ceilings.push_back(make_ceiling(
        "launch_async", CeilingKind::latency, "s", 1, per_unit(m, launches),
        concat("empty_kernel<<<1, 32>>> x ", launches,
               " enqueued back to back on one stream + one cudaStreamSynchronize, host "
               "steady_clock, / ",
               launches, "; median of ", m.repeats, " samples")));
  }
  if (want_sync) {
    const Measurement m = measure_on_host(
        [&] {
          for (int i = 0; i < kSyncRoundTripsPerSample; ++i) {
            launch_empty_kernel(stream);
            TR_CUDA_CHECK(cudaStreamSynchronize(stream));
          }
        },
        request.timing());
    out.ceilings.push_back(make_ceiling(
        "launch_sync", CeilingKind::latency, "s", 1, per_unit(m, kSyncRoundTripsPerSample),
        concat("empty_kernel<<<1, 32>>> + cudaStreamSynchronize round trip, host steady_clock, ",
               kSyncRoundTripsPerSample, " per sample, / ", kSyncRoundTripsPerSample,
               "; median of ", m.repeats, " samples")));
  }
  if (want_graph) {
    const EmptyKernelGraph graph(launches);
    const Measurement m =
        measure_on_stream([&](cudaStream_t s) { graph.launch(s); }, stream, request.timing());
    out.ceilings.push_back(
        make_ceiling("launch_graph_node", CeilingKind::latency, "s", 1, per_unit(m, launches),
                     concat("cudaGraphLaunch of a captured chain of ", launches,
                            " empty_kernel<<<1, 32>>> nodes, event-timed on the GPU, / ", launches,
                            "; median of ", m.repeats, " replays")));
  }
}

}  // namespace timeroof
