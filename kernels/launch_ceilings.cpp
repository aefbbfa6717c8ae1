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
// The two host-timed roofs are sampled in CeilingRequest::host_windows windows
// spread over the ceilings run, each with that share of the budget one window
// had, and joined by combine_windows (kernels/time_windows.hpp says why); where
// the CLI gives a process_window, each window is taken in a process of its own
// and the roof is the host's fast mode (windowed_ceiling: the host's cost differs
// between processes, H200 launch_async ~3.5 or ~4.4 us per process, whatever the
// core or stream, within 3% inside one); the GPU-timed graph node,
// which repeated within 0.7% across runs, in one. HostWindows, here, takes the
// pageable copies' windows too (PageableCopies, kernels/transfer_ceilings.cpp):
// they drift with the host as the launches do.
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ceiling_names.hpp"
#include "core/elapsed.hpp"
#include "core/error.hpp"
#include "core/pinned_thread.hpp"
#include "core/statistics.hpp"
#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/launch.hpp"
#include "kernels/time_windows.hpp"

namespace timeroof {

namespace {

using ceiling_support::concat;

constexpr int kSyncRoundTripsPerSample = 16;

int launches_per_sample(bool quick) {
  return quick ? 256 : 1024;  // below the launch queue depth
}

// One window's share of the sampling a roof had when it was sampled once.
StopRule launch_rule(bool quick, int windows) {
  return {.min_samples = 30,
          .max_samples = (quick ? 400 : 4000) / windows,
          .target_relative_ci = 0.03,
          .budget_s = (quick ? 0.3 : 2.0) / windows};
}

// A pageable copy of 256 MiB takes 10-30 ms: fewer samples, the same target.
StopRule pageable_rule(bool quick, int windows) {
  return {.min_samples = 10,
          .max_samples = 200 / windows,
          .target_relative_ci = 0.03,
          .budget_s = (quick ? 0.3 : 1.5) / windows};
}

std::optional<TransferDirection> pageable_direction(const std::string& name) {
  for (const TransferDirection direction : kAllTransferDirections)
    if (name == ceiling::transfer(direction, HostMemory::pageable)) return direction;
  return std::nullopt;
}

// Warm up for a while, not a few launches: right after another GPU process the
// launch path ran 10-25% slower for a moment (seen on an H200), while launches
// measured in isolation agreed within 2% across processes. Every window warms up:
// the families before it kept the GPU busy with other work.
void warm_up_launches(cudaStream_t stream, bool quick) {
  const auto warm_until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(quick ? 50 : 300);
  while (std::chrono::steady_clock::now() < warm_until) {
    for (int i = 0; i < 64; ++i) launch_empty_kernel(stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

std::string pin_text(const PinnedThread& pinned) {
  return pinned.core() ? concat("thread pinned to core ", *pinned.core())
                       : std::string("thread not pinned");
}

// Seconds of `launches` empty kernels enqueued back to back and one synchronize.
double time_async_launches(cudaStream_t stream, int launches) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) launch_empty_kernel(stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  return seconds_since(start);
}

// Seconds of kSyncRoundTripsPerSample launch + synchronize round trips.
double time_sync_round_trips(cudaStream_t stream) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSyncRoundTripsPerSample; ++i) {
    launch_empty_kernel(stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return seconds_since(start);
}

}  // namespace

HostWindows::HostWindows(const CeilingRequest& request,
                         std::chrono::steady_clock::time_point run_start)
    : run_start_(run_start) {
  const int launches = launches_per_sample(request.quick);
  if (request.wanted(ceiling::kLaunchAsync))
    roofs_.push_back({.name = ceiling::kLaunchAsync,
                      .scheme = concat("empty_kernel<<<1, 32>>> x ", launches,
                                       " enqueued back to back on one stream + one "
                                       "cudaStreamSynchronize, host steady_clock, / ",
                                       launches)});
  if (request.wanted(ceiling::kLaunchSync))
    roofs_.push_back(
        {.name = ceiling::kLaunchSync,
         .scheme = concat("empty_kernel<<<1, 32>>> + cudaStreamSynchronize round trip, host "
                          "steady_clock, ",
                          kSyncRoundTripsPerSample, " per sample, / ", kSyncRoundTripsPerSample)});
  for (const TransferDirection direction : kAllTransferDirections) {
    const std::string name = ceiling::transfer(direction, HostMemory::pageable);
    if (!request.wanted(name)) continue;
    roofs_.push_back(
        {.name = name,
         .kind = CeilingKind::bandwidth,
         .unit = "B/s",
         .amount_per_unit = static_cast<double>(PageableCopies::bytes_for(request.quick)),
         .scheme = PageableCopies::scheme(direction, request.quick)});
  }
}

bool HostWindows::measures(const std::string& name) const {
  for (const WindowedRoof& roof : roofs_)
    if (roof.name == name) return true;
  return false;
}

void HostWindows::take(const CeilingRequest& request) {
  if (roofs_.empty()) return;
  const double at_s = seconds_since(run_start_);
  ++taken_;
  if (request.process_window) {
    take_in_process(request, at_s);
    return;
  }
  try {
    ceiling_support::select_device_and_count_sms(request);
    const cudaStream_t stream = request.stream;
    const int launches = launches_per_sample(request.quick);
    const PinnedThread pinned;
    bool warm = false;
    std::optional<PageableCopies> copies;  // this window's buffers, set up at its first copy
    for (WindowedRoof& roof : roofs_) {
      TimeWindow window;
      if (const std::optional<TransferDirection> direction = pageable_direction(roof.name)) {
        if (!copies) copies.emplace(request);
        copies->time_copy(*direction);  // untimed: the driver's staging buffer, first touch
        window = sample_window([&] { return copies->time_copy(*direction); }, 1,
                               pageable_rule(request.quick, request.host_windows));
      } else {
        if (!warm) warm_up_launches(stream, request.quick);
        warm = true;
        const bool async = roof.name == ceiling::kLaunchAsync;
        window = sample_window(
            [&] {
              return async ? time_async_launches(stream, launches) : time_sync_round_trips(stream);
            },
            async ? launches : kSyncRoundTripsPerSample,
            launch_rule(request.quick, request.host_windows));
      }
      window.at_s = at_s;
      window.detail = pin_text(pinned);
      roof.windows.push_back(std::move(window));
    }
  } catch (const Error& error) {
    record_failure(at_s, error.what());
  }
}

void HostWindows::take_in_process(const CeilingRequest& request, double at_s) {
  std::vector<std::string> names;
  for (const WindowedRoof& roof : roofs_) names.push_back(roof.name);
  try {
    const nlohmann::json document = request.process_window(names, request.host_windows);
    for (WindowedRoof& roof : roofs_) {
      roof.windows_in_processes = true;
      std::string failure = "the window's process did not measure it";
      for (const nlohmann::json& entry : document.at("roofs")) {
        if (entry.value("name", std::string()) != roof.name) continue;
        if (entry.contains("window") && !entry["window"].is_null()) {
          TimeWindow window = window_from_json(entry["window"]);
          window.at_s = at_s;
          roof.windows.push_back(std::move(window));
          failure.clear();
        } else {
          failure = entry.value("failure", failure);
        }
      }
      if (!failure.empty())
        roof.failures.push_back(
            concat("window ", taken_, " at ", std::round(at_s * 10) / 10, " s failed: ", failure));
    }
  } catch (const nlohmann::json::exception& error) {
    record_failure(at_s,
                   concat("the window's process answered no window document (", error.what(), ")"));
  } catch (const Error& error) {
    record_failure(at_s, error.what());
  }
}

nlohmann::json host_window_document(const CeilingRequest& request) {
  CeilingRequest here = request;
  here.process_window = nullptr;
  HostWindows windows(here);
  windows.take(here);
  nlohmann::json roofs = nlohmann::json::array();
  for (const WindowedRoof& roof : windows.roofs())
    roofs.push_back(
        {{"name", roof.name},
         {"window", roof.windows.empty() ? nlohmann::json() : window_json(roof.windows[0])},
         {"failure", roof.failures.empty() ? std::string() : roof.failures[0]}});
  return {{"roofs", roofs}};
}

void HostWindows::fail(const std::string& reason) {
  if (roofs_.empty()) return;
  ++taken_;
  record_failure(seconds_since(run_start_), reason);
}

// Against the roofs this window gave no time: a roof sampled before the error keeps it.
void HostWindows::record_failure(double at_s, const std::string& reason) {
  for (WindowedRoof& roof : roofs_)
    if (static_cast<int>(roof.windows.size() + roof.failures.size()) < taken_)
      roof.failures.push_back(
          concat("window ", taken_, " at ", std::round(at_s * 10) / 10, " s failed: ", reason));
}

void HostWindows::finish(CeilingResults& out, std::string_view spacing) const {
  for (const WindowedRoof& roof : roofs_) {
    if (roof.windows.empty()) {
      out.skipped.push_back(
          {roof.name,
           "host-timed roofs failed in every window: " +
               (roof.failures.empty() ? std::string("none taken") : roof.failures.front()),
           true});
      continue;
    }
    out.ceilings.push_back(windowed_ceiling(roof, spacing));
  }
}

void measure_launch_graph_ceiling(const CeilingRequest& request, CeilingResults& out) {
  if (!request.wanted(ceiling::kLaunchGraphNode)) return;
  ceiling_support::select_device_and_count_sms(request);
  const cudaStream_t stream = request.stream;
  const int launches = launches_per_sample(request.quick);
  const PinnedThread pinned;
  warm_up_launches(stream, request.quick);
  const EmptyKernelGraph graph(launches);
  const Event start, stop;
  graph.launch(stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  WindowedRoof roof{
      .name = ceiling::kLaunchGraphNode,
      .scheme = concat("cudaGraphLaunch of a captured chain of ", launches,
                       " empty_kernel<<<1, 32>>> nodes, event-timed on the GPU, / ", launches)};
  roof.windows.push_back(sample_window(
      [&] {
        start.record(stream);
        graph.launch(stream);
        stop.record(stream);
        stop.synchronize();
        return stop.seconds_since(start);
      },
      launches, launch_rule(request.quick, 1)));
  out.ceilings.push_back(windowed_ceiling(roof, pin_text(pinned)));
}

void measure_host_timed_ceilings(const CeilingRequest& request, CeilingResults& out) {
  HostWindows windows(request);
  const std::vector<int> alone = {request.host_windows};  // no other family to spread them over
  for (int i = 0; i < request.host_windows; ++i) windows.take(request);
  windows.finish(out, window_spacing_note(alone, request.quick));
  measure_launch_graph_ceiling(request, out);
}

}  // namespace timeroof
