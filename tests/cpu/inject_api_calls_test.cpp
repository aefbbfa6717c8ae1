// The API calls --api launches records from CUPTI's callbacks
// (inject/api_calls.hpp, #17), on hand-made callbacks, no GPU: only the chosen
// calls, each with its span, correlation id, thread and return value; a call
// made inside a recorded one of the same API belongs to the outer one (a driver
// call inside a runtime one to the runtime one), as in CUPTI's records; calls
// from many threads all kept; a forked child without its parent's; and each
// becomes the TraceEvent its CUPTI activity record would have been.
#include "inject/api_calls.hpp"

#include <cupti_activity.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "inject/trace_records.hpp"

namespace timeroof::inject {
namespace {

constexpr CUpti_CallbackId kRuntimeLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr CUpti_CallbackId kRuntimeGetDevice = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
constexpr CUpti_CallbackId kDriverLaunch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
constexpr CUpti_CallbackId kDriverSync = CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize;

// A clock that ticks 10 ns at each reading, one per thread.
std::uint64_t ticking_clock() {
  thread_local std::uint64_t now = 1000;
  return now += 10;
}

// One runtime or driver API call as CUPTI's callbacks see it: enter, then exit.
struct Call {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  std::uint32_t correlation_id;
  std::uint32_t result = 0;
  std::uint64_t correlation_data = 0;  // shared by enter and exit, as CUPTI does

  CUpti_CallbackData at(CUpti_ApiCallbackSite site) {
    CUpti_CallbackData data;
    std::memset(&data, 0, sizeof data);
    data.callbackSite = site;
    data.correlationId = correlation_id;
    data.correlationData = &correlation_data;
    data.functionReturnValue = &result;
    return data;
  }
  void enter(ApiCallRecorder& recorder) { recorder.on_callback(domain, cbid, at(CUPTI_API_ENTER)); }
  void exit(ApiCallRecorder& recorder) { recorder.on_callback(domain, cbid, at(CUPTI_API_EXIT)); }
  void make(ApiCallRecorder& recorder) {
    enter(recorder);
    exit(recorder);
  }
};

ApiCallRecorder& launches_recorder() {
  static ApiCallRecorder* recorder = [] {
    auto* r = new ApiCallRecorder(&ticking_clock);
    r->record(ApiDomain::runtime, kRuntimeLaunch);
    r->record(ApiDomain::driver, kDriverLaunch);
    r->record(ApiDomain::driver, kDriverSync);
    return r;
  }();
  recorder->take();
  return *recorder;
}

TEST(InjectApiCalls, RecordsOnlyTheChosenCallsWithTheirSpans) {
  ApiCallRecorder& recorder = launches_recorder();
  EXPECT_TRUE(recorder.records(ApiDomain::runtime, kRuntimeLaunch));
  EXPECT_FALSE(recorder.records(ApiDomain::runtime, kRuntimeGetDevice));
  EXPECT_FALSE(recorder.records(ApiDomain::driver, kRuntimeLaunch)) << "ids are per API";
  Call{CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeGetDevice, 4}.make(recorder);
  Call launch{CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeLaunch, 5};
  launch.make(recorder);
  Call{CUPTI_CB_DOMAIN_NVTX, kRuntimeLaunch, 6}.make(recorder);  // another domain's id
  const std::vector<ApiActivity> calls = recorder.take();
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].domain, ApiDomain::runtime);
  EXPECT_EQ(calls[0].cbid, kRuntimeLaunch);
  EXPECT_EQ(calls[0].correlation_id, 5U);
  EXPECT_EQ(calls[0].end_ns - calls[0].start_ns, 10U) << "one clock reading at each end";
  EXPECT_EQ(calls[0].process_id, static_cast<std::uint32_t>(getpid()));
  EXPECT_EQ(calls[0].thread_id, cupti_thread_id());
  EXPECT_EQ(calls[0].return_value, 0U);
  EXPECT_TRUE(recorder.take().empty()) << "taken once";
}

TEST(InjectApiCalls, OnlyTheOutermostCallsAreRecordedAsCuptisActivityRecordsAre) {
  ApiCallRecorder& recorder = launches_recorder();
  // The program's own driver launch, with a driver call inside (e.g. CUPTI's,
  // replaying it for counters): the launch only.
  Call driver_launch{CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch, 7};
  driver_launch.enter(recorder);
  Call{CUPTI_CB_DOMAIN_DRIVER_API, kDriverSync, 8}.make(recorder);
  driver_launch.result = 98;  // failed: recorded with its result, as CUPTI does
  driver_launch.exit(recorder);
  // A runtime launch and the driver launch it makes: the runtime's only.
  Call runtime_launch{CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeLaunch, 9};
  runtime_launch.enter(recorder);
  Call{CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch, 9}.make(recorder);
  runtime_launch.exit(recorder);
  Call{CUPTI_CB_DOMAIN_DRIVER_API, kDriverSync, 10}.make(recorder);  // outside again
  const std::vector<ApiActivity> calls = recorder.take();
  ASSERT_EQ(calls.size(), 3U);
  EXPECT_EQ(calls[0].domain, ApiDomain::driver);
  EXPECT_EQ(calls[0].correlation_id, 7U);
  EXPECT_EQ(calls[0].return_value, 98U);
  EXPECT_EQ(calls[0].end_ns - calls[0].start_ns, 10U) << "no clock reading for the inner call";
  EXPECT_EQ(calls[1].domain, ApiDomain::runtime);
  EXPECT_EQ(calls[1].correlation_id, 9U);
  EXPECT_EQ(calls[2].domain, ApiDomain::driver);
  EXPECT_EQ(calls[2].correlation_id, 10U);
}

