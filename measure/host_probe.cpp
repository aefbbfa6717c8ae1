#include "measure/host_probe.hpp"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
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

// 16M slots (64 MiB), each holding the next slot of one shuffled cycle through
// all of them: following it visits every slot in an order the prefetchers
// cannot guess.
const std::vector<std::uint32_t>& memory_cycle() {
  static const std::vector<std::uint32_t> cycle = [] {
    constexpr std::uint32_t kSlots = 16u << 20;
    std::vector<std::uint32_t> order(kSlots);
    std::iota(order.begin(), order.end(), 0u);
    std::mt19937 rng(0x7133u);
    std::shuffle(order.begin() + 1, order.end(), rng);
    std::vector<std::uint32_t> next(kSlots);
    for (std::uint32_t i = 0; i < kSlots; ++i) next[order[i]] = order[(i + 1) % kSlots];
    return next;
  }();
  return cycle;
}

template <typename Workload>
double median_seconds(int repeats, Workload&& workload) {
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    workload(i);
    seconds.push_back(seconds_since(start));
  }
  return median_of(seconds);
}

volatile std::uint64_t sink = 0;

}  // namespace

double host_probe_seconds(int repeats) {
  return median_seconds(
      repeats, [](int i) { sink = sink + fixed_workload(static_cast<std::uint64_t>(i) + sink); });
}

HostProbe probe_host(int repeats) {
  const std::vector<std::uint32_t>& cycle = memory_cycle();
  HostProbe probe;
  probe.compute_s = host_probe_seconds(repeats);
  probe.memory_s = median_seconds(repeats, [&cycle](int i) {
    std::uint32_t at = static_cast<std::uint32_t>(sink + static_cast<std::uint64_t>(i) * 977) %
                       static_cast<std::uint32_t>(cycle.size());
    for (int step = 0; step < 2000; ++step) at = cycle[at];
    sink = sink + at;
  });
  probe.kernel_s = median_seconds(repeats, [](int) {
    for (int call = 0; call < 200; ++call) sink = sink + static_cast<std::uint64_t>(getppid());
  });
  return probe;
}

std::optional<double> steal_seconds(int core) {
  std::ifstream stat("/proc/stat");
  const std::string wanted = core < 0 ? "cpu" : "cpu" + std::to_string(core);
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  std::string line;
  while (std::getline(stat, line)) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name != wanted) continue;
    // user nice system idle iowait irq softirq steal
    unsigned long long value = 0, steal = 0;
    for (int i = 0; i < 8 && fields >> value; ++i)
      if (i == 7) steal = value;
    if (!fields || ticks_per_second <= 0) return std::nullopt;
    return static_cast<double>(steal) / static_cast<double>(ticks_per_second);
  }
  return std::nullopt;
}

}  // namespace timeroof
