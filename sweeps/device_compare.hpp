// Normwise comparison of two device arrays without copying them to the host
// (outputs of large operators do not fit a host reference).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>

#include "kernels/device_fill.hpp"

namespace timeroof {

struct DeviceDifference {
  double max_abs_difference = 0;  // max_i |a_i - b_i|; infinity if either holds a NaN
  double max_abs_reference = 0;   // max_i |b_i|
  // The normwise error max|a - b| / max|b|: 0 when equal, infinity when b is all zeros.
  double relative_error() const {
    if (max_abs_difference == 0) return 0;
    return max_abs_reference > 0 ? max_abs_difference / max_abs_reference
                                 : std::numeric_limits<double>::infinity();
  }
};

// Compares `count` elements of `type` (f32, f16 or bf16) of `a` against `b`.
// Synchronizes `stream`.
DeviceDifference compare_on_device(const void* a, const void* b, std::size_t count, DataType type,
                                   cudaStream_t stream);

}  // namespace timeroof