TEST(InjectApiCalls, StoppedRecordsNothingMore) {
  ApiCallRecorder recorder(&ticking_clock);
  recorder.record(ApiDomain::driver, kDriverSync);
  Call open{CUPTI_CB_DOMAIN_DRIVER_API, kDriverSync, 1};
  open.enter(recorder);
  recorder.stop();
  open.exit(recorder);
  Call{CUPTI_CB_DOMAIN_DRIVER_API, kDriverSync, 2}.make(recorder);
  EXPECT_TRUE(recorder.take().empty());
  EXPECT_EQ(recorder.dropped(), 0U);
}

TEST(InjectApiCalls, CallsFromManyThreadsAreAllKept) {
  ApiCallRecorder& recorder = launches_recorder();
  constexpr int kThreads = 8;
  constexpr std::uint32_t kCalls = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&recorder, t] {
      for (std::uint32_t i = 0; i < kCalls; ++i)
        Call{CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeLaunch, t * kCalls + i + 1}.make(recorder);
    });
  std::vector<ApiActivity> calls;
  for (std::thread& thread : threads) thread.join();
  calls = recorder.take();
  ASSERT_EQ(calls.size(), kThreads * kCalls);
  std::set<std::uint32_t> ids;
  std::map<std::uint32_t, std::set<std::uint32_t>> thread_of_block;  // by t
  for (const ApiActivity& c : calls) {
    ids.insert(c.correlation_id);
    thread_of_block[(c.correlation_id - 1) / kCalls].insert(c.thread_id);
  }
  EXPECT_EQ(ids.size(), calls.size()) << "each call once";
  std::set<std::uint32_t> threads_seen;
  for (const auto& [block, thread_ids] : thread_of_block) {
    EXPECT_EQ(thread_ids.size(), 1U) << "one thread per block of calls";
    threads_seen.insert(*thread_ids.begin());
  }
  EXPECT_EQ(threads_seen.size(), static_cast<std::size_t>(kThreads));
}

TEST(InjectApiCalls, AForkedChildStartsWithoutItsParentsRecords) {
  ApiCallRecorder& recorder = launches_recorder();
  recorder.keep_records_out_of_forked_children();
  Call{CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeLaunch, 21}.make(recorder);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The parent's call is not the child's; the child's own are recorded.
    const bool none_inherited = recorder.take().empty();
    Call{CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeLaunch, 22}.make(recorder);
    const std::vector<ApiActivity> own = recorder.take();
    const bool own_kept = own.size() == 1 && own[0].correlation_id == 22 &&
                          own[0].process_id == static_cast<std::uint32_t>(getpid());
    _exit(none_inherited && own_kept ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child saw its parent's calls";
  const std::vector<ApiActivity> calls = recorder.take();
  ASSERT_EQ(calls.size(), 1U) << "the parent keeps its own";
  EXPECT_EQ(calls[0].correlation_id, 21U);
}

TEST(InjectApiCalls, EachCallIsTheTraceEventItsActivityRecordWouldBe) {
  ApiCallRecorder& recorder = launches_recorder();
  Call launch{CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeLaunch, 12};
  launch.make(recorder);
  const std::vector<ApiActivity> calls = recorder.take();
  ASSERT_EQ(calls.size(), 1U);
  CUpti_ActivityAPI record;
  std::memset(&record, 0, sizeof record);
  record.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  record.cbid = kRuntimeLaunch;
  record.start = calls[0].start_ns;
  record.end = calls[0].end_ns;
  record.processId = calls[0].process_id;
  record.threadId = calls[0].thread_id;
  record.correlationId = 12;
  std::vector<TraceEvent> from_activity;
  std::vector<TraceEvent> from_callbacks;
  TraceRecordConverter converter;
  converter.convert(reinterpret_cast<const CUpti_Activity*>(&record), from_activity);
  converter.convert(calls[0], from_callbacks);
  ASSERT_EQ(from_callbacks.size(), 1U);
  EXPECT_EQ(from_callbacks[0].kind, TraceKind::runtime_api);
  EXPECT_EQ(from_callbacks[0].name, "cudaLaunchKernel");
  EXPECT_EQ(nlohmann::json(from_callbacks), nlohmann::json(from_activity));
}

}  // namespace
}  // namespace timeroof::inject
