// Choosing the fastest of many candidates (a cuDNN search over plans): each is
// timed once, briefly, and the minimum of many short, noisy timings favours a
// lucky candidate. So the few within a margin of the fastest are kept as
// finalists and timed again in interleaved rounds (a drift of the clocks then
// touches each alike); the lowest median wins. An H100's conv2d search once kept
// a bwd_filter plan 10% slower than the heuristic's, which it had also timed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "core/statistics.hpp"

namespace timeroof {

struct FinalistRule {
  double margin = 1.05;  // finalists are within margin x the fastest
  std::size_t max_finalists = 3;
  int rounds = 7;  // interleaved rounds of the final timing
};

// The finalists of a search, fastest first; Candidate may be move-only (a plan
// with its workspace).
template <class Candidate>
class Finalists {
 public:
  struct Entry {
    double seconds = 0;  // the first timing, then the median of the final rounds
    Candidate candidate;
  };

  explicit Finalists(FinalistRule rule = {}) : rule_(rule) {}

  // Admits a candidate timed at `seconds`, then drops whoever falls beyond the
  // margin of the fastest or past max_finalists. Equal times keep their order.
  void admit(double seconds, Candidate candidate) {
    const auto after = std::upper_bound(entries_.begin(), entries_.end(), seconds,
                                        [](double s, const Entry& e) { return s < e.seconds; });
    entries_.insert(after, Entry{seconds, std::move(candidate)});
    const double cut = entries_.front().seconds * rule_.margin;
    const std::size_t cap = std::max<std::size_t>(1, rule_.max_finalists);
    while (entries_.size() > cap || entries_.back().seconds > cut) entries_.pop_back();
  }

  // With more than one finalist: times each rule.rounds times in interleaved
  // order (A B C A B C ...) with `time(candidate)` (seconds), keeps each one's
  // median and reorders them, fastest first. Returns how many were timed again
  // (0 with one finalist or none).
  template <class Time>
  std::size_t decide(Time&& time) {
    if (entries_.size() < 2) return 0;
    std::vector<std::vector<double>> samples(entries_.size());
    for (int round = 0; round < rule_.rounds; ++round)
      for (std::size_t i = 0; i < entries_.size(); ++i)
        samples[i].push_back(time(entries_[i].candidate));
    for (std::size_t i = 0; i < entries_.size(); ++i) entries_[i].seconds = median_of(samples[i]);
    std::stable_sort(entries_.begin(), entries_.end(),
                     [](const Entry& a, const Entry& b) { return a.seconds < b.seconds; });
    return entries_.size();
  }

  bool empty() const noexcept { return entries_.empty(); }
  std::vector<Entry>& entries() noexcept { return entries_; }
  const std::vector<Entry>& entries() const noexcept { return entries_; }

 private:
  FinalistRule rule_;
  std::vector<Entry> entries_;
};

}  // namespace timeroof
