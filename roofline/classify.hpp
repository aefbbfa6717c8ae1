// Where a point's wall time goes, and its bottleneck class.
//
// Decomposition of the wall time T of one call (seconds):
// - transfer = the measured host<->device copy time (Timing h2d_time_s +
//   d2h_time_s) where it was timed, else the modelled T_xfer.
// - overhead = max(0, T - T_k - transfer): launch and API time the kernels did
//   not hide (host-side cuDNN/CUDA calls, launch latency, gaps between kernels).
// - kernel = T_k, split into within_roof = min(T_k, T_kernel_roof), the time the
//   kernels would need at the roof, and lost_to_roof = T_k - within_roof.
// overhead + transfer + kernel = max(T, T_k + transfer): the parts add up to T
// unless kernels and copies exceed the measured wall time (then nothing is
// overhead). T_k is summed over kernels and traced in its own pass, so kernels
// overlapping on several streams (cuDNN LSTM backward weights) can make T_k > T.
// Without a wall time T = T_k + transfer.
//
// Bottleneck class, first rule that holds (fractions are inclusive: >=):
// 1. unknown         no wall time and no kernel time.
// 2. transfer_bound  transfer / T >= transfer_fraction.
// 3. launch_bound    overhead / T >= launch_fraction (the GPU is idle most of
//                    the call), or T_launch / T >= launch_fraction with
//                    T_launch >= T_kernel_roof (the host issues N launches more
//                    slowly than the kernels could run: the GPU is fed at the
//                    launch rate even where little time shows as overhead).
// 4. compute_bound / memory_bound: the kernels are near a roof,
//                    T_kernel_roof / T_k >= roof_fraction; the class is the
//                    largest of the bounds: T_compute (unit cuda_core or
//                    tensor_core, whichever part of T_compute is larger) or
//                    T_mem,l (level l). Ties go to compute, then to the outer
//                    level (dram over l2 over l1).
// 5. latency_bound   otherwise: the kernels run far from every bound (too little
//                    parallelism, dependent steps, synchronisation).
//
// The defaults, checked against the H200 sample (samples/sample-run.json, 259
// measured points):
// - roof_fraction 0.4: the points that pass rules 2-3 fall into fp16 Tensor-Core
//   conv at 0.62-1.05 of the L2 roof, fp32 conv forward with enough work (batch
//   >= 64, or 16 with stride 1 or 256-512 filters) at 0.45-0.56 of the FP32 FMA
//   peak (FFMA plus address arithmetic on the CUDA cores: compute-bound as a
//   person reads it), and the rest below 0.4 (fp32 conv backward 0.12-0.36,
//   smaller fp32 conv forward 0.10-0.40, LSTM backward weights 0.01-0.02). 0.3
//   would cut through the fp32 backward cluster (0.26-0.36) and make classes
//   alternate along a batch series; 0.5 would call a batch-1024 fp32 conv at 46%
//   of the FMA peak latency-bound.
//   The FLOP roof counts an FMA as 2 and other instructions as 0, so real kernels
//   rarely pass 0.6-0.7 of it (ncu's 60% "speed of light" line is too high here).
//   The sample's L2 bytes (lts__t_bytes) include the L2 fabric; with SM<->L2
//   bytes (20-35% fewer) the lowest fp16 points move to ~0.40-0.50: recheck then.
// - launch_fraction 0.5, one threshold for both launch rules. The issue rule is
//   the "near its roof" test applied to the launch roof: T_launch >=
//   T_kernel_roof makes T_launch the largest bound of T_roof, and the call is
//   within a factor 2 of it. It decides 9 sample points, 8 of them LSTM fp32
//   inference and training forward at batch >= 128 with 49 launches (T_launch =
//   148 us = 60% of T), whose kernels average 2.5-2.8 us, under the 3.0 us launch
//   cost: the GPU runs at the host's issue rate, while the measured overhead
//   (45-49%) sits just under 0.5 and would flip the class with run-to-run noise.
#pragma once

#include <optional>
#include <string>

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
enum class ComputeUnit { none, cuda_core, tensor_core };
const char* to_string(Bottleneck bottleneck);
const char* to_string(ComputeUnit unit);

// The settable thresholds of the classes (see the rules above).
struct Thresholds {
  double transfer_fraction = 0.5;  // transfer / T
  double launch_fraction = 0.5;    // overhead / T
  double roof_fraction = 0.4;      // T_kernel_roof / T_k (the efficiency)
  // The launch issue rule uses launch_fraction too: T_launch / T.
};

struct Decomposition {
  double wall_s = 0;          // T (T_k + transfer where no wall time was measured)
  double overhead_s = 0;      // max(0, T - T_k - transfer)
  double transfer_s = 0;      // measured, else modelled
  double kernel_s = 0;        // T_k
  double within_roof_s = 0;   // min(T_k, T_kernel_roof)
  double lost_to_roof_s = 0;  // T_k - within_roof
};

struct Classification {
  Bottleneck bottleneck = Bottleneck::unknown;
  std::optional<Level> level;            // memory_bound: the level
  ComputeUnit unit = ComputeUnit::none;  // compute_bound: CUDA or Tensor Cores
  Decomposition parts;
  std::string reason;  // one line with the numbers that decided it
  // "launch_bound", "memory_bound(dram)", "compute_bound(tensor_core)", ...
  std::string label() const;
};

Decomposition decompose(const PointBounds& bounds);
Classification classify(const PointBounds& bounds, const Thresholds& thresholds = {});

}  // namespace timeroof::roofline
