#include "src/cli/shard.hpp"

#include <charconv>

#include "core/error.hpp"
#include "core/partition.hpp"

namespace timeroof::cli {

namespace {

// A non-negative decimal integer, digits only; nullopt otherwise (signs, spaces, overflow).
std::optional<int> parse_count(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Shard parse_shard(std::string_view text) {
  const std::string shown(text);
  const std::size_t slash = text.find('/');
  const std::optional<int> index =
      slash == std::string_view::npos ? std::nullopt : parse_count(text.substr(0, slash));
  const std::optional<int> count =
      slash == std::string_view::npos ? std::nullopt : parse_count(text.substr(slash + 1));
  if (!index || !count)
    throw usage_error("--shard " + shown +
                      ": expected I/N, the shard's index I of N shards counted from 0, e.g. "
                      "--shard 0/4 for the first of 4");
  if (*count < 1)
    throw usage_error("--shard " + shown + ": the count N must be at least 1, e.g. --shard 0/4");
  if (*index >= *count)
    throw usage_error("--shard " + shown + ": the index must be below the count (0.." +
                      std::to_string(*count - 1) + " for " + std::to_string(*count) +
                      " shards, counted from 0), e.g. --shard " + std::to_string(*count - 1) + "/" +
                      std::to_string(*count));
  return {*index, *count};
}

std::string to_string(Shard shard) {
  return std::to_string(shard.index) + "/" + std::to_string(shard.count);
}

nlohmann::json to_json(Shard shard) {
  return {{"index", shard.index}, {"count", shard.count}};
}

std::optional<Shard> shard_of(const nlohmann::json& run_spec) {
  if (!run_spec.is_object() || !run_spec.contains("shard")) return std::nullopt;
  const nlohmann::json& entry = run_spec.at("shard");
  if (!entry.is_object() || !entry.contains("index") || !entry.contains("count") ||
      !entry.at("index").is_number_integer() || !entry.at("count").is_number_integer())
    return std::nullopt;
  const Shard shard{entry.at("index").get<int>(), entry.at("count").get<int>()};
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count) return std::nullopt;
  return shard;
}

std::set<int> shard_seqs(const std::vector<double>& costs, Shard shard) {
  const auto bins = partition_longest_first(costs, shard.count);
  const auto& bin = bins.at(static_cast<std::size_t>(shard.index));
  return {bin.begin(), bin.end()};
}

MpiPlacement placement_from_environment(const EnvLookup& getenv) {
  // An integer variable: nullopt when unset, a usage error when set to something else.
  auto read = [&](const char* name) -> std::optional<int> {
    const char* value = getenv(name);
    if (!value || !*value) return std::nullopt;  // set but empty counts as unset
    const std::optional<int> parsed = parse_count(value);
    if (!parsed)
      throw usage_error(std::string("--shard-from-mpi: ") + name + "=" + value +
                        " is not a rank or size (a non-negative integer); check the launcher, "
                        "or pass --shard I/N");
    return parsed;
  };
  struct Source {
    const char* rank;
    std::vector<const char*> sizes;
  };
  const Source sources[] = {
      {"OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE"}},
      {"PMI_RANK", {"PMI_SIZE"}},
      {"PMIX_RANK", {"PMIX_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}},
      {"SLURM_PROCID", {"SLURM_NTASKS"}},
  };
  for (const Source& source : sources) {
    const std::optional<int> rank = read(source.rank);
    if (!rank) continue;
    std::optional<int> size;
    const char* size_name = nullptr;
    for (const char* name : source.sizes)
      if ((size = read(name))) {
        size_name = name;
        break;
      }
    std::string sizes;
    for (const char* name : source.sizes)
      sizes += (sizes.empty() ? "" : " or ") + std::string(name);
    const std::string rank_text = std::string(source.rank) + "=" + std::to_string(*rank);
    if (!size)
      throw usage_error("--shard-from-mpi: " + rank_text + " is set but not " + sizes +
                        ", so the number of ranks is unknown; pass --shard " +
                        std::to_string(*rank) + "/N instead");
    if (*size < 1 || *rank >= *size)
      throw usage_error("--shard-from-mpi: " + rank_text + " with " + size_name + "=" +
                        std::to_string(*size) +
                        " is no rank of that many; check the launcher, or pass --shard I/N");
    MpiPlacement placement;
    placement.shard = {*rank, *size};
    placement.source = rank_text + ", " + size_name + "=" + std::to_string(*size);
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
      if ((placement.local_rank = read(name))) {
        placement.source += std::string(", ") + name + "=" + std::to_string(*placement.local_rank);
        break;
      }
    return placement;
  }
  throw usage_error(
      "--shard-from-mpi: no MPI rank in the environment (none of OMPI_COMM_WORLD_RANK, PMI_RANK, "
      "PMIX_RANK, SLURM_PROCID is set); launch with mpirun or srun, or pass --shard I/N");
}

int device_for_local_rank(int local_rank, int gpu_count) {
  return gpu_count > 0 ? local_rank % gpu_count : 0;
}

std::string expand_db_path(const std::string& db, const std::optional<Shard>& shard) {
  std::string path;
  for (std::size_t i = 0; i < db.size(); ++i) {
    if (db.compare(i, 2, "%r") != 0) {
      path += db[i];
      continue;
    }
    if (!shard)
      throw usage_error("--db " + db +
                        ": %r stands for the shard index, but this sweep is no shard; add "
                        "--shard I/N or --shard-from-mpi, or name one file");
    path += std::to_string(shard->index);
    ++i;
  }
  return path;
}

}  // namespace timeroof::cli
