// Device-side fill and conversion of matrix operands (for the library GEMMs and
// their tests): inputs are generated on the GPU, never copied from the host,
// and are random, never zero (zeros run faster than real data).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace timeroof {

// Element types of GEMM operands: f16, bf16, f32 (also tf32 operands), f64,
// fp8 e4m3, int8 and int32.
enum class ElementType { f16, bf16, f32, f64, e4m3, s8, s32 };

std::size_t element_bytes(ElementType type);

// Fills `count` elements with hash-based values: floats uniform in [-1, 1),
// int8 uniform over its range, int32 in [-2^15, 2^15). Asynchronous on `stream`.
void fill_random(void* data, std::size_t count, ElementType type, std::uint32_t seed,
                 cudaStream_t stream);

// Converts between doubles and `type` on the device (round to nearest; exact for
// the small integers tests use). Asynchronous on `stream`.
void convert_from_double(const double* source, void* destination, std::size_t count,
                         ElementType type, cudaStream_t stream);
void convert_to_double(const void* source, double* destination, std::size_t count, ElementType type,
                       cudaStream_t stream);

}  // namespace timeroof
