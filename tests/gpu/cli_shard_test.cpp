// GPU tier (#21): the shards of a sweep measured one after the other on one GPU,
// each into its own store (--db %r), end up as one run with every point once
// after `timeroof merge`; a shard's run resumes only its own share.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "src/store/results_store.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

using test::run_tool;
using test::TempDir;

// 8 small LSTM points, no counters: seconds per shard.
std::vector<std::string> sweep_args(const std::string& shard, const std::string& db) {
  return {"sweep", "lstm",          "--batch", "16..128:x2", "--hidden-size",
          "16,32", "--no-counters", "--shard", shard,        "--db",
          db};
}

TEST(CliShard, SequentialShardsMergeIntoOneRunWithEveryPointOnce) {
  TR_REQUIRE_GPU();
  const TempDir dir;
  const std::string pattern = dir.file("shard-%r.db");
  std::set<int> all_seqs;
  for (int i = 0; i < 2; ++i) {
    const test::ToolResult r = run_tool(sweep_args(std::to_string(i) + "/2", pattern));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("0 already stored"), std::string::npos) << r.err;
    ResultsStore store = ResultsStore::open(dir.file("shard-" + std::to_string(i) + ".db"),
                                            ResultsStore::Access::read_only);
    const std::vector<RunRecord> runs = store.load_all();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].run.spec["shard"], (nlohmann::json{{"index", i}, {"count", 2}}));
    EXPECT_GT(runs[0].points.size(), 0u);
    EXPECT_LT(runs[0].points.size(), 8u);
    for (const Point& p : runs[0].points) EXPECT_TRUE(all_seqs.insert(p.seq).second) << p.seq;
  }
  EXPECT_EQ(all_seqs.size(), 8u);

  const test::ToolResult merged =
      run_tool({"merge", dir.file("all.db"), dir.file("shard-0.db"), dir.file("shard-1.db")});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  ResultsStore store = ResultsStore::open(dir.file("all.db"), ResultsStore::Access::read_only);
  const std::vector<RunRecord> runs = store.load_all();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run.status, "complete");
  ASSERT_EQ(runs[0].points.size(), 8u);
  for (int seq = 0; seq < 8; ++seq) {
    const Point& p = runs[0].points[static_cast<std::size_t>(seq)];
    EXPECT_EQ(p.seq, seq);
    EXPECT_EQ(p.details["measured_by"]["gpu_uuid"], runs[0].run.machine.gpu.uuid);
  }

  // Resuming a shard's run (complete) is refused; another shard on its store too.
  const test::ToolResult other =
      run_tool({"sweep", "lstm", "--batch", "16..128:x2", "--hidden-size", "16,32", "--no-counters",
                "--shard", "1/2", "--db", dir.file("shard-0.db"), "--resume", "1"});
  EXPECT_EQ(other.exit_code, 1) << other.err;
}

}  // namespace
}  // namespace timeroof
