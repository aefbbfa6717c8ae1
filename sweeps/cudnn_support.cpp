#include "sweeps/cudnn_support.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "core/error.hpp"
#include "gpu/check.hpp"

namespace timeroof {

cudnnDataType_t cudnn_data_type(DataType type) {
  switch (type) {
    case DataType::fp16:
      return CUDNN_DATA_HALF;
    case DataType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

cudnnDataType_t cudnn_data_type(Precision precision) {
  return cudnn_data_type(storage_type(precision));
}

cudnnMathType_t requested_math(Precision precision, MathMode mode) {
  if (mode == MathMode::fma_only) return CUDNN_FMA_MATH;
  return precision == Precision::tf32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH;
}

const char* math_type_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH:
      return "CUDNN_DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH:
      return "CUDNN_TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH:
      return "CUDNN_FMA_MATH";
  }
  return "?";
}

void require_device_memory(double tensor_bytes) {
  (void)cudaGetLastError();
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  TR_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (tensor_bytes <= static_cast<double>(free_bytes)) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  char message[256];
  std::snprintf(message, sizeof message,
                "cudaErrorMemoryAllocation: the tensors need %.3g GiB, %.3g GiB of %.3g GiB "
                "are free (checked before allocating)",
                tensor_bytes / kGiB, static_cast<double>(free_bytes) / kGiB,
                static_cast<double>(total_bytes) / kGiB);
  throw GpuError("CUDA runtime", cudaErrorMemoryAllocation, message);
}

}  // namespace timeroof
