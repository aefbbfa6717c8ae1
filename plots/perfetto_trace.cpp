#include "plots/perfetto_trace.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "roofline/profile_analysis.hpp"

namespace timeroof::plots {

namespace {

using nlohmann::json;

class TraceWriter {
 public:
  explicit TraceWriter(const std::vector<TraceEvent>& events) {
    origin_ns_ = std::numeric_limits<std::uint64_t>::max();
    for (const TraceEvent& e : events) {
      origin_ns_ = std::min(origin_ns_, e.start_ns);
      if (on_gpu(e.kind))
        gpu_tracks_[e.device][{e.process_id, e.stream}];
      else
        host_threads_.insert({e.process_id, e.thread_id});
    }
    // A stream's track is its id where one process uses the device; where several
    // do (each numbers its streams alike), one per (process, stream), from 1.
    for (auto& [device, tracks] : gpu_tracks_) {
      const bool shared = tracks.begin()->first.first != tracks.rbegin()->first.first;
      std::uint64_t next = 1;
      for (auto& [key, track] : tracks) {
        const auto [process, stream] = key;
        track.tid = shared ? next++ : stream;
        track.label = (shared ? "process " + std::to_string(process) + ", " : std::string()) +
                      "stream " + std::to_string(stream);
      }
    }
    if (events.empty()) origin_ns_ = 0;
    // GPU processes take the pids after the host's, so they never collide.
    for (const auto& [pid, tid] : host_threads_) gpu_pid_base_ = std::max(gpu_pid_base_, pid + 1);
  }

  std::uint64_t origin_ns() const { return origin_ns_; }

  // Microseconds from the origin, as a double: nanoseconds survive.
  double us(std::uint64_t ns) const {
    return static_cast<double>(ns - std::min(ns, origin_ns_)) / 1000.0;
  }
  std::uint64_t gpu_pid(std::uint32_t device) const {
    return std::uint64_t{gpu_pid_base_} + device;
  }

  // The process and thread track of a record.
  std::pair<std::uint64_t, std::uint64_t> track(const TraceEvent& e) const {
    if (on_gpu(e.kind)) return {gpu_pid(e.device), gpu_track(e).tid};
    return {e.process_id, e.thread_id};
  }

  // A GPU record's stream as its track is named: with the process where
  // several processes' work shares the device.
  const std::string& stream_label(const TraceEvent& e) const { return gpu_track(e).label; }

  void metadata(json& out) const {
    auto meta = [&](const char* name, std::uint64_t pid, std::optional<std::uint64_t> tid,
                    json args) {
      json m = {{"ph", "M"}, {"name", name}, {"pid", pid}, {"args", std::move(args)}};
      if (tid) m["tid"] = *tid;
      out.push_back(std::move(m));
    };
    std::set<std::uint32_t> processes;
    for (const auto& [pid, tid] : host_threads_) processes.insert(pid);
    std::uint64_t order = 0;
    for (std::uint32_t pid : processes) {
      meta("process_name", pid, std::nullopt, {{"name", "Process " + std::to_string(pid)}});
      meta("process_sort_index", pid, std::nullopt, {{"sort_index", order++}});
    }
    for (const auto& [pid, tid] : host_threads_)
      meta("thread_name", pid, tid, {{"name", "Thread " + std::to_string(tid)}});
    for (const auto& [device, tracks] : gpu_tracks_) {
      meta("process_name", gpu_pid(device), std::nullopt,
           {{"name", "GPU " + std::to_string(device)}});
      meta("process_sort_index", gpu_pid(device), std::nullopt, {{"sort_index", order + device}});
      for (const auto& [key, track] : tracks) {
        std::string name = track.label;
        name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
        meta("thread_name", gpu_pid(device), track.tid, {{"name", name}});
        meta("thread_sort_index", gpu_pid(device), track.tid, {{"sort_index", track.tid}});
      }
    }
  }

