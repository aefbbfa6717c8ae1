// Per-point bounds of the model: the time-based roofline (Wang et al., DLS 2020),
// the classic hierarchical roofline, and the Benanza lower bound (IPDPS 2020).
//
// Inputs of a Point (core/results.hpp), all per operator call:
// - W_p, work of precision class p, FLOP (op for int8): the counter quantity
//   work_quantity(p) (`fp32_flops`, `tensor_fp16_flops`, ...; all-path totals, dense
//   work only: 2:4-sparse quantities are not added). W = sum_p W_p.
// - Q_l, bytes at level l: L1 `l1_bytes` (requested from L1/TEX), L2 `l2_bytes`
//   (requested from L2), DRAM `dram_read_bytes + dram_write_bytes`. A level whose
//   counters were not collected is absent, not 0; L1 is left out where its counter
//   did not see the traffic (see "L1" below).
// - Without counters (no work or no byte quantity in Point::counters) the point
//   falls back to its analytic numbers and is marked (work_source / bytes_source =
//   analytic): W = Point::flops in the one class its precision and math mode imply
//   (math "tensor": fp16 -> tensor_fp16, bf16 -> tensor_bf16, fp32/tf32 ->
//   tensor_tf32, fp8, int8, fp64 -> their Tensor-Core class; otherwise fp16/bf16
//   -> half, fp32, fp64), Q_dram = Point::min_bytes (each tensor moved once: a
//   lower bound of the traffic), no L1/L2.
// - Times per call (Timing, each a TimeStats with its median and 95% interval):
//   T_call (one synchronized call), T_stream (calls back to back), T_graph (the
//   call replayed from a CUDA graph: the device floor) and the host issue time.
//   T, the time the model explains, is T_stream where measured (what a training
//   or inference loop pays), else T_call (runs recorded before T_stream existed);
//   time_source says which. T_k, kernel time: Timing::kernel_time_s, else the sum
//   of the traced KernelRecord durations. The counters' `duration` is NOT used:
//   it is timed under profiler replay and can be far off (an H200 conv2d with
//   batch 1 through the legacy convolution API: 214.6 us profiled, 4.9 us
//   traced; the current H200 sample's: 0.85-1.66x the traced times).
// - T_k's interval: the fastest and slowest of the traced calls' summed kernel
//   times (details["trace"]["kernel_time_per_call_s"], where the trace pass kept
//   them and T_k is their median); n calls hold the median between them with
//   probability 1 - 2^(1-n), 94% for the runner's 5. The achieved rate's interval is
//   W over its ends.
// - Kernel busy time: details["trace"]["kernel_busy_s"], the union of the call's
//   kernel intervals in the trace pass, where the trace recorded it; below T_k
//   when kernels overlap on several streams (classify.hpp uses it).
// - N, launches: Timing::launches. Q_h2d, Q_d2h: Timing::h2d_bytes / d2h_bytes.
// - Host memory of the transfers: Point::details["transfer"]["host"], "pinned" or
//   "pageable" as the runner writes it (transfer_host below).
//
// Time bounds (seconds; each one is a time the call cannot beat):
// - T_compute = sum_p W_p / P_p: Tensor-Core and CUDA-core work each on its own
//   peak; split as T_compute = T_cuda + T_tensor. Work of a class without a roof is
//   left out (noted).
// - T_mem,l = Q_l / B_l per level used.
// - T_kernel_roof = max(T_compute, max_l T_mem,l): the roof of the kernels alone,
//   compared with T_k.
// - T_launch = N x L (L = launch_async).
// - T_xfer = Q_h2d / B_h2d + Q_d2h / B_d2h (modelled), on the transfer roofs of
//   the point's host memory: h2d_pageable / d2h_pageable for pageable points,
//   h2d_pinned / d2h_pinned for pinned ones and for points that record no host
//   (no transfers, older runs). An unknown host value takes the pinned roofs, the
//   fastest, so T_xfer stays a lower bound, and is noted. A direction that moved
//   bytes but whose roof is absent is left out of T_xfer with a note; it never
//   borrows the other host memory's roof (a pinned roof would make a pageable
//   copy's bound 3-5x too optimistic). Every roof used is recorded
//   (PointBounds::transfers) and noted ("T_xfer on the pageable H2D roof ...").
// - T_roof = max(T_kernel_roof, T_launch) (+ T_xfer when transfers are serial),
//   compared with T.
//
// Classic hierarchical roofline (per level, all precision classes together):
// - P_eff = W / T_compute, the peak of this point's precision mix (a
//   work-weighted harmonic mean of the P_p; P_eff = P_p for one class).
// - AI_l = W / Q_l (FLOP/B; +infinity when Q_l = 0), achieved = W / T_k,
//   attainable_l = min(P_eff, AI_l x B_l). The point's attainable is the minimum
//   over levels and its limiting roof is that level's bandwidth, or compute when
//   P_eff is the minimum (ties, i.e. the ridge AI_l = P_eff / B_l, go to compute).
// - efficiency = T_kernel_roof / T_k, which equals achieved / attainable when
//   W > 0: the classic and the time-based views agree by construction (1 = on
//   the roof; above 1 the counters or the roofs are off).
// - Tensor-Core share = W_tensor / W; Tensor-Core utilisation = T_tensor / T_k,
//   the fraction of kernel time the Tensor Cores would be busy at their peak.
//
// L1 is used only where its counter saw the traffic. l1_bytes counts requests
// to the L1/TEX t-stage; TMA bulk copies (cp.async.bulk) and wgmma operands move
// data between L2 and shared memory without passing it, so for Hopper Tensor-Core
// kernels L1 bytes can be far below L2 bytes. Every byte an SM requests from L2
// through the L1 path was first requested from L1 (misses, stores and atomics are
// a subset of the t-stage requests), so a kernel whose traffic all goes through L1
// has Q_l1 >= Q_l2. Rule: L1 is used when Q_l1 >= l1_min_fraction x Q_l2
// (default 0.5; also when L2 was not collected or is 0); otherwise the level is
// kept with its bytes but marked excluded ("not measured meaningfully (TMA)"):
// no T_mem, intensity or attainable, so it takes no part in T_kernel_roof, the
// limiting roof, the class or T_lb. Why 0.5 and not 1: runs recorded with the
// earlier L2 counter (lts__t_bytes), which also counts the L2 fabric between
// partitions and non-TEX clients (up to ~1.5x the SM<->L2 bytes), read L1-path
// kernels as low as ~0.65. With the SM<->L2 counter of the current samples
// (lts__t_sectors_srcunit_tex, H200 and H100 alike) L1-path kernels read
// 1.00-7.1 (fp32 conv and LSTM, the fp16 convs that load through L1), the TMA /
// wgmma fp16 convs 0.00-0.21, and the LSTM fp16 kernels, whose loads partly
// bypass L1, 0.02-0.49 (rising with batch): 0.5 keeps the groups apart on both
// samples, the LSTM fp16 only just, where the L1 term decides no class (those
// calls are launch-bound, or their kernels at 2% of any roof). Leaving L1 out
// never invalidates a bound: it only drops a term from a max.
//
// Lower bound and headroom (Benanza): T_lb = sum over kernels k of
// max(T_compute,k, max_l T_mem,l,k), each kernel's work on its classes' own peaks
// and its bytes at every level (the L1 rule applied per kernel), from
// KernelRecord::metrics, which holds the same quantities as Point::counters per
// kernel. Used (lower_bound_scope = per_kernel) when every kernel record of the
// point has counters (a work or a byte quantity); otherwise, or when the kernel
// records do not add up (see below), T_lb is taken at the operator level:
// T_lb = max(T_compute, max_l T_mem,l) = T_kernel_roof (per_operator). By
// max(sum) <= sum(max) the per-kernel bound is never below the operator-level one
// when the kernels' quantities add up to the operator's: a compute-bound kernel
// followed by a memory-bound one costs the sum of their bounds, not the larger of
// two totals. Both are valid lower bounds, so T_lb is the larger of the two; where
// the per-kernel sum comes out below (kernel counters from another replay, or L1
// left out for one kernel but not for the total) the operator-level bound is kept
// and a note says so. headroom = T / T_lb (T as above) and kernel_headroom = T_k / T_lb:
// how many times faster the call could get. The profiled `duration` metric is not
// used for the kernels either (replay inflates it); KernelRecord::duration_s is.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/results.hpp"
#include "roofline/machine_roofs.hpp"

