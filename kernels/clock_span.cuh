// Device side of kernels/clock_span.hpp: thread 0 of a block marks the start and
// the end of its timed loop.
#pragma once

#include "kernels/clock_span.hpp"

namespace timeroof {

__device__ __forceinline__ long long global_timer_ns() {
  long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

struct ClockMark {
  long long cycles = 0, ns = 0;
};

__device__ __forceinline__ ClockMark clock_mark() {
  return {clock64(), global_timer_ns()};
}

// The block's span, from `start` to now, into its element of `spans`.
__device__ __forceinline__ void write_clock_span(ClockSpan* spans, ClockMark start) {
  const ClockMark end = clock_mark();
  spans[blockIdx.x] = {start.cycles, end.cycles, start.ns, end.ns};
}

// The block's span into the spans after the sink's `accumulator_bytes`
// (kernels/clock_span.hpp with_clock_spans).
__device__ __forceinline__ void write_clock_span(void* sink, std::size_t accumulator_bytes,
                                                 ClockMark start) {
  write_clock_span(
      reinterpret_cast<ClockSpan*>(static_cast<unsigned char*>(sink) + accumulator_bytes), start);
}

}  // namespace timeroof
