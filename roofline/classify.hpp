// Where a point's time goes, and its bottleneck class.
//
// T is the time the model explains (bounds.hpp): T_stream where measured (calls
// back to back, what a loop pays), else T_call (runs recorded before T_stream),
// else, with no time measured, the kernels' busy time plus transfer (K - O + X
// below).
//
// Decomposition of T (seconds), from measured parts:
// - transfer X: the timed host<->device copies (h2d_time_s + d2h_time_s) where
//   timed, else the modelled T_xfer.
// - kernels K = T_k (trace pass, summed over the call's kernels), split into
//   within_roof = min(T_k, T_kernel_roof), the time at the roof, and
//   lost_to_roof = T_k - within_roof.
// - kernel overlap O = max(0, T_k - busy) where the trace recorded the kernels'
//   busy time (the union of their intervals), else 0: kernels running at once on
//   several streams take device time once. K - O is the device's busy time.
// With T_graph measured (separated):
// - host overhead H = max(0, T - T_graph): the time back-to-back calls take
//   beyond the device floor, i.e. what the host adds; what a CUDA graph or fusion
//   would save. Measured, not N x L.
// - device gaps D = max(0, T_graph - (K - O) - X): idle device time inside the
//   replayed call (launch latency on the device, dependencies, syncs).
// Without T_graph (older runs, or a call that cannot be captured):
// - H = max(0, T - (K - O) - X), host overhead and device gaps together, "not
//   measured separately"; D = 0.
// Remainder: not_explained R = T - (H + D + X + K - O), so that
// H + D + X + (K - O) + R = T exactly. H and D take any positive rest, so R <= 0:
// it is the amount by which measured parts exceed T, and it is always the sum of
// two labelled causes, each with a note quoting both numbers and the pass each
// comes from:
// - graph_above_time = max(0, T_graph - T): the graph replay took longer than
//   the back-to-back calls; within their 95% intervals (overlapping) it is noise,
//   beyond them it is flagged (the two passes ran at different speeds).
// - kernels_above_device = max(0, (K - O) + X - device time), device time =
//   T_graph (else T): kernels and copies of the trace pass exceed the device time
//   of the timing pass. Explained where it happens: overlap on several streams
//   is measured by O where the trace has the busy time; what is left, or all of
//   it for one kernel (which cannot overlap itself), is a difference between the
//   passes (clocks, power); with several kernels and no busy time, either.
// Beside the decomposition, not in it: the one-call latency premium
// T_call - T_stream, what one isolated synchronized call pays beyond a call in a
// loop. At one speed it is never negative (a loop overlaps what one call waits
// for), so T_stream above T_call beyond both 95% intervals (stream_vs_call apart)
// is flagged with a note quoting both numbers: the passes ran at different
// speeds, the host's where the point is host-bound (its issue time, timed with
// T_call, above T_graph; the H200 sample's LSTM training forward fp32 at batch
// 128: issued in 243 us, T_call 245 us, T_stream 321 us), the GPU's where T_graph
// is itself at or above T_call (clocks, power: T_call runs on an idle GPU, the
// other passes under sustained load), else either, said so.
//
// Bottleneck class, the first rule that holds (fractions are inclusive: >=):
// 1. unknown         no time and no kernel time.
// 2. transfer_bound  X / T >= transfer_fraction.
// 3. launch_bound    the host issues calls more slowly than the GPU runs them:
//                    issue time > issue_ratio x device time, device time =
//                    T_graph, else (no T_graph) the kernels' busy time plus the
//                    copies (K - O + X), noted. The reason leads with both numbers.
//                    Older runs without an issue time or a device time, as before:
//                    H / T >= launch_fraction (the GPU is idle most of the call:
//                    overhead_share), or T_launch / T >= launch_fraction with
//                    T_launch >= T_kernel_roof (N launches issued more slowly than
//                    the kernels could run: launch_roof).
// 4. unknown         (rule no_roof) the kernels have no bound to be judged
//                    against: T_kernel_roof = 0, because the run has no measured
//                    or theoretical roofs (a sweep into a store without
//                    ceilings) or the point's work was not counted. Judging
//                    against zeros once called every such point latency-bound.
// 5. compute_bound / memory_bound: the kernels are near a roof,
//                    T_kernel_roof / T_k >= roof_fraction; the class is the
//                    largest of the bounds: T_compute (unit cuda_core or
//                    tensor_core, whichever part of T_compute is larger) or
//                    T_mem,l (level l). Ties go to compute, then to the outer
//                    level (dram over l2 over l1).
// 6. latency_bound   otherwise: the kernels run far from every bound (too little
//                    parallelism, dependent steps, synchronisation).
//
// The defaults:
// - issue_ratio 1: the definition itself (host issue slower than the device
//   runs the call); strict, so a host exactly as fast as the device is not
//   launch-bound. Raise it to ask for a margin.
// - roof_fraction 0.4, checked against both samples (samples/sample-run.json.gz,
//   H200, and sample-run-h100.json.gz, 259 measured points each). Of the points the
//   rules 2-3 leave: fp16 Tensor-Core conv reaches 0.40-0.95 of its roof where a
//   roof holds it and 0.10-0.38 where none does (batch 1-16, stride 3, 7x7 and
//   9x9 filters); fp32 conv forward with enough work (batch >= 64, or 16 with
//   stride 1 or 256-512 filters) reaches 0.45-0.56 of the FP32 FMA peak (FFMA
//   plus address arithmetic on the CUDA cores: compute-bound as a person reads
//   it), smaller ones 0.10-0.40; fp32 conv backward filter 0.11-0.38; LSTM
//   backward weights 0.01-0.02. One series sits on the threshold: fp32 conv
//   backward data from batch 32 on plateaus at 0.37-0.39 on the H200 and
//   0.41-0.43 on the H100, so the same kernels read latency-bound on one GPU and
//   L2-bound on the other; the efficiency printed beside the class says how
//   close. 0.3 would cut through the fp32 backward-filter batch series (0.25-0.31
//   from batch 4 on the H200, 0.26-0.34 on the H100) and make its classes
//   alternate; 0.5 would call a batch-1024 fp32 conv forward at 46% of the FMA
//   peak latency-bound. The FLOP roof counts an FMA as 2 and other instructions
//   as 0, so real kernels rarely pass 0.6-0.7 of it.
// - launch_fraction 0.5 (older runs only: without an issue time or a device
//   time; every point of both bundled samples has both, so it decides none of
//   them), one threshold for both launch rules: the launch_roof rule is the "near
//   its roof" test applied to the launch roof. On the sample recorded before
//   (legacy convolution API, T_call only) it decided 9 points, 8 of them LSTM
//   fp32 inference and training forward at batch >= 128 with 49 launches
//   (T_launch = 148 us = 60% of T), whose kernels averaged 2.5-2.8 us, under
//   the 3.0 us launch cost.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "roofline/bounds.hpp"