namespace timeroof::roofline {

enum class Source { counters, analytic, none };
const char* to_string(Source source);

// Which measured time T is: T_stream, T_call (older runs), or none measured.
enum class TimeSource { stream, call, none };
const char* to_string(TimeSource source);  // "T_stream", "T_call", "none"

// How two measured times compare, by their 95% intervals: `apart` when the
// slower one's interval lies wholly above the faster one's, `overlapping` when
// the intervals meet (the difference is within noise), `unknown` when either has
// no interval (runs recorded before the intervals existed).
enum class Separation { apart, overlapping, unknown };
Separation separation(const TimeStats& slower, const TimeStats& faster);

struct BoundsOptions {
  // T_xfer adds to T_roof (copies not overlapped with kernels), as the operator
  // sweeps run them: the copy, then the kernels, on one stream.
  bool transfers_serial = true;
  // L1 is used only when Q_l1 >= l1_min_fraction x Q_l2 (see "L1" above); 0 keeps
  // L1 always.
  double l1_min_fraction = 0.5;
  // false: T_lb at the operator level even where every kernel has counters.
  bool per_kernel_lower_bound = true;
};

// Which Benanza bound T_lb is: summed over kernels, or of the operator's totals.
enum class BoundScope { per_kernel, per_operator };
const char* to_string(BoundScope scope);  // "per-kernel", "per-operator"

// One memory level of one point.
struct LevelBounds {
  Level level = Level::dram;
  std::optional<double> bytes;       // Q_l; nullopt: not collected
  std::optional<double> bandwidth;   // B_l; nullopt: no roof
  std::optional<double> time_s;      // T_mem,l = Q_l / B_l
  std::optional<double> intensity;   // AI_l = W / Q_l (FLOP/B), +inf when Q_l = 0
  std::optional<double> attainable;  // min(P_eff, AI_l x B_l), FLOP/s
  // L1 not measured meaningfully (TMA, see above): bytes kept, no time,
  // intensity or attainable; excluded_reason says why with the numbers.
  bool excluded = false;
  std::string excluded_reason;
};

// One kernel's Benanza bound, from its KernelRecord::metrics.
struct KernelBound {
  std::string name;
  double duration_s = 0;                                 // traced
  std::array<double, kPrecisionClassCount> work{};       // W_p,k
  double t_compute = 0;                                  // sum_p W_p,k / P_p
  std::array<std::optional<double>, kLevelCount> bytes;  // Q_l,k; nullopt: not collected
  std::array<std::optional<double>, kLevelCount> t_mem;  // Q_l,k / B_l; nullopt: absent or excluded
  bool l1_excluded = false;                              // the L1 rule, per kernel
  double t_bound = 0;                                    // max(t_compute, max_l t_mem)
  std::string limiting;  // "compute", "l1", "l2", "dram"; "" when t_bound = 0 (ties: compute)
};

// One direction of T_xfer.
struct TransferBounds {
  TransferDirection direction = TransferDirection::h2d;
  std::optional<double> bytes;      // Q_h2d or Q_d2h; nullopt: not recorded
  std::optional<double> bandwidth;  // B of the roof used; nullopt: no bytes moved, or no roof
  std::string ceiling;              // the roof's Ceiling, e.g. "h2d_pageable"; "" when none
  std::optional<double> time_s;     // Q / B
};

struct PointBounds {
  Source work_source = Source::none;
  Source bytes_source = Source::none;
  std::vector<std::string> notes;  // fallbacks taken, work or levels left out

