// Host-timed roofs measured in windows spread over a ceilings run (issue 15). On
// the shared VMs the host's speed drifts over seconds (levels ~1.45x apart), so a
// roof sampled in one ~2-s window describes that window only: two runs minutes
// apart read launch_async 15.6% and launch_sync 13.3% apart, while the GPU-timed
// roofs repeated within 0.8%. Each window is sampled to its own interval; the
// windows are joined by combine_windows (core/statistics.hpp). Host-only: no CUDA.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "core/statistics.hpp"

namespace timeroof {

// How many windows the host-timed roofs (launch, pageable copies) are measured in.
inline constexpr int kHostWindows = 3;

// One window of one roof: per-unit samples (seconds), their statistics, and when
// the window began, in seconds since the ceilings run began.
struct TimeWindow {
  double at_s = 0;
  std::vector<double> samples;
  TimeStats stats;
  std::string detail;  // a condition of this window, e.g. "core 5" (the pinned thread)
};

// Samples `sample_seconds() / units` (one sample times `units` operations) until
// `rule` stops: the 95% interval of the median within its target, or its budget or
// max_samples spent (stats.converged false then). at_s is left to the caller.
TimeWindow sample_window(const std::function<double()>& sample_seconds, double units,
                         const StopRule& rule);

// A roof measured in windows, and the windows that failed.
struct WindowedRoof {
  std::string name;
  CeilingKind kind = CeilingKind::latency;
  std::string unit = "s";
  double amount_per_unit = 1;  // FLOPs or bytes per unit; latency roofs: 1 (the time itself)
  std::string scheme;          // how one sample is taken, the start of the method
  std::vector<TimeWindow> windows;
  std::vector<std::string> failures;  // "window 2 at 41.3 s failed: ..."
  // Each window taken in a process of its own: the host gives each process one
  // of its modes (H200: launch_async ~3.5 or ~4.4 us in whole processes, whatever
  // the core or stream), so the roof is the host's fast mode (the median of the
  // windows near the fastest), not the median of a few processes' modes.
  bool windows_in_processes = false;
};

// A window as JSON ({"at_s", "samples", "stats", "detail"}) and back, for a window
// taken in another process (CeilingRequest::process_window).
nlohmann::json window_json(const TimeWindow& window);
TimeWindow window_from_json(const nlohmann::json& json);

// The roof's ceiling from its windows joined by combine_windows: measured from the
// combined median (windows_in_processes: the median window of those within 10% of
// the fastest, with that window's interval), repeats = all samples, spread the
// combined spread (which holds the range of the windows' medians). The method: the
// scheme, each window's median and when it was taken, p10 / p50 / p90 (p10, p90 of
// all samples; p50 the combined median), the 95% interval, the failures, then
// `note`. Requires at least one window.
Ceiling windowed_ceiling(const WindowedRoof& roof, std::string_view note);

// How many windows of a windowed family to take after each of `families` (the
// families a ceilings run measures, in order): the first at the windowed family's
// own turn, the others spread over the families after it, the last after the last
// family. Where no family follows it, all of them follow one another at its turn.
// Zeros where the windowed family is not in `families`.
std::vector<int> windows_after_each(std::span<const std::string> families,
                                    std::string_view windowed_family, int windows);

// The end of a windowed roof's method: where its windows lay (`windows_after` from
// windows_after_each), and, where they lay close together, that the run's drift
// over minutes is not in the interval.
std::string window_spacing_note(std::span<const int> windows_after, bool quick);

}  // namespace timeroof
