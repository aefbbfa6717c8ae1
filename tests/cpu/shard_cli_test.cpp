// `timeroof sweep --shard / --shard-from-mpi` and `timeroof merge` through the
// binary, without a GPU: usage errors, the dry-run shares of a default sweep
// partition it, and merging shard stores.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/store/results_store.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// No GPU and no launcher around, even when the tests run inside a Slurm job.
Env no_gpu_no_mpi(Env extra = {}) {
  Env env = {{"CUDA_VISIBLE_DEVICES", ""}};
  for (const char* name :
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK",
        "PMI_SIZE", "PMIX_RANK", "PMIX_SIZE", "MPI_LOCALRANKID", "SLURM_PROCID", "SLURM_NTASKS",
        "SLURM_LOCALID"})
    env.emplace_back(name, "");
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

void expect_one_line_error(const ToolResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("timeroof: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(ShardCli, BadShardsAreOneLineUsageErrorsWithTheFix) {
  const TempDir dir;
  const ToolResult above =
      run_tool({"sweep", "conv2d", "--shard", "3/2", "--db", dir.file("x.db")}, no_gpu_no_mpi());
  expect_one_line_error(above, 1, "--shard 3/2");
  EXPECT_NE(above.err.find("e.g. --shard 1/2"), std::string::npos) << above.err;
  expect_one_line_error(run_tool({"sweep", "conv2d", "--shard", "x/y"}, no_gpu_no_mpi()), 1,
                        "expected I/N");
  expect_one_line_error(run_tool({"sweep", "conv2d", "--shard", "0/0"}, no_gpu_no_mpi()), 1,
                        "at least 1");
  expect_one_line_error(
      run_tool({"sweep", "conv2d", "--shard", "0/2", "--shard-from-mpi"}, no_gpu_no_mpi()), 1,
      "excludes");
  expect_one_line_error(
      run_tool({"sweep", "conv2d", "--dry-run", "--db", dir.file("s-%r.db")}, no_gpu_no_mpi()), 1,
      "%r");
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.db"))) << "nothing written";
}

TEST(ShardCli, ShardFromMpiWithoutALauncherSaysWhatItLookedFor) {
  const ToolResult r = run_tool({"sweep", "conv2d", "--shard-from-mpi"}, no_gpu_no_mpi());
  expect_one_line_error(r, 1, "no MPI rank");
  EXPECT_NE(r.err.find("OMPI_COMM_WORLD_RANK"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SLURM_PROCID"), std::string::npos) << r.err;
}

// The seqs a dry-run listing shows (the first column of its table).
std::set<int> listed_seqs(const std::string& out) {
  std::set<int> seqs;
  std::istringstream lines(out);
  std::string line;
  bool table = false;
  while (std::getline(lines, line)) {
    if (line.rfind("seq", 0) == 0) {
      table = true;
      continue;
    }
    if (line.rfind("estimated time", 0) == 0) break;
    if (table) seqs.insert(std::stoi(line));
  }
  return seqs;
}

TEST(ShardCli, TheDryRunSharesOfTheDefaultSweepsPartitionThem) {
  for (const char* family : {"conv2d", "lstm"}) {
    const ToolResult all = run_tool({"sweep", family, "--dry-run"}, no_gpu_no_mpi());
    ASSERT_EQ(all.exit_code, 0) << all.err;
    const std::set<int> every = listed_seqs(all.out);
    ASSERT_GT(every.size(), 50u);
    std::multiset<int> union_of_shards;
    for (int i = 0; i < 4; ++i) {
      const std::string shard = std::to_string(i) + "/4";
      const ToolResult r =
          run_tool({"sweep", family, "--dry-run", "--shard", shard}, no_gpu_no_mpi());
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.out.rfind("shard " + shard + " (--shard): ", 0), 0u) << r.out;
      const std::set<int> seqs = listed_seqs(r.out);
      EXPECT_NE(r.out.find(std::to_string(seqs.size()) + " of " + std::to_string(every.size()) +
                           " points"),
                std::string::npos)
          << r.out;
      // Longest expected first over 4: no shard is empty or holds most of the sweep.
      EXPECT_GT(seqs.size(), every.size() / 8) << shard;
      EXPECT_LT(seqs.size(), every.size() / 2) << shard;
      union_of_shards.insert(seqs.begin(), seqs.end());
    }
    EXPECT_EQ(union_of_shards, std::multiset<int>(every.begin(), every.end()))
        << family << ": every point in exactly one shard";
  }
  // The MPI rank is the same shard.
  const ToolResult mpi =
      run_tool({"sweep", "conv2d", "--dry-run", "--shard-from-mpi"},
               no_gpu_no_mpi({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  ASSERT_EQ(mpi.exit_code, 0) << mpi.err;
  EXPECT_EQ(mpi.out.rfind("shard 1/4 (OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=4): ", 0), 0u)
      << mpi.out;
  EXPECT_EQ(listed_seqs(mpi.out),
            listed_seqs(
                run_tool({"sweep", "conv2d", "--dry-run", "--shard", "1/4"}, no_gpu_no_mpi()).out));
}

// A store holding shard `index` of 3 of one sweep of 7 points (seq % 3 == index).
void write_shard_store(const std::string& path, int index) {
  ResultsStore store = ResultsStore::open(path, ResultsStore::Access::read_write);
  Run run = new_run("timeroof sweep conv2d --batch 1..64:x2 --shard " + std::to_string(index) +
                    "/3 --db shard-%r.db");
  run.machine.gpu.name = "NVIDIA H200";
  run.machine.gpu.uuid = "GPU-" + std::to_string(index);
  nlohmann::json points = nlohmann::json::array();
  for (int i = 0; i < 7; ++i) points.push_back({{"batch", 1 << i}});
  run.spec = {{"sweeps", {{{"name", "conv2d"}, {"family", "conv2d"}, {"points", points}}}},
              {"shard", {{"index", index}, {"count", 3}}}};
  run.status = "complete";
  store.begin_run(run);
  for (int seq = index; seq < 7; seq += 3) {
    Point point;
    point.sweep = "conv2d";
    point.seq = seq;
    point.op = "conv2d_fwd";
    point.params = points[static_cast<std::size_t>(seq)];
    store.add_point(run.id, point);
  }
  store.update_run(run);
}

TEST(MergeCli, ThreeShardStoresBecomeOneRunWithEveryPointOnce) {
  const TempDir dir;
  std::vector<std::string> args = {"merge", dir.file("all.db")};
  for (int i = 0; i < 3; ++i) {
    write_shard_store(dir.file("shard-" + std::to_string(i) + ".db"), i);
    args.push_back(dir.file("shard-" + std::to_string(i) + ".db"));
  }
  const ToolResult r = run_tool(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("merged 3 shard run(s) into 1 run(s)"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("complete"), std::string::npos) << r.out;

  ResultsStore store = ResultsStore::open(dir.file("all.db"), ResultsStore::Access::read_only);
  const std::vector<RunRecord> runs = store.load_all();
  ASSERT_EQ(runs.size(), 1u);
  const RunRecord& merged = runs[0];
  EXPECT_EQ(merged.run.status, "complete");
  EXPECT_NE(merged.run.command_line.find(" merge " + dir.file("all.db")), std::string::npos)
      << merged.run.command_line;
  EXPECT_FALSE(merged.run.spec.contains("shard"));
  EXPECT_EQ(merged.run.spec["merged_from"].size(), 3u);
  ASSERT_EQ(merged.points.size(), 7u);
  for (int seq = 0; seq < 7; ++seq) {
    EXPECT_EQ(merged.points[static_cast<std::size_t>(seq)].seq, seq);
    EXPECT_EQ(merged.points[static_cast<std::size_t>(seq)].details["measured_by"]["gpu_uuid"],
              "GPU-" + std::to_string(seq % 3));
  }

  // Without shard 1: a partial run, its missing shard and seqs named, exit code 3.
  const ToolResult partial =
      run_tool({"merge", dir.file("two.db"), dir.file("shard-0.db"), dir.file("shard-2.db")});
  EXPECT_EQ(partial.exit_code, 3) << partial.err;
  EXPECT_NE(partial.err.find("no run of shard 1/3"), std::string::npos) << partial.err;
  EXPECT_NE(partial.err.find("seq 1, 4"), std::string::npos) << partial.err;
}

TEST(MergeCli, RefusesOutAmongTheInputsAndDuplicatesWritingNothing) {
  const TempDir dir;
  write_shard_store(dir.file("shard-0.db"), 0);
  write_shard_store(dir.file("shard-1.db"), 1);
  write_shard_store(dir.file("again.db"), 1);
  const std::string before = read_file(dir.file("shard-0.db"));
  expect_one_line_error(
      run_tool({"merge", dir.file("shard-0.db"), dir.file("shard-0.db"), dir.file("shard-1.db")}),
      1, "both the output and an input");
  EXPECT_EQ(read_file(dir.file("shard-0.db")), before);
  expect_one_line_error(run_tool({"merge", dir.file("out.db"), dir.file("shard-0.db"),
                                  dir.file("shard-1.db"), dir.file("again.db")}),
                        1, "shard 1/3 is both");
  expect_one_line_error(
      run_tool({"merge", dir.file("out.db"), dir.file("shard-0.db"), dir.file("shard-0.db")}), 1,
      "given twice");
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.db"))) << "a refused merge writes nothing";
  const ToolResult help = run_tool({"merge", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Examples:"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace timeroof::test
