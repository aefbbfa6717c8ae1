#include "measure/host_probe.hpp"

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/elapsed.hpp"
#include "core/statistics.hpp"

namespace timeroof {

namespace {

// 60,000 dependent multiply-adds: the loop's latency is the core's, whatever
// the compiler does, and `volatile` keeps the chain from being folded away.
std::uint64_t fixed_workload(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (int i = 0; i < 60'000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

}  // namespace

double host_probe_seconds(int repeats) {
  static volatile std::uint64_t sink = 0;
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    sink = sink + fixed_workload(static_cast<std::uint64_t>(i) + sink);
    seconds.push_back(seconds_since(start));
  }
  return median_of(seconds);
}

}  // namespace timeroof
