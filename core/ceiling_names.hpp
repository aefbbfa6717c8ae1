// The names of the machine's ceilings (Ceiling::name, the keys of --only, the
// store's rows): one spelling each, written here once. The kernels that measure
// them, the theoretical peaks, the model's roofs, the charts and the CLI's dry
// run all take the names from here. Stored names: never change one.
#pragma once

#include <string>
#include <vector>

#include "core/vocabulary.hpp"

namespace timeroof::ceiling {

// Launch cost: seconds per kernel launch issued back to back, per launch plus
// synchronize, per node of a replayed CUDA graph.
inline constexpr char kLaunchAsync[] = "launch_async";
inline constexpr char kLaunchSync[] = "launch_sync";
inline constexpr char kLaunchGraphNode[] = "launch_graph_node";

// Memory bandwidth per level, and the working-set sweep.
inline constexpr char kHbmRead[] = "hbm_read";
inline constexpr char kHbmWrite[] = "hbm_write";
inline constexpr char kHbmCopy[] = "hbm_copy";  // read + write bytes per second
inline constexpr char kL2Read[] = "l2_read";
inline constexpr char kL1Read[] = "l1_read";
inline constexpr char kSharedRead[] = "shared_read";
inline constexpr char kWorkingSet[] = "working_set";

// The NCCL all-reduce bus bandwidth (runs of --devices).
inline constexpr char kAllreduceNccl[] = "allreduce_nccl";

// CUDA-core roofs of fp64, fp32, fp16 (packed) and bf16 (packed):
// "fp32_fma", "fp16_addmul", ...
std::string fma(Precision precision);
std::string addmul(Precision precision);
// Tensor-Core roofs: the best path the GPU has, "tensor_fp16"; the mma.sync
// path, "tensor_fp16_mma_sync"; the library GEMM, "cublaslt_fp16" ("cublas_fp64").
std::string tensor(Precision precision);
std::string tensor_mma_sync(Precision precision);
std::string library(Precision precision);
// Host<->device copies: "h2d_pinned", "d2h_pageable", ...
std::string transfer(TransferDirection direction, HostMemory host);

// The precisions of each compute family, in measurement order.
inline constexpr Precision kCudaCorePrecisions[] = {Precision::fp64, Precision::fp32,
                                                    Precision::fp16, Precision::bf16};
inline constexpr Precision kTensorPrecisions[] = {Precision::fp16, Precision::bf16,
                                                  Precision::tf32, Precision::fp8,
                                                  Precision::int8, Precision::fp64};
// The Tensor-Core types with a separate mma.sync figure (fp64 has one path).
inline constexpr Precision kMmaSyncPrecisions[] = {
    Precision::fp16, Precision::bf16, Precision::tf32, Precision::fp8, Precision::int8};

// One family of ceilings, measured together (kernels/ceilings.hpp).
struct Family {
  const char* name;                // "launch", "transfer", "memory", ...
  std::vector<std::string> names;  // its ceilings, in measurement order
  bool uses_host = false;          // host-side timing or host memory: one GPU at a time
};

// Every family of the single-GPU ceilings, in measurement order: cheap,
// latency-sensitive roofs first, while the GPU is cool; the heavy compute and
// library roofs last. The one list of ceiling names (the node's interconnect
// ceilings, named per GPU pair, are kernels/interconnect.hpp's).
const std::vector<Family>& families();

// True for the node's interconnect ceilings (p2p_ce_0to1, p2p_latency_1to0,
// allreduce_nccl, ...) and the names --only gives them (p2p_ce, ...).
bool is_interconnect(const std::string& name);

}  // namespace timeroof::ceiling
