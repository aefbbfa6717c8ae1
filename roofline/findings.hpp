// Findings: short, specific sentences built from the numbers of a run, ranked by
// the time they explain, in seconds.
//
// Per series (sweep_fit.hpp), consecutive points of one bottleneck class form one
// finding with a parameter range: "batch 1-1024" when the group is the whole
// series, "batch <= X" when it starts at the series' first value, "batch >= X"
// when it ends at its last, "batch X-Y" in between, "batch = X" for one point.
// The numbers quoted are those of the group's representative point, the one with
// the median time T (the lower median for an even count), named "at batch X"
// where the group has several points. T is T_stream, else T_call (bounds.hpp),
// named in the sentence. Each class sentence leads with the quantity that
// decided the class (classify.hpp's rule), so it never states a number that
// contradicts the class:
// - launch_bound, host_issue: "<series>, <range>: launch-bound — the host issues
//                    a call in I, the GPU runs it in G (T_graph) at batch X; back
//                    to back a call takes T (T_stream); N launches per call"
//   overhead_share:  "launch-bound — host overhead and device gaps H = p% of T at
//                    batch X (not measured separately); N launches x L; kernels
//                    busy k% of the call"
//   launch_roof:     "launch-bound — N launches x L = T_launch = p% of T at batch
//                    X, above the kernels' roof R; kernels busy k% of the call"
// - transfer_bound: "<series>, <range>: transfer-bound — host<->device copies X =
//                    p% of T at batch X; T_xfer Y on the <host> H2D roof B (copies
//                    at e% of the roof)": the roofs of the point's host memory
//                    (pinned or pageable, bounds.hpp), e = T_xfer / the timed copies
// - memory_bound:   "<series>, <range>: <LEVEL>-bound at p% of the <LEVEL> roof
//                    (T_mem,l of T_k kernel time at batch X)" + the compute clause
// - compute_bound:  "<series>, <range>: compute-bound — at batch X, Tensor Cores at
//                    p% of the <peak> (s% of the FLOPs)", or the compute clause
// - latency_bound:  "<series>, <range>: latency-bound — at batch X, kernels at p%
//                    of their roof (<limiting>), T_k of kernels in a T call" + the
//                    compute clause
// Compute clause: "CUDA cores at p% of <FP32 FMA> peak" (T_cuda / T_k, named by
// the dominant CUDA-core class; shown where no Tensor-Core work or CUDA-core work is
// >= 10% of T_compute); "Tensor Cores do s% of the FLOPs at u% of the <peak>"
// (T_tensor / T_k) where they work; "Tensor Cores unused (math <mode>)" where not.
// Explained time per point e_i, the time the class names: launch: the host
// overhead H (launch_roof: max(H, T_launch) capped at T); transfer: transfer
// time; memory: T_mem,l; compute: T_compute; latency: T_k - T_kernel_roof.
//
// Besides the classes, per series:
// - CUDA graph (label "cuda_graph"), over the consecutive points where T_stream
//   and T_graph are both measured, their 95% intervals do not overlap and
//   T_stream >= graph_min_gain x T_graph: "<series>, <range>: a CUDA graph would
//   take this call from T_stream to T_graph (r x, measured at batch X; T_stream
//   95% interval ..., T_graph ...)"; e_i = T_stream - T_graph. graph_min_gain 1.2:
//   a smaller saving is not worth restructuring a loop for, and is within what T
//   differs by between runs (0.58-1.47x on the H100 of issue 13).
// - Parts above T (label "parts_above_time"), over the consecutive points whose
//   measured parts exceed T (kernels above the device time, or T_graph above T:
//   classify.hpp) by more than pass_tolerance x T: "<series>, <range>: measured
//   parts exceed T_stream 80 us at batch X by 40 us: <why, with both numbers and
//   their passes>"; e_i = the excess. pass_tolerance 0.02: two passes over the
//   same call differ by up to 2% (clock and power) and stay quiet.
// - T_stream above T_call (label "stream_above_call"), over the consecutive
//   points where classify.hpp flags it (beyond both intervals) by more than
//   pass_tolerance x T: "<series>, <range>: at batch X, T_stream 321 us (back to
//   back) exceeds T_call 245 us (one synchronized call) by 77 us (31%), beyond
//   their 95% intervals: flagged, <whose speed moved, with the numbers>"; e_i =
//   the excess. A launch-bound or CUDA-graph sentence whose representative point
//   is flagged says so beside its T_stream (", more than one synchronized call
//   takes (T_call 245 us): that pass ran slower"), so a T_stream above the issue
//   time it quotes is never left unexplained.
// - The fit (label "fit"), series of >= 3 points (sweep_fit.hpp), on T:
//   "<series>, batch 1-1024: T_stream = a fixed per call + c per sample (95%
//   interval c_low-c_high); work overtakes the fixed cost at batch ~ b* (R2 r,
//   scatter s)", or "... the fixed cost dominates up to batch X (knee ~ b*, R2)"
//   / "the work dominates from the smallest batch on (knee ~ b*, R2)" for a knee
//   beyond / below the range; "; knee not quoted: the line explains R2 = r" where
//   the fit does not explain the data; "T_stream = c per sample (...); no fixed
//   cost resolved"; and for a flat series "T_stream flat within +-x (p% of its
//   median m)", never a slope. Then "; T_graph ..." alike where every point has
//   T_graph. e_i = min(a, T_i) at points at or below the knee, or every point of a
//   series that is flat (a = the median T) or whose knee lies beyond it; 0 else.
// Anomalies, per series, from the points themselves (Point::flops, kernels,
// algorithm) beside the model's numbers:
// - Redundant work (label "redundant_work"), over the consecutive points whose
//   counted FLOPs W (counters: work_source = counters) exceed the analytic FLOPs
//   (Point::flops) more than redundant_min_ratio times: "<series>, <range>: redundant
//   work — at batch X the kernels execute 14.8 GFLOP, 4.01x the 3.69 GFLOP the
//   operator needs (11.1 GFLOP extra); the Tensor Cores alone execute 4.00x the
//   FLOPs the operator needs: MMAs over tiles padded with zeros (...); <kernel> does
//   99% of the counted work (1 launch); the extra work costs ~ 30 us of the 40 us
//   kernel time". What the extra is: Tensor-Core FLOPs alone above the analytic
//   ones are MMAs over zero-padded tiles (the counters count whole tiles); else
//   "the extra is CUDA-core FP instructions ...", which count every FFMA (as 2),
//   FADD and FMUL: padded or split-K tiles, reductions, epilogues, and the several
//   FLOPs of each exp, sigmoid, tanh or division an analytic count takes as 1. The
//   kernel is the one with the most counted work, by short name (short_kernel_name),
//   its launches summed, where every kernel has counters (PointBounds::kernel_bounds).
//   e_i = T_k x (W - W_analytic) / W: the kernels' time spent on work the
//   operator does not need, taking kernel time as proportional to the work done
//   (padded Tensor-Core tiles run the same instructions as the useful ones).
//   redundant_min_ratio 1.10: counted and analytic FLOPs agree within 0.99-1.04 on
//   the convolutions of both samples whose kernels do exactly the work (split-K
//   and stride-3 tails included); 10% is beyond that and below the README's 14%
//   of padded Tensor-Core work. Every LSTM series of the samples is flagged, and
//   rightly (issue #20): the counted FLOPs are work the kernels cuDNN picks for
//   these small shapes execute, not a miscount. fp32 (1.50x at batch 1 and >= 64,
//   2.2x at 2-32, 1.16-1.92x over I and H): the GEMM kernels do 1.42x the analytic
//   GEMM FLOPs at batch >= 64 (the recurrent sgemm_largek_lds64, split-K 2 over
//   K = H = 16, runs 34 FFMAs + 2 FMULs per output for 16 multiply-adds; the input
//   GEMM's FFMA-only sm80_xmma_gemm counts 2 (MACs + outputs), exact), and
//   elemWiseRNNcell 3.38x the 17 FLOPs per unit (its sigmoids and tanhs); fp16
//   2.79x: Tensor-Core tiles 64 deep over K = 32 and 16. fp32 backward data at
//   batch <= 16 (1.10-1.12x) is the one flag the GEMMs (1.02-1.04x) do not carry:
//   its elementwise kernel counts 2.39x the 23 FLOPs per unit.
// - Padded Tensor-Core tiles (label "tile_padding"), over the consecutive points
//   not flagged as redundant work whose Tensor-Core FLOPs alone exceed the
//   analytic FLOPs more than tile_padding_min_ratio times: "<series>, <range>:
//   padded Tensor-Core tiles — at m 4096 the Tensor Cores execute 376 GFLOP,
//   1.043x the 361 GFLOP the operator needs (15.6 GFLOP on tile parts the operator
//   does not need: zeros where a dimension is not a multiple of the kernel's tile, or
//   scores a causal mask hides in the tiles on its diagonal);
//   <kernel> does 100% of the counted work (1 launch); ~ 12 us of the 290 us
//   kernel time". e_i = T_k x (W_tensor - W_analytic) / W. tile_padding_min_ratio
//   1.005: Tensor-Core counters count whole MMA tiles exactly, so the GEMMs whose
//   dimensions are multiples of the tile read 1.0000 (every fp16, bf16, tf32, int8
//   and fp8 4096^3 GEMM on an H100), while cuBLASLt's padded tiles show 1.0020
//   (fp8 8192^3) to 1.0432 (4096x11008x4096): half a percent is above any rounding
//   and below the smallest padding seen.
// - Kernel switch (label "kernel_switch"), per step between consecutive points of a
//   series with a fit (>= 3 points) where the algorithm (Point::algorithm) or the
//   set of kernel names changes and T steps beyond both points' 95% intervals and
//   by more than switch_min_step beyond the fit's trend (T_after / T_before against
//   fit(x_after) / fit(x_before)), and the kernels' own time (T_graph, else T_k)
//   steps the same way by as much (a step of T the kernels do not show is the
//   host's: the LSTM calls, launch-bound, move between two host levels ~1.4x apart): "<series>: at
//   batch 16 -> 32 the kernels change from gemmSN_TN_kernel to sgemm_largek_lds64 and T_stream
//   steps from 60 us to 95 us (1.58x, the series' fit 1.02x; 95% intervals ...)", the algorithm
//   named first where it changes, at most three short names a side (those only one of the two
//   points runs). e = |T_after - trend x T_before|, at the later point: the step the switch makes
//   beyond what the work adds. switch_min_step 0.10: a step of a few percent is within the scatter
//   of T about the fit on both samples, and smaller than a user would change the batch size for.
// - Helper kernels (label "helper_kernels"), over the consecutive points whose
//   layout transforms and fills (short names containing toNhwc, toNchw, toFolded,
//   transpose, convert, padding, fill, memset or init, any case) take more than
//   helper_min_share of the traced kernel time: "<series>, <range>: helper kernels
//   (layout transforms, fills) take 35% of the kernel time at batch X (8.2 us of 23
//   us traced): nhwcToNchwKernel 20%, nchwToNhwcKernel 15%"; e_i = that share x
//   T_k. helper_min_share 0.05: the transforms of the NCHW fp32 convs take 9-12%
//   (backward data) and 10-37% (forward) of the kernel time on both samples; a
//   threshold of 10% would split such a series by a percent of noise, and a small
//   share of a long call still ranks by its seconds, below the share of a short one.
// - Off the fit (label "off_fit"), over the consecutive points of a series with a
//   fit (>= 3 points) where T lies off the fit's line by more than
//   max(outlier_min_residual, 3 x the fit's scatter) of T, and the line lies
//   outside T's 95% interval (a series the line does not describe has a wide
//   scatter, and so a high threshold): "<series>, <range>: off the series' fit —
//   at batch X T_stream 88 us against the fit's 44 us (2.00x; 95% interval ...,
//   the fit's scatter 1%)"; e_i = |T - fit(x)|. outlier_min_residual 0.3: the two
//   levels a host-bound call's time can take (~1.4x apart, core/results.hpp) stay
//   quiet; the fit is robust (Huber), so an outlier barely moves the line it is
//   measured against.
// Rank: explained_s = sum of e_i over the finding's points, most first: the
// seconds a user would win back. Ties: share = (1/n) x sum over the finding's
// points of min(e_i / T_i, 1), n = the points of the series (each point's share
// of its own call, averaged over the series), reported beside.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "roofline/classify.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/sweep_fit.hpp"

