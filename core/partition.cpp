#include "core/partition.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace timeroof {

namespace {

double cost_of(const std::vector<double>& costs, int i) {
  const double c = costs[static_cast<std::size_t>(i)];
  return std::isfinite(c) && c > 0 ? c : 0.0;
}

}  // namespace

std::vector<int> longest_first(const std::vector<double>& costs) {
  std::vector<int> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return cost_of(costs, a) > cost_of(costs, b); });
  return order;
}

std::vector<std::vector<int>> partition_longest_first(const std::vector<double>& costs,
                                                      int workers) {
  if (workers < 1) throw std::invalid_argument("partition_longest_first: workers < 1");
  auto cost = [&](int i) { return cost_of(costs, i); };
  const std::vector<int> order = longest_first(costs);
  std::vector<std::vector<int>> bins(static_cast<std::size_t>(workers));
  std::vector<double> load(static_cast<std::size_t>(workers), 0.0);
  for (int i : order) {
    // The first least-loaded bin: min_element keeps the lowest index on ties.
    const auto bin =
        static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    bins[bin].push_back(i);
    load[bin] += cost(i);
  }
  for (auto& bin : bins) std::sort(bin.begin(), bin.end());
  return bins;
}

std::vector<int> next_guided_chunk(std::vector<int>& queue, const std::vector<double>& costs,
                                   int workers) {
  double remaining = 0;
  for (int i : queue) remaining += cost_of(costs, i);
  const double target = remaining / (2.0 * std::max(1, workers));
  std::vector<int> chunk;
  double taken = 0;
  std::size_t n = 0;
  while (n < queue.size() && (n == 0 || taken < target)) {
    taken += cost_of(costs, queue[n]);
    chunk.push_back(queue[n++]);
  }
  queue.erase(queue.begin(), queue.begin() + static_cast<long>(n));
  std::sort(chunk.begin(), chunk.end());
  return chunk;
}

}  // namespace timeroof
