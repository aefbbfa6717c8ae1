// The analysis of a profiled program (issue 17): what `timeroof profile -- CMD`
// traced, summed per kernel, copy direction and API function, the NVTX range
// tree per thread with the GPU work each range caused, and the breakdown of a
// repeated range (an iteration) into kernel, copy and GPU-idle time. Computed
// once per run from the flat trace (core/trace_events.hpp); every printer (the
// console, the report, the Perfetto export) reads this one result. Host-only.
//
// Times are nanoseconds in CUPTI's clock, as the trace has them, so totals are
// exact; printers turn them into seconds.
//
// How GPU work is tied to ranges: kernels run asynchronously, so a kernel
// belongs to the range in which its *launching API call* started (the runtime or
// driver call with the kernel's correlation id, on the range's thread), not to
// the range its GPU time overlaps. A kernel or copy with correlation id 0, or
// with no such call in the trace, is counted as unattributed. A trace made
// with `--api none` has no such calls: its GPU work is tied to no thread or
// range and, having no process either, counts as every process's when GPU idle
// time is measured (exact for one process); API time is not traced, not zero.
//
// How ranges nest: on one (process, thread), a range inside another's span is
// its child (push/pop ranges always nest). A start/end range that overlaps
// another without being inside it cannot nest: it stays a sibling of the one it
// overlaps and is flagged `nested == false`. A range never closed (end before
// start, e.g. 0, or past the last record of the trace) ends at the trace's end
// and is flagged `closed == false`.
//
// The model of kernels and ranges (docs/design.md, "The profile model"): a
// kernel_counters record gives one measured launch its quantities (FLOPs per
// class, bytes per level), tied to its kernel by (process, correlation id), the
// process being the launching call's as for the range attribution. Counters are
// per kernel configuration (name, grid, block) in its launch context (the
// innermost range open on the launching thread at the launch: the selection's
// key, core/kernel_selection.hpp; one grid can carry different work at two call
// sites): the mean over its measured launches is applied per call to its other
// launches (extrapolated, and counted as such); a configuration with no measured
// launch stays uncovered, left out of every sum and counted. A launch measured
// by kernel replay is replayed inside its launch call, and its kernel record
// spans that call (milliseconds): its time, everywhere (the model, the kernel
// tables, GPU busy, a range's kernel time, the iterations), is the mean of the
// configuration's other launches, and only where there are none the GPU time its
// counter passes measured (`timed_by_replay`), its record placed from its start
// for that long. Iteration replay's measured launches ran as traced: their own
// time. The bounds and the class are the sweep side's (roofline/bounds,
// classify) of a point whose counters are the covered launches' sums and whose
// T_k is their time, with no measured T (so T = T_k) and no launches or
// transfers: the class judges the kernels against their roofs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/api_tracing.hpp"
#include "core/results.hpp"
#include "core/trace_events.hpp"
#include "roofline/bounds.hpp"
#include "roofline/classify.hpp"
#include "roofline/machine_roofs.hpp"

