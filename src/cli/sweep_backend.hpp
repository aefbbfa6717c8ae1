// `timeroof sweep` and the sweeps of `timeroof run`. The sweep a command line
// names (sweep_command.cpp), --dry-run and --shard's share are host-only
// (sweep_plan.cpp, every build);
// measuring is built against sweeps/ when the CUDA toolkit is present
// (sweep_backend_cuda.cpp), refused with the reason in the analysis-only build
// (gpu_backend_none.cpp).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/results.hpp"
#include "src/cli/shard.hpp"
#include "sweeps/spec.hpp"

namespace timeroof {
class ResultsStore;
}

namespace timeroof::cli {

// A sweep to measure: its spec, read and validated once from the command line
// (sweep_command.cpp) or the family's default sweep, and how to measure it.
class WorkerPool;  // src/cli/devices.hpp

struct SweepRequest {
  SweepSpec spec;
  bool dry_run = false;
  bool counters = true;
  // --resume: the run must hold this very sweep (same name and points) and be
  // unfinished; anything else is a usage error naming the run's own spec.
  bool resume = false;
  // Measure only these seqs of the sweep (a shard, or one GPU's share of
  // --devices); the others are left to other processes. nullopt: every point.
  std::optional<std::set<int>> only_seqs;
  // --devices: one worker process per GPU (src/cli/devices.hpp); empty: this
  // process measures on CommonOptions::device.
  std::vector<int> devices;
  // The workers of `devices` when they serve several sweeps (`run --devices`);
  // null: this sweep starts its own.
  WorkerPool* workers = nullptr;
  // --dry-run with --metrics on a known chip: the passes they add to the catalog's
  // (the most over the spec's precisions), for the time estimate.
  int extra_counter_passes = 0;
  // --dry-run --chip: the CUPTI chip that counts those passes; empty: the chip of
  // the store's newest run.
  std::string chip;
};

// The dry run's time model with this machine's measured roofs where it has some
// (null: the model's defaults).
DryRunRoofs roofs_from(const Machine* machine);
// The dry run's expected seconds of each of `seqs`: what points are split by.
std::vector<double> expected_seconds(const SweepSpec& spec, const std::vector<int>& seqs,
                                     const DryRunRoofs& roofs);
// Every seq of the sweep but `measured`: what a runner is told to skip.
std::set<int> all_seqs_but(const SweepSpec& spec, const std::vector<int>& measured);

// --dry-run's listing of the request's sweep (only_seqs' points only, when set).
std::string describe_sweep(const SweepRequest& request, const Machine* measured);
// The same as JSON (`sweep --dry-run --json`): {"sweep", "family", "transfer",
// "host_memory", "l2", "point_count", "points": [{"seq", "params", "flops",
// "min_bytes", "h2d_bytes", "d2h_bytes", "transfer_s", "call_s", "point_s"}],
// "points_listed", "estimated_s", "roofs": "measured" or "default"}: the points
// listed (a shard's only), each estimate in seconds, FLOPs and bytes per call.
nlohmann::json describe_sweep_json(const SweepRequest& request, const Machine* measured);

// --shard I/N: the seqs of the sweep's points shard I measures (shard.hpp): bin I
// of the longest-expected-first split of the dry-run estimates with the DEFAULT
// roofs, the same on every machine.
std::set<int> shard_point_seqs(const SweepSpec& spec, Shard shard);

// Measures the sweep into `run` (already stored), point by point; points whose
// seq is in the store for this run and sweep are skipped (resume). Returns
// ExitCode::partial when interrupted by Ctrl-C, after the current point.
ExitCode measure_sweep(const SweepRequest& request, ResultsStore& store, Run& run,
                       bool show_progress);

// `timeroof timing-worker --device N` (hidden): times the points the runner of
// another timeroof process sends on stdin, replying on stdout, until stdin ends
// (sweeps/timing_worker.hpp).
ExitCode serve_timing_worker(int device);

// `timeroof device-worker --device N` (hidden): runs the one job a --devices
// parent sends on stdin and answers on stdout (src/cli/devices.hpp).
ExitCode serve_device_worker(int device);

}  // namespace timeroof::cli
