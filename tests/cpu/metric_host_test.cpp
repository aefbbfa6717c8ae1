// The CUPTI profiler host API offline: no GPU, only a chip name. Checks every
// metric name timeroof relies on exists per chip and pins the pass count of the
// roofline metric set (a change means a CUPTI upgrade changed the cost of a sweep).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "counters/metric_host.hpp"

namespace timeroof {
namespace {

// Quantities every chip must provide for the roofline: time, clocks, CUDA-core
// FLOPs per precision, bytes at L1 / L2 / DRAM, and the FP64/TF32 tensor paths.
const std::vector<std::string> kCommonRooflineSet = {
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "sm__ops_path_tensor_src_fp64.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
};

struct ChipCase {
  const char* chip;
  std::size_t min_base_metrics;  // a floor well under what CUPTI 13 lists (3,002 to 3,651)
  std::vector<std::string> tensor_metrics;  // the chip's own half-precision tensor paths
  std::size_t passes;                       // kCommonRooflineSet + tensor_metrics, CUPTI 13.0
};

void PrintTo(const ChipCase& c, std::ostream* out) {
  *out << c.chip;
}

class MetricHostOffline : public ::testing::TestWithParam<ChipCase> {};

TEST_P(MetricHostOffline, ChipIsSupportedAndListsMetrics) {
  const ChipCase& c = GetParam();
  const std::vector<std::string> chips = MetricHost::supported_chips();
  ASSERT_NE(std::find(chips.begin(), chips.end(), c.chip), chips.end());
  const MetricHost host(c.chip);
  const std::vector<std::string> names = host.base_metrics();
  EXPECT_GE(names.size(), c.min_base_metrics);
  EXPECT_NE(std::find(names.begin(), names.end(), "dram__bytes_read"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "sm__sass_thread_inst_executed_op_ffma_pred_on"),
            names.end());
}

TEST_P(MetricHostOffline, EveryRooflineMetricExists) {
  const ChipCase& c = GetParam();
  const MetricHost host(c.chip);
  for (const std::string& m : kCommonRooflineSet) EXPECT_TRUE(host.has_metric(m)) << m;
  for (const std::string& m : c.tensor_metrics) EXPECT_TRUE(host.has_metric(m)) << m;
}

TEST_P(MetricHostOffline, ConfigImageAndPassCount) {
  const ChipCase& c = GetParam();
  std::vector<std::string> metrics = kCommonRooflineSet;
  metrics.insert(metrics.end(), c.tensor_metrics.begin(), c.tensor_metrics.end());
  const ConfigImage config = build_config(c.chip, metrics);
  EXPECT_EQ(config.chip, c.chip);
  EXPECT_EQ(config.metrics, metrics);
  EXPECT_GT(config.bytes.size(), 1000u);
  EXPECT_EQ(config.passes, c.passes) << "roofline set on " << c.chip;
  // One counter alone fits in one pass; more metrics never need fewer passes.
  EXPECT_EQ(build_config(c.chip, {"dram__bytes_read.sum"}).passes, 1u);
}

TEST_P(MetricHostOffline, MisspelledMetricIsNamedInTheError) {
  const ChipCase& c = GetParam();
  try {
    build_config(c.chip, {"dram__bytes_read.sum", "dram__bytes_raed.sum", "lts__t_bytes.sum"});
    FAIL() << "no error for a misspelled metric";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(message.find("'dram__bytes_raed.sum'"), std::string::npos) << message;
    EXPECT_EQ(message.find("'dram__bytes_read.sum'"), std::string::npos) << message;
    EXPECT_NE(message.find(c.chip), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Chips, MetricHostOffline,
    ::testing::Values(
        ChipCase{"GH100",
                 3000,
                 {"sm__ops_path_tensor_src_fp16.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
                  "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum",
                  "sm__ops_path_tensor_src_fp8.sum", "sm__ops_path_tensor_src_int8.sum"},
                 7},
        ChipCase{"GA100",
                 2500,
                 {"sm__ops_path_tensor_src_fp16_dst_fp32.sum",
                  "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "sm__ops_path_tensor_src_int8.sum"},
                 7},
        ChipCase{"AD102",
                 2500,
                 {"sm__ops_path_tensor_src_fp16_dst_fp32.sum",
                  "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "sm__ops_path_tensor_src_fp8.sum",
                  "sm__ops_path_tensor_src_int8.sum"},
                 8}),
    [](const ::testing::TestParamInfo<ChipCase>& info) { return std::string(info.param.chip); });

TEST(MetricHost, UnknownChipListsTheKnownOnes) {
  try {
    MetricHost host("GX999");
    FAIL() << "no error for an unknown chip";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("GH100"), std::string::npos) << e.what();
  }
}

// `timeroof metrics` shows each metric's unit and description (#20): CUPTI's, per name,
// for base and full names alike.
TEST(MetricHost, PropertiesGiveUnitTypeAndDescription) {
  const MetricHost host("GH100");
  for (const char* name : {"dram__bytes_read", "dram__bytes_read.sum"}) {
    const MetricHost::Properties p = host.properties(name);
    EXPECT_EQ(p.type, "counter") << name;
    EXPECT_EQ(p.unit, "byte") << name;
    EXPECT_EQ(p.hw_unit, "dram") << name;
    EXPECT_EQ(p.description, "# of bytes read from DRAM") << name;
  }
  try {
    (void)host.properties("dram__bytes_raed");
    FAIL() << "no error for a misspelled metric";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("'dram__bytes_raed'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace timeroof