namespace timeroof::roofline {

// The roofline model of a set of kernel launches (a kernel name, a range, the
// program), from the counters of measured launches (see the header comment).
struct KernelModel {
  std::uint64_t launches = 0;        // covered: with counters, their own or extrapolated
  std::uint64_t measured = 0;        // of those, measured themselves
  std::uint64_t not_covered = 0;     // launches of the set with no counters: left out
  std::uint64_t not_covered_ns = 0;  // their traced time
  // Covered launches timed by their own replay (their configuration has no
  // launch that was not replayed): the GPU time of their counter passes, flagged.
  std::uint64_t timed_by_replay = 0;
  // Quantities (core/quantities.hpp names) summed over the covered launches.
  std::map<std::string, double> quantities;
  // The sweep side's model of them: W_p, Q_l, intensities, T_k (kernel_s), the
  // time bounds, efficiency, Tensor-Core share and the Benanza lower bound
  // (t_lower_bound, summed per kernel configuration).
  PointBounds bounds;
  Classification classification;
  // The time the headroom is of: a range's wall time (summed over its calls),
  // the program's span, a kernel's T_k; headroom = time_s / T_lb.
  double time_s = 0;
  std::optional<double> headroom;
  bool extrapolated() const { return launches > measured; }
};

// One covered kernel launch: its configuration's per-call numbers and its time
// (the Perfetto export's counter tracks draw its rates over its slice).
struct LaunchModel {
  std::size_t event = 0;  // index into the trace: its key (correlation ids repeat across processes)
  double work = 0;        // W per call, FLOP
  std::optional<double> dram_bytes;  // Q_dram per call
  double t_kernel_roof = 0;          // per call; 0 without roofs
  // Its traced time; a measured launch's as in the model (the header comment).
  double time_s = 0;
  bool measured = false;
  bool replayed = false;  // measured by kernel replay: its record spans its launch call
};

// One kernel name over the trace.
struct KernelSummary {
  std::string name;
  std::uint64_t calls = 0;
  std::uint64_t total_ns = 0;   // a measured launch's time as in the model (the header comment)
  std::uint64_t median_ns = 0;  // of the calls' times (lower middle for an even count)
  std::uint64_t min_ns = 0;
  std::uint64_t max_ns = 0;
  double share_of_busy = 0;  // total_ns / ProfileAnalysis::gpu_busy_ns
  // Over its launches of measured configurations; none where no launch of the
  // name was measured.
  std::optional<KernelModel> model;
  // The user's own metrics (`profile --metrics`), raw as CUPTI gives them: each
  // one's mean over the launches of this name that were measured with it.
  std::map<std::string, double> metrics;
};

// One copy direction ("HtoD", "DtoH", ...; memsets as "memset").
struct CopySummary {
  std::string direction;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::uint64_t total_ns = 0;
  std::optional<double> bytes_per_s;  // achieved: bytes / total time; none where time is 0
};

// One runtime or driver API function (or synchronization) over all threads.
struct ApiSummary {
  TraceKind kind = TraceKind::runtime_api;
  std::string name;
  std::uint64_t count = 0;
  std::uint64_t total_ns = 0;  // host time summed over the calls
};

// The GPU work a range caused and the host time it spent.
struct RangeWork {
  std::uint64_t kernels = 0;    // kernel launches attributed to the range
  std::uint64_t copies = 0;     // memcpy and memset calls attributed
  std::uint64_t kernel_ns = 0;  // their GPU time, summed
  std::uint64_t copy_ns = 0;
  std::uint64_t api_ns = 0;  // API time on the range's thread inside its span (union)
  // Time within the span with none of its process's GPU work running on any device.
  std::uint64_t gpu_idle_ns = 0;
};

// A node of the range tree: the instances of one path ("step/forward/layer0")
// among their siblings, aggregated.
struct RangeNode {
  std::string name;
  std::string path;    // names from the top-level range, joined by '/'
  std::string domain;  // details.domain, empty for the default domain
  std::uint64_t calls = 0;
  std::uint64_t wall_ns = 0;  // summed over the calls
  // wall_ns / the wall time of its top-level ancestor's node (1 for a top-level node)
  double share_of_top = 0;
  RangeWork work;
  std::uint64_t not_nested = 0;      // calls that overlapped a sibling (start/end ranges)
  std::uint64_t unclosed = 0;        // calls never closed, ended at the trace's end
  std::optional<KernelModel> model;  // of its kernels; none where none was measured
  std::vector<RangeNode> children;   // by first start
};

struct ThreadRanges {
  std::uint32_t process_id = 0;
  std::uint32_t thread_id = 0;
  std::vector<RangeNode> roots;  // by first start
};

// One NVTX range as it was recorded, placed on its thread: the tree before
// aggregation (the Perfetto export draws these).
struct RangeInstance {
  std::size_t event = 0;              // index into the trace
  std::optional<std::size_t> parent;  // index into the instances
  std::size_t depth = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;  // the trace's end where never closed
  bool nested = true;
  bool closed = true;
};

// Per record of `events`, for a kernel, copy or memset: the index of the API
// call that launched it (same process and correlation id, or the id alone where
// the record names no process; the runtime call where the driver call it made
// has the id too); none for other records and unattributed work.
std::vector<std::optional<std::size_t>> launching_calls(const std::vector<TraceEvent>& events);

// Every NVTX range of `events`, in order of (process, thread, start).
std::vector<RangeInstance> range_instances(const std::vector<TraceEvent>& events);

// One instance of the iteration range: its wall time split so that
// kernel_ns + copy_ns + idle_ns == wall_ns.
struct Iteration {
  std::uint64_t start_ns = 0;
  std::uint64_t wall_ns = 0;
  std::uint64_t kernel_ns = 0;  // some kernel of its process runs
  std::uint64_t copy_ns = 0;    // a copy runs and no kernel does
  std::uint64_t idle_ns = 0;    // no GPU work of its process runs: host-only time
  // Kernel launches tied to it by their launching calls (0 under --api none).
  std::uint64_t launches = 0;
  // Launches measured (replayed) in it, and the host time of their replays
  // (their kernel_counters spans, union): mostly within idle_ns (host-only
  // time), and no host overhead of the program.
  std::uint64_t measured_launches = 0;
  std::uint64_t replay_ns = 0;
  // Its covered launches' kernel time (summed) within and beyond their roofs;
  // none without counters or roofs.
  std::optional<double> within_roof_s, lost_to_roof_s;
};

// A quantity over the iterations.
struct IterationSpread {
  std::uint64_t median_ns = 0;  // lower middle for an even count
  std::uint64_t min_ns = 0;
  std::uint64_t max_ns = 0;
};

struct IterationBreakdown {
  std::string range;                  // the top-level range name
  std::vector<Iteration> iterations;  // by start
  IterationSpread wall, kernel, copy, idle;
  // The iteration range's kernel time (summed over its calls, covered launches
  // only) within and beyond its kernels' roofs; none without counters or roofs.
  std::optional<double> within_roof_s, lost_to_roof_s;
};

// One sentence on a range or kernel whose covered kernels were judged against
// the roofs, in the sweep findings' words (findings.hpp), with its share of the
// time around it: "step/forward/layer0: Tensor-Core-bound at 75% of the roof;
// 24% of step" (a range: of its top-level range's time), "relu_kernel:
// HBM-bound at 80% of the roof; 9% of GPU busy" (a kernel). Ranked by the
// time the class names, as the sweep findings are: T_mem,l (memory), T_compute
// (compute), T_k - T_kernel_roof (latency); only ranges below the top level and
// kernels, classed compute, memory or latency bound.
struct ProfileFinding {
  std::string subject;  // the range's path or the kernel's name
  std::string text;
  double explained_s = 0;
  std::string label;  // the class label (Classification::label)
};

// How many findings a profile keeps.
inline constexpr std::size_t kProfileFindings = 10;

struct ProfileOptions {
  // The top-level range whose instances are the iterations; empty: the most
  // repeated top-level range name (ties: the longer total wall time, then the name).
  std::string iteration_range;
  // The roofs the kernels are judged on (profile_roofs_run picks the run); none:
  // W, Q and intensities only, no bounds or class.
  std::optional<MachineRoofs> roofs;
  std::string roofs_from;  // the run they come from, as printers name it
  // Which API calls the trace holds (`profile --api`, spec.profile.api).
  ApiTracing api = kStoredRunsApiTracing;
};

// The index into `runs` of the run whose ceilings a profile of `profile`'s GPU is
// judged on: the newest (started_at, then id) with ceilings whose GPU has the
// same name (the model: one card's roofs stand for another of its kind).
std::optional<std::size_t> profile_roofs_run(const Run& profile, const std::vector<Run>& runs);

// Gives `profile` (a run without ceilings of its own) the machine measurements
// (ceilings, skipped roofs, working set) of the run profile_roofs_run picks among
// `candidates`, naming it in spec["roofs_from"] ("run 3 (NVIDIA H100 80GB
// HBM3, started 2026-...)"). In
// memory, for the printers; without a match `profile` is left as it is.
void attach_profile_roofs(RunRecord& profile, const std::vector<Run>& candidates);
// The options a stored profile run is analysed with: its machine's roofs where it
// carries ceilings, named by spec["roofs_from"]; the API calls it traced
// (spec.profile.api; a run stored before --api traced all).
ProfileOptions profile_options(const RunRecord& record);

// Why a profile has no roofs and the fix, one line.
inline constexpr const char* kNoProfileRoofs =
    "no ceilings run for this GPU in the store: W, Q and intensities only; measure the roofs "
    "with `timeroof ceilings --db FILE`";

struct ProfileAnalysis {
  std::size_t records = 0;
  ApiTracing api_tracing = kStoredRunsApiTracing;  // as ProfileOptions gave it
  // Whether host API calls were traced: without, GPU work is tied to no range,
  // and API time is "not traced" rather than zero.
  bool api_traced() const { return api_tracing != ApiTracing::none; }
  std::uint64_t origin_ns = 0;  // the first record's start
  std::uint64_t end_ns = 0;     // the last end of a record (unclosed ranges aside)
  std::uint64_t span_ns() const { return end_ns - origin_ns; }
  // Union of all GPU records' intervals per device, summed over devices.
  std::uint64_t gpu_busy_ns = 0;
  std::uint64_t kernel_ns = 0;         // kernel durations, summed
  std::uint64_t copy_ns = 0;           // memcpy and memset durations, summed
  std::vector<KernelSummary> kernels;  // most total time first
  std::vector<CopySummary> copies;     // most total time first
  std::vector<ApiSummary> api;         // most total time first
  std::vector<ThreadRanges> threads;   // by (process, thread)
  // GPU work with no launching API call in the trace (correlation 0 or unmatched).
  RangeWork unattributed;
  std::optional<IterationBreakdown> iterations;  // none without a top-level range
  std::optional<MachineRoofs> roofs;             // as ProfileOptions gave them
  std::string roofs_from;
  std::uint64_t counter_records = 0;     // kernel_counters records in the trace
  std::uint64_t counters_unmatched = 0;  // of those, tied to no kernel (or a second for one)
  std::optional<KernelModel> program;    // all kernels; its time_s the trace's span
  std::vector<ProfileFinding> findings;  // ranked, at most kProfileFindings
  std::vector<LaunchModel> launches;     // every covered launch, in trace order
};

ProfileAnalysis analyze_profile(const std::vector<TraceEvent>& events,
                                const ProfileOptions& options = {});

}  // namespace timeroof::roofline
