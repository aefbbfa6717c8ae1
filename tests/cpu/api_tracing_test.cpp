// core/api_tracing (#17): the `profile --api` spellings, the usage error, and which
// CUDA calls each choice traces, against CUPTI's callback names (runtime names
// carry their API version, driver names their _v2 / _ptsz variants).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/api_tracing.hpp"
#include "core/error.hpp"

namespace timeroof {
namespace {

TEST(ApiTracing, SpellingsRoundTripAndBadValuesNameTheChoices) {
  for (ApiTracing t : kAllApiTracings) EXPECT_EQ(find_api_tracing(to_string(t)), t);
  EXPECT_EQ(parse_api_tracing("launches"), ApiTracing::launches);
  EXPECT_EQ(api_tracing_choices(), "none, launches, runtime, driver, all");
  EXPECT_FALSE(find_api_tracing("Launches"));
  EXPECT_FALSE(find_api_tracing(""));
  try {
    parse_api_tracing("everything");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_EQ(std::string(e.what()),
              "--api: unknown value 'everything'; allowed: none, launches, runtime, driver, all");
  }
  EXPECT_EQ(kDefaultApiTracing, ApiTracing::launches);
  EXPECT_EQ(kStoredRunsApiTracing, ApiTracing::all);
}

TEST(ApiTracing, LaunchCopyAndWaitCallsAreTheLaunchesSet) {
  for (std::string_view name : {"cudaLaunchKernel_v7000",
                                "cudaLaunchKernel_ptsz_v7000",
                                "cudaLaunchKernelExC_v11060",
                                "__cudaLaunchKernel_v12000",
                                "cudaGraphLaunch_v10000",
                                "cudaLaunchHostFunc_v10000",
                                "cudaMemcpyAsync_v3020",
                                "cudaMemcpy2DAsync_ptsz_v7000",
                                "cudaMemsetAsync_v3020",
                                "cudaDeviceSynchronize_v3020",
                                "cudaStreamSynchronize_v3020",
                                "cudaEventSynchronize_v3020",
                                "cuLaunchKernel",
                                "cuLaunchKernel_ptsz",
                                "cuLaunchKernelEx",
                                "cuLaunchCooperativeKernel",
                                "cuGraphLaunch_ptsz",
                                "cuMemcpyHtoDAsync_v2",
                                "cuMemcpyDtoH_v2",
                                "cuMemsetD8Async",
                                "cu64MemcpyHtoD",
                                "cuCtxSynchronize",
                                "cuCtxSynchronize_v2",
                                "cuStreamSynchronize_ptsz",
                                "cuEventSynchronize"})
    EXPECT_TRUE(is_launch_or_wait_call(name)) << name;
  // What PyTorch calls around each launch, and other calls that neither put work
  // on the GPU nor wait for it.
  for (std::string_view name : {"cudaGetDevice_v3020",
                                "cudaStreamIsCapturing_v10000",
                                "cudaGetLastError_v3020",
                                "cudaEventRecord_v3020",
                                "cudaEventQuery_v3020",
                                "cudaStreamWaitEvent_v3020",
                                "cudaMalloc_v3020",
                                "cudaFree_v3020",
                                "cudaMallocAsync_v11020",
                                "cudaMemPrefetchAsync_v8000",
                                "cudaSetDevice_v3020",
                                "cuMemAlloc_v2",
                                "cuCtxGetCurrent",
                                "cuStreamQuery",
                                "cuStreamWaitEvent",
                                "cuEventRecord",
                                "cuModuleGetFunction",
                                "cuLibraryGetKernel",
                                "cuGetProcAddress_v2",
                                "",
                                "Launch"})
    EXPECT_FALSE(is_launch_or_wait_call(name)) << name;
}

TEST(ApiTracing, EachChoiceTracesItsCalls) {
  using enum ApiDomain;
  struct Case {
    ApiTracing tracing;
    bool runtime_launch, runtime_other, driver_launch, driver_other, sync;
  };
  for (const Case& c : {Case{ApiTracing::none, false, false, false, false, false},
                        Case{ApiTracing::launches, true, false, true, false, false},
                        Case{ApiTracing::runtime, true, true, true, false, true},
                        Case{ApiTracing::driver, true, false, true, true, true},
                        Case{ApiTracing::all, true, true, true, true, true}}) {
    const std::string name = to_string(c.tracing);
    EXPECT_EQ(traces_api_call(c.tracing, runtime, "cudaLaunchKernel_v7000"), c.runtime_launch)
        << name;
    EXPECT_EQ(traces_api_call(c.tracing, runtime, "cudaGetDevice_v3020"), c.runtime_other) << name;
    EXPECT_EQ(traces_api_call(c.tracing, driver, "cuLaunchKernel"), c.driver_launch) << name;
    EXPECT_EQ(traces_api_call(c.tracing, driver, "cuCtxGetCurrent"), c.driver_other) << name;
    EXPECT_EQ(traces_synchronization(c.tracing), c.sync) << name;
  }
  EXPECT_EQ(std::string(to_string(runtime)), "runtime");
  EXPECT_EQ(std::string(to_string(driver)), "driver");
}

}  // namespace
}  // namespace timeroof
