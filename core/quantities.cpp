#include "core/quantities.hpp"

#include "core/ceiling_names.hpp"
#include "core/error.hpp"

namespace timeroof {

namespace {

using Q = Quantity;
using P = PrecisionClass;
using Path = TensorPath;

// clang-format off
const std::vector<QuantityInfo> kQuantities = {
    {Q::duration, "duration", "s", std::nullopt, Path::none, false, "",
     "summed kernel time"},
    {Q::sm_clock, "sm_clock", "Hz", std::nullopt, Path::none, false, "",
     "SM clock while the kernels ran"},
    {Q::dram_clock, "dram_clock", "Hz", std::nullopt, Path::none, false, "",
     "DRAM clock while the kernels ran"},
    {Q::fp64_flops, "fp64_flops", "FLOP", P::fp64, Path::none, false, ceiling::fma(Precision::fp64),
     "CUDA-core fp64 FLOPs (DFMA 2, DADD/DMUL 1)"},
    {Q::fp32_flops, "fp32_flops", "FLOP", P::fp32, Path::none, false, ceiling::fma(Precision::fp32),
     "CUDA-core fp32 FLOPs (FFMA 2, FADD/FMUL 1; packed FFMA2 4, FADD2/FMUL2 2)"},
    {Q::half_flops, "half_flops", "FLOP", P::half, Path::none, false, ceiling::fma(Precision::fp16),
     "CUDA-core fp16 + bf16 FLOPs (packed HFMA2 4, HADD2/HMUL2 2)"},
    {Q::tensor_fp16_flops, "tensor_fp16_flops", "FLOP", P::tensor_fp16, Path::all, false,
     ceiling::tensor(Precision::fp16), "Tensor-Core fp16 FLOPs, dense, all paths"},
    {Q::tensor_fp16_mma_sync_flops, "tensor_fp16_mma_sync_flops", "FLOP", P::tensor_fp16,
     Path::mma_sync, false, ceiling::tensor_mma_sync(Precision::fp16), "Tensor-Core fp16 FLOPs by mma.sync (HMMA)"},
    {Q::tensor_fp16_wgmma_flops, "tensor_fp16_wgmma_flops", "FLOP", P::tensor_fp16, Path::wgmma,
     false, ceiling::tensor(Precision::fp16), "Tensor-Core fp16 FLOPs by wgmma (HGMMA)"},
    {Q::tensor_fp16_tcgen05_flops, "tensor_fp16_tcgen05_flops", "FLOP", P::tensor_fp16,
     Path::tcgen05, false, ceiling::tensor(Precision::fp16), "Tensor-Core fp16 FLOPs by tcgen05.mma (UTCHMMA)"},
    {Q::tensor_bf16_flops, "tensor_bf16_flops", "FLOP", P::tensor_bf16, Path::all, false,
     ceiling::tensor(Precision::bf16), "Tensor-Core bf16 FLOPs, dense, all paths"},
    {Q::tensor_bf16_mma_sync_flops, "tensor_bf16_mma_sync_flops", "FLOP", P::tensor_bf16,
     Path::mma_sync, false, ceiling::tensor_mma_sync(Precision::bf16), "Tensor-Core bf16 FLOPs by mma.sync (HMMA)"},
    {Q::tensor_bf16_wgmma_flops, "tensor_bf16_wgmma_flops", "FLOP", P::tensor_bf16, Path::wgmma,
     false, ceiling::tensor(Precision::bf16), "Tensor-Core bf16 FLOPs by wgmma (HGMMA)"},
    {Q::tensor_bf16_tcgen05_flops, "tensor_bf16_tcgen05_flops", "FLOP", P::tensor_bf16,
     Path::tcgen05, false, ceiling::tensor(Precision::bf16), "Tensor-Core bf16 FLOPs by tcgen05.mma (UTCHMMA)"},
    {Q::tensor_tf32_flops, "tensor_tf32_flops", "FLOP", P::tensor_tf32, Path::all, false,
     ceiling::tensor(Precision::tf32), "Tensor-Core tf32 FLOPs, dense, all paths"},
    {Q::tensor_tf32_mma_sync_flops, "tensor_tf32_mma_sync_flops", "FLOP", P::tensor_tf32,
     Path::mma_sync, false, ceiling::tensor_mma_sync(Precision::tf32), "Tensor-Core tf32 FLOPs by mma.sync (HMMA)"},
    {Q::tensor_tf32_wgmma_flops, "tensor_tf32_wgmma_flops", "FLOP", P::tensor_tf32, Path::wgmma,
     false, ceiling::tensor(Precision::tf32), "Tensor-Core tf32 FLOPs by wgmma (HGMMA)"},
    {Q::tensor_tf32_tcgen05_flops, "tensor_tf32_tcgen05_flops", "FLOP", P::tensor_tf32,
     Path::tcgen05, false, ceiling::tensor(Precision::tf32), "Tensor-Core tf32 FLOPs by tcgen05.mma (UTCHMMA)"},
    {Q::tensor_fp8_flops, "tensor_fp8_flops", "FLOP", P::tensor_fp8, Path::all, false,
     ceiling::tensor(Precision::fp8), "Tensor-Core fp8 FLOPs, dense, all paths"},
    {Q::tensor_fp8_tcgen05_flops, "tensor_fp8_tcgen05_flops", "FLOP", P::tensor_fp8,
     Path::tcgen05, false, ceiling::tensor(Precision::fp8), "Tensor-Core fp8 FLOPs by tcgen05.mma (UTCQMMA)"},
    {Q::tensor_int8_ops, "tensor_int8_ops", "op", P::tensor_int8, Path::all, false,
     ceiling::tensor(Precision::int8), "Tensor-Core int8 ops, dense, all paths"},
    {Q::tensor_int8_mma_sync_ops, "tensor_int8_mma_sync_ops", "op", P::tensor_int8,
     Path::mma_sync, false, ceiling::tensor_mma_sync(Precision::int8), "Tensor-Core int8 ops by mma.sync (IMMA)"},
    {Q::tensor_int8_wgmma_ops, "tensor_int8_wgmma_ops", "op", P::tensor_int8, Path::wgmma, false,
     ceiling::tensor(Precision::int8), "Tensor-Core int8 ops by wgmma (IGMMA)"},
    {Q::tensor_int8_tcgen05_ops, "tensor_int8_tcgen05_ops", "op", P::tensor_int8,
     Path::tcgen05, false, ceiling::tensor(Precision::int8), "Tensor-Core int8 ops by tcgen05.mma (UTCIMMA)"},
    {Q::tensor_fp64_flops, "tensor_fp64_flops", "FLOP", P::tensor_fp64, Path::all, false,
     ceiling::tensor(Precision::fp64), "Tensor-Core fp64 FLOPs (DMMA)"},
    {Q::tensor_fp16_sparse_flops, "tensor_fp16_sparse_flops", "FLOP", P::tensor_fp16, Path::all,
     true, "", "Tensor-Core fp16 2:4-sparse FLOPs as CUPTI counts them, all paths"},
    {Q::tensor_bf16_sparse_flops, "tensor_bf16_sparse_flops", "FLOP", P::tensor_bf16, Path::all,
     true, "", "Tensor-Core bf16 2:4-sparse FLOPs as CUPTI counts them, all paths"},
    {Q::tensor_tf32_sparse_flops, "tensor_tf32_sparse_flops", "FLOP", P::tensor_tf32, Path::all,
     true, "", "Tensor-Core tf32 2:4-sparse FLOPs as CUPTI counts them, all paths"},
    {Q::tensor_fp8_sparse_flops, "tensor_fp8_sparse_flops", "FLOP", P::tensor_fp8, Path::all,
     true, "", "Tensor-Core fp8 2:4-sparse FLOPs as CUPTI counts them, all paths"},
    {Q::tensor_int8_sparse_ops, "tensor_int8_sparse_ops", "op", P::tensor_int8, Path::all, true,
     "", "Tensor-Core int8 2:4-sparse ops as CUPTI counts them, all paths"},
    {Q::l1_bytes, "l1_bytes", "B", std::nullopt, Path::none, false, ceiling::kL1Read,
     "bytes requested from L1/TEX"},
    {Q::l2_bytes, "l2_bytes", "B", std::nullopt, Path::none, false, ceiling::kL2Read,
     "bytes the SMs move through L2 (L1/TEX and TMA requests, 32-byte sectors)"},
    {Q::dram_read_bytes, "dram_read_bytes", "B", std::nullopt, Path::none, false, ceiling::kHbmRead,
     "bytes read from DRAM"},
    {Q::dram_write_bytes, "dram_write_bytes", "B", std::nullopt, Path::none, false, ceiling::kHbmWrite,
     "bytes written to DRAM"},
};
// clang-format on

}  // namespace

const std::vector<QuantityInfo>& all_quantities() {
  return kQuantities;
}

const QuantityInfo& info(Quantity quantity) {
  const auto index = static_cast<std::size_t>(quantity);
  if (index >= kQuantities.size() || kQuantities[index].quantity != quantity)
    throw Error(ExitCode::usage, "metric catalog: quantity table out of order");
  return kQuantities[index];
}

const char* to_string(Quantity quantity) {
  return info(quantity).name;
}

const char* to_string(TensorPath path) {
  switch (path) {
    case Path::none:
      return "none";
    case Path::all:
      return "all";
    case Path::mma_sync:
      return "mma_sync";
    case Path::wgmma:
      return "wgmma";
    case Path::tcgen05:
      return "tcgen05";
  }
  return "?";
}

Quantity parse_quantity(const std::string& name) {
  std::string known;
  for (const QuantityInfo& q : kQuantities) {
    if (name == q.name) return q.quantity;
    known += (known.empty() ? "" : ", ") + std::string(q.name);
  }
  throw usage_error("unknown quantity '" + name + "'; known: " + known);
}

bool is_path_part(Quantity quantity) {
  const TensorPath path = info(quantity).path;
  return path == Path::mma_sync || path == Path::wgmma || path == Path::tcgen05;
}

Quantity work_quantity(PrecisionClass precision) {
  switch (precision) {
    case P::fp64:
      return Q::fp64_flops;
    case P::fp32:
      return Q::fp32_flops;
    case P::half:
      return Q::half_flops;
    case P::tensor_fp16:
      return Q::tensor_fp16_flops;
    case P::tensor_bf16:
      return Q::tensor_bf16_flops;
    case P::tensor_tf32:
      return Q::tensor_tf32_flops;
    case P::tensor_fp8:
      return Q::tensor_fp8_flops;
    case P::tensor_int8:
      return Q::tensor_int8_ops;
    case P::tensor_fp64:
      return Q::tensor_fp64_flops;
  }
  return Q::fp32_flops;
}

}  // namespace timeroof
