// src/cli/shard: --shard I/N parsing and selection, the MPI/Slurm rank read from
// the environment, and "%r" in --db.
#include "src/cli/shard.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "core/error.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof::cli {
namespace {

using test::usage_message;

EnvLookup env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ParseShard, ReadsIndexAndCount) {
  EXPECT_EQ(parse_shard("0/1"), (Shard{0, 1}));
  EXPECT_EQ(parse_shard("3/8"), (Shard{3, 8}));
  EXPECT_EQ(to_string(parse_shard("12/16")), "12/16");
}

TEST(ParseShard, RefusesWhatIsNoShardWithTheFix) {
  const std::string above = usage_message([] { parse_shard("3/2"); });
  EXPECT_NE(above.find("--shard 3/2"), std::string::npos) << above;
  EXPECT_NE(above.find("e.g. --shard 1/2"), std::string::npos) << above;
  EXPECT_NE(usage_message([] { parse_shard("2/2"); }).find("below the count"), std::string::npos);
  EXPECT_NE(usage_message([] { parse_shard("0/0"); }).find("at least 1"), std::string::npos);
  for (const char* bad :
       {"x/y", "1", "1/", "/2", "-1/2", "1/-2", "1 /2", "1/2/3", "", "99999999999/99999999999"})
    EXPECT_NE(usage_message([&] { parse_shard(bad); }).find("expected I/N"), std::string::npos)
        << bad;
}

TEST(ShardSeqs, TheShardsOfEveryCountPartitionThePoints) {
  std::mt19937 rng(3);
  std::lognormal_distribution<double> cost(0.0, 1.5);
  for (int points : {0, 1, 7, 108, 152}) {
    std::vector<double> costs(static_cast<std::size_t>(points));
    for (double& c : costs) c = cost(rng);
    for (int count = 1; count <= 9; ++count) {
      std::vector<int> owners(static_cast<std::size_t>(points), 0);
      for (int index = 0; index < count; ++index) {
        const std::set<int> seqs = shard_seqs(costs, {index, count});
        EXPECT_EQ(seqs, shard_seqs(costs, {index, count})) << "deterministic";
        for (int seq : seqs) {
          ASSERT_GE(seq, 0);
          ASSERT_LT(seq, points);
          ++owners[static_cast<std::size_t>(seq)];
        }
      }
      for (int seq = 0; seq < points; ++seq)
        EXPECT_EQ(owners[static_cast<std::size_t>(seq)], 1)
            << "point " << seq << " of " << points << " over " << count << " shards";
    }
  }
}

TEST(ShardSpec, RoundTripsThroughTheRunSpec) {
  nlohmann::json spec = {{"sweeps", nlohmann::json::array()}};
  EXPECT_FALSE(shard_of(spec));
  spec["shard"] = to_json(Shard{2, 5});
  EXPECT_EQ(spec["shard"], (nlohmann::json{{"index", 2}, {"count", 5}}));
  EXPECT_EQ(shard_of(spec), (Shard{2, 5}));
  spec["shard"] = {{"index", 5}, {"count", 5}};
  EXPECT_FALSE(shard_of(spec)) << "malformed entries are no shard";
  spec["shard"] = "1/2";
  EXPECT_FALSE(shard_of(spec));
}

TEST(MpiEnvironment, ReadsOpenMpiRankSizeAndLocalRank) {
  const MpiPlacement p = placement_from_environment(env({{"OMPI_COMM_WORLD_RANK", "5"},
                                                         {"OMPI_COMM_WORLD_SIZE", "8"},
                                                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                         {"SLURM_PROCID", "0"},
                                                         {"SLURM_NTASKS", "1"}}));
  EXPECT_EQ(p.shard, (Shard{5, 8})) << "Open MPI's variables win over the batch step's Slurm ones";
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_NE(p.source.find("OMPI_COMM_WORLD_RANK=5"), std::string::npos) << p.source;
}

TEST(MpiEnvironment, ReadsMpichPmixAndSlurm) {
  MpiPlacement p = placement_from_environment(
      env({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "0"}}));
  EXPECT_EQ(p.shard, (Shard{2, 4}));
  EXPECT_EQ(p.local_rank, 0);

  p = placement_from_environment(env({{"PMIX_RANK", "3"}, {"SLURM_NTASKS", "6"}}));
  EXPECT_EQ(p.shard, (Shard{3, 6})) << "PMIx's size from Slurm";
  EXPECT_FALSE(p.local_rank);
  p = placement_from_environment(
      env({{"PMIX_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"SLURM_NTASKS", "6"}}));
  EXPECT_EQ(p.shard, (Shard{3, 4}));

  p = placement_from_environment(
      env({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "3"}}));
  EXPECT_EQ(p.shard, (Shard{7, 16}));
  EXPECT_EQ(p.local_rank, 3);
}

TEST(MpiEnvironment, RefusesNoRankAndNonsenseNamingTheVariables) {
  const std::string none = usage_message([] { placement_from_environment(env({})); });
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    EXPECT_NE(none.find(name), std::string::npos) << none;
  EXPECT_NE(none.find("--shard I/N"), std::string::npos) << none;
  EXPECT_NE(usage_message([] {
              placement_from_environment(env({{"OMPI_COMM_WORLD_RANK", ""}}));
            }).find("no MPI rank"),
            std::string::npos)
      << "an empty variable is unset";
  EXPECT_NE(usage_message([] {
              placement_from_environment(env({{"PMI_RANK", "two"}, {"PMI_SIZE", "4"}}));
            }).find("PMI_RANK=two"),
            std::string::npos);
  EXPECT_NE(usage_message([] {
              placement_from_environment(env({{"PMI_RANK", "4"}, {"PMI_SIZE", "4"}}));
            }).find("PMI_SIZE=4"),
            std::string::npos);
  EXPECT_NE(usage_message([] {
              placement_from_environment(env({{"PMI_RANK", "1"}}));
            }).find("PMI_SIZE"),
            std::string::npos);
}

TEST(MpiEnvironment, LocalRankPicksTheGpuModuloTheCount) {
  EXPECT_EQ(device_for_local_rank(0, 8), 0);
  EXPECT_EQ(device_for_local_rank(5, 8), 5);
  EXPECT_EQ(device_for_local_rank(9, 8), 1);
  EXPECT_EQ(device_for_local_rank(3, 0), 0);
}

TEST(ExpandDbPath, PercentRIsTheShardIndex) {
  EXPECT_EQ(expand_db_path("shard-%r.db", Shard{3, 4}), "shard-3.db");
  EXPECT_EQ(expand_db_path("out/%r/%r.db", Shard{0, 2}), "out/0/0.db");
  EXPECT_EQ(expand_db_path("timeroof.db", std::nullopt), "timeroof.db");
  EXPECT_NE(usage_message([] { expand_db_path("s-%r.db", std::nullopt); }).find("--shard"),
            std::string::npos);
}

}  // namespace
}  // namespace timeroof::cli
