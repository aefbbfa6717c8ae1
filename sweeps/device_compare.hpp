// Normwise comparison of two device arrays without copying them to the host
// (outputs of large operators do not fit a host reference).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>

#include "kernels/device_fill.hpp"

namespace timeroof {

struct DeviceDifference {
  double max_abs_difference = 0;  // max_i |a_i - b_i| over the finite pairs; infinity if
                                  // either side holds a NaN or an infinity there
  double max_abs_reference = 0;   // max_i |b_i| over b's finite elements
  std::size_t non_finite_a = 0;   // elements of a that are NaN or infinite
  std::size_t non_finite_b = 0;   // the same of b
  // The normwise error max|a - b| / max|b|: 0 when equal, infinity when b is all
  // zeros or a holds a value that is not finite. NaN when only b does: a reference
  // that is not finite judges nothing (the caller says so or finds another).
  double relative_error() const {
    if (non_finite_a > 0) return std::numeric_limits<double>::infinity();
    if (non_finite_b > 0) return std::numeric_limits<double>::quiet_NaN();
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