  json slice(const TraceEvent& e, std::uint64_t end_ns) const {
    const auto [pid, tid] = track(e);
    json args = e.details.is_object() ? e.details : json::object();
    if (e.correlation_id != 0) args["correlation_id"] = e.correlation_id;
    if (on_gpu(e.kind)) {
      args["device"] = e.device;
      args["stream"] = e.stream;
    }
    if (e.kind == TraceKind::memcpy || e.kind == TraceKind::memset) args["bytes"] = e.bytes;
    return {{"name", e.name},
            {"cat", to_string(e.kind)},
            {"ph", "X"},
            {"ts", us(e.start_ns)},
            {"dur", static_cast<double>(end_ns - e.start_ns) / 1000.0},
            {"pid", pid},
            {"tid", tid},
            {"args", std::move(args)}};
  }

 private:
  std::uint64_t origin_ns_ = 0;
  std::uint32_t gpu_pid_base_ = 0;
  struct GpuTrack {
    std::uint64_t tid = 0;
    std::string label;  // "stream S", or "process P, stream S" on a shared device
  };
  const GpuTrack& gpu_track(const TraceEvent& e) const {
    return gpu_tracks_.at(e.device).at({e.process_id, e.stream});
  }

  // Per device, a track per (process, stream) of its GPU work.
  std::map<std::uint32_t, std::map<std::pair<std::uint32_t, std::uint32_t>, GpuTrack>> gpu_tracks_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> host_threads_;  // process, thread
};

// NVTX ranges: nested ones as slices of their thread; one that overlaps a
// sibling cannot be a slice there (slices on a track must nest), so it becomes
// an async pair on a track of its own. A never-closed range ends at the
// trace's end and says so.
void nvtx_ranges(json& out, const std::vector<TraceEvent>& events, const TraceWriter& w) {
  std::uint64_t async_id = 0;
  for (const roofline::RangeInstance& r : roofline::range_instances(events)) {
    const TraceEvent& e = events[r.event];
    json event = w.slice(e, r.end_ns);
    if (!r.closed) event["args"]["unclosed"] = true;
    if (r.nested) {
      out.push_back(std::move(event));
      continue;
    }
    event["args"]["nested"] = false;
    const std::string id = "nvtx" + std::to_string(++async_id);
    json begin = event, end = event;
    begin["ph"] = "b";
    begin["id"] = id;
    begin.erase("dur");
    end = {{"name", e.name},       {"cat", event["cat"]}, {"ph", "e"},          {"id", id},
           {"ts", w.us(r.end_ns)}, {"pid", event["pid"]}, {"tid", event["tid"]}};
    out.push_back(std::move(begin));
    out.push_back(std::move(end));
  }
}

// A flow arrow from each launching API call to its GPU record.
void launch_flows(json& out, const std::vector<TraceEvent>& events, const TraceWriter& w) {
  const std::vector<std::optional<std::size_t>> launcher = roofline::launching_calls(events);
  std::uint64_t id = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!launcher[i]) continue;
    const TraceEvent& e = events[i];
    const TraceEvent& call = events[*launcher[i]];
    ++id;
    out.push_back({{"name", "launch"},
                   {"cat", "launch"},
                   {"ph", "s"},
                   {"id", id},
                   {"ts", w.us(call.start_ns)},
                   {"pid", call.process_id},
                   {"tid", call.thread_id}});
    const auto [pid, tid] = w.track(e);
    out.push_back({{"name", "launch"},
                   {"cat", "launch"},
                   {"ph", "f"},
                   {"bp", "e"},
                   {"id", id},
                   {"ts", w.us(e.start_ns)},
                   {"pid", pid},
                   {"tid", tid}});
  }
}

