// Per-point bounds of the model: the time-based roofline (Wang et al., DLS 2020),
// the classic hierarchical roofline, and the Benanza lower bound (IPDPS 2020).
//
// Inputs of a Point (core/results.hpp), all per operator call:
// - W_p, work of precision class p, FLOP (op for int8): the counter quantity
//   work_quantity(p) (`fp32_flops`, `tensor_fp16_flops`, ...; all-path totals, dense
//   work only: 2:4-sparse quantities are not added). W = sum_p W_p.
// - Q_l, bytes at level l: L1 `l1_bytes` (requested from L1/TEX), L2 `l2_bytes`
//   (requested from L2), DRAM `dram_read_bytes + dram_write_bytes`. A level whose
//   counters were not collected is absent, not 0.
// - Without counters (no work or no byte quantity in Point::counters) the point
//   falls back to its analytic numbers and is marked (work_source / bytes_source =
//   analytic): W = Point::flops in the one class its precision and math mode imply
//   (math "tensor": fp16 -> tensor_fp16, bf16 -> tensor_bf16, fp32/tf32 ->
//   tensor_tf32, fp8, int8, fp64 -> their Tensor-Core class; otherwise fp16/bf16
//   -> half, fp32, fp64), Q_dram = Point::min_bytes (each tensor moved once: a
//   lower bound of the traffic), no L1/L2.
// - T, wall time: Timing::wall_median_s. T_k, kernel time: Timing::kernel_time_s,
//   else the sum of the traced KernelRecord durations. The counters' `duration` is
//   NOT used: it is timed under profiler replay and is inflated (an H200 conv2d
//   with batch 1: 214.6 us profiled, 4.9 us traced).
// - N, launches: Timing::launches. Q_h2d, Q_d2h: Timing::h2d_bytes / d2h_bytes.
//
// Time bounds (seconds; each one is a time the call cannot beat):
// - T_compute = sum_p W_p / P_p: Tensor-Core and CUDA-core work each on its own
//   peak; split as T_compute = T_cuda + T_tensor. Work of a class without a roof is
//   left out (noted).
// - T_mem,l = Q_l / B_l per level.
// - T_kernel_roof = max(T_compute, max_l T_mem,l): the roof of the kernels alone,
//   compared with T_k.
// - T_launch = N x L (L = launch_async).
// - T_xfer = Q_h2d / B_h2d + Q_d2h / B_d2h (modelled).
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
// Lower bound and headroom (Benanza): T_lb = sum over kernels of max(W/P, Q/B).
// Points carry counters for the whole operator, not per kernel, so here T_lb is
// taken at the operator level: T_lb = max(T_compute, max_l T_mem,l) =
// T_kernel_roof. By max(sum) <= sum(max) it is never above the per-kernel bound,
// so it is still a valid (possibly looser) lower bound. headroom = T / T_lb (wall)
// and kernel_headroom = T_k / T_lb: how many times faster the call could get.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "roofline/machine_roofs.hpp"

namespace timeroof::roofline {

enum class Source { counters, analytic, none };
const char* to_string(Source source);

struct BoundsOptions {
  // T_xfer adds to T_roof (copies not overlapped with kernels), as the operator
  // sweeps run them: the copy, then the kernels, on one stream.
  bool transfers_serial = true;
};

// One memory level of one point.
struct LevelBounds {
  Level level = Level::dram;
  std::optional<double> bytes;       // Q_l; nullopt: not collected
  std::optional<double> bandwidth;   // B_l; nullopt: no roof
  std::optional<double> time_s;      // T_mem,l = Q_l / B_l
  std::optional<double> intensity;   // AI_l = W / Q_l (FLOP/B), +inf when Q_l = 0
  std::optional<double> attainable;  // min(P_eff, AI_l x B_l), FLOP/s
};

struct PointBounds {
  Source work_source = Source::none;
  Source bytes_source = Source::none;
  std::vector<std::string> notes;  // fallbacks taken, work or levels left out

  // Inputs as the model read them.
  std::array<double, kPrecisionCount> work{};  // W_p
  double total_work = 0;                       // W
  std::optional<double> wall_s;                // T
  std::optional<double> kernel_s;              // T_k
  std::optional<std::int64_t> launches;        // N
  std::optional<double> transfer_measured_s;   // h2d_time_s + d2h_time_s, if timed

  // Time-based roofline.
  std::array<double, kPrecisionCount> compute_s{};  // W_p / P_p
  double t_cuda = 0;                                // CUDA-core part of T_compute
  double t_tensor = 0;                              // Tensor-Core part of T_compute
  double t_compute = 0;                             // T_compute
  std::array<LevelBounds, kLevelCount> levels;      // T_mem,l and the classic per level
  std::optional<double> t_launch;                   // N x L
  double t_xfer = 0;                                // modelled transfer time
  double t_kernel_roof = 0;                         // max(T_compute, max_l T_mem,l)
  double t_roof = 0;                                // max(T_kernel_roof, T_launch) (+T_xfer)

  // Classic roofline.
  std::optional<double> peak_effective;      // P_eff
  std::optional<double> achieved;            // W / T_k
  std::optional<double> attainable;          // min over levels
  std::string limiting_roof;                 // "compute", "l1", "l2", "dram" or "" (no work)
  std::optional<double> efficiency;          // T_kernel_roof / T_k (= achieved / attainable)
  std::optional<double> tensor_share;        // W_tensor / W
  std::optional<double> tensor_utilisation;  // T_tensor / T_k

  // Lower bound and headroom.
  double t_lower_bound = 0;               // T_lb (operator level, see above)
  std::optional<double> headroom;         // T / T_lb
  std::optional<double> kernel_headroom;  // T_k / T_lb

  const LevelBounds& level(Level l) const { return levels[static_cast<std::size_t>(l)]; }
};

// The precision class analytic work of a point falls into, or nullopt.
std::optional<Precision> analytic_class(const std::string& precision, const std::string& math_mode);

PointBounds point_bounds(const Point& point, const MachineRoofs& roofs,
                         const BoundsOptions& options = {});

}  // namespace timeroof::roofline
