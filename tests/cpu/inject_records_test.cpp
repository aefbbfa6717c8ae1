// The injection library's record conversion (inject/trace_records.hpp, #17) on
// hand-made CUPTI records, no GPU: kernels and copies as TraceEvents with their
// details, NVTX start and end markers paired into one range across buffers,
// marker data giving color and category, marks, and ranges left open at exit.
#include "inject/trace_records.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include <unistd.h>

namespace timeroof::inject {
namespace {

CUpti_ActivityMarker2 marker(CUpti_ActivityFlag flags, std::uint32_t id, std::uint64_t at,
                             const char* name) {
  CUpti_ActivityMarker2 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flags;
  m.id = id;
  m.timestamp = at;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 11;
  m.objectId.pt.threadId = 12;
  m.name = name;
  m.domain = nullptr;
  return m;
}

const CUpti_Activity* as_record(const void* r) {
  return static_cast<const CUpti_Activity*>(r);
}

TEST(InjectRecords, KernelAndCopyBecomeTraceEvents) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "_Z5scalePfi";
  k.gridX = 64;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 16;
  k.dynamicSharedMemory = 128;
  k.start = 1000;
  k.end = 3000;
  k.deviceId = 1;
  k.streamId = 7;
  k.correlationId = 5;
  CUpti_ActivityMemcpy6 c;
  std::memset(&c, 0, sizeof c);
  c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  c.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  c.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  c.bytes = 4096;
  c.start = 4000;
  c.end = 5000;
  TraceRecordConverter converter;
  std::vector<TraceEvent> out;
  converter.convert(as_record(&k), out);
  converter.convert(as_record(&c), out);
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[0].kind, TraceKind::kernel);
  EXPECT_EQ(out[0].name, "scale(float*, int)");
  EXPECT_EQ(out[0].duration_ns(), 2000U);
  EXPECT_EQ(out[0].device, 1U);
  EXPECT_EQ(out[0].stream, 7U);
  EXPECT_EQ(out[0].correlation_id, 5U);
  // This process's work: its correlation ids are unique only within it.
  EXPECT_EQ(out[0].process_id, static_cast<std::uint32_t>(getpid()));
  EXPECT_EQ(out[1].process_id, static_cast<std::uint32_t>(getpid()));
  EXPECT_EQ(out[0].thread_id, 0U);
  EXPECT_EQ(out[0].details["grid"], (nlohmann::json{64, 1, 1}));
  EXPECT_EQ(out[0].details["dynamic_shared_bytes"], 128);
  EXPECT_EQ(out[1].kind, TraceKind::memcpy);
  EXPECT_EQ(out[1].name, "DtoH");
  EXPECT_EQ(out[1].bytes, 4096U);
  EXPECT_EQ(out[1].details["dst_kind"], "pinned");
  EXPECT_FALSE(out[0].details.contains("cupti_name")) << "no launch names given";
}

TEST(InjectRecords, KernelsTakeTheirLaunchNames) {
  LaunchNames launches;
  launches.record(5, "_Z8launchedPf");
  launches.record(6, "_Z5scalePfi");
  TraceRecordConverter converter;
  converter.name_kernels_from(&launches);
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "_Z5scalePfi";  // CUPTI's stale name for launch 5
  k.correlationId = 5;
  k.start = 10;
  k.end = 20;
  std::vector<TraceEvent> out;
  converter.convert(as_record(&k), out);
  k.correlationId = 6;  // the same name at its own launch
  converter.convert(as_record(&k), out);
  k.correlationId = 7;  // no launch name (a graph launch)
  converter.convert(as_record(&k), out);
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(out[0].name, "launched(float*)");
  EXPECT_EQ(out[0].details["cupti_name"], "scale(float*, int)");
  EXPECT_EQ(out[1].name, "scale(float*, int)");
  EXPECT_FALSE(out[1].details.contains("cupti_name"));
  EXPECT_EQ(out[2].name, "scale(float*, int)");
  EXPECT_FALSE(out[2].details.contains("cupti_name"));
}

TEST(InjectRecords, NvtxStartAndEndPairAcrossBuffers) {
  TraceRecordConverter converter;
  std::vector<TraceEvent> out;
  const auto start = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 100, "step");
  CUpti_ActivityMarkerData2 data;
  std::memset(&data, 0, sizeof data);
  data.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  data.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
  data.id = 3;
  data.color = 0xFF3366CC;
  data.category = 1;
  converter.convert(as_record(&start), out);
  converter.convert(as_record(&data), out);
  converter.end_of_buffer(out);
  EXPECT_TRUE(out.empty());  // open until its end marker
  const auto end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 3, 900, nullptr);
  converter.convert(as_record(&end), out);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].kind, TraceKind::nvtx_range);
  EXPECT_EQ(out[0].name, "step");
  EXPECT_EQ(out[0].start_ns, 100U);
  EXPECT_EQ(out[0].end_ns, 900U);
  EXPECT_EQ(out[0].process_id, 11U);
  EXPECT_EQ(out[0].thread_id, 12U);
  EXPECT_EQ(out[0].details["color"], 0xFF3366CCu);
  EXPECT_EQ(out[0].details["category"], 1);
  EXPECT_EQ(out[0].details["range_id"], 3);
  EXPECT_EQ(out[0].details["domain"], "");
}

TEST(InjectRecords, MarksAndOpenRanges) {
  TraceRecordConverter converter;
  std::vector<TraceEvent> out;
  auto mark = marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 8, 50, "done");
  mark.domain = "app";
  converter.convert(as_record(&mark), out);
  const auto open = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 9, 60, "never popped");
  converter.convert(as_record(&open), out);
  const auto stray_end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 77, 70, nullptr);
  converter.convert(as_record(&stray_end), out);  // its start predates tracing: dropped
  converter.end_of_buffer(out);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].kind, TraceKind::nvtx_mark);
  EXPECT_EQ(out[0].start_ns, out[0].end_ns);
  EXPECT_EQ(out[0].details["domain"], "app");
  EXPECT_EQ(out[0].details["color"], nullptr);
  const auto left = converter.take_open_ranges(500);
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left[0].name, "never popped");
  EXPECT_EQ(left[0].end_ns, 500U);
  EXPECT_EQ(left[0].details["unclosed"], true);
  EXPECT_TRUE(converter.take_open_ranges(600).empty());
}

}  // namespace
}  // namespace timeroof::inject
