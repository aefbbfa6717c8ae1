// CUPTI activity records as TraceEvents (core/trace_events.hpp): the decoded
// kernel, copy, memset, API and synchronization records (counters/activity_records.hpp)
// one to one (a kernel named at its launch where CUPTI's name differed keeps
// CUPTI's in details.cupti_name), and NVTX markers paired into one record per range. Part of the
// injection library of `timeroof profile`.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/trace_events.hpp"
#include "counters/activity_records.hpp"

namespace timeroof::inject {

// The details of an NVTX range or mark, as both ways of recording NVTX store them
// (CUPTI's MARKER records below, its NVTX callbacks in nvtx_records.hpp): the
// domain's name ("" for the default domain), category, ARGB color or null, and
// the range's id.
nlohmann::json nvtx_details(std::string domain, std::uint32_t category,
                            std::optional<std::uint32_t> color, std::uint32_t range_id);
// A range the program never ended (it exited inside it): it ends at `now_ns`, or
// at its start if that is later, with details.unclosed = true.
void end_unclosed(TraceEvent& range, std::uint64_t now_ns);

// Turns CUPTI records into TraceEvents. NVTX ranges come as a start and an end
// marker with one id, possibly in different buffers: a start waits here for its
// end; color and category come in a marker-data record with the same id.
class TraceRecordConverter {
 public:
  // Kernel records take the names read at their launch (ActivityDecoder::name_kernels_from).
  void name_kernels_from(LaunchNames* launches) noexcept { decoder_.name_kernels_from(launches); }
  // Appends what `record` completes to `out`: nothing for a range's start
  // marker or a kind this does not trace.
  void convert(const CUpti_Activity* record, std::vector<TraceEvent>& out);
  // Appends an API call recorded from CUPTI's callbacks (inject/api_calls.hpp),
  // named as its activity record would be.
  void convert(ApiActivity call, std::vector<TraceEvent>& out);
  // Emits the marks of this buffer: a mark waits for its marker-data record,
  // which follows it in the same buffer.
  void end_of_buffer(std::vector<TraceEvent>& out);
  // The ranges still open (never ended: the program exited inside them), each
  // ending at `now_ns` with details.unclosed = true; forgets them.
  std::vector<TraceEvent> take_open_ranges(std::uint64_t now_ns);

 private:
  void convert_marker(const CUpti_ActivityMarker2& marker, std::vector<TraceEvent>& out);
  void add_marker_data(const CUpti_ActivityMarkerData2& data);

  struct MarkerData {
    std::optional<std::uint32_t> color;  // ARGB, when the range set one
    std::uint32_t category = 0;
  };
  void apply_marker_data(std::uint32_t id, TraceEvent& event);

  ActivityDecoder decoder_;
  std::unordered_map<std::uint32_t, TraceEvent> open_ranges_;
  std::vector<std::pair<std::uint32_t, TraceEvent>> pending_marks_;  // by marker id
  std::unordered_map<std::uint32_t, MarkerData> marker_data_;
};

}  // namespace timeroof::inject
