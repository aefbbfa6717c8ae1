// A profile's trace as Chrome Trace Event JSON (issue 17: `timeroof export
// --perfetto`), the format ui.perfetto.dev and chrome://tracing load:
// - host API calls and NVTX ranges as complete events ("ph":"X") on their
//   process's thread tracks; NVTX marks as instant events ("ph":"i");
// - GPU work on one process track per device ("GPU 0"), a thread track per stream
//   (per process and stream where several processes' work shares the device);
// - a flow arrow ("ph":"s" -> "ph":"f", "bp":"e") from each launching API call
//   to its kernel or copy;
// - metadata events naming every process and thread and ordering them (host
//   processes first, then the GPUs by ordinal);
// - with per-kernel metrics, counter tracks ("ph":"C") per device and stream:
//   FLOP/s, bytes/s and the fraction of its roof, raised while the kernel runs.
// Timestamps are microseconds (doubles, so nanoseconds survive) from the first
// record; the absolute origin in CUPTI's clock is kept in "metadata" with the
// run's provenance. Host-only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace_events.hpp"
#include "roofline/profile_analysis.hpp"

namespace timeroof::plots {

// What the range profiler measured of one kernel launch, as rates over its run.
struct KernelRates {
  std::optional<double> flops_per_s;
  std::optional<double> bytes_per_s;
  std::optional<double> roof_fraction;  // achieved / the roof that bounds it
  // Replayed for its counters (its record spans its launch call): its time in the model.
  std::optional<double> replayed_time_s;
};

// Keyed by the kernel's index in the trace the analysis read (its record, not
// its correlation id: two processes of one profile number their calls alike).
using KernelRateMap = std::map<std::size_t, KernelRates>;

// The rates of every covered launch of `analysis` (roofline::LaunchModel): W and
// Q_dram per call over its time, and T_kernel_roof over its time (absent
// without roofs). A measured launch's rates are over its configuration's
// unmeasured time, not its replayed slice.
KernelRateMap kernel_rates(const roofline::ProfileAnalysis& analysis);

// The trace document: {"traceEvents": [...], "displayTimeUnit": "ns",
// "metadata": {"provenance": provenance, "origin_ns": ..., ...}}. Without
// `rates` (or for kernels it lacks) no counter track is written. A kernel
// replayed for its counters (its record spans the launch call that replayed it,
// tens of ms) is drawn for its time in the model (`replayed_time_s`), the
// record's span kept in its args (`replay_span_us`).
nlohmann::json perfetto_trace(const std::vector<TraceEvent>& events,
                              const nlohmann::json& provenance, const KernelRateMap& rates = {});

}  // namespace timeroof::plots
