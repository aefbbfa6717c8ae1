// Wall seconds on the steady clock, read the same way by every timing loop and
// phase timer.
#pragma once

#include <chrono>

namespace timeroof {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Consecutive phases on one clock: each lap() returns the seconds since the
// previous lap (or construction) and starts the next phase.
class LapClock {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace timeroof
