// One element of a device buffer of any DataType, read as a double: shared by
// the fill/convert kernels (kernels/device_fill.cu) and the operators' on-device
// comparison (sweeps/device_compare.cu). Device code; include from .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstddef>
#include <cstdint>

#include "core/vocabulary.hpp"

namespace timeroof {

__device__ __forceinline__ double load_element(const void* data, std::size_t i, DataType type) {
  switch (type) {
    case DataType::fp16:
      return __half2float(static_cast<const __half*>(data)[i]);
    case DataType::bf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    case DataType::fp32:
      return static_cast<const float*>(data)[i];
    case DataType::fp64:
      return static_cast<const double*>(data)[i];
    case DataType::fp8_e4m3:
      return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(data)[i]);
    case DataType::fp8_e5m2:
      return static_cast<float>(static_cast<const __nv_fp8_e5m2*>(data)[i]);
    case DataType::int8:
      return static_cast<const std::int8_t*>(data)[i];
    case DataType::int32:
      return static_cast<const std::int32_t*>(data)[i];
  }
  return 0;
}

}  // namespace timeroof
