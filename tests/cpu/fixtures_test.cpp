// Recorded real runs (tests/fixtures, H200): they parse, survive the store
// exactly, and hold what a ceilings run must hold. Later model and report
// tests build on the same files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/json_io.hpp"
#include "src/store/results_store.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

RunRecord load_fixture(const std::string& name) {
  return test::load_run("tests/fixtures/" + name);
}

const Ceiling* find(const Machine& machine, const std::string& name) {
  const auto it = std::find_if(machine.ceilings.begin(), machine.ceilings.end(),
                               [&](const Ceiling& c) { return c.name == name; });
  return it == machine.ceilings.end() ? nullptr : &*it;
}

TEST(Fixtures, CeilingsRunHoldsEveryRoofWithProvenance) {
  const RunRecord record = load_fixture("ceilings-h200-run1.json");
  const Machine& machine = record.run.machine;
  EXPECT_EQ(machine.gpu.chip, "GH100");
  EXPECT_TRUE(machine.gpu.counters.available);
  EXPECT_NE(record.run.command_line.find("timeroof ceilings"), std::string::npos);
  for (const char* name :
       {"launch_async", "h2d_pinned", "hbm_copy", "l2_read", "shared_read", "fp32_fma", "fp16_fma",
        "tensor_bf16", "tensor_fp8", "tensor_fp64", "cublaslt_bf16"}) {
    const Ceiling* c = find(machine, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_GT(c->measured, 0) << name;
    EXPECT_GT(c->repeats, 0) << name;
    EXPECT_TRUE(c->sm_clock_hz) << name;
    EXPECT_FALSE(c->method.empty()) << name;
  }
  for (const Ceiling& c : machine.ceilings) {
    if (!c.theoretical) continue;
    // A measured roof above its theoretical one means a wrong formula or clock.
    EXPECT_LE(c.measured, *c.theoretical * 1.02) << c.name << ": " << c.theoretical_source;
    EXPECT_NE(c.theoretical_source.find("peak_sustained"), std::string::npos) << c.name;
  }
  for (const CeilingSkip& skip : machine.skipped) EXPECT_FALSE(skip.reason.empty());
}

TEST(Fixtures, WorkingSetCurveShowsTheCacheLevels) {
  const Machine machine = load_fixture("ceilings-h200-run1.json").run.machine;
  const auto& curve = machine.working_set;
  ASSERT_GE(curve.size(), 10u);
  EXPECT_LE(curve.front().bytes, 64 * 1024.0);
  EXPECT_GE(curve.back().bytes, 4.0 * machine.gpu.l2_bytes);
  // Small working sets (in L1) run several times faster than ones far beyond L2 (HBM).
  EXPECT_GT(curve.front().bytes_per_second, 4 * curve.back().bytes_per_second);
  // The far end of the curve agrees with the HBM read roof within 10%.
  const Ceiling* hbm = find(machine, "hbm_read");
  ASSERT_NE(hbm, nullptr);
  EXPECT_NEAR(curve.back().bytes_per_second / hbm->measured, 1.0, 0.10);
}

TEST(Fixtures, StoreRoundTripIsExact) {
  test::TempDir dir;
  const RunRecord original = load_fixture("ceilings-h200-run2.json");
  {
    ResultsStore store = ResultsStore::open(dir.file("f.db"), ResultsStore::Access::read_write);
    store.import_runs({original});
  }
  ResultsStore store = ResultsStore::open(dir.file("f.db"), ResultsStore::Access::read_only);
  const std::vector<RunRecord> loaded = store.load_all();
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(export_document(loaded).dump(), export_document({original}).dump());
}

// The recorded batch sweep (fp16 conv2d forward, batch 1..1024 on an H200): what
// the runner stores for a point, checked against the physics it must obey.
TEST(Fixtures, BatchSweepPointsAreCompleteAndConsistent) {
  const RunRecord record = load_fixture("conv2d-batch-h200.json");
  ASSERT_EQ(record.points.size(), 11u);
  for (std::size_t i = 0; i < record.points.size(); ++i) {
    const Point& p = record.points[i];
    SCOPED_TRACE(p.params.dump());
    EXPECT_EQ(p.status, PointStatus::ok) << p.reason;
    EXPECT_EQ(p.seq, static_cast<int>(i));
    EXPECT_EQ(p.params.at("batch").get<int>(), 1 << i);
    EXPECT_EQ(p.details.at("check").at("status"), "passed");
    ASSERT_TRUE(p.timing.call && p.timing.stream && p.timing.graph && p.timing.issue &&
                p.timing.kernel_time_s && p.timing.launches);
    EXPECT_EQ(p.details.at("timing").at("process"), "timing worker");
    // A call cannot take less device time than its one kernel runs. T_graph and
    // T_k come from separate passes in separate processes (power-capped clocks
    // moved the first pass, T_call, up to 14% below the last here), so 10%.
    EXPECT_GE(*p.timing.graph_s() * 1.10, *p.timing.kernel_time_s);
    EXPECT_EQ(p.kernels.size(), static_cast<std::size_t>(*p.timing.launches));
    EXPECT_LE(p.details.at("counters").at("passes").get<int>(), 3);
    // Tensor Cores do at least the analytic work; cuDNN pads some shapes (batch 2:
    // 14% more), never less.
    const double tensor = p.counters.at("tensor_fp16_flops");
    EXPECT_GE(tensor, p.flops * 0.999);
    EXPECT_LE(tensor, p.flops * 1.2);
    // DRAM reads are L2 misses: never more than the L2 traffic.
    EXPECT_LE(p.counters.at("dram_read_bytes"), p.counters.at("l2_bytes"));
  }
  // Doubling the batch doubles the work: the time of the largest points follows.
  const Point& big = record.points[10];
  const Point& half = record.points[9];
  // Kernel time as the counter pass measured it (gpu__time_duration summed over
  // the call's kernels): the trace pass's mean of 5 calls once caught a slow call
  // (725 us against 614 us replayed at batch 1024).
  EXPECT_NEAR(big.counters.at("duration") / half.counters.at("duration"), 2.0, 0.2);
}

// samples/README.md quotes each sample's own provenance: in the sample's row of
// its table, the commit that recorded it and each run's time, started_at to
// finished_at.
TEST(Samples, TheReadmeQuotesEachSamplesCommitAndRunTime) {
  const std::string readme = test::read_file(test::source_dir() + "/samples/README.md");
  const auto seconds = [](const std::string& iso) {  // 2026-11-23T20:55:53.321Z
    return std::stoi(iso.substr(11, 2)) * 3600.0 + std::stoi(iso.substr(14, 2)) * 60.0 +
           std::stod(iso.substr(17, 6));
  };
  for (const char* file :
       {"sample-full-run-h200.json.gz", "sample-run.json.gz", "sample-run-h100.json.gz"}) {
    const auto doc = nlohmann::json::parse(
        test::read_export_text(test::source_dir() + "/samples/" + std::string(file)));
    const std::size_t row = readme.find("| `" + std::string(file) + "` |");
    ASSERT_NE(row, std::string::npos) << file;
    const std::string line = readme.substr(row, readme.find('\n', row) - row);
    for (const nlohmann::json& run : doc.at("runs")) {
      const std::string sha = run.at("git_sha");
      EXPECT_EQ(doc.at("exported_by").at("git_sha"), sha) << file;
      EXPECT_NE(line.find("| `" + sha.substr(0, 12) + "`"), std::string::npos) << line;
      const std::string started = run.at("started_at"), finished = run.at("finished_at");
      ASSERT_EQ(started.substr(0, 10), finished.substr(0, 10)) << "one day";
      const long run_s = std::lround(seconds(finished) - seconds(started));
      EXPECT_NE(line.find(" " + std::to_string(run_s) + " s"), std::string::npos)
          << line << " (the file says " << run_s << " s)";
    }
  }
}

// Every time in an export names its unit (#20): the counters' "duration" (s)
// and CUPTI's "gpu__time_duration.sum" (ns) get unit-labelled twins; import
// drops the twins, so the sample's file (written before them) and a new export
// read back to the same runs, and export -> import -> export is exact.
TEST(Samples, ExportTimesNameTheirUnitAndImportReadsOldAndNew) {
  const nlohmann::json old = nlohmann::json::parse(
      test::read_export_text(test::source_dir() + "/samples/sample-run.json.gz"));
  EXPECT_FALSE(old.contains("units")) << "the sample predates the twins";
  const std::vector<RunRecord> runs = parse_export_document(old, "sample-run.json.gz");
  const nlohmann::json doc = export_document(runs);
  EXPECT_TRUE(doc.at("units").at("time").is_string());
  const nlohmann::json& point = doc.at("runs").at(0).at("points").at(0);
  const nlohmann::json& counters = point.at("counters");
  // The H200 sample's first point: its kernel counted 5.76 us.
  EXPECT_EQ(counters.at("gpu__time_duration.sum").get<double>(), 5760.0);
  EXPECT_EQ(counters.at("gpu__time_duration.sum_ns").get<double>(), 5760.0);
  EXPECT_NEAR(counters.at("gpu__time_duration.sum_s").get<double>(), 5.76e-6, 1e-15);
  EXPECT_EQ(counters.at("duration_s"), counters.at("duration"));
  EXPECT_NEAR(counters.at("duration").get<double>(), 5.76e-6, 1e-15);
  const nlohmann::json& metrics = point.at("kernels").at(0).at("metrics");
  EXPECT_EQ(metrics.at("gpu__time_duration.sum_ns"), metrics.at("gpu__time_duration.sum"));
  EXPECT_EQ(metrics.at("duration_s"), metrics.at("duration"));
  // No other key of a counters map lacks its unit: every time-like key has a twin.
  for (auto it = counters.begin(); it != counters.end(); ++it)
    if (it.key().find("duration") != std::string::npos && !it.key().ends_with("_s") &&
        !it.key().ends_with("_ns"))
      EXPECT_TRUE(counters.contains(it.key() + "_s") || counters.contains(it.key() + "_ns"))
          << it.key();
  const std::vector<RunRecord> again = parse_export_document(doc, "new.json");
  ASSERT_EQ(again.size(), runs.size());
  EXPECT_EQ(again.front().points.front().counters, runs.front().points.front().counters)
      << "the twins are not read back as counters";
  EXPECT_EQ(again.front().points.front().counters.count("duration_s"), 0u);
  EXPECT_EQ(export_document(again).dump(), doc.dump());
  // A counter of a twin's name without its source is data, and stays.
  nlohmann::json lone = doc;
  lone["runs"][0]["points"][0]["counters"].erase("duration");
  const std::vector<RunRecord> kept = parse_export_document(lone, "lone.json");
  EXPECT_EQ(kept.front().points.front().counters.count("duration_s"), 1u);
}

}  // namespace
}  // namespace timeroof
