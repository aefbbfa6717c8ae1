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

// Item indices, longest expected first; equal costs keep their input order (a
// negative or NaN cost counts as 0).
std::vector<int> longest_first(const std::vector<double>& costs);

// For workers that ask for more (the GPUs of one node, guided self-scheduling):
// takes the next chunk off the front of `queue` (longest_first order), items
// until their expected time reaches the queue's remaining time / (2 x workers),
// at least one. The chunk is in ascending index order; empty once the queue is.
// Every item goes this way: a static split rests on the time model, whose error
// between two GPUs' shares was more than a 20% reserve could absorb (issue 21).
std::vector<int> next_guided_chunk(std::vector<int>& queue, const std::vector<double>& costs,
                                   int workers);

}  // namespace timeroof
