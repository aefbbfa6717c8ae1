// Theoretical roofs: every roof maps to a CUPTI peak the chip really has
// (checked offline per chip), and the arithmetic peak x work x clock is right.
#include <gtest/gtest.h>

#include "kernels/clock_span.hpp"

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
      for (const PeakTerm& term : formula->candidates)
        found = found || host.has_metric(term.metric + ".peak_sustained");
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
  // H200 values read by CUPTI 13: dense hgmma bf16 4096 FLOP/SM/cycle, the
  // sparse path twice that; 2 fmaheavy warp instructions per SM-cycle.
  rates
      .per_cycle["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained"] =
      540672;
  rates.per_cycle["sm__ops_path_tensor_src_bf16_dst_fp32.sum.peak_sustained"] = 1081344;
  rates.per_cycle["sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained"] = 16896;
  rates.per_cycle["sm__inst_executed_pipe_fmaheavy.sum.peak_sustained"] = 264;
  rates.per_cycle["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.peak_sustained"] = 132;

  std::vector<Ceiling> ceilings(6);
  ceilings[0].name = "fp32_fma";
  ceilings[0].sm_clock_hz = 1.98e9;
  ceilings[1].name = "hbm_copy";
  ceilings[2].name = "cublaslt_bf16";
  ceilings[2].sm_clock_hz = 1.5e9;
  ceilings[3].name = "launch_async";
  ceilings[4].name = "fp16_fma";  // no measured clock: CUPTI's SM clock
  ceilings[5].name = "shared_read";
  ceilings[5].sm_clock_hz = 1.98e9;
  apply_theoretical_peaks(rates, ceilings);

  ASSERT_TRUE(ceilings[0].theoretical);
  EXPECT_DOUBLE_EQ(*ceilings[0].theoretical, 16896.0 * 2 * 1.98e9);  // 66.9 TFLOP/s
  EXPECT_NE(ceilings[0].theoretical_source.find("ffma"), std::string::npos);
  EXPECT_NE(ceilings[0].theoretical_source.find("during the measurement"), std::string::npos);
  EXPECT_DOUBLE_EQ(*ceilings[1].theoretical, 1536.0 * 2.619e9);  // 4.02 TB/s
  EXPECT_DOUBLE_EQ(*ceilings[2].theoretical, 540672.0 * 1.5e9);  // dense, not sparse
  EXPECT_NE(ceilings[2].theoretical_source.find("sparsity_off"), std::string::npos);
  EXPECT_FALSE(ceilings[3].theoretical);
  // HFMA2 fills both FMA pipes: the FP32 FMA rate in FLOP, not twice it.
  EXPECT_DOUBLE_EQ(*ceilings[4].theoretical, 264.0 * 128 * 1.755e9);
  EXPECT_DOUBLE_EQ(*ceilings[4].theoretical, 16896.0 * 2 * 1.755e9);
  EXPECT_NE(ceilings[4].theoretical_source.find("seen by CUPTI"), std::string::npos);
  EXPECT_DOUBLE_EQ(*ceilings[5].theoretical, 132.0 * 128 * 1.98e9);  // 33.5 TB/s
}

TEST(TheoreticalPeaks, VariantsShareTheirPathsPeak) {
  for (const char* name : {"tensor_bf16", "tensor_bf16_mma_sync", "cublaslt_bf16"}) {
    const auto formula = peak_formula(name);
    ASSERT_TRUE(formula) << name;
    EXPECT_EQ(formula->candidates.front().metric,
              "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum");
  }
  EXPECT_EQ(peak_formula("cublas_fp64")->candidates.front().metric,
            "sm__ops_path_tensor_src_fp64.sum");
  EXPECT_FALSE(peak_formula("h2d_pinned"));
}

// The clock a roof kernel ran at, from its blocks' cycle and timer spans: the
// median block, spans too short for the timer left out.
TEST(ClockSpans, MedianClockOverTheBlocksOwnExecution) {
  std::vector<ClockSpan> spans = {{0, 1'600'000, 0, 1'000'000},    // 1.6 GHz over 1 ms
                                  {100, 1'700'100, 5, 1'000'005},  // 1.7 GHz
                                  {0, 1'800'000, 0, 1'000'000},    // 1.8 GHz
                                  {0, 5'000, 0, 500},     // 0.5 us: below the timer's resolution
                                  {0, 0, 0, 1'000'000}};  // no cycles
  ASSERT_TRUE(median_clock_hz(spans));
  EXPECT_NEAR(*median_clock_hz(spans), 1.7e9, 1);
  EXPECT_FALSE(median_clock_hz({}));
  EXPECT_FALSE(median_clock_hz({{0, 5'000, 0, 500}}));
  EXPECT_EQ(with_clock_spans(1024, 3), 1024 + 3 * sizeof(ClockSpan));
}

// One clock per slot a launch wrote (slots hold `blocks` spans each, in order);
// a slot no launch reached (zeros) gives none.
TEST(ClockSpans, OneClockPerWrittenSlot) {
  const int blocks = 2;
  std::vector<ClockSpan> spans(static_cast<std::size_t>(blocks) * kClockSpanSlots);
  for (int slot = 0; slot < kClockSpanSlots - 1; ++slot) {
    const long long cycles = 1'000'000LL + 100'000LL * slot;  // 1.0, 1.1, ... GHz over 1 ms
    for (int block = 0; block < blocks; ++block)
      spans[static_cast<std::size_t>(slot * blocks + block)] = {0, cycles, 0, 1'000'000};
  }
  const std::vector<double> clocks = slot_clocks_hz(spans, blocks);
  ASSERT_EQ(clocks.size(), static_cast<std::size_t>(kClockSpanSlots - 1));
  for (std::size_t slot = 0; slot < clocks.size(); ++slot)
    EXPECT_NEAR(clocks[slot], 1.0e9 + 0.1e9 * static_cast<double>(slot), 1) << "slot " << slot;
}

}  // namespace
}  // namespace timeroof
