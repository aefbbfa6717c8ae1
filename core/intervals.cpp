#include "core/intervals.hpp"

#include <algorithm>

namespace timeroof {

std::uint64_t union_length(std::vector<NsInterval> intervals, std::uint64_t lo, std::uint64_t hi) {
  for (NsInterval& i : intervals) {
    i.start = std::clamp(i.start, lo, hi);
    i.end = std::clamp(i.end, lo, hi);
  }
  std::sort(intervals.begin(), intervals.end(),
            [](const NsInterval& a, const NsInterval& b) { return a.start < b.start; });
  std::uint64_t total = 0;
  bool open = false;
  NsInterval current;
  for (const NsInterval& i : intervals) {
    if (i.end <= i.start) continue;
    if (open && i.start <= current.end) {
      current.end = std::max(current.end, i.end);
      continue;
    }
    if (open) total += current.end - current.start;
    current = i;
    open = true;
  }
  if (open) total += current.end - current.start;
  return total;
}

}  // namespace timeroof
