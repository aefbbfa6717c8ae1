// GPU tier (#20): `sweep conv2d --metrics` on one point stores the extra metrics
// per kernel and as operator totals, records the list in the run's spec, and the
// catalog's DRAM read quantity agrees with the same metric asked for by name.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/store/results_store.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

using test::run_tool;
using test::TempDir;

TEST(CliMetrics, AOnePointConv2dSweepStoresTheExtraMetrics) {
  TR_REQUIRE_GPU();
  const TempDir dir;
  const std::string db = dir.file("m.db");
  const std::vector<std::string> extra = {"sm__cycles_elapsed.avg", "dram__bytes_read.sum"};
  // Cold L2, so the conv's input comes from DRAM and its read bytes are > 0.
  const test::ToolResult r = run_tool({"sweep", "conv2d", "--batch", "16", "--l2", "cold",
                                       "--metrics", extra[0] + "," + extra[1], "--db", db});
  ResultsStore store = ResultsStore::open(db, ResultsStore::Access::read_only);
  const std::vector<RunRecord> runs = store.load_all();
  ASSERT_EQ(runs.size(), 1u) << r.err;
  ASSERT_EQ(runs[0].points.size(), 1u) << r.err;
  const Point& p = runs[0].points[0];
  if (p.status == PointStatus::counters_unavailable) GTEST_SKIP() << "no counters: " << p.reason;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;

  // Provenance: the run's stored spec and its command line name the list.
  EXPECT_EQ(runs[0].run.spec["sweeps"][0]["metrics"], nlohmann::json(extra));
  EXPECT_NE(runs[0].run.command_line.find("--metrics"), std::string::npos);
  const nlohmann::json& listed = p.details["counters"]["extra_metrics"];
  ASSERT_EQ(listed.size(), 2u) << p.details["counters"];
  EXPECT_EQ(listed[0], (nlohmann::json{{"name", extra[0]}, {"total", "sum"}}));
  EXPECT_EQ(listed[1]["name"], extra[1]);

  for (const std::string& m : extra) {
    ASSERT_TRUE(p.counters.count(m)) << m;
    EXPECT_GT(p.counters.at(m), 0) << m;
  }
  // The catalog's DRAM read quantity is the same counter: within 1%.
  ASSERT_TRUE(p.counters.count("dram_read_bytes"));
  const double quantity = p.counters.at("dram_read_bytes");
  EXPECT_NEAR(p.counters.at(extra[1]), quantity, 0.01 * quantity);

  // Per kernel, each counted; the operator's sm__cycles_elapsed.avg is their sum.
  ASSERT_TRUE(p.details["counters"].value("per_kernel", false)) << p.details["counters"];
  ASSERT_FALSE(p.kernels.empty());
  double cycles = 0;
  for (const KernelRecord& k : p.kernels) {
    ASSERT_TRUE(k.metrics.count(extra[0])) << k.name;
    ASSERT_TRUE(k.metrics.count(extra[1])) << k.name;
    EXPECT_GT(k.metrics.at(extra[0]), 0) << k.name;
    cycles += k.metrics.at(extra[0]);
  }
  EXPECT_NEAR(p.counters.at(extra[0]), cycles, 1e-9 * cycles);

  // And kernel_counters.csv carries them.
  ASSERT_EQ(run_tool({"export", "--db", db, "--format", "csv", "--out", dir.file("csv")}).exit_code,
            0);
  const std::string csv = test::read_file(dir.file("csv/kernel_counters.csv"));
  EXPECT_EQ(test::count_occurrences(csv, "," + extra[0] + ","), p.kernels.size());
}

}  // namespace
}  // namespace timeroof
