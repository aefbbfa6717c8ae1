// Findings: short, specific sentences built from the numbers of a run, ranked by
// the time they explain.
//
// Per series (sweep_fit.hpp), consecutive points of one bottleneck class form one
// finding with a parameter range: "batch <= X" when the group starts at the
// series' first value, "batch >= X" when it ends at its last, "batch X-Y" in
// between, "batch = X" for one point. The numbers quoted are those of the
// group's representative point, the one with the median wall time (the lower
// median for an even count). Sentences per class:
// - launch_bound:   "<series>, <range>: launch-bound — N launches x L = p% of T;
//                    kernels busy k% of the call" where N x L >= 25% of T (the
//                    launches explain the call), else "host/API overhead X = p% of
//                    T with N launches x L; kernels busy k% of the call"
// - transfer_bound: "<series>, <range>: transfer-bound — host<->device copies X =
//                    p% of T"
// - memory_bound:   "<series>, <range>: <LEVEL>-bound at p% of the <LEVEL> roof
//                    (T_mem,l of T_k kernel time)" + the compute clause
// - compute_bound:  "<series>, <range>: compute-bound — Tensor Cores at p% of the
//                    <peak> (s% of the FLOPs)", or the compute clause
// - latency_bound:  "<series>, <range>: latency-bound — kernels at p% of their
//                    roof (<limiting>), T_k of kernels in a T call" + the compute
//                    clause
// Compute clause: "CUDA cores at p% of <FP32 FMA> peak" (T_cuda / T_k, named by
// the dominant CUDA-core class; shown where no Tensor-Core work or CUDA-core work is
// >= 10% of T_compute); "Tensor Cores do s% of the FLOPs at u% of the <peak>"
// (T_tensor / T_k) where they work; "Tensor Cores unused (math <mode>)" where not.
// Explained time (the rank) = the sum over the group's points of the time the
// class names: launch: max(overhead, T_launch) capped at T; transfer: transfer
// time; memory: T_mem,l; compute: T_compute; latency: T_k - T_kernel_roof.
// Series fits (sweep_fit.hpp), one per series of >= 3 points:
// - knee within (or below) the range: "<series>, batch 1-1024: T = a fixed per
//   call + c per sample; work overtakes the fixed cost at batch ~ b*", ranked by
//   the fixed cost summed over the points at or below the knee (min(a, T) each).
// - flat series, or knee beyond the range: "time flat in batch (fit a + c per
//   sample)" / "the fixed cost dominates up to batch X (fit ..., knee ~ b*)",
//   appended to the series' finding where one class covers the whole series,
//   else a finding of its own ranked by n x a.
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
  double explained_s = 0;  // the rank
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

// Findings for the series of one run, most time explained first.
std::vector<Finding> findings(const std::vector<Point>& points, const MachineRoofs& roofs,
                              const FindingsOptions& options = {});
// The findings of already grouped series.
std::vector<Finding> series_findings(const std::vector<Series>& series, const MachineRoofs& roofs,
                                     const FindingsOptions& options = {});

// "3.0 us", "187 us", "1.25 ms", "2.1 s".
std::string format_time(double seconds);

}  // namespace timeroof::roofline
