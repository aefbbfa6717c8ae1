// Integer hashing for filling device buffers with reproducible, well-mixed data.
#pragma once

#include <cstdint>

namespace timeroof {

// lowbias32 integer hash: cheap and well mixed.
__device__ __forceinline__ std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

}  // namespace timeroof
