// core/finalists.hpp: the few fastest candidates of a search, timed again in
// interleaved rounds, the lowest median winning.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/finalists.hpp"

namespace timeroof {
namespace {

std::vector<std::string> names(const Finalists<std::string>& finalists) {
  std::vector<std::string> out;
  for (const auto& entry : finalists.entries()) out.push_back(entry.candidate);
  return out;
}

TEST(Finalists, KeepsThoseWithinTheMarginOfTheFastestFastestFirst) {
  Finalists<std::string> finalists(FinalistRule{.margin = 1.05, .max_finalists = 3, .rounds = 5});
  finalists.admit(10.0, "a");
  finalists.admit(10.4, "b");  // within 5% of a
  finalists.admit(11.0, "c");  // 10% behind: out
  EXPECT_EQ(names(finalists), (std::vector<std::string>{"a", "b"}));
  finalists.admit(9.0, "d");  // the new fastest: a (11% behind) and b drop out
  EXPECT_EQ(names(finalists), (std::vector<std::string>{"d"}));
  finalists.admit(9.2, "e");
  finalists.admit(9.1, "f");
  finalists.admit(9.1, "g");  // equal times keep their order of arrival
  EXPECT_EQ(names(finalists), (std::vector<std::string>{"d", "f", "g"}));  // at most 3
  EXPECT_DOUBLE_EQ(finalists.entries().front().seconds, 9.0);
}

TEST(Finalists, TimesTheFinalistsInInterleavedRoundsAndTheLowestMedianWins) {
  Finalists<std::string> finalists(FinalistRule{.margin = 1.10, .max_finalists = 3, .rounds = 5});
  // "lucky" had a fast first timing; its true time is 10% above "steady"'s.
  finalists.admit(9.0, "lucky");
  finalists.admit(9.5, "steady");
  finalists.admit(9.8, "slow");
  const std::map<std::string, std::vector<double>> truth = {
      {"lucky", {11, 11, 1, 11, 11}},  // one outlier low: the median ignores it
      {"steady", {10, 10, 10, 10, 30}},
      {"slow", {12, 12, 12, 12, 12}}};
  std::vector<std::string> order;
  std::map<std::string, std::size_t> calls;
  const std::size_t again = finalists.decide([&](const std::string& name) {
    order.push_back(name);
    return truth.at(name)[calls[name]++];
  });
  EXPECT_EQ(again, 3u);
  EXPECT_EQ(names(finalists), (std::vector<std::string>{"steady", "lucky", "slow"}));
  EXPECT_DOUBLE_EQ(finalists.entries()[0].seconds, 10.0);
  EXPECT_DOUBLE_EQ(finalists.entries()[1].seconds, 11.0);
  ASSERT_EQ(order.size(), 15u);
  for (std::size_t i = 0; i < order.size(); i += 3)  // every round times each once, in turn
    EXPECT_EQ((std::vector<std::string>{order[i], order[i + 1], order[i + 2]}),
              (std::vector<std::string>{"lucky", "steady", "slow"}));
}

TEST(Finalists, OneFinalistOrNoneIsNotTimedAgain) {
  Finalists<std::string> none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.decide([](const std::string&) { return 1.0; }), 0u);
  Finalists<std::string> one;
  one.admit(5.0, "only");
  one.admit(9.0, "far behind");
  int timed = 0;
  EXPECT_EQ(one.decide([&](const std::string&) { return ++timed, 1.0; }), 0u);
  EXPECT_EQ(timed, 0);
  EXPECT_DOUBLE_EQ(one.entries().front().seconds, 5.0);
}

TEST(Finalists, HoldsMoveOnlyCandidates) {
  Finalists<std::unique_ptr<int>> finalists;
  finalists.admit(2.0, std::make_unique<int>(2));
  finalists.admit(2.01, std::make_unique<int>(1));
  finalists.decide([](const std::unique_ptr<int>& p) { return static_cast<double>(*p); });
  EXPECT_EQ(*finalists.entries().front().candidate, 1);
}

// Noisy first timings of many candidates: the plain minimum often keeps one
// that is slower in truth; the finalists' medians find the fastest.
TEST(Finalists, FindTheTrulyFastestWhereTheMinimumOfNoisyTimingsDoesNot) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 0.03);
  int minimum_right = 0;
  int finalists_right = 0;
  for (int search = 0; search < 200; ++search) {
    std::vector<double> truth(44);
    for (std::size_t i = 0; i < truth.size(); ++i) truth[i] = 1.0 + 0.02 * static_cast<double>(i);
    Finalists<std::size_t> finalists;
    std::size_t minimum = 0;
    double minimum_s = 1e9;
    for (std::size_t i = 0; i < truth.size(); ++i) {
      const double once = truth[i] * (1 + noise(rng));
      if (once < minimum_s) minimum_s = once, minimum = i;
      finalists.admit(once, i);
    }
    finalists.decide([&](std::size_t i) { return truth[i] * (1 + noise(rng)); });
    minimum_right += minimum == 0;
    finalists_right += finalists.entries().front().candidate == 0;
  }
  EXPECT_GT(finalists_right, minimum_right)
      << finalists_right << " of 200 against " << minimum_right;
  EXPECT_GE(finalists_right, 150) << finalists_right << " of 200";
  std::printf("truly fastest kept: finalists %d of 200, the minimum %d\n", finalists_right,
              minimum_right);
}

}  // namespace
}  // namespace timeroof
