// `timeroof sweep --shard I/N` and `--shard-from-mpi`: which share of a sweep's
// points this process measures. Pure (no GPU, no store) so it is tested on CPU.
//
// Every shard of a job, on any machine, must compute the same partition: the
// costs are the dry-run time model's per-point estimates with its DEFAULT roofs
// (never a store's measured ones), split by core/partition's deterministic
// longest-expected-first rule; shard I measures bin I.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace timeroof::cli {

struct Shard {
  int index = 0;  // 0 .. count-1
  int count = 1;
  bool operator==(const Shard&) const = default;
};

// "I/N" with 0 <= I < N; anything else ("x/y", "3/2", "0/0", "-1/2") is a usage
// error naming `text` and the fix.
Shard parse_shard(std::string_view text);
std::string to_string(Shard shard);  // "I/N"

// run.spec["shard"] = {"index": I, "count": N}; shard_of reads it back (nullopt:
// not a shard run, or a malformed entry).
nlohmann::json to_json(Shard shard);
std::optional<Shard> shard_of(const nlohmann::json& run_spec);

// The seqs shard `shard` measures given each point's expected cost (seq = index):
// bin shard.index of partition_longest_first(costs, shard.count).
std::set<int> shard_seqs(const std::vector<double>& costs, Shard shard);

// Where an MPI (or Slurm) launcher put this process, read from its environment
// variables without linking MPI. Looked for in this order, the first rank found wins:
//   Open MPI   OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE
//   MPICH, Intel MPI (Hydra/PMI)   PMI_RANK / PMI_SIZE
//   PMIx       PMIX_RANK / (PMIX_SIZE, OMPI_COMM_WORLD_SIZE or SLURM_NTASKS)
//   Slurm      SLURM_PROCID / SLURM_NTASKS
// The node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID,
// the first set) picks the GPU. None set, a non-integer, or rank >= size is a
// usage error naming the variables.
struct MpiPlacement {
  Shard shard;
  std::optional<int> local_rank;
  std::string source;  // e.g. "OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=4", for messages
};
// `getenv`: a lookup like std::getenv (nullptr when unset).
using EnvLookup = std::function<const char*(const char* name)>;
MpiPlacement placement_from_environment(const EnvLookup& getenv);

// The GPU a rank uses when --device is not given: its local rank modulo the
// GPUs this process sees (0 when it sees none).
int device_for_local_rank(int local_rank, int gpu_count);

// --db with "%r" replaced by the shard index (each rank its own store file);
// "%r" without a shard is a usage error.
std::string expand_db_path(const std::string& db, const std::optional<Shard>& shard);

// What `timeroof sweep` was asked about sharding (main.cpp fills it).
struct SweepShard {
  std::optional<Shard> shard;     // --shard, or from the MPI environment
  std::optional<int> local_rank;  // --shard-from-mpi without --device: picks the GPU
  std::string source;             // "--shard" or the MPI variables read
};

}  // namespace timeroof::cli