namespace timeroof::roofline {

struct Finding {
  std::string text;
  double explained_s = 0;  // the rank: seconds explained, summed over the group's points
  double share = 0;        // share of the series' time explained, [0, 1] (ties)
  std::string series;      // Series::name()
  std::string sweep;
  std::string parameter;
  double x_first = 0, x_last = 0;
  // the bottleneck class, "cuda_graph", "parts_above_time", "stream_above_call", "fit",
  // "redundant_work", "tile_padding", "kernel_switch", "helper_kernels" or "off_fit"
  std::string label;
  std::size_t points = 0;
};

struct FindingsOptions {
  SeriesOptions series;
  FitOptions fit;
  bool include_fits = true;
  double graph_min_gain = 1.2;        // CUDA-graph finding: T_stream / T_graph at least
  double pass_tolerance = 0.02;       // parts-above-T and T_stream-above-T_call: excess / T above
  double redundant_min_ratio = 1.10;  // redundant work: counted / analytic FLOPs above
  double tile_padding_min_ratio = 1.005;  // padded tiles: Tensor-Core / analytic FLOPs above
  double switch_min_step = 0.10;          // kernel switch: T's step beyond the fit's trend above
  double helper_min_share = 0.05;         // helper kernels: their share of the kernel time above
  double outlier_min_residual = 0.3;      // off the fit: |T - fit| / T above (and 3x the scatter)
  double roof_max_of_peak = 1.0;          // roof findings: measured / theoretical above
  double roof_max_spread = 0.10;  // roof findings: (max - min) / median of the repeats above
};

// Machine-level findings on the measured roofs themselves (roof_findings): the
// roofs above their peak, then those that spread, each in Machine::ceilings order:
// - "roof_above_peak": measured / theoretical > roof_max_of_peak: "tensor_bf16
//   measures 878 TFLOP/s, 100.3% of its theoretical 876 TFLOP/s (at SM 1.98
//   GHz): a roof cannot pass its peak, so the peak's clock or the kernel's FLOP
//   count is off, and so is every efficiency quoted against it". 1.0: any
//   excess is an error of the peak, the clock or the count (the GPU tests allow
//   0.5% for clock reading; the H100 sample's tensor_bf16 is at 100.26%).
// - "roof_spread": Ceiling::spread > roof_max_spread: "h2d_pageable: its 60
//   repeats spread 43% ((max - min) / median), above 10%: the roof moved while it
//   was measured; bounds on it carry that uncertainty". 0.10: the compute and
//   HBM roofs of both samples spread under 8%; the launch, pageable-copy and
//   cuBLAS reference roofs, host- or clock-bound, 12-43%.
struct RoofFinding {
  std::string ceiling;  // Ceiling::name
  std::string label;    // "roof_above_peak" or "roof_spread"
  double value = 0;     // measured / theoretical, or the spread
  double limit = 0;     // the option it passed
  std::string text;
};
std::vector<RoofFinding> roof_findings(const Machine& machine, const FindingsOptions& options = {});

// Findings for the series of one run, most seconds explained first.
std::vector<Finding> findings(const std::vector<Point>& points, const MachineRoofs& roofs,
                              const FindingsOptions& options = {});
// The findings of already grouped series of `points` (SeriesPoint::index into it).
std::vector<Finding> series_findings(const std::vector<Point>& points,
                                     const std::vector<Series>& series, const MachineRoofs& roofs,
                                     const FindingsOptions& options = {});
// The same with each series' fit already made (fits[i] of series[i], by
// fit_series with options.fit).
std::vector<Finding> series_findings(const std::vector<Point>& points,
                                     const std::vector<Series>& series,
                                     const std::vector<SeriesFit>& fits, const MachineRoofs& roofs,
                                     const FindingsOptions& options = {});

// The anomaly findings ("redundant_work", "tile_padding", "helper_kernels") of the
// points that belong to no series of options.series.min_points or more (a GEMM of
// its own shape, varying m, n and k together): `lone`, group_series_and_lone's
// smaller groups. A lone point's findings name it by all its parameters ("batch=1
// k=4096 m=4096 n=11008 ..."). One finding per series name and label: the lone
// point explaining most, with how many more show the same and their seconds added
// (points and explained_s summed, share their mean).
std::vector<Finding> lone_point_findings(const std::vector<Point>& points,
                                         const std::vector<Series>& lone, const MachineRoofs& roofs,
                                         const FindingsOptions& options = {});
// Series findings and lone-point findings as one list, most seconds explained first.
void merge_findings(std::vector<Finding>& into, std::vector<Finding> more);

// "nchwToNhwcKernel", "gemvx::kernel", "sm90_xmma_fprop_..._tilesize128x64x32_...": a
// demangled kernel name without its return type, namespaces, template arguments,
// parameters and an xmma name's "_execute..." suffix; a generic last name
// ("kernel", "Kernel") keeps its scope; a mangled nested name ("_ZN...") its scopes.
std::string short_kernel_name(const std::string& name);

}  // namespace timeroof::roofline
