// src/cli/merge: the shard runs of a job joined into one run with provenance, and
// the refusals (duplicate point, mismatched spec, shard twice, other GPU model).
#include "src/cli/merge.hpp"

#include <gtest/gtest.h>

#include <set>

#include "core/error.hpp"
#include "src/cli/shard.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof::cli {
namespace {

using nlohmann::json;

using test::usage_message;

json sweep_spec(const std::string& name, int points) {
  json list = json::array();
  for (int i = 0; i < points; ++i) list.push_back({{"batch", 1 << i}});
  return {{"name", name}, {"family", "conv2d"}, {"points", list}};
}

// Shard `index` of `count` of a job over sweeps a (6 points) and b (4 points),
// measuring the seqs congruent to index modulo count.
SourcedRun shard_run(int index, int count, const std::string& host = "node") {
  SourcedRun input;
  input.source = "shard-" + std::to_string(index) + ".db";
  timeroof::Run& run = input.record.run;
  run = new_run("timeroof sweep conv2d --shard " + std::to_string(index) + "/" +
                std::to_string(count));
  run.host = host + std::to_string(index);
  run.status = "complete";
  run.started_at = "2026-01-01T00:0" + std::to_string(index) + ":00Z";
  run.finished_at = "2026-01-01T01:0" + std::to_string(index) + ":00Z";
  run.machine.gpu.name = "NVIDIA H200";
  run.machine.gpu.uuid = "GPU-" + std::to_string(index);
  run.machine.ceilings.push_back({.name = "hbm_copy", .measured = 4e12 + index});
  run.spec = {{"sweeps", {sweep_spec("a", 6), sweep_spec("b", 4)}},
              {"shard", to_json(Shard{index, count})}};
  for (const auto& [sweep, size] : {std::pair<std::string, int>{"b", 4}, {"a", 6}})
    for (int seq = 0; seq < size; ++seq)
      if (seq % count == index) {
        Point point;
        point.sweep = sweep;
        point.seq = seq;
        point.id = 100 + seq;
        point.details = {{"workspace", seq}};
        input.record.points.push_back(point);
      }
  return input;
}

SourcedRun plain_run() {
  SourcedRun input;
  input.source = "single.db";
  input.record.run = new_run("timeroof run");
  input.record.run.spec = {{"sweeps", {sweep_spec("a", 6)}}};
  input.record.points.push_back(Point{});
  return input;
}

TEST(Merge, ThreeShardsBecomeOneRunWithEveryPointOnceAndProvenance) {
  const std::vector<SourcedRun> inputs = {shard_run(2, 3), shard_run(0, 3), plain_run(),
                                          shard_run(1, 3)};
  const MergeOutcome outcome = merge_shard_runs(inputs, "timeroof merge all.db s0 s1 s2");
  EXPECT_EQ(outcome.merged_jobs, 1);
  EXPECT_EQ(outcome.shard_runs, 3);
  EXPECT_TRUE(outcome.notes.empty());
  ASSERT_EQ(outcome.runs.size(), 2u);
  EXPECT_EQ(outcome.runs[1], inputs[2].record) << "a run that is no shard is copied unchanged";

  const RunRecord& merged = outcome.runs[0];
  std::set<std::string> input_uuids;
  for (const SourcedRun& input : inputs) input_uuids.insert(input.record.run.uuid);
  EXPECT_FALSE(input_uuids.count(merged.run.uuid)) << "a new uuid";
  EXPECT_EQ(merged.run.command_line, "timeroof merge all.db s0 s1 s2");
  EXPECT_EQ(merged.run.status, "complete");
  EXPECT_FALSE(merged.run.spec.contains("shard"));
  EXPECT_EQ(merged.run.spec["sweeps"], inputs[0].record.run.spec["sweeps"]);
  EXPECT_EQ(merged.run.started_at, "2026-01-01T00:00:00Z");
  EXPECT_EQ(merged.run.finished_at, "2026-01-01T01:02:00Z");
  EXPECT_EQ(merged.run.machine, inputs[1].record.run.machine) << "the machine of shard 0";

  const json& from = merged.run.spec["merged_from"];
  ASSERT_EQ(from.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const timeroof::Run& shard = inputs[i == 0 ? 1 : i == 1 ? 3 : 0].record.run;
    EXPECT_EQ(from[i]["uuid"], shard.uuid);
    EXPECT_EQ(from[i]["host"], shard.host);
    EXPECT_EQ(from[i]["gpu"], (json{{"name", "NVIDIA H200"}, {"uuid", shard.machine.gpu.uuid}}));
    EXPECT_EQ(from[i]["command_line"], shard.command_line);
    EXPECT_EQ(from[i]["shard"], (json{{"index", i}, {"count", 3}}));
    EXPECT_EQ(from[i]["status"], "complete");
  }

  // Every point once, sweep by sweep in the spec's order, then by seq, with who measured it.
  ASSERT_EQ(merged.points.size(), 10u);
  for (std::size_t i = 0; i < merged.points.size(); ++i) {
    const Point& p = merged.points[i];
    EXPECT_EQ(p.sweep, i < 6 ? "a" : "b");
    EXPECT_EQ(p.seq, static_cast<int>(i < 6 ? i : i - 6));
    EXPECT_EQ(p.id, 0) << "the store assigns ids";
    EXPECT_EQ(p.details["workspace"], p.seq) << "the shard's details are kept";
    const json& by = p.details["measured_by"];
    EXPECT_EQ(by["host"], "node" + std::to_string(p.seq % 3));
    EXPECT_EQ(by["gpu_uuid"], "GPU-" + std::to_string(p.seq % 3));
    EXPECT_EQ(by["run_uuid"], from[p.seq % 3]["uuid"]);
  }
}

TEST(Merge, AMissingShardMakesAPartialRunAndANoteNamingIt) {
  const MergeOutcome outcome = merge_shard_runs({shard_run(0, 3), shard_run(2, 3)}, "merge");
  ASSERT_EQ(outcome.runs.size(), 1u);
  EXPECT_EQ(outcome.runs[0].run.status, "partial");
  EXPECT_EQ(outcome.runs[0].points.size(), 7u);
  ASSERT_EQ(outcome.notes.size(), 1u);
  const std::string& note = outcome.notes[0];
  EXPECT_NE(note.find("no run of shard 1/3"), std::string::npos) << note;
  EXPECT_NE(note.find("sweep a: 2 of 6 points missing (seq 1, 4)"), std::string::npos) << note;
  EXPECT_NE(note.find("sweep b: 1 of 4 points missing (seq 1)"), std::string::npos) << note;
}

TEST(Merge, RefusesAPointMeasuredByTwoShards) {
  std::vector<SourcedRun> inputs = {shard_run(0, 2), shard_run(1, 2)};
  Point extra;
  extra.sweep = "a";
  extra.seq = 2;  // shard 0's
  inputs[1].record.points.push_back(extra);
  const std::string message = usage_message([&] { merge_shard_runs(inputs, "merge"); });
  EXPECT_NE(message.find("point 2 of sweep a"), std::string::npos) << message;
  EXPECT_NE(message.find(inputs[0].record.run.uuid.substr(0, 8)), std::string::npos) << message;
  EXPECT_NE(message.find(inputs[1].record.run.uuid.substr(0, 8)), std::string::npos) << message;
}

TEST(Merge, RefusesShardsOfASweepWithDifferentSpecs) {
  std::vector<SourcedRun> inputs = {shard_run(0, 2), shard_run(1, 2)};
  inputs[1].record.run.spec["sweeps"][0]["points"][3]["batch"] = 999;
  inputs[1].record.run.command_line = "timeroof sweep conv2d --batch 999 --shard 1/2";
  const std::string message = usage_message([&] { merge_shard_runs(inputs, "merge"); });
  EXPECT_NE(message.find("different specs"), std::string::npos) << message;
  EXPECT_NE(message.find("spec.sweeps[0].points[3].batch (8 vs 999)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("--batch 999"), std::string::npos) << message;
}

TEST(Merge, RefusesDifferentCountsATwiceIndexAnotherGpuModelAndOneRunTwice) {
  EXPECT_NE(usage_message([] {
              merge_shard_runs({shard_run(0, 2), shard_run(1, 3)}, "merge");
            }).find("different shard counts (2 vs 3)"),
            std::string::npos);
  EXPECT_NE(usage_message([] {
              merge_shard_runs({shard_run(1, 3), shard_run(1, 3)}, "merge");
            }).find("shard 1/3 is both"),
            std::string::npos);
  std::vector<SourcedRun> gpus = {shard_run(0, 2), shard_run(1, 2)};
  gpus[1].record.run.machine.gpu.name = "NVIDIA H100 80GB HBM3";
  const std::string gpu_message = usage_message([&] { merge_shard_runs(gpus, "merge"); });
  EXPECT_NE(gpu_message.find("NVIDIA H200"), std::string::npos) << gpu_message;
  EXPECT_NE(gpu_message.find("NVIDIA H100 80GB HBM3"), std::string::npos) << gpu_message;
  const SourcedRun once = shard_run(0, 2);
  SourcedRun copy = once;
  copy.source = "copy.db";
  EXPECT_NE(usage_message([&] {
              merge_shard_runs({once, copy}, "merge");
            }).find("is in both shard-0.db and copy.db"),
            std::string::npos);
}

TEST(Merge, ShardsOfTwoJobsWithOtherSweepsMergeSeparately) {
  std::vector<SourcedRun> inputs = {shard_run(0, 2), shard_run(1, 2), shard_run(0, 1)};
  // json::array: a braced single json is a copy under clang (an array under gcc).
  inputs[2].record.run.spec["sweeps"] = nlohmann::json::array({sweep_spec("c", 2)});
  inputs[2].record.points.clear();
  const MergeOutcome outcome = merge_shard_runs(inputs, "merge");
  EXPECT_EQ(outcome.merged_jobs, 2);
  ASSERT_EQ(outcome.runs.size(), 2u);
  EXPECT_EQ(outcome.runs[0].run.status, "complete");
  EXPECT_EQ(outcome.runs[1].run.status, "partial");
}

}  // namespace
}  // namespace timeroof::cli
