// NVTX ranges and marks recorded from CUPTI's NVTX callbacks
// (inject/nvtx_records.hpp, #17), on hand-made callbacks, no GPU: push/pop
// nesting per thread and domain, start/end across threads, marks; messages
// ASCII, wide, registered, domains by name; color and category; what was never
// ended at exit; nothing before record() or after stop(); a forked child
// without its parent's; many threads; and each record the TraceEvent the MARKER
// activity records of the same calls become.
#include "inject/nvtx_records.hpp"

#include <cupti_activity.h>
#include <cupti_nvtx_cbid.h>
#include <generated_nvtx_meta.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "inject/trace_records.hpp"

namespace timeroof::inject {
namespace {

// A clock that ticks 10 ns at each reading, one per thread.
std::uint64_t ticking_clock() {
  thread_local std::uint64_t now = 1000;
  return now += 10;
}

// One NVTX call as CUPTI's callback sees it, after the call.
template <typename Params>
void call(NvtxRecorder& recorder, CUpti_CallbackId cbid, const Params& params,
          const void* returned = nullptr) {
  CUpti_NvtxData data{};
  data.functionName = "nvtx";
  data.functionParams = &params;
  data.functionReturnValue = returned;
  recorder.on_callback(cbid, data);
}

void push(NvtxRecorder& recorder, const char* message) {
  call(recorder, CUPTI_CBID_NVTX_nvtxRangePushA, nvtxRangePushA_params{message});
}
void pop(NvtxRecorder& recorder) {
  call(recorder, CUPTI_CBID_NVTX_nvtxRangePop, nvtxRangePop_params{});
}

nvtxEventAttributes_t attributes(const char* message, std::uint32_t category,
                                 std::optional<std::uint32_t> color) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  a.category = category;
  if (color) {
    a.colorType = NVTX_COLOR_ARGB;
    a.color = *color;
  }
  return a;
}

std::vector<std::string> names(const std::vector<TraceEvent>& events) {
  std::vector<std::string> out;
  for (const TraceEvent& e : events) out.push_back(e.name);
  return out;
}

TEST(InjectNvtxRecords, PushedRangesNestAndEndInPopOrder) {
  NvtxRecorder recorder(&ticking_clock);
  recorder.record();
  const nvtxEventAttributes_t step = attributes("step", 1, 0xFF3366CCu);
  call(recorder, CUPTI_CBID_NVTX_nvtxRangePushEx, nvtxRangePushEx_params{&step});
  push(recorder, "layer0");
  pop(recorder);
  call(recorder, CUPTI_CBID_NVTX_nvtxRangePushW, nvtxRangePushW_params{L"l\u00e4yer1 \u6f22"});
  pop(recorder);
  pop(recorder);
  pop(recorder);  // nothing pushed (before tracing began): ignored
  const std::vector<TraceEvent> events = recorder.take();
  ASSERT_EQ(names(events), (std::vector<std::string>{"layer0", "l\u00e4yer1 \u6f22", "step"}));
  for (const TraceEvent& e : events) {
    EXPECT_EQ(e.kind, TraceKind::nvtx_range);
    EXPECT_EQ(e.process_id, static_cast<std::uint32_t>(getpid()));
    EXPECT_EQ(e.thread_id, cupti_thread_id());
    EXPECT_EQ(e.details["domain"], "");
  }
  // One clock reading a call: step 1010-1060 holds layer0 1020-1030, layer1 1040-1050.
  EXPECT_EQ(events[2].start_ns, 1010U);
  EXPECT_EQ(events[2].end_ns, 1060U);
  EXPECT_EQ(events[0].start_ns, 1020U);
  EXPECT_EQ(events[0].end_ns, 1030U);
  EXPECT_EQ(events[2].details["color"], 0xFF3366CCu);
  EXPECT_EQ(events[2].details["category"], 1);
  EXPECT_EQ(events[0].details["color"], nullptr);
  EXPECT_EQ(events[0].details["category"], 0);
  std::set<int> ids;
  for (const TraceEvent& e : events) ids.insert(e.details["range_id"].get<int>());
  EXPECT_EQ(ids.size(), 3U) << "one id per range";
  EXPECT_TRUE(recorder.take().empty()) << "taken once";
}

TEST(InjectNvtxRecords, DomainsAndRegisteredStringsAreNamedAndPopOnlyTheirOwn) {
  NvtxRecorder recorder(&ticking_clock);
  recorder.record();
  auto* domain = reinterpret_cast<nvtxDomainHandle_t>(0x1000);
  auto* forward = reinterpret_cast<nvtxStringHandle_t>(0x2000);
  call(recorder, CUPTI_CBID_NVTX_nvtxDomainCreateA, nvtxDomainCreateA_params{"model"}, &domain);
  call(recorder, CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
       nvtxDomainRegisterStringA_params{domain, "forward"}, &forward);
  nvtxEventAttributes_t registered = attributes(nullptr, 7, std::nullopt);
  registered.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  registered.message.registered = forward;
  call(recorder, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
       nvtxDomainRangePushEx_params{domain, {&registered}});
  push(recorder, "default");
  // The domain's pop ends the domain's range, not the default domain's inner one.
  call(recorder, CUPTI_CBID_NVTX_nvtxDomainRangePop, nvtxDomainRangePop_params{domain});
  pop(recorder);
  const nvtxEventAttributes_t mark = attributes("checkpoint", 0, 0xFF00FF00u);
  call(recorder, CUPTI_CBID_NVTX_nvtxDomainMarkEx, nvtxDomainMarkEx_params{domain, {&mark}});
  const std::vector<TraceEvent> events = recorder.take();
  ASSERT_EQ(names(events), (std::vector<std::string>{"forward", "default", "checkpoint"}));
  EXPECT_EQ(events[0].details["domain"], "model");
  EXPECT_EQ(events[0].details["category"], 7);
  EXPECT_EQ(events[1].details["domain"], "");
  EXPECT_EQ(events[2].kind, TraceKind::nvtx_mark);
  EXPECT_EQ(events[2].start_ns, events[2].end_ns);
  EXPECT_EQ(events[2].details["domain"], "model");
  EXPECT_EQ(events[2].details["color"], 0xFF00FF00u);
}

TEST(InjectNvtxRecords, StartedRangesEndByIdOnAnyThreadAndKeepTheStartingThread) {
  NvtxRecorder recorder(&ticking_clock);
  recorder.record();
  const nvtxRangeId_t upload = 41;
  const nvtxRangeId_t never_ended = 42;
  call(recorder, CUPTI_CBID_NVTX_nvtxRangeStartA, nvtxRangeStartA_params{"upload"}, &upload);
  call(recorder, CUPTI_CBID_NVTX_nvtxRangeStartA, nvtxRangeStartA_params{"open"}, &never_ended);
  std::thread([&recorder] {
    call(recorder, CUPTI_CBID_NVTX_nvtxRangeEnd, nvtxRangeEnd_params{41});
    call(recorder, CUPTI_CBID_NVTX_nvtxRangeEnd, nvtxRangeEnd_params{99});  // unknown: ignored
    push(recorder, "worker");                                               // never popped
  }).join();
  const std::vector<TraceEvent> events = recorder.take();
  ASSERT_EQ(names(events), (std::vector<std::string>{"upload"}));
  EXPECT_EQ(events[0].thread_id, cupti_thread_id()) << "the thread that started it";
  std::vector<TraceEvent> open = recorder.take_open(5000);
  ASSERT_EQ(open.size(), 2U);
  std::set<std::string> open_names;
  for (const TraceEvent& e : open) {
    open_names.insert(e.name);
    EXPECT_EQ(e.end_ns, 5000U);
    EXPECT_EQ(e.details["unclosed"], true);
  }
  EXPECT_EQ(open_names, (std::set<std::string>{"open", "worker"}));
  EXPECT_TRUE(recorder.take_open(6000).empty()) << "forgotten once taken";
}

TEST(InjectNvtxRecords, NothingBeforeRecordOrAfterStop) {
  NvtxRecorder recorder(&ticking_clock);
  push(recorder, "before");
  pop(recorder);
  recorder.record();
  push(recorder, "during");
  recorder.stop();
  pop(recorder);
  push(recorder, "after");
  pop(recorder);
  EXPECT_TRUE(recorder.take().empty());
  EXPECT_EQ(names(recorder.take_open(1)), (std::vector<std::string>{"during"}));
  EXPECT_EQ(recorder.dropped(), 0U);
}

TEST(InjectNvtxRecords, RangesFromManyThreadsAreAllKeptEachOnItsThread) {
  NvtxRecorder recorder(&ticking_clock);
  recorder.record();
  constexpr int kThreads = 8;
  constexpr int kRanges = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&recorder] {
      for (int i = 0; i < kRanges; ++i) {
        push(recorder, "outer");
        push(recorder, "inner");
        pop(recorder);
        pop(recorder);
      }
    });
  for (std::thread& thread : threads) thread.join();
  const std::vector<TraceEvent> events = recorder.take();
  ASSERT_EQ(events.size(), 2U * kThreads * kRanges);
  std::set<std::uint32_t> thread_ids;
  for (const TraceEvent& e : events) thread_ids.insert(e.thread_id);
  EXPECT_EQ(thread_ids.size(), static_cast<std::size_t>(kThreads));
  // Each thread's clock ticks alone, so every inner range spans one tick inside its outer.
  for (const TraceEvent& e : events)
    EXPECT_EQ(e.end_ns - e.start_ns, e.name == "inner" ? 10U : 30U) << e.name;
  EXPECT_TRUE(recorder.take_open(0).empty());
}

