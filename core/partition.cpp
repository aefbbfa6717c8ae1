#include "core/partition.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <stdexcept>

namespace timeroof {

namespace {

double cost_of(const std::vector<double>& costs, int i) {
  const double c = costs[static_cast<std::size_t>(i)];
  return std::isfinite(c) && c > 0 ? c : 0.0;
}

// Item indices, longest expected first; equal costs keep their input order.
std::vector<int> longest_first(const std::vector<double>& costs) {
  std::vector<int> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return cost_of(costs, a) > cost_of(costs, b); });
  return order;
}

}  // namespace

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

WorkSchedule schedule_with_reserve(const std::vector<double>& costs, int workers,
                                   double reserve_fraction) {
  if (workers < 1) throw std::invalid_argument("schedule_with_reserve: workers < 1");
  const std::vector<int> order = longest_first(costs);
  double total = 0;
  for (int i : order) total += cost_of(costs, i);
  // The shortest items, from the end of the order, up to the reserve's time.
  std::size_t first_reserved = order.size();
  double reserved = 0;
  while (first_reserved > 0 &&
         reserved + cost_of(costs, order[first_reserved - 1]) <= reserve_fraction * total) {
    --first_reserved;
    reserved += cost_of(costs, order[first_reserved]);
  }
  // Reserved items cost 0 in the partition and are then taken out of its bins.
  std::vector<double> shared_costs(costs.size(), 0.0);
  std::vector<bool> is_shared(costs.size(), false);
  for (std::size_t k = 0; k < first_reserved; ++k) {
    const auto i = static_cast<std::size_t>(order[k]);
    shared_costs[i] = cost_of(costs, order[k]);
    is_shared[i] = true;
  }
  WorkSchedule schedule;
  for (const std::vector<int>& bin : partition_longest_first(shared_costs, workers)) {
    std::vector<int> share;
    std::copy_if(bin.begin(), bin.end(), std::back_inserter(share),
                 [&](int i) { return is_shared[static_cast<std::size_t>(i)]; });
    schedule.shares.push_back(std::move(share));
  }
  schedule.reserve.assign(order.begin() + static_cast<long>(first_reserved), order.end());
  return schedule;
}

std::vector<int> next_reserve_chunk(std::vector<int>& reserve, const std::vector<double>& costs,
                                    int workers) {
  double remaining = 0;
  for (int i : reserve) remaining += cost_of(costs, i);
  const double target = remaining / (2.0 * std::max(1, workers));
  std::vector<int> chunk;
  double taken = 0;
  std::size_t n = 0;
  while (n < reserve.size() && (n == 0 || taken < target)) {
    taken += cost_of(costs, reserve[n]);
    chunk.push_back(reserve[n++]);
  }
  reserve.erase(reserve.begin(), reserve.begin() + static_cast<long>(n));
  std::sort(chunk.begin(), chunk.end());
  return chunk;
}

}  // namespace timeroof
