// GPU tier: --devices (src/cli/devices.hpp). On one GPU: two timing-only workers
// on the same GPU end up as one run with every point once, each point saying
// which GPU measured it; counters with a GPU named twice are refused. On two or
// more GPUs: the sweep over every GPU, and the interconnect roofs.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

using test::run_tool;
using test::TempDir;

nlohmann::json export_of(const std::string& db) {
  const test::ToolResult exported = run_tool({"export", "--db", db});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  return nlohmann::json::parse(exported.out);
}

// Every seq of the run's one sweep exactly once, and which GPUs measured them.
std::set<int> check_every_point_once(const nlohmann::json& run, int expected_points) {
  std::map<int, int> seen;
  std::set<int> gpus;
  for (const auto& point : run["points"]) {
    ++seen[point["seq"].get<int>()];
    EXPECT_TRUE(point["details"].contains("gpu")) << "a point says which GPU measured it";
    gpus.insert(point["details"]["gpu"]["index"].get<int>());
  }
  EXPECT_EQ(static_cast<int>(seen.size()), expected_points);
  for (const auto& [seq, count] : seen) EXPECT_EQ(count, 1) << "seq " << seq;
  return gpus;
}

TEST(Devices, TwoWorkersOnOneGpuStoreEveryPointOnceInOneRun) {
  TR_REQUIRE_GPU();
  TempDir dir;
  const std::string db = dir.file("t.db");
  const test::ToolResult swept =
      run_tool({"sweep", "conv2d", "--batch", "1,2,4,8,16,32", "--precision", "fp32", "--devices",
                "0,0", "--no-counters", "--db", db});
  ASSERT_EQ(swept.exit_code, 0) << swept.err;
  EXPECT_NE(swept.err.find("6 point(s) measured on 2 GPUs"), std::string::npos) << swept.err;
  const nlohmann::json doc = export_of(db);
  ASSERT_EQ(doc["runs"].size(), 1u);
  const nlohmann::json& run = doc["runs"][0];
  EXPECT_EQ(run["status"], "complete");
  EXPECT_EQ(run["spec"]["devices"].size(), 2u);
  EXPECT_FALSE(run["machine"]["gpu"]["chip"].get<std::string>().empty())
      << "the run's GPU as its first worker inspected it";
  EXPECT_EQ(check_every_point_once(run, 6), (std::set<int>{0}));
}

TEST(Devices, CountersOnAGpuNamedTwiceAreRefusedBeforeAnythingIsStored) {
  TR_REQUIRE_GPU();
  TempDir dir;
  const std::string db = dir.file("t.db");
  const test::ToolResult refused =
      run_tool({"sweep", "conv2d", "--batch", "1,2", "--devices", "0,0", "--db", db});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("named twice"), std::string::npos) << refused.err;
  const test::ToolResult bad = run_tool({"sweep", "conv2d", "--devices", "0,99", "--db", db});
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.err.find("no GPU 99"), std::string::npos) << bad.err;
}

// The host-timed roofs in windows of their own processes (device workers): each
// process gets one of the host's launch-cost modes, so the roof is the median
// window of the fast mode of kHostProcessWindows windows; --quick keeps them in
// the one process.
TEST(Devices, HostTimedRoofsAreMeasuredInProcessesOfTheirOwn) {
  TR_REQUIRE_GPU();
  TempDir dir;
  const std::string db = dir.file("t.db");
  const test::ToolResult full =
      run_tool({"ceilings", "--only", "launch_async,launch_sync,h2d_pageable", "--db", db});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_EQ(full.err.find("worker"), std::string::npos)
      << "host windows' workers are quiet: " << full.err;
  const test::ToolResult quick =
      run_tool({"ceilings", "--quick", "--only", "launch_async", "--db", db});
  ASSERT_EQ(quick.exit_code, 0) << quick.err;
  const nlohmann::json doc = export_of(db);
  ASSERT_EQ(doc["runs"].size(), 2u);
  std::set<std::string> seen;
  for (const auto& c : doc["runs"][0]["machine"]["ceilings"]) {
    const std::string name = c["name"].get<std::string>(), method = c["method"].get<std::string>();
    seen.insert(name);
    std::printf("%s: %s\n", name.c_str(), method.substr(0, 400).c_str());
    EXPECT_NE(method.find("measured in 5 windows, each in a process of its own"), std::string::npos)
        << method;
    EXPECT_NE(method.find("the roof: the median window of the host's fast mode"), std::string::npos)
        << method;
    EXPECT_EQ(method.find("failed"), std::string::npos) << method;
    EXPECT_GT(c["measured"].get<double>(), 0) << name;
  }
  EXPECT_EQ(seen, (std::set<std::string>{"launch_async", "launch_sync", "h2d_pageable"}));
  const auto& quick_roofs = doc["runs"][1]["machine"]["ceilings"];
  ASSERT_EQ(quick_roofs.size(), 1u);
  const std::string quick_method = quick_roofs[0]["method"].get<std::string>();
  EXPECT_NE(quick_method.find("measured in 3 windows, each one's median"), std::string::npos)
      << quick_method;
}

