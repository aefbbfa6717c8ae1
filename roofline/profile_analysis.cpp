#include "roofline/profile_analysis.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include "core/intervals.hpp"

namespace timeroof::roofline {

namespace {

using ThreadKey = std::pair<std::uint32_t, std::uint32_t>;  // process, thread

bool is_api(TraceKind kind) {
  return kind == TraceKind::runtime_api || kind == TraceKind::driver_api;
}

bool is_copy(TraceKind kind) {
  return kind == TraceKind::memcpy || kind == TraceKind::memset;
}

// Never closed: an end before the start (0 by the journal's convention) or the
// largest value (a writer's "no end").
bool never_closed(const TraceEvent& e) {
  return e.kind == TraceKind::nvtx_range &&
         (e.end_ns < e.start_ns || e.end_ns == std::numeric_limits<std::uint64_t>::max());
}

// The first start and the last end of the trace, unclosed ranges' ends aside.
std::pair<std::uint64_t, std::uint64_t> trace_bounds(const std::vector<TraceEvent>& events) {
  if (events.empty()) return {0, 0};
  std::uint64_t first = std::numeric_limits<std::uint64_t>::max(), last = 0;
  for (const TraceEvent& e : events) {
    first = std::min(first, e.start_ns);
    last = std::max(last, never_closed(e) ? e.start_ns : e.end_ns);
  }
  return {first, last};
}

std::string nvtx_domain(const TraceEvent& e) {
  const auto it = e.details.find("domain");
  return it != e.details.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Intervals sorted by start, for the length of their union within a window
// without scanning all of them: only those starting at most `longest` before it.
class IntervalIndex {
 public:
  void add(std::uint64_t start, std::uint64_t end) {
    if (end <= start) return;
    sorted_.push_back({start, end});
    longest_ = std::max(longest_, end - start);
  }
  void finish() {
    std::sort(sorted_.begin(), sorted_.end(),
              [](const NsInterval& a, const NsInterval& b) { return a.start < b.start; });
  }
  std::uint64_t covered(std::uint64_t lo, std::uint64_t hi) const {
    if (hi <= lo) return 0;
    const std::uint64_t from = lo > longest_ ? lo - longest_ : 0;
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(), from,
                               [](const NsInterval& i, std::uint64_t t) { return i.start < t; });
    std::vector<NsInterval> window;
    for (; it != sorted_.end() && it->start < hi; ++it)
      if (it->end > lo) window.push_back(*it);
    return union_length(std::move(window), lo, hi);
  }

 private:
  std::vector<NsInterval> sorted_;
  std::uint64_t longest_ = 0;
};

// The trace, indexed once: each GPU record's launching API call, and per
// thread and per process the intervals the ranges are measured against.
struct TraceIndex {
  std::vector<std::optional<std::size_t>> launcher;  // per event; GPU records only
  // Per thread: (launching call's start, GPU record) by start, for attribution.
  std::map<ThreadKey, std::vector<std::pair<std::uint64_t, std::size_t>>> launches;
  std::map<ThreadKey, IntervalIndex> api_time;
  std::map<std::uint32_t, IntervalIndex> gpu_time;     // per process: all GPU work
  std::map<std::uint32_t, IntervalIndex> kernel_time;  // per process: kernels

  explicit TraceIndex(const std::vector<TraceEvent>& events) : launcher(launching_calls(events)) {
    for (const TraceEvent& e : events)
      if (is_api(e.kind)) api_time[{e.process_id, e.thread_id}].add(e.start_ns, e.end_ns);
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (!launcher[i]) continue;
      const TraceEvent& e = events[i];
      const TraceEvent& call = events[*launcher[i]];
      launches[{call.process_id, call.thread_id}].emplace_back(call.start_ns, i);
      gpu_time[call.process_id].add(e.start_ns, e.end_ns);
      if (e.kind == TraceKind::kernel) kernel_time[call.process_id].add(e.start_ns, e.end_ns);
    }
    for (auto& [key, list] : launches) std::sort(list.begin(), list.end());
    for (auto& [key, index] : api_time) index.finish();
    for (auto& [key, index] : gpu_time) index.finish();
    for (auto& [key, index] : kernel_time) index.finish();
  }

