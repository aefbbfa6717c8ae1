// The GEMM's own reference (Gemm::check()): sampled outputs of
// D = act(scale op(A) op(B) + bias) computed in double on the device from the
// stored operands, beside the library's D at the same places. Independent of
// cuBLASLt: one thread per sampled output, a plain loop over k.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/vocabulary.hpp"

namespace timeroof {

// The operands as Gemm stores them (sweeps/gemm_problem.hpp: column-major,
// strided batch), with the scale alpha x scale_a x scale_b.
struct GemmReferenceOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bias = nullptr;  // null: no bias
  const void* d = nullptr;
  DataType a_type = DataType::fp32, b_type = DataType::fp32;
  DataType bias_type = DataType::fp32, d_type = DataType::fp32;
  std::int64_t m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false;
  double scale = 1;
};

enum class GemmActivation { none, relu, gelu };

// Which outputs to compare: every (row, column, batch) of these lists.
struct GemmSampling {
  std::vector<std::int64_t> rows, columns, batches;
  std::size_t count() const { return rows.size() * columns.size() * batches.size(); }
};

struct GemmSampledOutputs {
  std::vector<double> reference;  // in double, from the stored operands
  std::vector<double> library;    // D as stored, read as double
};

// Computes the sampled reference and reads D there; synchronizes `stream`.
GemmSampledOutputs sample_gemm(const GemmReferenceOperands& operands, GemmActivation activation,
                               const GemmSampling& sampling, cudaStream_t stream);

}  // namespace timeroof