TEST(Devices, EveryGpuSweepsItsShareAndTheInterconnectRoofsAreMeasured) {
  TR_REQUIRE_GPU();
  if (count_gpus().count < 2) GTEST_SKIP() << "needs two GPUs (this machine has one)";
  TempDir dir;
  const std::string db = dir.file("t.db");
  const test::ToolResult roofs = run_tool(
      {"ceilings", "--devices", "all", "--quick", "--only", "hbm_copy,p2p_ce", "--db", db});
  ASSERT_EQ(roofs.exit_code, 0) << roofs.err;
  const test::ToolResult swept = run_tool({"sweep", "conv2d", "--batch", "1..64:x2", "--precision",
                                           "fp16", "--devices", "all", "--db", db});
  ASSERT_EQ(swept.exit_code, 0) << swept.err;
  const nlohmann::json doc = export_of(db);
  const int gpus = count_gpus().count;
  ASSERT_EQ(static_cast<int>(doc["runs"].size()), gpus + 1) << "one roofs run per GPU + the sweep";
  std::map<std::string, double> node;  // the first GPU's run holds the interconnect
  for (const auto& c : doc["runs"][0]["machine"]["ceilings"])
    node[c["name"].get<std::string>()] = c["measured"].get<double>();
  for (int g = 0; g < gpus; ++g) {
    const auto& machine = doc["runs"][static_cast<std::size_t>(g)]["machine"];
    EXPECT_EQ(machine["gpu"]["index"].get<int>(), g);
    bool hbm = false;
    for (const auto& c : machine["ceilings"]) hbm = hbm || c["name"] == "hbm_copy";
    EXPECT_TRUE(hbm) << "GPU " << g << " has its own HBM roof";
  }
  for (const char* name : {"p2p_ce_0to1", "p2p_ce_1to0", "p2p_sm_0to1", "p2p_latency_0to1"}) {
    ASSERT_TRUE(node.count(name)) << name;
    EXPECT_GT(node[name], 0) << name;
  }
  // PCIe Gen4 x16 moves ~25 GB/s, NVLink 4 up to 450 GB/s per direction.
  EXPECT_GT(node["p2p_ce_0to1"], 10e9);
  EXPECT_LT(node["p2p_ce_0to1"], 1000e9);
  EXPECT_GT(node["p2p_latency_0to1"], 100e-9);
  EXPECT_LT(node["p2p_latency_0to1"], 100e-6);
  // NVLinked GPUs: the copy roofs carry NVML's link rate as their theoretical
  // value, and no copy passes it (PCIe peers have none).
  for (const auto& c : doc["runs"][0]["machine"]["ceilings"]) {
    const std::string name = c["name"].get<std::string>();
    if (!name.starts_with("p2p_ce_") && !name.starts_with("p2p_sm_")) continue;
    if (c["theoretical"].is_null()) {
      std::printf("%s: no NVLink rate (PCIe peers, or NVML cannot say)\n", name.c_str());
      continue;
    }
    std::printf("%s: %.1f GB/s of %.1f (%s)\n", name.c_str(), c["measured"].get<double>() / 1e9,
                c["theoretical"].get<double>() / 1e9,
                c["theoretical_source"].get<std::string>().c_str());
    EXPECT_LE(c["measured"].get<double>(), 1.005 * c["theoretical"].get<double>()) << name;
    EXPECT_NE(c["theoretical_source"].get<std::string>().find("active NVLinks"), std::string::npos);
  }
  const nlohmann::json& sweep = doc["runs"][static_cast<std::size_t>(gpus)];
  std::set<int> measured_by = check_every_point_once(sweep, 7);
  EXPECT_EQ(static_cast<int>(measured_by.size()), std::min(gpus, 7)) << "every GPU took a share";
  // One metric set, 7 points: each GPU's points are one counter collection,
  // however many chunks of the reserve it took (a chunk keeps its points
  // waiting for the next one's).
  std::map<int, std::set<double>> collections;  // per GPU, by the collection's wall time
  for (const auto& point : sweep["points"])
    collections[point["details"]["gpu"]["index"].get<int>()].insert(
        point["details"]["counters"]["batch_seconds"].get<double>());
  for (const auto& [gpu, times] : collections)
    EXPECT_EQ(times.size(), 1u) << "GPU " << gpu << "'s points in " << times.size()
                                << " counter collections";
}

// Every GPU's host-timed roofs in processes of their own, under `--devices`: each
// GPU's device worker starts the host windows' own workers (nested workers; the
// host lock keeps the GPUs' host-timed roofs from running at once).
TEST(Devices, EveryGpusHostTimedRoofsAreMeasuredInProcessesOfTheirOwn) {
  TR_REQUIRE_GPU();
  if (count_gpus().count < 2) GTEST_SKIP() << "needs two GPUs (this machine has one)";
  TempDir dir;
  const std::string db = dir.file("t.db");
  const test::ToolResult roofs =
      run_tool({"ceilings", "--devices", "all", "--only", "launch_async", "--db", db});
  ASSERT_EQ(roofs.exit_code, 0) << roofs.err;
  const nlohmann::json doc = export_of(db);
  const int gpus = count_gpus().count;
  ASSERT_EQ(static_cast<int>(doc["runs"].size()), gpus);
  for (int g = 0; g < gpus; ++g) {
    const auto& machine = doc["runs"][static_cast<std::size_t>(g)]["machine"];
    EXPECT_EQ(machine["gpu"]["index"].get<int>(), g);
    ASSERT_EQ(machine["ceilings"].size(), 1u) << machine["ceilings"];
    const std::string method = machine["ceilings"][0]["method"].get<std::string>();
    std::printf("GPU %d launch_async: %s\n", g, method.substr(0, 300).c_str());
    EXPECT_NE(method.find("measured in 5 windows, each in a process of its own"), std::string::npos)
        << method;
    EXPECT_EQ(method.find("failed"), std::string::npos) << method;
  }
}

}  // namespace
}  // namespace timeroof