  template <typename Map, typename Key>
  static std::uint64_t covered(const Map& map, const Key& key, std::uint64_t lo, std::uint64_t hi) {
    const auto it = map.find(key);
    return it == map.end() ? 0 : it->second.covered(lo, hi);
  }
};

void add_gpu_record(RangeWork& work, const TraceEvent& e) {
  if (e.kind == TraceKind::kernel) {
    ++work.kernels;
    work.kernel_ns += e.duration_ns();
  } else {
    ++work.copies;
    work.copy_ns += e.duration_ns();
  }
}

void add_work(RangeWork& into, const RangeWork& from) {
  into.kernels += from.kernels;
  into.copies += from.copies;
  into.kernel_ns += from.kernel_ns;
  into.copy_ns += from.copy_ns;
  into.api_ns += from.api_ns;
  into.gpu_idle_ns += from.gpu_idle_ns;
}

// What one range instance caused and spent.
RangeWork instance_work(const std::vector<TraceEvent>& events, const TraceIndex& index,
                        const RangeInstance& r) {
  const TraceEvent& range = events[r.event];
  const ThreadKey thread{range.process_id, range.thread_id};
  RangeWork work;
  if (const auto it = index.launches.find(thread); it != index.launches.end()) {
    const auto& list = it->second;
    auto first = std::lower_bound(list.begin(), list.end(),
                                  std::pair<std::uint64_t, std::size_t>{r.start_ns, 0});
    // A launch at the range's end belongs to what follows (as a range at a
    // sibling's end does).
    for (; first != list.end() && first->first < r.end_ns; ++first)
      add_gpu_record(work, events[first->second]);
  }
  work.api_ns = TraceIndex::covered(index.api_time, thread, r.start_ns, r.end_ns);
  work.gpu_idle_ns = (r.end_ns - r.start_ns) -
                     TraceIndex::covered(index.gpu_time, range.process_id, r.start_ns, r.end_ns);
  return work;
}

// The instances `members` (siblings), grouped by name in order of first start,
// each group one node whose children group all its instances' children.
std::vector<RangeNode> aggregate(const std::vector<std::size_t>& members,
                                 const std::vector<std::vector<std::size_t>>& children,
                                 const std::vector<RangeInstance>& instances,
                                 const std::vector<RangeWork>& work,
                                 const std::vector<TraceEvent>& events, const std::string& prefix) {
  std::vector<RangeNode> nodes;
  std::vector<std::vector<std::size_t>> grouped;         // parallel to nodes: their children
  std::unordered_map<std::string, std::size_t> by_name;  // name -> index in nodes
  for (std::size_t m : members) {
    const RangeInstance& r = instances[m];
    const TraceEvent& e = events[r.event];
    const auto [slot, fresh] = by_name.emplace(e.name, nodes.size());
    if (fresh) {
      RangeNode node;
      node.name = e.name;
      node.path = prefix.empty() ? e.name : prefix + "/" + e.name;
      node.domain = nvtx_domain(e);
      nodes.push_back(std::move(node));
      grouped.emplace_back();
    }
    RangeNode& node = nodes[slot->second];
    ++node.calls;
    node.wall_ns += r.end_ns - r.start_ns;
    add_work(node.work, work[m]);
    if (!r.nested) ++node.not_nested;
    if (!r.closed) ++node.unclosed;
    auto& kids = grouped[slot->second];
    kids.insert(kids.end(), children[m].begin(), children[m].end());
  }
  for (std::size_t i = 0; i < nodes.size(); ++i)
    nodes[i].children = aggregate(grouped[i], children, instances, work, events, nodes[i].path);
  return nodes;
}

void set_shares(RangeNode& node, std::uint64_t top_wall_ns) {
  node.share_of_top =
      top_wall_ns > 0 ? static_cast<double>(node.wall_ns) / static_cast<double>(top_wall_ns) : 0.0;
  for (RangeNode& child : node.children) set_shares(child, top_wall_ns);
}

IterationSpread spread_of(std::vector<std::uint64_t> values) {
  IterationSpread out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  out.median_ns = values[(values.size() - 1) / 2];
  out.min_ns = values.front();
  out.max_ns = values.back();
  return out;
}

std::optional<IterationBreakdown> iteration_breakdown(const std::vector<TraceEvent>& events,
                                                      const TraceIndex& index,
                                                      const std::vector<RangeInstance>& instances,
                                                      const ProfileOptions& options) {
  std::string name = options.iteration_range;
  if (name.empty()) {
    // The most repeated top-level name; ties: the longer total wall time, then the name.
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> tops;  // calls, wall
    for (const RangeInstance& r : instances) {
      if (r.parent) continue;
      auto& [calls, wall] = tops[events[r.event].name];
      ++calls;
      wall += r.end_ns - r.start_ns;
    }
    const auto best = std::max_element(tops.begin(), tops.end(), [](const auto& a, const auto& b) {
      return a.second < b.second;  // std::map order keeps the first name on ties
    });
    if (best == tops.end()) return std::nullopt;
    name = best->first;
  }
  IterationBreakdown out;
  out.range = name;
  for (const RangeInstance& r : instances) {
    const TraceEvent& e = events[r.event];
    if (r.parent || e.name != name) continue;
    Iteration it;
    it.start_ns = r.start_ns;
    it.wall_ns = r.end_ns - r.start_ns;
    it.kernel_ns = TraceIndex::covered(index.kernel_time, e.process_id, r.start_ns, r.end_ns);
    const std::uint64_t busy =
        TraceIndex::covered(index.gpu_time, e.process_id, r.start_ns, r.end_ns);
    it.copy_ns = busy - it.kernel_ns;
    it.idle_ns = it.wall_ns - busy;
    out.iterations.push_back(it);
  }
  if (out.iterations.empty()) return std::nullopt;
  std::sort(out.iterations.begin(), out.iterations.end(),
            [](const Iteration& a, const Iteration& b) { return a.start_ns < b.start_ns; });
  auto field = [&](std::uint64_t Iteration::*member) {
    std::vector<std::uint64_t> values;
    for (const Iteration& it : out.iterations) values.push_back(it.*member);
    return spread_of(std::move(values));
  };
  out.wall = field(&Iteration::wall_ns);
  out.kernel = field(&Iteration::kernel_ns);
  out.copy = field(&Iteration::copy_ns);
  out.idle = field(&Iteration::idle_ns);
  return out;
}

void summarize_kernels(ProfileAnalysis& a, const std::vector<TraceEvent>& events) {
  std::map<std::string, std::vector<std::uint64_t>> durations;
  for (const TraceEvent& e : events)
    if (e.kind == TraceKind::kernel) durations[e.name].push_back(e.duration_ns());
  for (auto& [name, list] : durations) {
    std::sort(list.begin(), list.end());
    KernelSummary k;
    k.name = name;
    k.calls = list.size();
    for (std::uint64_t d : list) k.total_ns += d;
    k.median_ns = list[(list.size() - 1) / 2];
    k.min_ns = list.front();
    k.max_ns = list.back();
    k.share_of_busy = a.gpu_busy_ns > 0
                          ? static_cast<double>(k.total_ns) / static_cast<double>(a.gpu_busy_ns)
                          : 0.0;
    a.kernel_ns += k.total_ns;
    a.kernels.push_back(std::move(k));
  }
  std::stable_sort(
      a.kernels.begin(), a.kernels.end(),
      [](const KernelSummary& x, const KernelSummary& y) { return x.total_ns > y.total_ns; });
}

void summarize_copies_and_api(ProfileAnalysis& a, const std::vector<TraceEvent>& events) {
  std::map<std::string, CopySummary> copies;
  std::map<std::pair<TraceKind, std::string>, ApiSummary> api;
  for (const TraceEvent& e : events) {
    if (is_copy(e.kind)) {
      const std::string direction = e.kind == TraceKind::memset ? "memset" : e.name;
      CopySummary& c = copies[direction];
      c.direction = direction;
      ++c.count;
      c.bytes += e.bytes;
      c.total_ns += e.duration_ns();
      a.copy_ns += e.duration_ns();
    } else if (is_api(e.kind) || e.kind == TraceKind::sync) {
      ApiSummary& s = api[{e.kind, e.name}];
      s.kind = e.kind;
      s.name = e.name;
      ++s.count;
      s.total_ns += e.duration_ns();
    }
  }
  for (auto& [direction, c] : copies) {
    if (c.total_ns > 0)
      c.bytes_per_s = static_cast<double>(c.bytes) / (static_cast<double>(c.total_ns) * 1e-9);
    a.copies.push_back(std::move(c));
  }
  for (auto& [key, s] : api) a.api.push_back(std::move(s));
  std::stable_sort(
      a.copies.begin(), a.copies.end(),
      [](const CopySummary& x, const CopySummary& y) { return x.total_ns > y.total_ns; });
  std::stable_sort(a.api.begin(), a.api.end(), [](const ApiSummary& x, const ApiSummary& y) {
    return x.total_ns > y.total_ns;
  });
}

}  // namespace