  // Inputs as the model read them.
  std::array<double, kPrecisionClassCount> work{};  // W_p
  double total_work = 0;                            // W
  // The measured times per call with their statistics (see above); absent where
  // not measured.
  std::optional<TimeStats> call, stream, graph, issue;
  std::string graph_unavailable;  // why T_graph is absent, as the runner said
  std::optional<double> time_s;   // T: T_stream, else T_call
  TimeSource time_source = TimeSource::none;
  std::optional<double> kernel_s;      // T_k
  std::optional<double> kernel_low_s;  // T_k's interval over the traced calls (above)
  std::optional<double> kernel_high_s;
  std::optional<double> kernel_busy_s;        // union of the kernel intervals, where traced
  std::optional<std::int64_t> launches;       // N
  std::optional<double> transfer_measured_s;  // h2d_time_s + d2h_time_s, if timed

  // Time-based roofline.
  std::array<double, kPrecisionClassCount> compute_s{};  // W_p / P_p
  double t_cuda = 0;                                     // CUDA-core part of T_compute
  double t_tensor = 0;                                   // Tensor-Core part of T_compute
  double t_compute = 0;                                  // T_compute
  std::array<LevelBounds, kLevelCount> levels;           // T_mem,l and the classic per level
  std::optional<double> t_launch;                        // N x L
  double t_xfer = 0;                                     // modelled transfer time, sum of transfers
  HostMemory transfer_host = HostMemory::pinned;         // whose transfer roofs T_xfer is on
  std::array<TransferBounds, kTransferDirectionCount> transfers;  // H2D, D2H
  double t_kernel_roof = 0;                                       // max(T_compute, max_l T_mem,l)
  double t_roof = 0;  // max(T_kernel_roof, T_launch) (+T_xfer)

