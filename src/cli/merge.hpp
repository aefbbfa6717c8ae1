// `timeroof merge OUT.db IN.db...`: joins the shard runs of a job (`sweep --shard
// I/N`, one store per shard) into one run. Pure over the runs, so it is tested on
// CPU; the command reads the stores and imports the result in one transaction.
//
// Shard runs of one job: the same spec apart from "shard", and the same shard
// count. Each job becomes one run:
// - a new uuid, the merge's command line, tool version and host; started_at and
//   finished_at span the shards';
// - status complete when every point of every sweep of the spec is present, else
//   partial (a note names the missing shards and seqs);
// - the spec without "shard", plus "merged_from": per shard its uuid, host, GPU
//   (name, uuid), command line, shard, status, started_at and finished_at;
// - the machine (GPU and roofs) of its lowest-indexed shard;
// - every point once, ordered by sweep then seq, with details["measured_by"] =
//   {"run_uuid", "host", "gpu_uuid"} of the shard that measured it.
// Runs that are not shards (single-GPU runs, earlier merges) are copied unchanged.
//
// Refused with a one-line usage error, nothing merged: the same run twice, shards
// that measured a sweep of one name with different specs, different shard counts
// for one spec, a shard index present twice, the same point (sweep and seq) in two
// shards, and shards on GPUs of different names.
#pragma once

#include <string>
#include <vector>

#include "core/results.hpp"

namespace timeroof::cli {

struct SourcedRun {
  std::string source;  // the store it came from, for messages
  RunRecord record;
};

struct MergeOutcome {
  std::vector<RunRecord> runs;     // merged jobs first (in order of first appearance), then copies
  int merged_jobs = 0;             // runs in `runs` made from shards
  int shard_runs = 0;              // shard runs they were made from
  std::vector<std::string> notes;  // one line each, e.g. what a partial merge misses
};

MergeOutcome merge_shard_runs(const std::vector<SourcedRun>& inputs,
                              const std::string& command_line);

}  // namespace timeroof::cli
