// Theoretical roofs: every roof maps to a CUPTI peak the chip really has
// (checked offline per chip), and the arithmetic peak x work x clock is right.
#include <gtest/gtest.h>

#include "counters/metric_host.hpp"
#include "counters/theoretical_peaks.hpp"
#include "kernels/ceilings.hpp"

namespace timeroof {
namespace {

// Transfers and launches have no counter peak; the working-set sweep is a curve.
bool has_no_peak(const std::string& name) {
  return name == "working_set" || name.rfind("launch_", 0) == 0 ||
         name.find("2h_") != std::string::npos || name.find("2d_") != std::string::npos;
}

TEST(TheoreticalPeaks, EveryDeviceRoofHasAFormula) {
  for (const std::string& name : known_ceiling_names()) {
    if (has_no_peak(name))
      EXPECT_FALSE(peak_formula(name)) << name;
    else
      EXPECT_TRUE(peak_formula(name)) << name;
  }
}

TEST(TheoreticalPeaks, FormulaMetricsExistPerChip) {
  for (const char* chip : {"GH100", "GA100", "AD102"}) {
    const MetricHost host(chip);
    for (const std::string& name : known_ceiling_names()) {
      const auto formula = peak_formula(name);
      if (!formula) continue;
      const bool no_fp8_unit =
          std::string(chip) == "GA100" && name.find("fp8") != std::string::npos;
      bool found = false;
      for (const std::string& metric : formula->metric_candidates)
        found = found || host.has_metric(metric + ".peak_sustained");
      EXPECT_EQ(found, !no_fp8_unit) << chip << " " << name;
    }
  }
}

TEST(TheoreticalPeaks, PeakTimesWorkTimesObservedClock) {
  PeakRates rates;
  rates.sm_hz = 1.755e9;  // CUPTI's view during the probe; each roof's own clock wins
  rates.dram_hz = 2.619e9;
  rates.l2_hz = 1.6e9;
  rates.per_cycle["sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"] = 16896;
  rates.per_cycle["dram__bytes.sum.peak_sustained"] = 1536;
  rates.per_cycle["sm__ops_path_tensor_src_bf16_dst_fp32.sum.peak_sustained"] = 270336;
  rates.per_cycle["sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained"] = 16896;

  std::vector<Ceiling> ceilings(5);
  ceilings[0].name = "fp32_fma";
  ceilings[0].sm_clock_hz = 1.98e9;
  ceilings[1].name = "hbm_copy";
  ceilings[2].name = "cublaslt_bf16";
  ceilings[2].sm_clock_hz = 1.5e9;
  ceilings[3].name = "launch_async";
  ceilings[4].name = "fp16_fma";  // no measured clock: CUPTI's SM clock
  apply_theoretical_peaks(rates, ceilings);

  ASSERT_TRUE(ceilings[0].theoretical);
  EXPECT_DOUBLE_EQ(*ceilings[0].theoretical, 16896.0 * 2 * 1.98e9);  // 66.9 TFLOP/s
  EXPECT_NE(ceilings[0].theoretical_source.find("ffma"), std::string::npos);
  EXPECT_NE(ceilings[0].theoretical_source.find("during the measurement"), std::string::npos);
  EXPECT_DOUBLE_EQ(*ceilings[1].theoretical, 1536.0 * 2.619e9);  // 4.02 TB/s
  EXPECT_DOUBLE_EQ(*ceilings[2].theoretical, 270336.0 * 1.5e9);
  EXPECT_FALSE(ceilings[3].theoretical);
  EXPECT_DOUBLE_EQ(*ceilings[4].theoretical, 16896.0 * 4 * 1.755e9);
  EXPECT_NE(ceilings[4].theoretical_source.find("seen by CUPTI"), std::string::npos);
}

TEST(TheoreticalPeaks, VariantsShareTheirPathsPeak) {
  for (const char* name : {"tensor_bf16", "tensor_bf16_mma_sync", "cublaslt_bf16"}) {
    const auto formula = peak_formula(name);
    ASSERT_TRUE(formula) << name;
    EXPECT_EQ(formula->metric_candidates.front(), "sm__ops_path_tensor_src_bf16_dst_fp32.sum");
  }
  EXPECT_EQ(peak_formula("cublas_fp64")->metric_candidates.front(),
            "sm__ops_path_tensor_src_fp64.sum");
  EXPECT_FALSE(peak_formula("h2d_pinned"));
}

}  // namespace
}  // namespace timeroof
