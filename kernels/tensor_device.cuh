// Device helpers shared by the Tensor-Core kernels (tensor_mma.cu, tensor_wgmma.cu):
// random operands that look like real data (finite, mixed bits, never zero
// planes: zeros draw less power and run faster than real data), and exact
// packing of small test values into operand registers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/hash.cuh"
#include "kernels/tensor_types.hpp"

namespace timeroof::tensor_device {

// Elements of `type` in one 32-bit operand register (fp64 uses 64-bit registers).
template <Precision T>
inline constexpr int kElementsPerWord = (T == Precision::fp16 || T == Precision::bf16)  ? 2
                                        : (T == Precision::fp8 || T == Precision::int8) ? 4
                                                                                        : 1;

template <Precision T>
inline constexpr int kElementBytes = 4 / kElementsPerWord<T>;

// The accumulator of each type (see tensor_types.hpp).
template <Precision T>
struct AccumulatorOf {
  using type = float;
};
template <>
struct AccumulatorOf<Precision::int8> {
  using type = std::int32_t;
};
template <>
struct AccumulatorOf<Precision::fp64> {
  using type = double;
};
template <Precision T>
using Accumulator = typename AccumulatorOf<T>::type;

// Uniform in [-1, 1) from the top 24 bits of `h`.
__device__ __forceinline__ float unit_float(std::uint32_t h) {
  return static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

// One element of `type` converted from `value` (exact for the small integers the
// tests use), as raw bits in the low bytes of the result; the other bits are 0.
template <Precision T>
__device__ __forceinline__ std::uint32_t element_bits(float value) {
  if constexpr (T == Precision::fp16) {
    return __half_as_ushort(__float2half_rn(value));
  } else if constexpr (T == Precision::bf16) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(value));
  } else if constexpr (T == Precision::tf32) {
    return __float_as_uint(value);  // tf32 reads the top 19 bits of an fp32
  } else if constexpr (T == Precision::fp8) {
    return __nv_cvt_float_to_fp8(value, __NV_SATFINITE, __NV_E4M3);
  } else {
    static_assert(T == Precision::int8);
    return static_cast<std::uint8_t>(static_cast<std::int8_t>(value));
  }
}

// One 32-bit register of random finite elements of `type`, seeded by `h`.
template <Precision T>
__device__ __forceinline__ std::uint32_t random_word(std::uint32_t h) {
  if constexpr (T == Precision::int8) {
    return hash32(h);  // every bit pattern is a valid int8
  } else {
    constexpr int kCount = kElementsPerWord<T>;
    constexpr int kBits = 32 / kCount;
    std::uint32_t word = 0;
#pragma unroll
    for (int e = 0; e < kCount; ++e)
      word |= element_bits<T>(unit_float(hash32(h * 4u + e))) << (e * kBits);
    return word;
  }
}

// Packs kElementsPerWord<T> values (element 0 in the low bits) into one register.
template <Precision T>
__device__ __forceinline__ std::uint32_t pack_word(const double* values) {
  constexpr int kCount = kElementsPerWord<T>;
  constexpr int kBits = 32 / kCount;
  std::uint32_t word = 0;
#pragma unroll
  for (int e = 0; e < kCount; ++e) {
    word |= element_bits<T>(static_cast<float>(values[e])) << (e * kBits);
  }
  return word;
}

}  // namespace timeroof::tensor_device