TEST(InjectNvtxRecords, AForkedChildStartsWithoutItsParentsRanges) {
  static NvtxRecorder recorder(&ticking_clock);  // fork handlers stay: never destroyed
  recorder.record();
  recorder.keep_records_out_of_forked_children();
  recorder.keep_records_out_of_forked_children();  // twice is once (no deadlock at fork)
  push(recorder, "parent's done");
  pop(recorder);
  push(recorder, "parent's open");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool none_inherited = recorder.take().empty() && recorder.take_open(1).empty();
    push(recorder, "child's");
    pop(recorder);
    const std::vector<TraceEvent> own = recorder.take();
    const bool own_kept = own.size() == 1 && own[0].name == "child's" &&
                          own[0].process_id == static_cast<std::uint32_t>(getpid());
    _exit(none_inherited && own_kept ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child saw its parent's ranges";
  EXPECT_EQ(names(recorder.take()), (std::vector<std::string>{"parent's done"}));
  pop(recorder);
  EXPECT_EQ(names(recorder.take()), (std::vector<std::string>{"parent's open"}));
}

// The MARKER records CUPTI writes for a range: a start and an end with one id,
// and a marker-data record with its color and category.
CUpti_ActivityMarker2 marker(const TraceEvent& e, CUpti_ActivityFlag flags, std::uint64_t at) {
  CUpti_ActivityMarker2 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flags;
  m.id = e.details["range_id"];
  m.timestamp = at;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = e.process_id;
  m.objectId.pt.threadId = e.thread_id;
  m.name = flags == CUPTI_ACTIVITY_FLAG_MARKER_END ? nullptr : e.name.c_str();
  m.domain = nullptr;
  return m;
}

TEST(InjectNvtxRecords, EachRangeIsTheTraceEventItsMarkerRecordsWouldBe) {
  NvtxRecorder recorder(&ticking_clock);
  recorder.record();
  const nvtxEventAttributes_t step = attributes("step", 1, 0xFF3366CCu);
  call(recorder, CUPTI_CBID_NVTX_nvtxRangePushEx, nvtxRangePushEx_params{&step});
  pop(recorder);
  push(recorder, "layer0");
  pop(recorder);
  const std::vector<TraceEvent> from_callbacks = recorder.take();
  ASSERT_EQ(from_callbacks.size(), 2U);

  TraceRecordConverter converter;
  std::vector<TraceEvent> from_markers;
  const TraceEvent& colored = from_callbacks[0];
  const auto start = marker(colored, CUPTI_ACTIVITY_FLAG_MARKER_START, colored.start_ns);
  CUpti_ActivityMarkerData2 data;
  std::memset(&data, 0, sizeof data);
  data.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  data.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
  data.id = start.id;
  data.color = 0xFF3366CC;
  data.category = 1;
  const auto end = marker(colored, CUPTI_ACTIVITY_FLAG_MARKER_END, colored.end_ns);
  converter.convert(reinterpret_cast<const CUpti_Activity*>(&start), from_markers);
  converter.convert(reinterpret_cast<const CUpti_Activity*>(&data), from_markers);
  converter.convert(reinterpret_cast<const CUpti_Activity*>(&end), from_markers);
  const TraceEvent& plain = from_callbacks[1];
  const auto plain_start = marker(plain, CUPTI_ACTIVITY_FLAG_MARKER_START, plain.start_ns);
  const auto plain_end = marker(plain, CUPTI_ACTIVITY_FLAG_MARKER_END, plain.end_ns);
  converter.convert(reinterpret_cast<const CUpti_Activity*>(&plain_start), from_markers);
  converter.convert(reinterpret_cast<const CUpti_Activity*>(&plain_end), from_markers);
  converter.end_of_buffer(from_markers);
  EXPECT_EQ(nlohmann::json(from_callbacks), nlohmann::json(from_markers));
}

}  // namespace
}  // namespace timeroof::inject
