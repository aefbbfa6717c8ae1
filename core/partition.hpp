// Splitting a sweep's points over workers (GPUs of a node, --shard I/N of a
// cluster): longest expected first, each to the worker with the least expected
// time so far (LPT, within 4/3 of the optimal makespan). Deterministic: equal
// costs keep their input order and ties between workers go to the lowest index,
// so every shard of a job array computes the same partition.
#pragma once

#include <vector>

namespace timeroof {

// For `costs` (expected seconds per item; a negative or NaN cost counts as 0),
// the item indices of each of `workers` bins, each bin in ascending index
// order. Every index lands in exactly one bin. workers must be >= 1.
std::vector<std::vector<int>> partition_longest_first(const std::vector<double>& costs,
                                                      int workers);

// For workers that can ask for more (the GPUs of one node): each worker's first
// share is an LPT partition of all but the shortest items; those, about
// `reserve_fraction` of the expected time, are a reserve handed out in chunks
// to whichever worker finishes first. The reserve absorbs what the time model
// got wrong (a host-bound point moves +-25% between runs; one GPU may be
// slower), while each share stays one long run whose counters are collected in
// full batches (a CUPTI collection costs ~0.2 s whatever it holds).
struct WorkSchedule {
  std::vector<std::vector<int>> shares;  // per worker, ascending index order
  std::vector<int> reserve;              // longest expected first
};
WorkSchedule schedule_with_reserve(const std::vector<double>& costs, int workers,
                                   double reserve_fraction);

// Takes the next chunk off the front of `reserve` (guided self-scheduling):
// items until their expected time reaches the reserve's remaining time / (2 x
// workers), at least one. The chunk is in ascending index order; empty once
// the reserve is.
std::vector<int> next_reserve_chunk(std::vector<int>& reserve, const std::vector<double>& costs,
                                    int workers);

}  // namespace timeroof
