#include "inject/trace_records.hpp"

#include <unistd.h>

#include <string>

namespace timeroof::inject {
namespace {

nlohmann::json triple(const std::array<int, 3>& v) {
  return nlohmann::json::array({v[0], v[1], v[2]});
}

TraceEvent kernel_event(const KernelActivity& k) {
  TraceEvent e;
  e.kind = TraceKind::kernel;
  e.name = k.name;
  e.start_ns = k.start_ns;
  e.end_ns = k.end_ns;
  e.device = k.device_id;
  e.stream = k.stream_id;
  e.correlation_id = k.correlation_id;
  e.details = {{"grid", triple(k.grid)},
               {"block", triple(k.block)},
               {"registers", k.registers},
               {"static_shared_bytes", k.static_shared_bytes},
               {"dynamic_shared_bytes", k.dynamic_shared_bytes}};
  if (k.cupti_name) e.details["cupti_name"] = *k.cupti_name;  // the stale name corrected
  return e;
}

TraceEvent memcpy_event(const MemcpyActivity& m) {
  TraceEvent e;
  e.kind = TraceKind::memcpy;
  e.name = copy_kind_name(m.cupti_copy_kind);
  e.start_ns = m.start_ns;
  e.end_ns = m.end_ns;
  e.device = m.device_id;
  e.stream = m.stream_id;
  e.correlation_id = m.correlation_id;
  e.bytes = m.bytes;
  e.details = {{"src_kind", to_string(m.src_kind)}, {"dst_kind", to_string(m.dst_kind)}};
  return e;
}

TraceEvent memset_event(const MemsetActivity& m) {
  TraceEvent e;
  e.kind = TraceKind::memset;
  e.name = "memset";
  e.start_ns = m.start_ns;
  e.end_ns = m.end_ns;
  e.device = m.device_id;
  e.stream = m.stream_id;
  e.correlation_id = m.correlation_id;
  e.bytes = m.bytes;
  e.details = {{"memory_kind", to_string(m.memory_kind)}, {"value", m.value}};
  return e;
}

TraceEvent api_event(const ApiActivity& a) {
  TraceEvent e;
  e.kind = a.domain == ApiDomain::runtime ? TraceKind::runtime_api : TraceKind::driver_api;
  e.name = a.name;
  e.start_ns = a.start_ns;
  e.end_ns = a.end_ns;
  e.correlation_id = a.correlation_id;
  e.process_id = a.process_id;
  e.thread_id = a.thread_id;
  e.details = {{"cbid", a.cbid}, {"return_value", a.return_value}};
  return e;
}

TraceEvent sync_event(const SyncActivity& s) {
  TraceEvent e;
  e.kind = TraceKind::sync;
  e.name = to_string(s.type);
  e.start_ns = s.start_ns;
  e.end_ns = s.end_ns;
  // CUPTI's "no stream" (CUPTI_SYNCHRONIZATION_INVALID_VALUE) reads as none.
  e.stream = s.stream_id == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s.stream_id;
  e.correlation_id = s.correlation_id;
  e.process_id = static_cast<std::uint32_t>(getpid());
  return e;
}

// A record's end can pass its start only through a CUPTI fault; the journal's
// reader refuses such a line, so clamp rather than lose the record.
void keep_order(TraceEvent& e) {
  if (e.end_ns < e.start_ns) e.end_ns = e.start_ns;
}

}  // namespace

nlohmann::json nvtx_details(std::string domain, std::uint32_t category,
                            std::optional<std::uint32_t> color, std::uint32_t range_id) {
  return {{"domain", std::move(domain)},
          {"category", category},
          {"color", color ? nlohmann::json(*color) : nlohmann::json(nullptr)},
          {"range_id", range_id}};
}

void end_unclosed(TraceEvent& range, std::uint64_t now_ns) {
  range.end_ns = now_ns;
  keep_order(range);
  range.details["unclosed"] = true;
}

void TraceRecordConverter::convert(const CUpti_Activity* record, std::vector<TraceEvent>& out) {
  if (record->kind == CUPTI_ACTIVITY_KIND_MARKER) {
    convert_marker(*reinterpret_cast<const CUpti_ActivityMarker2*>(record), out);
    return;
  }
  if (record->kind == CUPTI_ACTIVITY_KIND_MARKER_DATA) {
    add_marker_data(*reinterpret_cast<const CUpti_ActivityMarkerData2*>(record));
    return;
  }
  const DecodedActivity decoded = decoder_.decode(record);
  std::optional<TraceEvent> event;
  if (const auto* k = std::get_if<KernelActivity>(&decoded)) event = kernel_event(*k);
  if (const auto* m = std::get_if<MemcpyActivity>(&decoded)) event = memcpy_event(*m);
  if (const auto* s = std::get_if<MemsetActivity>(&decoded)) event = memset_event(*s);
  if (const auto* a = std::get_if<ApiActivity>(&decoded)) event = api_event(*a);
  if (const auto* y = std::get_if<SyncActivity>(&decoded)) event = sync_event(*y);
  if (!event) return;
  // CUPTI gives GPU records no process; they are this process's work, and its
  // correlation ids are only unique within it.
  if (on_gpu(event->kind)) event->process_id = static_cast<std::uint32_t>(getpid());
  keep_order(*event);
  out.push_back(std::move(*event));
}

void TraceRecordConverter::convert(ApiActivity call, std::vector<TraceEvent>& out) {
  call.name = decoder_.api_name(call.domain, call.cbid);
  TraceEvent event = api_event(call);
  keep_order(event);
  out.push_back(std::move(event));
}

void TraceRecordConverter::convert_marker(const CUpti_ActivityMarker2& marker,
                                          std::vector<TraceEvent>& out) {
  const unsigned flags = static_cast<unsigned>(marker.flags);
  if (flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(marker.id);
    if (it == open_ranges_.end()) return;  // its start came before tracing began
    TraceEvent range = std::move(it->second);
    open_ranges_.erase(it);
    range.end_ns = marker.timestamp;
    keep_order(range);
    apply_marker_data(marker.id, range);
    out.push_back(std::move(range));
    return;
  }
  TraceEvent e;
  e.kind = (flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) ? TraceKind::nvtx_mark
                                                              : TraceKind::nvtx_range;
  e.name = marker.name ? marker.name : "";
  e.start_ns = marker.timestamp;
  e.end_ns = marker.timestamp;
  if (marker.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
      marker.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    e.process_id = marker.objectId.pt.processId;
    e.thread_id = marker.objectId.pt.threadId;
  }
  // The default domain has no name; color and category come with a marker-data record.
  e.details = nvtx_details(marker.domain ? marker.domain : "", 0, std::nullopt, marker.id);
  if (e.kind == TraceKind::nvtx_mark)
    pending_marks_.emplace_back(marker.id, std::move(e));
  else
    open_ranges_[marker.id] = std::move(e);
}

void TraceRecordConverter::add_marker_data(const CUpti_ActivityMarkerData2& data) {
  MarkerData entry;
  if (data.flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB) entry.color = data.color;
  entry.category = data.category;
  marker_data_[data.id] = entry;
}

void TraceRecordConverter::apply_marker_data(std::uint32_t id, TraceEvent& event) {
  auto it = marker_data_.find(id);
  if (it == marker_data_.end()) return;
  event.details["category"] = it->second.category;
  if (it->second.color) event.details["color"] = *it->second.color;
  marker_data_.erase(it);
}

void TraceRecordConverter::end_of_buffer(std::vector<TraceEvent>& out) {
  for (auto& [id, mark] : pending_marks_) {
    apply_marker_data(id, mark);
    out.push_back(std::move(mark));
  }
  pending_marks_.clear();
}

std::vector<TraceEvent> TraceRecordConverter::take_open_ranges(std::uint64_t now_ns) {
  std::vector<TraceEvent> ranges;
  for (auto& [id, range] : open_ranges_) {
    end_unclosed(range, now_ns);
    apply_marker_data(id, range);
    ranges.push_back(std::move(range));
  }
  open_ranges_.clear();
  return ranges;
}

}  // namespace timeroof::inject
