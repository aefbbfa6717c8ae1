// roofline/compare.hpp: matching roofs and points across runs, ratios with their
// intervals, verdicts beyond the noise, and findings, on the bundled H100 and H200
// samples (the same default sweeps, recorded by the same commit).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "roofline/compare.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof::roofline {
namespace {

std::vector<RunRecord> sample(const std::string& name) {
  const std::string path = test::source_dir() + "/samples/" + name;
  return parse_export_document(nlohmann::json::parse(test::read_file(path)), path);
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
  const std::vector<RunRecord> h200 = sample("sample-run.json");
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
  EXPECT_EQ(c.worse_count(), 0);
  EXPECT_EQ(c.points.size() + c.points_not_timed.size(), h200[0].points.size());
}

TEST(CompareRuns, ADeliberatelySlowedPointIsWorseAndOneWithinNoiseIsNot) {
  const std::vector<RunRecord> base = sample("sample-run.json");
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
  std::vector<RunRecord> nudged = base;
  slow_down(first_timed(nudged), 1.02);
  EXPECT_EQ(compare_runs(base, nudged).worse_count(), 0) << "2% is within a 5% threshold";
}

TEST(CompareRuns, PointsOnOneSideOnlyAndDifferentParametersAreListed) {
  const std::vector<RunRecord> base = sample("sample-run.json");
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
  const Comparison c = compare_runs(sample("sample-run-h100.json"), sample("sample-run.json"));
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
  ASSERT_FALSE(c.findings.empty());
  bool explained = false;
  for (const std::string& f : c.findings)
    explained = explained ||
                (f.find("memory_bound(dram) on both, and its dram roof is") != std::string::npos);
  EXPECT_TRUE(explained) << c.findings.front();
  for (const std::string& f : c.findings) std::printf("%s\n", f.c_str());
}

}  // namespace
}  // namespace timeroof::roofline