namespace timeroof::roofline {

enum class Bottleneck {
  unknown,
  transfer_bound,
  launch_bound,
  compute_bound,
  memory_bound,
  latency_bound
};
inline constexpr std::array<Bottleneck, 6> kAllBottlenecks = {
    Bottleneck::unknown,       Bottleneck::transfer_bound, Bottleneck::launch_bound,
    Bottleneck::compute_bound, Bottleneck::memory_bound,   Bottleneck::latency_bound};
enum class ComputeUnit { none, cuda_core, tensor_core };
inline constexpr std::array<ComputeUnit, 3> kAllComputeUnits = {
    ComputeUnit::none, ComputeUnit::cuda_core, ComputeUnit::tensor_core};
// The rule that decided the class (see above).
enum class ClassRule {
  no_time,         // 1
  transfer_share,  // 2
  host_issue,      // 3, issue time against the device time
  overhead_share,  // 3, older runs: H / T
  launch_roof,     // 3, older runs: N x L
  no_roof,         // 4: nothing to judge the kernels against
  near_roof,       // 5
  far_from_roof    // 6
};
inline constexpr std::array<ClassRule, 8> kAllClassRules = {
    ClassRule::no_time,        ClassRule::transfer_share, ClassRule::host_issue,
    ClassRule::overhead_share, ClassRule::launch_roof,    ClassRule::no_roof,
    ClassRule::near_roof,      ClassRule::far_from_roof};
const char* to_string(Bottleneck bottleneck);
const char* to_string(ComputeUnit unit);
const char* to_string(ClassRule rule);

// The settable thresholds of the classes (see the rules above).
struct Thresholds {
  double transfer_fraction = 0.5;  // X / T
  double issue_ratio = 1.0;        // launch-bound: issue time > issue_ratio x device time
  double launch_fraction = 0.5;    // older runs: H / T, and T_launch / T
  double roof_fraction = 0.4;      // T_kernel_roof / T_k (the efficiency)
};

struct Decomposition {
  double time_s = 0;                                // T
  TimeSource time_source = TimeSource::none;        // none: T = K - O + X (no time)
  bool separated = false;                           // T_graph measured: H and D apart
  double host_overhead_s = 0;                       // H
  double device_gaps_s = 0;                         // D (0 when not separated)
  double transfer_s = 0;                            // X: measured, else modelled
  double kernel_s = 0;                              // K = T_k
  double within_roof_s = 0;                         // min(T_k, T_kernel_roof)
  double lost_to_roof_s = 0;                        // T_k - within_roof
  double kernel_overlap_s = 0;                      // O, where the trace has the busy time
  double not_explained_s = 0;                       // R <= 0 (see above)
  double graph_above_time_s = 0;                    // max(0, T_graph - T)
  double kernels_above_device_s = 0;                // max(0, K - O + X - device time)
  Separation graph_vs_time = Separation::unknown;   // of T_graph above T, when it is
  std::optional<double> call_premium_s;             // T_call - T_stream, beside
  double stream_above_call_s = 0;                   // max(0, T_stream - T_call), beside
  Separation stream_vs_call = Separation::unknown;  // of T_stream above T_call, when it is
  std::vector<std::string> notes;                   // where R != 0 or parts are not separated: why
  // H + D + X + K - O + R: equals time_s by construction.
  double sum() const {
    return host_overhead_s + device_gaps_s + transfer_s + kernel_s - kernel_overlap_s +
           not_explained_s;
  }
};

struct Classification {
  Bottleneck bottleneck = Bottleneck::unknown;
  ClassRule rule = ClassRule::no_time;
  std::optional<Level> level;            // memory_bound: the level
  ComputeUnit unit = ComputeUnit::none;  // compute_bound: CUDA or Tensor Cores
  Decomposition parts;
  // One line that leads with the quantity that decided the class, with its numbers.
  std::string reason;
  // "launch_bound", "memory_bound(dram)", "compute_bound(tensor_core)", ...
  std::string label() const;
};

Decomposition decompose(const PointBounds& bounds);
Classification classify(const PointBounds& bounds, const Thresholds& thresholds = {});

// The device time of one call that the launch rule compares the issue time with:
// T_graph, else the kernels' busy time plus the copies (K - O + X); nullopt
// where neither was measured. `what` receives its name ("T_graph", ...).
std::optional<double> device_time(const PointBounds& bounds, const Decomposition& parts,
                                  std::string* what = nullptr);

}  // namespace timeroof::roofline