std::vector<std::optional<std::size_t>> launching_calls(const std::vector<TraceEvent>& events) {
  // Correlation id -> the API call; a runtime call wins over the driver call
  // it made, which CUPTI may report with the same id.
  std::unordered_map<std::uint32_t, std::size_t> caller;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (!is_api(e.kind) || e.correlation_id == 0) continue;
    auto [it, inserted] = caller.emplace(e.correlation_id, i);
    if (!inserted && e.kind == TraceKind::runtime_api &&
        events[it->second].kind == TraceKind::driver_api)
      it->second = i;
  }
  std::vector<std::optional<std::size_t>> out(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!on_gpu(events[i].kind) || events[i].correlation_id == 0) continue;
    if (const auto it = caller.find(events[i].correlation_id); it != caller.end())
      out[i] = it->second;
  }
  return out;
}

std::vector<RangeInstance> range_instances(const std::vector<TraceEvent>& events) {
  const std::uint64_t trace_end = trace_bounds(events).second;
  std::map<ThreadKey, std::vector<RangeInstance>> per_thread;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind != TraceKind::nvtx_range) continue;
    RangeInstance r;
    r.event = i;
    r.start_ns = e.start_ns;
    r.closed = !never_closed(e);
    r.end_ns = r.closed ? e.end_ns : std::max(trace_end, e.start_ns);
    per_thread[{e.process_id, e.thread_id}].push_back(r);
  }
  std::vector<RangeInstance> out;
  for (auto& [thread, list] : per_thread) {
    // Outer ranges first where two start together, so the inner one nests.
    std::stable_sort(list.begin(), list.end(), [](const RangeInstance& a, const RangeInstance& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    std::vector<std::size_t> open;  // indices into `out`: the enclosing ranges
    for (RangeInstance r : list) {
      while (!open.empty() && out[open.back()].end_ns <= r.start_ns) open.pop_back();
      if (!open.empty() && r.end_ns > out[open.back()].end_ns) {
        // Overlaps the innermost open range without being inside it: a sibling.
        r.nested = false;
        while (!open.empty() && r.end_ns > out[open.back()].end_ns) open.pop_back();
      }
      if (!open.empty()) {
        r.parent = open.back();
        r.depth = out[open.back()].depth + 1;
      }
      open.push_back(out.size());
      out.push_back(r);
    }
  }
  return out;
}

ProfileAnalysis analyze_profile(const std::vector<TraceEvent>& events,
                                const ProfileOptions& options) {
  ProfileAnalysis a;
  a.records = events.size();
  std::tie(a.origin_ns, a.end_ns) = trace_bounds(events);

  std::map<std::uint32_t, std::vector<NsInterval>> per_device;
  for (const TraceEvent& e : events)
    if (on_gpu(e.kind)) per_device[e.device].push_back({e.start_ns, e.end_ns});
  for (auto& [device, intervals] : per_device)
    a.gpu_busy_ns +=
        union_length(std::move(intervals), 0, std::numeric_limits<std::uint64_t>::max());
  summarize_kernels(a, events);
  summarize_copies_and_api(a, events);

  const TraceIndex index(events);
  for (std::size_t i = 0; i < events.size(); ++i)
    if (on_gpu(events[i].kind) && !index.launcher[i]) add_gpu_record(a.unattributed, events[i]);

  const std::vector<RangeInstance> instances = range_instances(events);
  std::vector<RangeWork> work;
  std::vector<std::vector<std::size_t>> children(instances.size());
  std::map<ThreadKey, std::vector<std::size_t>> roots;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    work.push_back(instance_work(events, index, instances[i]));
    const TraceEvent& e = events[instances[i].event];
    if (instances[i].parent)
      children[*instances[i].parent].push_back(i);
    else
      roots[{e.process_id, e.thread_id}].push_back(i);
  }
  for (const auto& [thread, members] : roots) {
    ThreadRanges t;
    t.process_id = thread.first;
    t.thread_id = thread.second;
    t.roots = aggregate(members, children, instances, work, events, "");
    for (RangeNode& root : t.roots) set_shares(root, root.wall_ns);
    a.threads.push_back(std::move(t));
  }
  a.iterations = iteration_breakdown(events, index, instances, options);
  return a;
}

}  // namespace timeroof::roofline
