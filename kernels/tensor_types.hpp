// The Tensor-Core input types timeroof measures, shared by the mma.sync
// (tensor_mma.cu), wgmma (tensor_wgmma.cu) and cuBLASLt (cublas_reference.cpp)
// families. Plain C++: no CUDA header needed.
#pragma once

#include <string>

namespace timeroof {

// The operand type of a matrix product; the accumulator is fixed per type:
// fp16, bf16, tf32 and fp8 (e4m3) accumulate in fp32, int8 in int32, fp64 in fp64.
enum class TensorType { fp16, bf16, tf32, fp8, int8, fp64 };

inline constexpr TensorType kAllTensorTypes[] = {TensorType::fp16, TensorType::bf16,
                                                 TensorType::tf32, TensorType::fp8,
                                                 TensorType::int8, TensorType::fp64};

// "fp16", "bf16", "tf32", "fp8", "int8", "fp64": the suffix of the ceiling names.
inline const char* tensor_type_name(TensorType type) {
  switch (type) {
    case TensorType::fp16:
      return "fp16";
    case TensorType::bf16:
      return "bf16";
    case TensorType::tf32:
      return "tf32";
    case TensorType::fp8:
      return "fp8";
    case TensorType::int8:
      return "int8";
    case TensorType::fp64:
      return "fp64";
  }
  return "?";
}

// The lowest compute capability (major * 10 + minor) whose tensor cores take
// this type: fp8 came with Ada (8.9), the rest with Ampere (8.0).
inline int tensor_type_min_cc(TensorType type) {
  return type == TensorType::fp8 ? 89 : 80;
}

}  // namespace timeroof