  // Classic roofline.
  std::optional<double> peak_effective;      // P_eff
  std::optional<double> achieved;            // W / T_k
  std::optional<double> achieved_low;        // W / kernel_high_s
  std::optional<double> achieved_high;       // W / kernel_low_s
  std::optional<double> attainable;          // min over levels
  std::string limiting_roof;                 // "compute", "l1", "l2", "dram" or "" (no work)
  std::optional<double> efficiency;          // T_kernel_roof / T_k (= achieved / attainable)
  std::optional<double> tensor_share;        // W_tensor / W
  std::optional<double> tensor_utilisation;  // T_tensor / T_k

  // Lower bound and headroom.
  double t_lower_bound = 0;  // T_lb (see above)
  BoundScope lower_bound_scope = BoundScope::per_operator;
  double t_lower_bound_operator = 0;               // max(T_compute, max_l T_mem,l)
  std::optional<double> t_lower_bound_per_kernel;  // sum_k; where every kernel has counters
  std::vector<KernelBound> kernel_bounds;          // where every kernel has counters
  std::optional<double> headroom;                  // T / T_lb
  std::optional<double> kernel_headroom;           // T_k / T_lb

  std::optional<double> call_s() const { return median(call); }
  std::optional<double> stream_s() const { return median(stream); }
  std::optional<double> graph_s() const { return median(graph); }
  std::optional<double> issue_s() const { return median(issue); }
  // The statistics of T (T_stream, else T_call), as time_source says.
  const std::optional<TimeStats>& time_stats() const {
    return time_source == TimeSource::stream ? stream : call;
  }
  static std::optional<double> median(const std::optional<TimeStats>& stats) {
    return stats ? std::optional<double>(stats->median_s) : std::nullopt;
  }
  const LevelBounds& level(Level l) const { return levels[static_cast<std::size_t>(l)]; }
  const TransferBounds& transfer(TransferDirection d) const {
    return transfers[static_cast<std::size_t>(d)];
  }
};

// The precision class analytic work of a point falls into, or nullopt.
// Its precision and math mode as stored; a value that is none of core's
// spellings gives nullopt (precision) or counts as FMA units (math mode).
std::optional<PrecisionClass> analytic_class(const std::string& precision,
                                             const std::string& math_mode);

// The transfer roofs T_xfer used, for reports: "pageable H2D roof 11.2 GB/s,
// pageable D2H roof 18.0 GB/s"; "" when it used none.
std::string transfer_roofs_text(const PointBounds& bounds);

// The time formatters of core/format.hpp ("3.0 us", "10.1 us", "0.592 to 0.618 us").
using timeroof::format_time;
using timeroof::format_time_3;
using timeroof::format_time_interval;
// "45 us +-1.2%": a measured time and the half width of its 95% interval relative
// to it ("45 us" without an interval, "-" when not measured).
std::string format_time_stats(const std::optional<TimeStats>& stats);

PointBounds point_bounds(const Point& point, const MachineRoofs& roofs,
                         const BoundsOptions& options = {});

// True when a kernel record carries counters the model reads: a work quantity
// (work_quantity(p)) or a byte quantity (l1_bytes, l2_bytes, dram_*_bytes).
bool has_counters(const KernelRecord& kernel);
// One kernel's bound (see "Lower bound" above).
KernelBound kernel_bound(const KernelRecord& kernel, const MachineRoofs& roofs,
                         const BoundsOptions& options = {});

}  // namespace timeroof::roofline
