// Which rows, columns, heads or batch items an output check samples (the GEMM's and
// attention's checks compare a spread of them against their references).
#pragma once

#include <cstdint>
#include <vector>

namespace timeroof {

// `count` evenly spaced indices of 0 .. extent - 1, the first and last included
// (all of them when extent <= count; count >= 2).
inline std::vector<std::int64_t> evenly_spaced(std::int64_t extent, std::int64_t count) {
  std::vector<std::int64_t> indices;
  if (extent <= count) {
    for (std::int64_t i = 0; i < extent; ++i) indices.push_back(i);
    return indices;
  }
  for (std::int64_t i = 0; i < count; ++i) indices.push_back(i * (extent - 1) / (count - 1));
  return indices;
}

}  // namespace timeroof
