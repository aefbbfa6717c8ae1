#include "core/partition.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace timeroof {

std::vector<std::vector<int>> partition_longest_first(const std::vector<double>& costs,
                                                      int workers) {
  if (workers < 1) throw std::invalid_argument("partition_longest_first: workers < 1");
  auto cost = [&](int i) {
    const double c = costs[static_cast<std::size_t>(i)];
    return std::isfinite(c) && c > 0 ? c : 0.0;
  };
  std::vector<int> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cost(a) > cost(b); });
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

}  // namespace timeroof
