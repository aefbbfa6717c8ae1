// Time intervals in nanoseconds and the length of their union: how long a GPU
// was busy when kernels on several streams overlap (the union, not the sum),
// shared by the activity tracer (counters/) and the profile analysis (roofline/).
#pragma once

#include <cstdint>
#include <vector>

namespace timeroof {

struct NsInterval {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
};

// Length of the union of `intervals`, each clipped to [lo, hi]; empty or
// reversed intervals count for nothing.
std::uint64_t union_length(std::vector<NsInterval> intervals, std::uint64_t lo, std::uint64_t hi);

}  // namespace timeroof
