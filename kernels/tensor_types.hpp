// The Tensor-Core operand types timeroof measures are core's Precision
// (core/vocabulary.hpp; ceiling::kTensorPrecisions lists them in measurement
// order), shared by the mma.sync (tensor_mma.cu), wgmma (tensor_wgmma.cu) and
// cuBLASLt (cublas_reference.cpp) families. Each accumulates as its type says:
// fp16, bf16, tf32 and fp8 (e4m3) in fp32, int8 in int32, fp64 in fp64. fp32
// is not a Tensor-Core operand type (tf32 is). Plain C++: no CUDA header needed.
#pragma once

#include "core/ceiling_names.hpp"
#include "core/vocabulary.hpp"

namespace timeroof {

// The lowest compute capability (major * 10 + minor) whose tensor cores take
// this type: fp8 came with Ada (8.9), the rest with Ampere (8.0).
inline int tensor_type_min_cc(Precision type) {
  return type == Precision::fp8 ? 89 : 80;
}

}  // namespace timeroof
