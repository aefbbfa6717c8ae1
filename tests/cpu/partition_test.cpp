// core/partition.hpp: longest-expected-first splitting of points over workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/partition.hpp"

namespace timeroof {
namespace {

double makespan(const std::vector<std::vector<int>>& bins, const std::vector<double>& costs) {
  double worst = 0;
  for (const auto& bin : bins) {
    double sum = 0;
    for (int i : bin) sum += costs[static_cast<std::size_t>(i)];
    worst = std::max(worst, sum);
  }
  return worst;
}

TEST(PartitionLongestFirst, EveryItemLandsInExactlyOneBinForEveryWorkerCount) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> cost(0.0, 1.5);
  for (int n : {0, 1, 5, 108, 152}) {
    std::vector<double> costs(static_cast<std::size_t>(n));
    for (double& c : costs) c = cost(rng);
    for (int workers = 1; workers <= 9; ++workers) {
      const auto bins = partition_longest_first(costs, workers);
      ASSERT_EQ(bins.size(), static_cast<std::size_t>(workers));
      std::vector<int> all;
      for (const auto& bin : bins) {
        EXPECT_TRUE(std::is_sorted(bin.begin(), bin.end()));
        all.insert(all.end(), bin.begin(), bin.end());
      }
      std::sort(all.begin(), all.end());
      std::vector<int> expected(static_cast<std::size_t>(n));
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(all, expected) << n << " items over " << workers << " workers";
    }
  }
}

TEST(PartitionLongestFirst, IsDeterministicAndBalancesWithinTheLptBound) {
  std::mt19937 rng(11);
  std::lognormal_distribution<double> cost(0.0, 1.0);
  std::vector<double> costs(108);
  for (double& c : costs) c = cost(rng);
  const double total = std::accumulate(costs.begin(), costs.end(), 0.0);
  const double longest = *std::max_element(costs.begin(), costs.end());
  for (int workers : {2, 4, 8}) {
    const auto bins = partition_longest_first(costs, workers);
    EXPECT_EQ(bins, partition_longest_first(costs, workers));
    // Graham: LPT's makespan <= 4/3 of the optimum, which is >= both bounds below.
    const double lower = std::max(total / workers, longest);
    EXPECT_LE(makespan(bins, costs), 4.0 / 3.0 * lower + 1e-9) << workers << " workers";
  }
}

TEST(PartitionLongestFirst, LongestItemsGoFirstToTheEmptiestWorker) {
  // 10 to bin 0, 9 to bin 1, 1 and 1 to bin 1 (9 < 10, then 10 = 10: lowest index).
  const auto bins = partition_longest_first({1, 10, 1, 9}, 2);
  EXPECT_EQ(bins[0], (std::vector<int>{1, 2}));
  EXPECT_EQ(bins[1], (std::vector<int>{0, 3}));
}

TEST(PartitionLongestFirst, UnknownCostsCountAsZeroAndZeroWorkersIsRefused) {
  const auto bins = partition_longest_first({NAN, -1, 2}, 2);
  EXPECT_EQ(bins[0], (std::vector<int>{2}));
  EXPECT_EQ(bins[1], (std::vector<int>{0, 1}));
  EXPECT_THROW(partition_longest_first({1}, 0), std::invalid_argument);
}

TEST(LongestFirst, EveryItemOnceLongestFirstAndEqualCostsInInputOrder) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> seconds(0.05, 2.0);
  std::vector<double> costs(150);
  for (double& c : costs) c = seconds(rng);
  costs[3] = costs[9] = 1.0;  // a tie: 3 before 9
  costs[20] = NAN;            // counts as 0: last
  const std::vector<int> order = longest_first(costs);
  std::vector<int> seen(costs.size(), 0);
  for (int i : order) ++seen[static_cast<std::size_t>(i)];
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  auto cost = [&](int i) {
    const double c = costs[static_cast<std::size_t>(i)];
    return std::isnan(c) ? 0.0 : c;
  };
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end(), [&](int a, int b) {
    return cost(a) > cost(b);
  })) << "longest first";
  EXPECT_LT(std::find(order.begin(), order.end(), 3), std::find(order.begin(), order.end(), 9));
  EXPECT_EQ(order.back(), 20);
}

TEST(NextGuidedChunk, ChunksShrinkAsTheQueueEmptiesAndCoverItOnce) {
  const std::vector<double> costs(20, 1.0);
  std::vector<int> queue = longest_first(costs);
  std::vector<std::size_t> sizes;
  std::vector<int> handed;
  while (!queue.empty()) {
    const std::vector<int> chunk = next_guided_chunk(queue, costs, 2);
    ASSERT_FALSE(chunk.empty());
    EXPECT_TRUE(std::is_sorted(chunk.begin(), chunk.end()));
    sizes.push_back(chunk.size());
    handed.insert(handed.end(), chunk.begin(), chunk.end());
  }
  // 20 s left / 4 = 5 items, then 15/4 -> 4, 11/4 -> 3, 8/4 -> 2, 6/4 -> 2, 4/4 -> 1 ...
  EXPECT_EQ(sizes.front(), 5u);
  EXPECT_TRUE(std::is_sorted(sizes.rbegin(), sizes.rend())) << "never growing";
  EXPECT_EQ(sizes.back(), 1u);
  std::sort(handed.begin(), handed.end());
  EXPECT_TRUE(std::adjacent_find(handed.begin(), handed.end()) == handed.end());
  EXPECT_EQ(handed.size(), 20u);
  EXPECT_TRUE(next_guided_chunk(queue, costs, 2).empty());
}

}  // namespace
}  // namespace timeroof
