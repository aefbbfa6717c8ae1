// Wall seconds on the steady clock, read the same way by every timing loop and
// phase timer.
#pragma once

#include <chrono>

namespace timeroof {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace timeroof
