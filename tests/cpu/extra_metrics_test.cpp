// CPU tier (#20): a sweep's extra metrics (--metrics) in a point's counters, from a
// hand-made range-profiler result: per kernel as counted, the operator's total by
// the metric's kind (counters/metric_catalog.hpp MetricTotal), and without extra
// metrics the point exactly as before.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "measure/counter_collection.hpp"

namespace timeroof {
namespace {

OperatorNeeds fp16_conv() {
  OperatorNeeds needs;
  needs.precision = Precision::fp16;
  return needs;
}

// Two kernels of 1 and 3 us; every metric of the plan gets value (k + 1) x base,
// the duration its own.
ProfileResult two_kernels(const CollectionPlan& plan, const std::map<std::string, double>& base) {
  ProfileResult result;
  result.metrics = plan.metrics;
  result.passes = plan.passes();
  for (int k = 0; k < 2; ++k) {
    RangeValues range{std::to_string(k), {}};
    for (const std::string& m : plan.metrics) {
      if (m == "gpu__time_duration.sum")
        range.values.push_back(k == 0 ? 1000.0 : 3000.0);  // ns
      else
        range.values.push_back((k + 1) * (base.count(m) ? base.at(m) : 1.0));
    }
    result.ranges.push_back(range);
  }
  return result;
}

Point traced_point() {
  Point point;
  point.kernels = {{"k0", {1, 1, 1}, {1, 1, 1}, 1e-6, {}}, {"k1", {1, 1, 1}, {1, 1, 1}, 3e-6, {}}};
  return point;
}

TEST(ExtraMetrics, StoredPerKernelWithTotalsByKind) {
  const std::vector<std::string> extra = {"sm__warps_active.avg.pct_of_peak_sustained_active",
                                          "sm__cycles_elapsed.avg", "sm__cycles_elapsed.max",
                                          "dram__bytes_read.sum"};
  const CollectionPlan plan = plan_collection("GH100", quantities_for(fp16_conv()), {}, extra);
  const ProfileResult result = two_kernels(
      plan, {{extra[0], 40}, {extra[1], 1000}, {extra[2], 1100}, {"dram__bytes_read.sum", 5e6}});
  Point point = traced_point();
  apply_counters(plan, result, {{"batch_size", 1}}, point);

  // Per kernel, as counted.
  EXPECT_DOUBLE_EQ(point.kernels[0].metrics.at(extra[0]), 40);
  EXPECT_DOUBLE_EQ(point.kernels[1].metrics.at(extra[0]), 80);
  EXPECT_DOUBLE_EQ(point.kernels[1].metrics.at(extra[1]), 2000);
  // The operator: pct weighted by duration (1 and 3 us), .avg summed, .max the max.
  EXPECT_DOUBLE_EQ(point.counters.at(extra[0]), (40 * 1 + 80 * 3) / 4.0);
  EXPECT_DOUBLE_EQ(point.counters.at(extra[1]), 3000);
  EXPECT_DOUBLE_EQ(point.counters.at(extra[2]), 2200);
  // A metric the catalog has anyway equals its quantity.
  EXPECT_DOUBLE_EQ(point.counters.at("dram__bytes_read.sum"), 15e6);
  EXPECT_DOUBLE_EQ(point.counters.at("dram_read_bytes"), 15e6);

  const nlohmann::json& listed = point.details.at("counters").at("extra_metrics");
  ASSERT_EQ(listed.size(), 4u);
  EXPECT_EQ(listed[0], (nlohmann::json{{"name", extra[0]}, {"total", "duration_weighted_mean"}}));
  EXPECT_EQ(listed[1].at("total"), "sum");
  EXPECT_EQ(listed[2].at("total"), "max");
  EXPECT_EQ(listed[3].at("total"), "as the catalog's");
  EXPECT_EQ(point.details.at("counters").at("passes"), plan.passes());
}

TEST(ExtraMetrics, WithoutThemThePointIsAsBefore) {
  const CollectionPlan plan = plan_collection("GH100", quantities_for(fp16_conv()));
  const ProfileResult result = two_kernels(plan, {});
  Point point = traced_point();
  apply_counters(plan, result, {{"batch_size", 1}}, point);
  EXPECT_FALSE(point.details.at("counters").contains("extra_metrics"));
  // The same totals as the catalog's own summing.
  std::map<std::string, double> totals = with_quantities(plan, sum_kernel_ranges(result));
  EXPECT_EQ(point.counters, totals);
  std::map<std::string, double> unchanged = sum_kernel_ranges(result);
  total_extra_metrics(plan, result, unchanged);
  EXPECT_EQ(unchanged, sum_kernel_ranges(result));
}

}  // namespace
}  // namespace timeroof
