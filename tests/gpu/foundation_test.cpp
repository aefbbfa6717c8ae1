// GPU tier, foundation: device description, counter access proven by an exact
// count, the range profiler's ranges, and the CLI on a real GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "counters/counter_access.hpp"
#include "counters/probe_kernel.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

TEST(GpuFoundation, DescribesTheDevice) {
  TR_REQUIRE_GPU();
  const GpuInfo gpu = query_gpu(0);
  EXPECT_FALSE(gpu.name.empty());
  EXPECT_GE(gpu.cc_major, 8);
  EXPECT_GT(gpu.sm_count, 0);
  EXPECT_GT(gpu.l2_bytes, 1 << 20);
  EXPECT_GT(gpu.memory_bytes, std::int64_t{1} << 30);
  EXPECT_GT(gpu.memory_bus_bits, 0);
  EXPECT_EQ(gpu.uuid.rfind("GPU-", 0), 0u);
  ASSERT_TRUE(gpu.sm_clock_max_hz.has_value());
  EXPECT_GT(*gpu.sm_clock_max_hz, 5e8);
  EXPECT_TRUE(gpu.sm_clock_current_hz.has_value()) << "NVML current clock";
  EXPECT_FALSE(gpu.versions.driver.empty()) << "NVML driver version";
  EXPECT_FALSE(gpu.versions.cudnn.empty());
  const std::string chip = current_chip_name(0);
  if (gpu.cc_major == 9 && gpu.cc_minor == 0) EXPECT_EQ(chip, "GH100");
  if (gpu.cc_major == 8 && gpu.cc_minor == 0) EXPECT_EQ(chip, "GA100");
  std::printf("GPU 0: %s, chip %s, %d SMs, driver %s, cuDNN %s\n", gpu.name.c_str(), chip.c_str(),
              gpu.sm_count, gpu.versions.driver.c_str(), gpu.versions.cudnn.c_str());
}

TEST(GpuFoundation, CountersAreAvailableAndExact) {
  TR_REQUIRE_GPU();
  const CounterAccess access = probe_counter_access();
  ASSERT_TRUE(access.available) << access.reason << " / fix: " << access.fix;
  EXPECT_NE(access.evidence.find("as expected"), std::string::npos) << access.evidence;
  std::printf("counters: %s\n", access.evidence.c_str());
}

TEST(GpuFoundation, RangeProfilerCountsEachKernelExactly) {
  TR_REQUIRE_GPU();
  ProfilerSession session;
  const FfmaProbe small{32, 64, 100};
  const FfmaProbe large{264, 256, 1000};
  DeviceBuffer<float> out(static_cast<std::size_t>(large.blocks) * large.threads);
  const ProfileResult result = session.profile_kernels(
      {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "gpu__time_duration.sum",
       "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"},
      [&] {
        launch_ffma_probe(small, out.get(), nullptr);
        launch_ffma_probe(large, out.get(), nullptr);
      });
  EXPECT_EQ(result.dropped_ranges, 0u);
  ASSERT_EQ(result.ranges.size(), 2u);
  // Auto ranges are named by launch order; kernel names come from the activity trace.
  EXPECT_EQ(result.ranges[0].name, "0");
  EXPECT_EQ(result.ranges[1].name, "1");
  EXPECT_DOUBLE_EQ(result.ranges[0].values[0], small.expected_ffma());
  EXPECT_DOUBLE_EQ(result.ranges[1].values[0], large.expected_ffma());
  EXPECT_GT(result.ranges[1].values[1], result.ranges[0].values[1]) << "duration grows with work";
  // One FADD per thread joins the two chains.
  EXPECT_DOUBLE_EQ(result.ranges[1].values[2], 1.0 * large.blocks * large.threads);
}

TEST(GpuFoundation, CliInfoShowsTheGpuAndCounters) {
  TR_REQUIRE_GPU();
  const test::ToolResult text = test::run_tool({"info"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("counters     available"), std::string::npos) << text.out;
  const test::ToolResult json = test::run_tool({"info", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto info = nlohmann::json::parse(json.out);
  EXPECT_EQ(info["counters"]["available"], true);
  EXPECT_GT(info["sm_count"].get<int>(), 0);
  std::fputs(text.out.c_str(), stdout);
}

TEST(GpuFoundation, CliDeviceOutOfRangeIsAUsageError) {
  TR_REQUIRE_GPU();
  const test::ToolResult r = test::run_tool({"info", "--device", "99"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--device 99 is out of range"), std::string::npos) << r.err;
}

TEST(GpuFoundation, CliRunStoresARunWithProvenance) {
  TR_REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = dir.file("gpu.db");
  // One second of each sustained load: the default ten make the job 80 s longer.
  const test::ToolResult r = test::run_tool({"run", "--db", db, "--sustained", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("stored as run 1"), std::string::npos) << r.out;
  const test::ToolResult exported = test::run_tool({"export", "1", "--db", db});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const auto doc = nlohmann::json::parse(exported.out);
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["status"], "complete");
  EXPECT_NE(run["command_line"].get<std::string>().find("run --db"), std::string::npos);
  EXPECT_FALSE(run["machine"]["gpu"]["name"].get<std::string>().empty());
  EXPECT_EQ(run["machine"]["gpu"]["counters"]["available"], true);
}

// ncu is another CUPTI client: under it, timeroof must say so and how to fix it.
TEST(GpuFoundation, UnderNsightComputeCountersNameTheOtherClient) {
  TR_REQUIRE_GPU();
  std::string ncu;
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/local/cuda/bin";
  for (std::size_t begin = 0, end; ncu.empty() && begin <= path.size(); begin = end + 1) {
    end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    const std::string candidate = path.substr(begin, end - begin) + "/ncu";
    if (std::ifstream(candidate).good()) ncu = candidate;
  }
  if (ncu.empty()) GTEST_SKIP() << "ncu not found on PATH or in /usr/local/cuda/bin";
  const test::ToolResult r =
      test::run_process({ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum",
                         "-c", "1", test::tool_binary(), "info", "--json"});
  const std::size_t start = r.out.find('{');
  ASSERT_NE(start, std::string::npos) << r.out << r.err;
  const auto info = nlohmann::json::parse(r.out.substr(start, r.out.rfind('}') - start + 1));
  EXPECT_EQ(info["counters"]["available"], false);
  EXPECT_NE(info["counters"]["reason"].get<std::string>().find("another CUPTI client"),
            std::string::npos)
      << info["counters"];
  std::printf("under ncu: %s\n", info["counters"]["reason"].get<std::string>().c_str());
}

}  // namespace
}  // namespace timeroof
