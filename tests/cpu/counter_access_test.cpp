// Every way counters can be unavailable gets a precise reason and fix (the
// live path is covered by the GPU tier; these are the branches a GPU machine
// with open counters never takes).
#include <gtest/gtest.h>

#include "counters/range_profiler.hpp"

namespace timeroof {
namespace {

void expect(CUptiResult status, const std::string& reason_part, const std::string& fix_part) {
  const CounterAccessError e =
      describe_access_failure(status, "cuptiProfilerGetCounterAvailability");
  EXPECT_NE(e.reason().find(reason_part), std::string::npos) << e.reason();
  EXPECT_NE(e.fix().find(fix_part), std::string::npos) << e.fix();
  EXPECT_EQ(e.code(), ExitCode::environment);
  EXPECT_NE(std::string(e.what()).find("hardware counters unavailable: "), std::string::npos);
}

TEST(CounterAccess, AdminOnlyProfiling) {
  expect(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "NVreg_RestrictProfilingToAdminUsers=1",
         "NVreg_RestrictProfilingToAdminUsers=0");
  expect(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES, "restricted to admin users",
         "/etc/modprobe.d/");
}

TEST(CounterAccess, AnotherCuptiClient) {
  expect(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "another CUPTI client",
         "outside ncu/nsys");
  expect(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED, "Nsight Compute", "CUDA_INJECTION64_PATH");
}

TEST(CounterAccess, VirtualisationAndUnsupportedDevices) {
  expect(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, "virtualised", "enable_profiling");
  expect(CUPTI_ERROR_NOT_SUPPORTED, "does not support counters", "compute capability 7.5");
  const CounterAccessError cmp = describe_access_failure(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED, "x");
  EXPECT_NE(cmp.reason().find("CMP"), std::string::npos);
}

TEST(CounterAccess, AnythingElseNamesTheCallAndCuptisMessage) {
  const CounterAccessError e =
      describe_access_failure(CUPTI_ERROR_UNKNOWN, "cuptiRangeProfilerEnable");
  EXPECT_NE(e.reason().find("cuptiRangeProfilerEnable failed: "), std::string::npos) << e.reason();
  EXPECT_GT(e.reason().size(), std::string("cuptiRangeProfilerEnable failed: ").size());
}

}  // namespace
}  // namespace timeroof
