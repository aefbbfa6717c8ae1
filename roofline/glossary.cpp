#include "roofline/glossary.hpp"

#include "core/vocabulary.hpp"
#include "roofline/classify.hpp"

namespace timeroof::roofline {

namespace {

std::string meaning(Bottleneck b) {
  switch (b) {
    case Bottleneck::unknown:
      return "No class: nothing was timed, or the kernels have no roof to be judged against "
             "(no roofs in the run, or their work was not counted).";
    case Bottleneck::transfer_bound:
      return "Host<->device copies take at least half of T.";
    case Bottleneck::launch_bound:
      return "The host issues a call more slowly than the GPU runs it (issue time above "
             "T_graph): the GPU waits for the CPU; a CUDA graph or fusion would help.";
    case Bottleneck::compute_bound:
      return "The kernels run near a roof (efficiency at least 40%) and the largest bound is "
             "T_compute; in brackets the units whose share of it is larger.";
    case Bottleneck::memory_bound:
      return "The kernels run near a roof (efficiency at least 40%) and the largest bound is "
             "T_mem of a memory level, in brackets.";
    case Bottleneck::latency_bound:
      return "The kernels run far from every bound (efficiency below 40%): too little "
             "parallelism, dependent steps or synchronisation.";
  }
  return {};
}

std::string meaning(ComputeUnit u) {
  switch (u) {
    case ComputeUnit::none:
      return {};
    case ComputeUnit::cuda_core:
      return "on the CUDA cores (FMA units)";
    case ComputeUnit::tensor_core:
      return "on the Tensor Cores";
  }
  return {};
}

std::string meaning(ClassRule r) {
  switch (r) {
    case ClassRule::no_time:
      return "Class rule 1: no time and no kernel time measured (unknown).";
    case ClassRule::transfer_share:
      return "Class rule 2: transfer time X / T at least 0.5 (transfer_bound).";
    case ClassRule::host_issue:
      return "Class rule 3: the issue time above the device time, T_graph (launch_bound).";
    case ClassRule::overhead_share:
      return "Class rule 3, older runs without an issue time: host overhead and device gaps at "
             "least half of T (launch_bound).";
    case ClassRule::launch_roof:
      return "Class rule 3, older runs: T_launch = N x L at least half of T and above the "
             "kernels' roof (launch_bound).";
    case ClassRule::no_roof:
      return "Class rule 4: T_kernel_roof = 0, nothing to judge the kernels against (unknown).";
    case ClassRule::near_roof:
      return "Class rule 5: efficiency at least 0.4; the largest bound names the class "
             "(compute_bound or memory_bound).";
    case ClassRule::far_from_roof:
      return "Class rule 6: efficiency below 0.4 (latency_bound).";
  }
  return {};
}

std::string meaning(PrecisionClass p) {
  switch (p) {
    case PrecisionClass::fp64:
      return "FP64 work on the CUDA cores, against the fp64 FMA roof.";
    case PrecisionClass::fp32:
      return "FP32 work on the CUDA cores, against the fp32 FMA roof.";
    case PrecisionClass::half:
      return "FP16 and BF16 work on the CUDA cores (their counters cannot tell them apart).";
    case PrecisionClass::tensor_fp16:
      return "FP16 Tensor-Core work (fp32 accumulate), against the tensor_fp16 roof.";
    case PrecisionClass::tensor_bf16:
      return "BF16 Tensor-Core work (fp32 accumulate), against the tensor_bf16 roof.";
    case PrecisionClass::tensor_tf32:
      return "TF32 Tensor-Core work: fp32 tensors multiplied with 10-bit mantissas.";
    case PrecisionClass::tensor_fp8:
      return "FP8 (e4m3) Tensor-Core work, against the tensor_fp8 roof.";
    case PrecisionClass::tensor_int8:
      return "INT8 Tensor-Core work (int32 accumulate), counted in operations.";
    case PrecisionClass::tensor_fp64:
      return "FP64 Tensor-Core work, against the tensor_fp64 roof.";
  }
  return {};
}

std::string meaning(Level l) {
  switch (l) {
    case Level::l1:
      return "L1/TEX: bytes the SMs requested from L1 (left out where TMA loads bypass it).";
    case Level::l2:
      return "L2: bytes the SMs requested from the L2 slices.";
    case Level::dram:
      return "HBM (DRAM): bytes read and written in device memory; called HBM in the charts.";
  }
  return {};
}

}  // namespace

std::vector<GlossaryEntry> glossary() {
  std::vector<GlossaryEntry> out = {
      {"T", "The time the model explains per call: T_stream where measured, else T_call."},
      {"T_call", "One synchronized call: launch, run, wait (median and 95% interval)."},
      {"T_stream",
       "A call among calls issued back to back on one stream: what a training or "
       "inference loop pays per call."},
      {"T_graph", "The call replayed from a CUDA graph: the device's floor without the host."},
      {"Issue", "The host's time to issue one call (the CPU side of T_call)."},
      {"T_k",
       "Kernel time: the call's kernels summed, from the trace; the median of its calls, "
       "with the fastest and slowest as its interval (and the achieved rate's)."},
      {"W",
       "Work of the call in FLOP (operations for int8), per precision class; from the "
       "counters, else from the operator's analytic count."},
      {"Q_l", "Bytes moved at memory level l (l1, l2, dram)."},
      {"P_eff", "The peak FLOP/s of the point's mix of precision classes (W / T_compute)."},
      {"AI", "Arithmetic intensity W / Q_l, FLOP per byte at level l."},
      {"T_compute",
       "W_p / P_p summed over the precision classes: the time the work needs at the "
       "roofs, split into T_cuda (CUDA cores) and T_tensor (Tensor Cores)."},
      {"T_mem,l", "Q_l / B_l: the time the bytes of level l need at its bandwidth roof."},
      {"T_kernel_roof", "max(T_compute, max_l T_mem,l): the kernels' bound, compared with T_k."},
      {"T_launch", "N launches x the launch cost L."},
      {"T_xfer",
       "The modelled host<->device copy time on the transfer roofs of the point's host "
       "memory (pinned or pageable)."},
      {"T_roof", "max(T_kernel_roof, T_launch), plus T_xfer: the bound compared with T."},
      {"T_lb", "The Benanza lower bound: each kernel's own bound summed (else the operator's)."},
      {"Efficiency", "T_kernel_roof / T_k = achieved / attainable FLOP/s: 100% is on the roof."},
      {"Headroom", "T / T_lb: how many times faster the call could get."},
      {"Tensor-Core share", "The share of the FLOPs done on Tensor Cores (W_tensor / W)."},
      {"Tensor-Core utilisation",
       "T_tensor / T_k: the share of kernel time the Tensor Cores "
       "would be busy at their peak."},
      {"Host overhead",
       "T - T_graph: what the host adds to the device's floor; what a CUDA "
       "graph or fusion would save."},
      {"Device gaps", "T_graph - T_k - transfer: idle device time inside the replayed call."},
      {"Kernels within roof", "min(T_k, T_kernel_roof): kernel time the roofs account for."},
      {"Lost to roof", "T_k - T_kernel_roof: kernel time beyond the roofs."},
      {"Not explained",
       "T minus its measured parts; negative where kernels and copies of the "
       "trace pass exceed the device time (the findings say why)."},
      {"95% interval", "The range that holds the median time with 95% confidence (bootstrap)."},
      {"Explains",
       "A finding's rank: the seconds per call its class or saving accounts for, "
       "summed over its points."},
      {"Knee",
       "The batch where the fitted per-sample work overtakes the fixed cost per call "
       "(T = fixed + slope x batch, quoted where R2 >= 0.9)."},
  };
  for (Bottleneck b : kAllBottlenecks) {
    Classification c;
    c.bottleneck = b;
    if (b == Bottleneck::memory_bound) {
      for (Level l : kAllLevels) {
        c.level = l;
        out.push_back({c.label(), meaning(b) + " " + meaning(l)});
      }
    } else if (b == Bottleneck::compute_bound) {
      for (ComputeUnit u : kAllComputeUnits) {
        if (u == ComputeUnit::none) continue;  // a compute class always names its unit
        c.unit = u;
        out.push_back({c.label(), meaning(b) + " Here " + meaning(u) + "."});
      }
    } else {
      out.push_back({c.label(), meaning(b)});
    }
  }
  for (ClassRule r : kAllClassRules) out.push_back({to_string(r), meaning(r)});
  for (PrecisionClass p : kAllPrecisionClasses) out.push_back({to_string(p), meaning(p)});
  for (Level l : kAllLevels) out.push_back({to_string(l), meaning(l)});
  return out;
}

}  // namespace timeroof::roofline
