// The quantities of the model: every roofline quantity a counter can give
// (FLOPs per precision class and Tensor-Core path, bytes per memory level, time,
// clocks), with its stored name (the key of Point::counters, of JSON and CSV),
// unit, precision class and the ceiling it is divided by. The counters layer
// writes each as a weighted sum of CUPTI metrics per chip
// (counters/metric_catalog.hpp); the model reads them by these names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/vocabulary.hpp"

namespace timeroof {

// Units are SI (s, Hz, FLOP, B).
enum class Quantity {
  duration,    // summed kernel time
  sm_clock,    // SM clock while the kernels ran
  dram_clock,  // DRAM clock while the kernels ran
  // CUDA-core FLOPs
  fp64_flops,
  fp32_flops,
  half_flops,  // fp16 + bf16: the SASS counters cannot tell them apart
  // Tensor-Core dense FLOPs (ops for int8), all paths, then per path where the
  // chip has more than one: mma.sync (HMMA/IMMA), wgmma (Hopper HGMMA/IGMMA),
  // tcgen05 (Blackwell datacenter UTC*MMA).
  tensor_fp16_flops,
  tensor_fp16_mma_sync_flops,
  tensor_fp16_wgmma_flops,
  tensor_fp16_tcgen05_flops,
  tensor_bf16_flops,
  tensor_bf16_mma_sync_flops,
  tensor_bf16_wgmma_flops,
  tensor_bf16_tcgen05_flops,
  tensor_tf32_flops,
  tensor_tf32_mma_sync_flops,
  tensor_tf32_wgmma_flops,
  tensor_tf32_tcgen05_flops,
  tensor_fp8_flops,
  tensor_fp8_tcgen05_flops,
  tensor_int8_ops,
  tensor_int8_mma_sync_ops,
  tensor_int8_wgmma_ops,
  tensor_int8_tcgen05_ops,
  tensor_fp64_flops,
  // Tensor-Core 2:4 structured-sparse work, all paths (as CUPTI counts it).
  tensor_fp16_sparse_flops,
  tensor_bf16_sparse_flops,
  tensor_tf32_sparse_flops,
  tensor_fp8_sparse_flops,
  tensor_int8_sparse_ops,
  // Bytes per memory level
  l1_bytes,  // requested from L1/TEX
  l2_bytes,  // requested from L2
  dram_read_bytes,
  dram_write_bytes,
};

// Which Tensor-Core instructions a tensor quantity covers.
enum class TensorPath { none, all, mma_sync, wgmma, tcgen05 };

struct QuantityInfo {
  Quantity quantity;
  const char* name;                         // snake_case, the key in Point::counters, JSON and CSV
  const char* unit;                         // "s", "Hz", "FLOP", "op" or "B"
  std::optional<PrecisionClass> precision;  // nullopt for time, clocks, bytes
  TensorPath path;
  bool sparse;              // 2:4 structured-sparse Tensor-Core work
  std::string roof;         // the ceiling (core/ceiling_names.hpp) it is divided by, or ""
  const char* description;  // one line for reports
};

// Every quantity, in enum order.
const std::vector<QuantityInfo>& all_quantities();
const QuantityInfo& info(Quantity quantity);
const char* to_string(Quantity quantity);
const char* to_string(TensorPath path);
// The inverse of to_string(Quantity); a usage error naming the known names if unknown.
Quantity parse_quantity(const std::string& name);
// A part of another quantity (one Tensor-Core path of an all-path total): summing
// it with its total counts the work twice.
bool is_path_part(Quantity quantity);
// The quantity that holds the work W_p of a precision class, e.g.
// tensor_fp16_flops, tensor_int8_ops, half_flops. All-path totals only: the
// per-path parts (`*_wgmma_flops`, ...) would count the work twice.
Quantity work_quantity(PrecisionClass precision);

}  // namespace timeroof
