// Device-side fill and conversion of matrix operands (for the library GEMMs and
// their tests): inputs are generated on the GPU, never copied from the host,
// and are random, never zero (zeros run faster than real data).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/vocabulary.hpp"

namespace timeroof {

// Element types are core's DataType (fp32 also holds tf32 operands);
// element_bytes(DataType) is core's too.

// Fills `count` elements with hash-based values: floats uniform in [-1, 1),
// int8 uniform over its range, int32 in [-2^15, 2^15). Asynchronous on `stream`.
void fill_random(void* data, std::size_t count, DataType type, std::uint32_t seed,
                 cudaStream_t stream);

// Converts between doubles and `type` on the device (round to nearest; exact for
// the small integers tests use). Asynchronous on `stream`.
void convert_from_double(const double* source, void* destination, std::size_t count, DataType type,
                         cudaStream_t stream);
void convert_to_double(const void* source, double* destination, std::size_t count, DataType type,
                       cudaStream_t stream);

}  // namespace timeroof
