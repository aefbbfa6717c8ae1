// The data model: what a run measured, independent of every writer.
// Measurements produce these structs; the store, JSON/CSV export, the model
// (roofline/) and the report (plots/) only read them. Units are SI (seconds,
// bytes, FLOPs, Hz) everywhere; a value that was not measured is std::nullopt,
// never 0 and never NaN.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace_events.hpp"

namespace timeroof {

// Library and driver versions that shape a number.
struct SoftwareVersions {
  std::string driver;        // NVIDIA kernel driver, e.g. "580.159.04" (NVML)
  std::string cuda_driver;   // CUDA version the driver supports, e.g. "13.0"
  std::string cuda_runtime;  // cudart the tool runs with
  std::string cudnn;         // cuDNN loaded at run time (may differ from the build's)
  std::string cublas;
  std::string cupti;  // CUPTI API version
  bool operator==(const SoftwareVersions&) const = default;
};

// Whether hardware counters can be read on this GPU, and if not why and what fixes it.
struct CounterAccess {
  bool available = false;
  std::string reason;    // empty when available
  std::string fix;       // empty when available or when nothing can be done
  std::string evidence;  // what was actually checked, e.g. a metric read from a probe kernel
  // Unavailable only because another process holds the GPU's counters (CUPTI
  // HARDWARE_BUSY: a profiler, or another timeroof on this GPU): worth waiting for.
  bool busy = false;
  bool operator==(const CounterAccess&) const = default;
};

struct GpuInfo {
  int index = 0;
  std::string name;  // "NVIDIA H200"
  std::string chip;  // CUPTI chip name, "GH100"; the key of the metric catalog
  std::string uuid;
  std::string pci_bus_id;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t memory_bytes = 0;
  int memory_bus_bits = 0;
  std::int64_t shared_per_sm_bytes = 0;
  // Clocks in Hz. NVML supplies base/current; a field is empty where NVML is missing.
  std::optional<double> sm_clock_max_hz;
  std::optional<double> sm_clock_base_hz;  // default application clock
  std::optional<double> sm_clock_current_hz;
  std::optional<double> mem_clock_max_hz;
  std::optional<double> mem_clock_current_hz;
  SoftwareVersions versions;
  CounterAccess counters;
  bool operator==(const GpuInfo&) const = default;
};

enum class CeilingKind { compute, bandwidth, latency };

// What the board did while a roof was measured (NVML): the power behind an
// energy roofline, and whether the clock was held back and by what. A burst roof
// under a power cap is not what a long load holds (SustainedRoof).
struct PowerConditions {
  // Mean board power over the timed launches: the energy counter's difference
  // over the wall time between its two readings. Unset where the counter moved
  // too few times in that window to be trusted (it updates every few ms).
  std::optional<double> watts;
  std::optional<double> joules_per_call;  // the same energy over the calls timed in the window
  std::optional<double> window_s;         // the wall time the energy covers
  std::optional<double> power_limit_w;    // the enforced board power limit
  std::optional<double> max_temperature_c;
  // NVML clock-event reasons seen while it ran ("sw_power_cap", "hw_slowdown",
  // "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", ...).
  std::vector<std::string> clock_limits;
  bool operator==(const PowerConditions&) const = default;
};

// The same roof under a load of `seconds`: the rate it settled at (the median
// over the load's second half), what a long training step meets, against the
// burst roof of a short measurement.
struct SustainedRoof {
  double measured = 0;                // in the roof's unit
  double seconds = 0;                 // how long the load ran
  std::optional<double> sm_clock_hz;  // median NVML clock over the second half
  PowerConditions power;              // over the second half
  bool operator==(const SustainedRoof&) const = default;
};

// One roof of the machine, with how it was measured.
struct Ceiling {
  std::string name;  // fp32_fma, tensor_bf16, hbm_copy, l2, launch_async, h2d_pinned, ...
  CeilingKind kind = CeilingKind::compute;
  std::string unit;  // "FLOP/s", "B/s" or "s"
  double measured = 0;
  std::optional<double> theoretical;
  std::string theoretical_source;  // e.g. "sm__inst_executed_pipe_fma.sum.peak_sustained x clock"
  std::string method;              // kernel, problem size, launch shape
  int repeats = 0;
  double spread = 0;                       // (max - min) / median over the repeats
  std::optional<double> sm_clock_hz;       // observed during the measurement
  std::optional<double> mem_clock_hz;      // observed during the measurement
  PowerConditions power;                   // empty where NVML is missing (and in runs before it)
  std::optional<SustainedRoof> sustained;  // tensor and HBM roofs, when asked for
  bool operator==(const Ceiling&) const = default;
};

// A working-set sweep sample: bytes touched per pass and the bandwidth seen.
// The curve's plateaus are the cache levels.
struct WorkingSetSample {
  double bytes = 0;
  double bytes_per_second = 0;
  bool operator==(const WorkingSetSample&) const = default;
};

// A roof that was not measured, and why (e.g. FP8 needs compute capability 8.9).
struct CeilingSkip {
  std::string name;
  std::string reason;
  bool failed = false;  // true: an error; false: the GPU lacks the unit
  bool operator==(const CeilingSkip&) const = default;
};

struct Machine {
  GpuInfo gpu;
  std::vector<Ceiling> ceilings;
  std::vector<WorkingSetSample> working_set;
  std::vector<CeilingSkip> skipped;
  bool operator==(const Machine&) const = default;
};

enum class PointStatus { ok, unsupported, out_of_memory, counters_unavailable, failed };

// One measured time per call (seconds) with its statistics: the median of the
// samples and a bootstrap 95% confidence interval of that median (percentile
// method, core/statistics.hpp). A sample is one call's time, or the mean over
// `calls_per_sample` consecutive calls timed as one (back-to-back and graph
// times, where one call is too short to time alone).
struct TimeStats {
  double median_s = 0;
  // 95% confidence interval of the median; nullopt where it is unknown (runs
  // recorded before the interval existed).
  std::optional<double> ci_low_s;
  std::optional<double> ci_high_s;
  double spread = 0;  // (p90 - p10) / median of the samples
  // The mean of the samples: for back-to-back times, the total time over the
  // calls, what a loop pays on average. Beside the median because a host-bound
  // call's time can be bimodal (two levels ~1.4x apart, switching every few
  // milliseconds on the shared VMs): there the median jumps to whichever level
  // held more samples, the mean moves with the mixture. nullopt in older runs.
  std::optional<double> mean_s;
  double min_s = 0;
  double max_s = 0;
  int samples = 0;
  int calls_per_sample = 1;
  // The interval reached the target width (runner: +-1% of the median) before
  // the time budget ran out; false: the budget ended the measurement first.
  bool converged = false;
  // Half the interval's width over the median (0.01 = +-1%); nullopt without one.
  std::optional<double> relative_ci() const {
    if (!ci_low_s || !ci_high_s || median_s <= 0) return std::nullopt;
    return (*ci_high_s - *ci_low_s) / (2 * median_s);
  }
  bool operator==(const TimeStats&) const = default;
};

// Time and traffic of one operator call, from the timing and trace passes.
// Three times per call, each measured on its own (sweeps/runner.hpp says how):
// - call:   T_call, one call synchronized: the latency one isolated call sees
//           (host issue + launch + kernels), CUDA events around it;
// - stream: T_stream, per call with calls issued back to back: what a training
//           or inference loop pays, host issue overlapped with GPU work;
// - graph:  T_graph, per call when the call is captured into a CUDA graph and
//           replayed back to back: the device floor without host overhead;
// - issue:  the host time to enqueue one call (steady clock around it, untraced).
struct Timing {
  std::optional<TimeStats> call;
  std::optional<TimeStats> stream;
  std::optional<TimeStats> graph;
  std::optional<TimeStats> issue;
  std::string graph_unavailable;  // why there is no T_graph (e.g. capture failed); "" otherwise
  std::optional<double> kernel_time_s;   // summed kernel time per call
  std::optional<std::int64_t> launches;  // kernel launches per call
  std::optional<double> api_time_s;      // CPU time in CUDA/cuDNN API calls per call
  std::optional<double> launch_gap_s;    // idle GPU time between kernels per call
  std::optional<double> h2d_bytes;
  std::optional<double> h2d_time_s;
  std::optional<double> d2h_bytes;
  std::optional<double> d2h_time_s;

