// The SM clock a kernel really ran at: thread 0 of every block reads its SM's
// cycle counter (clock64) and the GPU's nanosecond timer (%globaltimer) when the
// block starts its timed loop and when it ends it. Cycles over nanoseconds is the
// clock over the block's own execution. Why not NVML: under a power cap the clock
// moves within milliseconds, and NVML's reading sampled beside a 20 ms launch put
// tensor_bf16 at 100.3% and tensor_fp8 / int8 at 101.3-101.7% of a theoretical
// peak computed at the sampled clock (issue 15). Host view; the kernels write
// their spans after their sink's accumulators (kernels/clock_span.cuh).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace timeroof {

struct ClockSpan {
  long long cycles_start = 0, cycles_end = 0;  // clock64()
  long long ns_start = 0, ns_end = 0;          // %globaltimer
};

// The timed launches of a roof cycle through this many slots of spans (one span
// per block each), so the clock of each of the last launches is known, not only
// the last one's.
constexpr int kClockSpanSlots = 10;

// Bytes a loop kernel's sink needs for `blocks` spans after `accumulator_bytes`.
inline std::size_t with_clock_spans(std::size_t accumulator_bytes, int blocks) {
  return accumulator_bytes + static_cast<std::size_t>(blocks) * sizeof(ClockSpan);
}

// The median over blocks of cycles / seconds; spans shorter than a microsecond
// (the timer's resolution on some GPUs) or with no cycles are left out; nullopt
// when none is left.
inline std::optional<double> median_clock_hz(const std::vector<ClockSpan>& spans) {
  std::vector<double> hz;
  for (const ClockSpan& s : spans) {
    const long long ns = s.ns_end - s.ns_start;
    const long long cycles = s.cycles_end - s.cycles_start;
    if (ns >= 1000 && cycles > 0)
      hz.push_back(static_cast<double>(cycles) * 1e9 / static_cast<double>(ns));
  }
  if (hz.empty()) return std::nullopt;
  std::nth_element(hz.begin(), hz.begin() + static_cast<std::ptrdiff_t>(hz.size() / 2), hz.end());
  return hz[hz.size() / 2];
}

// The clock over each slot's launch (median of its blocks), for the slots a
// launch wrote; `spans` holds kClockSpanSlots slots of `blocks` spans, in order.
inline std::vector<double> slot_clocks_hz(const std::vector<ClockSpan>& spans, int blocks) {
  std::vector<double> clocks;
  const auto slot_size = static_cast<std::ptrdiff_t>(blocks);
  for (int slot = 0; slot < kClockSpanSlots; ++slot) {
    const auto first = spans.begin() + slot * slot_size;
    if (const std::optional<double> hz = median_clock_hz({first, first + slot_size}))
      clocks.push_back(*hz);
  }
  return clocks;
}

}  // namespace timeroof
