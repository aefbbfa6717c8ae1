// roofline/compare.hpp: matching roofs and points across runs, ratios with their
// intervals, verdicts beyond the noise, and findings, on the bundled H100 and H200
// samples (the same default sweeps, recorded by the same commit).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/json_io.hpp"
#include "roofline/compare.hpp"
#include "tests/support/fixtures.hpp"

namespace timeroof::roofline {
namespace {

std::vector<RunRecord> sample(const std::string& name) {
  return test::load_runs("samples/" + name);
}

// Multiplies every measured time of a point (medians, intervals, extremes) by `factor`.
void slow_down(Point& point, double factor) {
  for (std::optional<TimeStats>* stats :
       {&point.timing.call, &point.timing.stream, &point.timing.graph}) {
    if (!*stats) continue;
    TimeStats& s = **stats;
    s.median_s *= factor;
    s.min_s *= factor;
    s.max_s *= factor;
    if (s.ci_low_s) *s.ci_low_s *= factor;
    if (s.ci_high_s) *s.ci_high_s *= factor;
    if (s.mean_s) *s.mean_s *= factor;
  }
  if (point.timing.kernel_time_s) *point.timing.kernel_time_s *= factor;
}

// The first point the model times (status ok, with T_stream or T_call).
Point& first_timed(std::vector<RunRecord>& records) {
  for (Point& p : records[0].points)
    if (p.status == PointStatus::ok && (p.timing.stream || p.timing.call)) return p;
  throw std::runtime_error("no timed point in the sample");
}

TEST(CompareRatio, IntervalsAddInQuadratureAndVerdictsNeedTheWholeInterval) {
  const Ratio exact = ratio_of(1.0, 0, 1.2, 0);
  EXPECT_DOUBLE_EQ(exact.value, 1.2);
  EXPECT_DOUBLE_EQ(exact.low, 1.2);
  EXPECT_EQ(verdict_of(exact, true, 0.05), Verdict::worse);    // a time 20% longer
  EXPECT_EQ(verdict_of(exact, false, 0.05), Verdict::better);  // a rate 20% higher
  // +-15% on each side: the interval reaches below 1.05, so not beyond the noise.
  const Ratio noisy = ratio_of(1.0, 0.15, 1.2, 0.15);
  EXPECT_NEAR(noisy.low, 1.2 * std::exp(-std::sqrt(2.0) * std::log1p(0.15)), 1e-12);
  EXPECT_LT(noisy.low, 1.05);
  EXPECT_EQ(verdict_of(noisy, true, 0.05), Verdict::same);
  // 3% slower without noise is within a 5% threshold.
  EXPECT_EQ(verdict_of(ratio_of(1.0, 0, 1.03, 0), true, 0.05), Verdict::same);
  EXPECT_EQ(verdict_of(ratio_of(1.0, 0, 0.8, 0), true, 0.05), Verdict::better);
  EXPECT_EQ(verdict_of(ratio_of(1.0, 0, 0.8, 0), false, 0.05), Verdict::worse);
}

TEST(CompareRuns, ARunAgainstItselfIsTheSameEverywhere) {
  const std::vector<RunRecord> h200 = sample("sample-run.json.gz");
  const Comparison c = compare_runs(h200, h200);
  EXPECT_TRUE(c.provenance.empty());
  EXPECT_EQ(c.roofs.size(), h200[0].run.machine.ceilings.size());
  EXPECT_GT(c.points.size(), 200u);
  for (const PointComparison& p : c.points) {
    EXPECT_DOUBLE_EQ(p.ratio.value, 1.0);
    EXPECT_EQ(p.verdict, Verdict::same);
    EXPECT_EQ(p.base_class, p.other_class);
  }
  EXPECT_TRUE(c.points_only_in_base.empty());
  EXPECT_TRUE(c.points_only_in_other.empty());
  EXPECT_TRUE(c.duplicates.empty());
  EXPECT_EQ(c.worse_count(), 0);
  EXPECT_EQ(c.points.size() + c.points_not_timed.size(), h200[0].points.size());
  EXPECT_FALSE(c.series.empty());
  EXPECT_TRUE(c.findings.empty()) << "nothing differs, so nothing to say: " << c.findings.front();
}

TEST(CompareRuns, ADeliberatelySlowedPointIsWorseAndOneWithinNoiseIsNot) {
  const std::vector<RunRecord> base = sample("sample-run.json.gz");
  std::vector<RunRecord> slowed = base;
  Point& point = first_timed(slowed);
  slow_down(point, 1.5);
  const Comparison c = compare_runs(base, slowed);
  ASSERT_EQ(c.worse_count(), 1);
  int found = 0;
  for (const PointComparison& p : c.points) {
    if (p.sweep != point.sweep || p.base_seq != point.seq) continue;
    ++found;
    EXPECT_NEAR(p.ratio.value, 1.5, 1e-9);
    EXPECT_GT(p.ratio.low, 1.05);
    EXPECT_EQ(p.verdict, Verdict::worse);
  }
  EXPECT_EQ(found, 1);
  // The one finding names the slowed point's batch and the rest of its series as the same.
  ASSERT_EQ(c.findings.size(), 1u) << c.findings.front();
  const std::string batch = "at batch " + param_value_text(point.params["batch"]) + " (1 point)";
  EXPECT_NE(c.findings[0].find("is 1.50x slower on " + point.sweep + " " + point.op),
            std::string::npos)
      << c.findings[0];
  EXPECT_NE(c.findings[0].find(batch), std::string::npos) << c.findings[0];
  EXPECT_NE(c.findings[0].find("; the same within noise at batch"), std::string::npos)
      << c.findings[0];
  std::vector<RunRecord> nudged = base;
  slow_down(first_timed(nudged), 1.02);
  const Comparison within_noise = compare_runs(base, nudged);
  EXPECT_EQ(within_noise.worse_count(), 0) << "2% is within a 5% threshold";
  EXPECT_TRUE(within_noise.findings.empty());
}

TEST(CompareRuns, PointsOnOneSideOnlyAndDifferentParametersAreListed) {
  const std::vector<RunRecord> base = sample("sample-run.json.gz");
  std::vector<RunRecord> other = base;
  const Point removed = other[0].points.front();
  other[0].points.erase(other[0].points.begin());
  Point changed = other[0].points.back();
  changed.params["batch"] = 3;  // a parameter set the base never measured
  changed.seq = 9999;
  other[0].points.push_back(changed);
  other[0].run.machine.ceilings.pop_back();
  const Comparison c = compare_runs(base, other);
  ASSERT_EQ(c.points_only_in_base.size(), 1u);
  EXPECT_EQ(c.points_only_in_base[0], removed.op + " " + removed.params.dump());
  ASSERT_EQ(c.points_only_in_other.size(), 1u);
  EXPECT_NE(c.points_only_in_other[0].find("\"batch\":3"), std::string::npos);
  ASSERT_EQ(c.roofs_only_in_base.size(), 1u);
  EXPECT_EQ(c.roofs_only_in_base[0], base[0].run.machine.ceilings.back().name);
  const nlohmann::json j = comparison_json(c);
  EXPECT_EQ(j["format"], kComparisonFormat);
  EXPECT_EQ(j["points_only_in_base"].size(), 1u);
  EXPECT_EQ(j["points"].size(), c.points.size());
}

TEST(CompareRuns, H100AgainstH200NamesTheGpusAndExplainsWhereTheH200Wins) {
  const Comparison c =
      compare_runs(sample("sample-run-h100.json.gz"), sample("sample-run.json.gz"));
  ASSERT_FALSE(c.provenance.empty());
  EXPECT_EQ(c.provenance[0].field, "gpu");
  EXPECT_EQ(c.provenance[0].base, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(c.provenance[0].other, "NVIDIA H200");
  EXPECT_GT(c.points.size(), 200u);
  EXPECT_TRUE(c.points_only_in_base.empty()) << "the same default sweeps on both";
  // The H200's HBM is faster: its HBM roofs are better beyond their noise.
  bool hbm_better = false;
  for (const RoofComparison& r : c.roofs)
    if (r.name == "hbm_copy") hbm_better = r.verdict == Verdict::better && r.ratio.value > 1.2;
  EXPECT_TRUE(hbm_better);
  // So the points bound by memory on both GPUs run faster on the H200, and none
  // slower; those bound by HBM by about what its roof gives (at most 1.47x).
  int memory_bound = 0, dram_bound = 0, dram_better = 0;
  for (const PointComparison& p : c.points) {
    if (p.base_class != p.other_class || p.base_class.rfind("memory_bound", 0) != 0) continue;
    ++memory_bound;
    EXPECT_NE(p.verdict, Verdict::worse) << p.op << " " << p.params.dump();
    if (p.base_class != "memory_bound(dram)") continue;
    ++dram_bound;
    dram_better += p.verdict == Verdict::better;
    EXPECT_GT(p.ratio.value, 1 / 1.5) << p.op << " " << p.params.dump();
  }
  EXPECT_GE(memory_bound, 20);
  EXPECT_GE(dram_bound, 10);
  EXPECT_GE(dram_better, dram_bound * 9 / 10) << dram_better << " of " << dram_bound;
  ASSERT_FALSE(c.findings.empty());
  for (const std::string& f : c.findings) std::printf("%s\n", f.c_str());
}

TEST(CompareRuns, FindingsSayOverWhichBatchRangeAVerdictHolds) {
  const Comparison c =
      compare_runs(sample("sample-run-h100.json.gz"), sample("sample-run.json.gz"));
  // Both 14 series of the default sweeps, 1..1024 on each.
  EXPECT_EQ(c.series.size(), 14u);
  for (const ComparedSeries& s : c.series) {
    ASSERT_EQ(s.points.size(), 11u) << s.name();
    EXPECT_EQ(c.points[s.points.front()].params["batch"], 1);
    EXPECT_EQ(c.points[s.points.back()].params["batch"], 1024);
    EXPECT_TRUE(s.distinct.empty()) << "one series per operator and precision";
  }
  // conv2d bwd_data fp16: HBM-bound and faster on the H200 from batch 64 on,
  // the same below (the example of a verdict that changes with batch).
  auto finding = [&](const std::string& head) -> std::string {
    for (const std::string& f : c.findings)
      if (f.rfind(head, 0) == 0) return f;
    return "";
  };
  const std::string bwd_data = finding(
      "NVIDIA H200 is 1.23x faster on conv2d-default conv2d_bwd_data fp16 at batch >= 64 "
      "(5 points): memory_bound(dram) on both, and its dram roof is 1.47x");
  ASSERT_FALSE(bwd_data.empty());
  EXPECT_NE(bwd_data.find("; the same within noise at batch <= 32 (6 points)"), std::string::npos)
      << bwd_data;
  // The ranges agree with the verdicts: every point of bwd_data fp16 at batch
  // >= 64 is better, every one below is the same.
  for (const PointComparison& p : c.points) {
    if (p.op != "conv2d_bwd_data" || p.precision != "fp16" || p.params["filters"] != 64 ||
        p.params["stride"] != 2 || p.params["filter"] != 3)
      continue;
    const int batch = p.params["batch"].get<int>();
    EXPECT_EQ(p.verdict, batch >= 64 ? Verdict::better : Verdict::same) << batch;
  }
  // A series faster everywhere says so once.
  EXPECT_FALSE(finding("NVIDIA H200 is 1.51x faster on lstm-default lstm_backward_data fp32 at "
                       "every batch, 1-1024 (11 points)")
                   .empty());
}

// A side of two runs (BASE = "3,4") that both measured the same points compares
// each point once, with the newest run's measurement, and names both.
TEST(CompareRuns, APointMeasuredInTwoRunsOfASideIsComparedOnceWithTheNewest) {
  const std::vector<RunRecord> h200 = sample("sample-run.json.gz");
  RunRecord older = h200[0], newer = h200[0];
  older.run.id = 3;
  older.run.started_at = "2026-11-20T10:00:00.000Z";
  newer.run.id = 4;
  newer.run.started_at = "2026-11-21T10:00:00.000Z";
  std::vector<RunRecord> newer_slowed = {newer};
  Point& slowed = first_timed(newer_slowed);
  slow_down(slowed, 1.5);
  newer = newer_slowed[0];
  // The newest wins whichever order the side lists its runs in.
  for (const auto& side :
       {std::vector<RunRecord>{older, newer}, std::vector<RunRecord>{newer, older}}) {
    const Comparison c = compare_runs(h200, side);
    EXPECT_EQ(c.points.size() + c.points_not_timed.size(), h200[0].points.size())
        << "each point once";
    EXPECT_EQ(c.worse_count(), 1) << "the newer run's slowed point is the one compared";
    ASSERT_EQ(c.duplicates.size(), h200[0].points.size());
    for (const DuplicatePoint& d : c.duplicates) {
      EXPECT_EQ(d.side, "other");
      ASSERT_EQ(d.measured_in.size(), 2u);
      EXPECT_EQ(d.measured_in[0].rfind("run 3 (2026-11-20", 0), 0u) << d.measured_in[0];
      EXPECT_EQ(d.measured_in[1].rfind("run 4 (2026-11-21", 0), 0u) << d.measured_in[1];
      if (d.point == slowed.op + " " + slowed.params.dump()) {
        EXPECT_EQ(d.kept, d.measured_in[1]);
      }
    }
    for (const PointComparison& p : c.points)
      EXPECT_EQ(p.other_ref.run, side[0].run.id == 4 ? 0u : 1u) << "every point from run 4";
  }
  // A newer measurement that failed does not hide an older good one.
  RunRecord failed = newer;
  for (Point& p : failed.points) p.status = PointStatus::failed;
  const Comparison c = compare_runs(h200, {older, failed});
  EXPECT_EQ(c.points_not_timed.size(), compare_runs(h200, h200).points_not_timed.size())
      << "only the points that failed in run 3 too";
  EXPECT_EQ(c.worse_count(), 0) << "run 3's measurements, the same as the base";
}

TEST(CompareRuns, JsonCarriesSeriesDuplicatesAndTheParameter) {
  const std::vector<RunRecord> h200 = sample("sample-run.json.gz");
  const Comparison c = compare_runs(h200, h200);
  const nlohmann::json j = comparison_json(c);
  EXPECT_EQ(j["schema_version"], kComparisonSchemaVersion);
  EXPECT_EQ(j["parameter"], "batch");
  ASSERT_EQ(j["series"].size(), c.series.size());
  EXPECT_EQ(j["series"][0]["points"].size(), c.series[0].points.size());
  EXPECT_TRUE(j["duplicates"].empty());
  EXPECT_TRUE(j["findings"].empty());
}

}  // namespace
}  // namespace timeroof::roofline