  // The medians, where measured.
  std::optional<double> call_s() const { return median_of(call); }
  std::optional<double> stream_s() const { return median_of(stream); }
  std::optional<double> graph_s() const { return median_of(graph); }
  std::optional<double> issue_s() const { return median_of(issue); }
  bool operator==(const Timing&) const = default;

 private:
  static std::optional<double> median_of(const std::optional<TimeStats>& stats) {
    return stats ? std::optional<double>(stats->median_s) : std::nullopt;
  }
};

// One kernel of a point, as traced and (optionally) profiled.
struct KernelRecord {
  std::string name;  // demangled; may contain <, >, &
  std::array<int, 3> grid{1, 1, 1};
  std::array<int, 3> block{1, 1, 1};
  double duration_s = 0;
  std::map<std::string, double> metrics;  // CUPTI metric name -> value
  bool operator==(const KernelRecord&) const = default;
};

// One sweep configuration and everything measured for it.
struct Point {
  std::int64_t id = 0;                               // assigned by the store
  std::string sweep;                                 // name of the sweep it belongs to
  int seq = 0;                                       // position within the sweep (resume key)
  std::string op;                                    // "conv2d_fwd", "lstm_train", ...
  nlohmann::json params = nlohmann::json::object();  // numbers stay numbers
  std::string precision;
  std::string math_mode;
  std::string algorithm;
  double flops = 0;      // analytic
  double min_bytes = 0;  // analytic: each tensor read or written once
  PointStatus status = PointStatus::ok;
  std::string reason;  // why it is not ok, in the library's words
  Timing timing;
  // Raw CUPTI metrics (names with "__") and the catalog's quantities (snake_case,
  // e.g. tensor_fp16_flops), over all kernels of one call.
  std::map<std::string, double> counters;
  std::vector<KernelRecord> kernels;
  // How the point was measured: library choices (workspace, math type), the
  // output check's verdict, L2 state, counter passes.
  nlohmann::json details = nlohmann::json::object();
  bool operator==(const Point&) const = default;
};

// Provenance of one invocation that measured something.
struct Run {
  std::int64_t id = 0;  // assigned by the store
  std::string uuid;     // stable across export/import
  std::string tool_version;
  std::string git_sha;
  std::string command_line;
  std::string host;
  std::string started_at;          // ISO 8601 UTC
  std::string finished_at;         // empty while running
  std::string status = "running";  // running, complete, partial, failed
  nlohmann::json spec = nlohmann::json::object();
  Machine machine;
  bool operator==(const Run&) const = default;
};

// A run with all its points, the unit of export and import.
struct RunRecord {
  Run run;
  std::vector<Point> points;
  // What `timeroof profile` traced (core/trace_events.hpp); empty for other runs.
  std::vector<TraceEvent> trace;
  bool operator==(const RunRecord&) const = default;
};

const char* to_string(CeilingKind kind);
const char* to_string(PointStatus status);
CeilingKind ceiling_kind_from_string(const std::string& text);
PointStatus point_status_from_string(const std::string& text);

// The number a run is shown by, in the CLI and the report alike: its id in the
// store, or for a run read from a file (id 0) its position among the runs shown,
// from 1.
std::int64_t run_number(const Run& run, std::size_t position);

// A new run stamped with this tool's version, git sha, host and the current time.
Run new_run(const std::string& command_line);
std::string utc_now_iso8601();

}  // namespace timeroof
