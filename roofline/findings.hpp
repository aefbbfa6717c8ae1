// Findings: short, specific sentences built from the numbers of a run, ranked by
// the share of their series' time they explain.
//
// Per series (sweep_fit.hpp), consecutive points of one bottleneck class form one
// finding with a parameter range: "batch 1-1024" when the group is the whole
// series, "batch <= X" when it starts at the series' first value, "batch >= X"
// when it ends at its last, "batch X-Y" in between, "batch = X" for one point.
// The numbers quoted are those of the group's representative point, the one with
// the median wall time (the lower median for an even count), named "at batch X"
// where the group has several points. Sentences per class:
// - launch_bound:   "<series>, <range>: launch-bound — N launches x L = p% of T at
//                    batch X; kernels busy k% of the call" where N x L >= 25% of T
//                    (the launches explain the call), else "host/API overhead O =
//                    p% of T at batch X with N launches x L; kernels busy k% ..."
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
// Explained time per point e_i, the time the class names: launch: max(overhead,
// T_launch) capped at T; transfer: transfer time; memory: T_mem,l; compute:
// T_compute; latency: T_k - T_kernel_roof. explained_s = sum of e_i over the group.
// Rank (share): (1/n) x sum over the group's points of min(e_i / T_i, 1), n = the
// points of the series: each point's share of its own call, averaged over the
// series, so every swept value weighs alike and the findings of one series add up
// to at most 1. Summed seconds (explained_s, the former rank) let the largest
// batches decide: a batch-1024 call costs 10-300x a batch-1 call, so on the H200
// sample each fp16 conv series' small-batch launch-bound finding, what a batch
// sweep is run to find, ranked below its large-batch L2-bound one. Ties:
// explained_s.
// Series fits (sweep_fit.hpp), one per series of >= 3 points:
// - knee within (or below) the range: "<series>, batch 1-1024: T = a fixed per
//   call + c per sample; work overtakes the fixed cost at batch ~ b*", explaining
//   the fixed cost over the points at or below the knee (min(a, T_i) each).
// - flat series, or knee beyond the range: "time flat in batch (fit a + c per
//   sample)" / "the fixed cost dominates up to batch X (fit ..., knee ~ b*)",
//   appended to the series' finding where one class covers the whole series,
//   else a finding of its own explaining min(a, T_i) at every point.
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
  double share = 0;        // the rank: share of the series' time explained, [0, 1]
  double explained_s = 0;  // seconds explained, summed over the group's points
  std::string series;      // Series::name()
  std::string sweep;
  std::string parameter;
  double x_first = 0, x_last = 0;
  std::string label;  // the bottleneck class, or "fit"
  std::size_t points = 0;
};

struct FindingsOptions {
  SeriesOptions series;
  FitOptions fit;
  bool include_fits = true;
};

// Findings for the series of one run, largest share first.
std::vector<Finding> findings(const std::vector<Point>& points, const MachineRoofs& roofs,
                              const FindingsOptions& options = {});
// The findings of already grouped series.
std::vector<Finding> series_findings(const std::vector<Series>& series, const MachineRoofs& roofs,
                                     const FindingsOptions& options = {});

// "3.0 us", "187 us", "1.25 ms", "2.1 s".
std::string format_time(double seconds);

}  // namespace timeroof::roofline