// Where a GPU record's slice ends: a replayed kernel's at its start plus its
// time in the model (its record spans its replay), others at their own end.
std::uint64_t slice_end(const TraceEvent& e, const KernelRates* rates) {
  const std::uint64_t end = std::max(e.end_ns, e.start_ns);
  if (!rates || !rates->replayed_time_s) return end;
  return std::min(
      end, e.start_ns + static_cast<std::uint64_t>(std::llround(*rates->replayed_time_s * 1e9)));
}

// A kernel's rates, where the model has them.
const KernelRates* rates_of(const std::vector<TraceEvent>& events, std::size_t i,
                            const KernelRateMap& rates) {
  if (events[i].kind != TraceKind::kernel) return nullptr;
  const auto it = rates.find(i);
  return it == rates.end() ? nullptr : &it->second;
}

// Counter tracks per device and stream: each rate at the kernel's start, 0 at its end.
void rate_counters(json& out, const std::vector<TraceEvent>& events, const TraceWriter& w,
                   const KernelRateMap& rates) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    const KernelRates* kernel = rates_of(events, i, rates);
    if (!kernel) continue;
    const TraceEvent& e = events[i];
    const std::uint64_t end = slice_end(e, kernel);
    const std::string stream = " (" + w.stream_label(e) + ")";
    auto counter = [&](const char* what, const std::optional<double>& value) {
      if (!value) return;
      for (const auto& [ts, v] : {std::pair{e.start_ns, *value}, std::pair{end, 0.0}})
        out.push_back({{"name", what + stream},
                       {"cat", "kernel_rates"},
                       {"ph", "C"},
                       {"ts", w.us(ts)},
                       {"pid", w.gpu_pid(e.device)},
                       {"args", {{"value", v}}}});
    };
    counter("FLOP/s", kernel->flops_per_s);
    counter("bytes/s", kernel->bytes_per_s);
    counter("fraction of roof", kernel->roof_fraction);
  }
}

}  // namespace

KernelRateMap kernel_rates(const roofline::ProfileAnalysis& analysis) {
  KernelRateMap out;
  for (const roofline::LaunchModel& l : analysis.launches) {
    if (l.time_s <= 0) continue;
    KernelRates& r = out[l.event];
    if (l.replayed) r.replayed_time_s = l.time_s;
    if (l.work > 0) r.flops_per_s = l.work / l.time_s;
    if (l.dram_bytes) r.bytes_per_s = *l.dram_bytes / l.time_s;
    if (l.t_kernel_roof > 0) r.roof_fraction = l.t_kernel_roof / l.time_s;
  }
  return out;
}

json perfetto_trace(const std::vector<TraceEvent>& events, const json& provenance,
                    const KernelRateMap& rates) {
  const TraceWriter w(events);
  json trace_events = json::array();
  w.metadata(trace_events);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind == TraceKind::nvtx_range) continue;  // below, placed on their thread
    if (e.kind == TraceKind::nvtx_mark) {
      trace_events.push_back({{"name", e.name},
                              {"cat", to_string(e.kind)},
                              {"ph", "i"},
                              {"s", "t"},
                              {"ts", w.us(e.start_ns)},
                              {"pid", e.process_id},
                              {"tid", e.thread_id},
                              {"args", e.details}});
      continue;
    }
    const std::uint64_t end = slice_end(e, rates_of(events, i, rates));
    json slice = w.slice(e, end);
    if (end != std::max(e.end_ns, e.start_ns))
      slice["args"]["replay_span_us"] = static_cast<double>(e.end_ns - e.start_ns) / 1000.0;
    trace_events.push_back(std::move(slice));
  }
  nvtx_ranges(trace_events, events, w);
  launch_flows(trace_events, events, w);
  rate_counters(trace_events, events, w, rates);
  return {{"traceEvents", std::move(trace_events)},
          {"displayTimeUnit", "ns"},
          {"metadata",
           {{"provenance", provenance},
            {"origin_ns", w.origin_ns()},
            {"clock", "CUPTI timestamps; ts and dur are microseconds from origin_ns"},
            {"records", events.size()}}}};
}

}  // namespace timeroof::plots
