#include "roofline/profile_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/format.hpp"
#include "core/intervals.hpp"
#include "core/quantities.hpp"

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

// Each kernel launch's context: the innermost range open on its launching
// thread at the launch call (nullptr outside any, and for a kernel without a
// launching call), as the selection keys its launches (core/kernel_selection.hpp).
std::vector<const std::string*> launch_contexts(
    const std::vector<TraceEvent>& events, const std::vector<std::optional<std::size_t>>& launcher,
    const std::vector<RangeInstance>& instances) {
  std::map<ThreadKey, std::vector<std::size_t>> by_thread;  // in range_instances' order
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const TraceEvent& e = events[instances[i].event];
    by_thread[{e.process_id, e.thread_id}].push_back(i);
  }
  std::vector<const std::string*> out(events.size(), nullptr);
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind != TraceKind::kernel || !launcher[i]) continue;
    const TraceEvent& call = events[*launcher[i]];
    const auto thread = by_thread.find({call.process_id, call.thread_id});
    if (thread == by_thread.end()) continue;
    const std::vector<std::size_t>& list = thread->second;
    // The last range to start at or before the call (the inner one of ranges
    // starting together), then out through its parents to one still open.
    const auto after =
        std::upper_bound(list.begin(), list.end(), call.start_ns,
                         [&](std::uint64_t t, std::size_t r) { return t < instances[r].start_ns; });
    if (after == list.begin()) continue;
    std::optional<std::size_t> r = *std::prev(after);
    while (r && instances[*r].end_ns <= call.start_ns) r = instances[*r].parent;
    if (r) out[i] = &events[instances[*r].event].name;
  }
  return out;
}

// The kernel configurations (name, grid, block, context) with the counters of
// their measured launches, each launch's time, and the model of any set of
// kernel launches from them (the rules in the header).
class ModelBuilder {
 public:
  ModelBuilder(const std::vector<TraceEvent>& events,
               const std::vector<std::optional<std::size_t>>& launcher,
               const std::vector<const std::string*>& contexts, const ProfileOptions& options)
      : events_(events),
        roofs_(options.roofs.value_or(MachineRoofs{})),
        config_of_(events.size()),
        measured_(events.size(), false),
        replayed_(events.size(), false),
        replay_duration_ns_(events.size()) {
    // (launching process, correlation id) -> kernel; CUPTI gives GPU records
    // no process, so it is the launching call's, as for the range attribution.
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> kernel_by_launch;
    std::map<std::string, std::size_t> config_by_key;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const TraceEvent& e = events[i];
      if (e.kind != TraceKind::kernel) continue;
      const std::string key = e.name + "\n" + e.details.value("grid", nlohmann::json()).dump() +
                              e.details.value("block", nlohmann::json()).dump() + "\n" +
                              (contexts[i] ? *contexts[i] : std::string());
      const auto [slot, fresh] = config_by_key.emplace(key, configs_.size());
      if (fresh) configs_.push_back(Config{.record = kernel_record(e)});
      config_of_[i] = slot->second;
      const std::uint32_t process = launcher[i] ? events[*launcher[i]].process_id : e.process_id;
      if (e.correlation_id != 0) kernel_by_launch.emplace(std::pair{process, e.correlation_id}, i);
    }
    for (const TraceEvent& e : events) {
      if (e.kind != TraceKind::kernel_counters) continue;
      ++records_;
      const auto it = kernel_by_launch.find({e.process_id, e.correlation_id});
      const auto quantities = e.details.find("quantities");
      if (it == kernel_by_launch.end() || quantities == e.details.end() ||
          !quantities->is_object() || measured_[it->second]) {
        ++unmatched_;
        continue;
      }
      measured_[it->second] = true;
      // Kernel replay runs inside the launch call, which the counters record spans
      // (iteration replay's records have none: their launches ran as traced).
      const auto flag = events[it->second].details.find("replayed");
      replayed_[it->second] =
          e.end_ns > e.start_ns || (flag != events[it->second].details.end() && *flag == true);
      if (const auto d = quantities->find(to_string(Quantity::duration));
          d != quantities->end() && d->is_number() && d->get<double>() > 0)
        replay_duration_ns_[it->second] = d->get<double>() * 1e9;
      if (const auto user = e.details.find("metrics"); user != e.details.end() && user->is_object())
        for (const auto& [name, value] : user->items())
          if (value.is_number()) user_metrics_[it->second][name] = value.get<double>();
      Config& c = configs_[*config_of_[it->second]];
      ++c.measured;
      for (const auto& [name, value] : quantities->items()) {
        if (!value.is_number()) continue;
        c.sums[name] += value.get<double>();
        ++c.counts[name];
      }
    }
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (events[i].kind != TraceKind::kernel || replayed_[i]) continue;
      Config& c = configs_[*config_of_[i]];
      ++c.unreplayed;
      c.unreplayed_ns += events[i].duration_ns();
    }
  }

  // One covered launch's per-call numbers; none for uncovered ones.
  std::optional<LaunchModel> launch(std::size_t event) const {
    const std::size_t config = *config_of_[event];
    if (configs_[config].measured == 0) return std::nullopt;
    auto cached = per_call_.find(config);
    if (cached == per_call_.end())
      cached = per_call_.emplace(config, *model({event}, std::nullopt)).first;
    const KernelModel& m = cached->second;
    LaunchModel out;
    out.event = event;
    out.work = m.bounds.total_work;
    out.dram_bytes = m.bounds.level(Level::dram).bytes;
    out.t_kernel_roof = m.bounds.t_kernel_roof;
    out.time_s = time_ns(event) * 1e-9;
    out.measured = measured_[event];
    out.replayed = replayed_[event];
    return out;
  }

  // A kernel launch's time: its traced duration; for a replayed launch (its
  // record spans the launch call that replayed it) the mean of its
  // configuration's other launches, else the GPU time its counter passes
  // measured (replay-timed), else its record's span.
  double time_ns(std::size_t event) const {
    const double own = static_cast<double>(events_[event].duration_ns());
    if (!replayed_[event]) return own;
    const Config& c = configs_[*config_of_[event]];
    if (c.unreplayed > 0)
      return static_cast<double>(c.unreplayed_ns) / static_cast<double>(c.unreplayed);
    return replay_duration_ns_[event].value_or(own);
  }
  // Where a GPU record ends on the timeline: a kernel at its start plus its time.
  std::uint64_t end_ns(std::size_t event) const {
    const TraceEvent& e = events_[event];
    if (e.kind != TraceKind::kernel || !replayed_[event]) return e.end_ns;
    return e.start_ns + static_cast<std::uint64_t>(std::llround(time_ns(event)));
  }
  std::uint64_t duration_ns(std::size_t event) const {
    const std::uint64_t end = end_ns(event);
    return end - std::min(end, events_[event].start_ns);
  }

  std::uint64_t records() const { return records_; }
  std::uint64_t unmatched() const { return unmatched_; }
  bool measured(std::size_t event) const { return measured_[event]; }
  // The user's metrics of a measured launch; none for others.
  const std::map<std::string, double>* user_metrics(std::size_t event) const {
    const auto it = user_metrics_.find(event);
    return it == user_metrics_.end() ? nullptr : &it->second;
  }

  // The model of the kernel launches `kernels` (indices into the trace); none
  // where none is covered. `time_s`: the time the headroom is of; none: T_k.
  std::optional<KernelModel> model(const std::vector<std::size_t>& kernels,
                                   std::optional<double> time_s) const {
    KernelModel m;
    std::map<std::size_t, std::pair<std::uint64_t, double>> per_config;  // launches, seconds
    for (std::size_t i : kernels) {
      const Config& c = configs_[*config_of_[i]];
      const std::uint64_t own_ns = events_[i].duration_ns();
      if (c.measured == 0) {
        ++m.not_covered;
        m.not_covered_ns += own_ns;
        continue;
      }
      ++m.launches;
      const double ns = time_ns(i);
      if (measured_[i]) ++m.measured;
      if (replayed_[i] && c.unreplayed == 0) ++m.timed_by_replay;
      auto& [launches, seconds] = per_config[*config_of_[i]];
      ++launches;
      seconds += ns * 1e-9;
    }
    if (m.launches == 0) return std::nullopt;
    Point point;
    point.op = "profile";
    double kernel_s = 0;
    for (const auto& [config, use] : per_config) {
      const Config& c = configs_[config];
      KernelRecord record = c.record;
      record.duration_s = use.second;
      for (const auto& [name, sum] : c.sums) {
        const double value =
            sum / static_cast<double>(c.counts.at(name)) * static_cast<double>(use.first);
        record.metrics[name] = value;
        point.counters[name] += value;
      }
      point.kernels.push_back(std::move(record));
      kernel_s += use.second;
    }
    point.timing.kernel_time_s = kernel_s;
    m.quantities = point.counters;
    m.bounds = point_bounds(point, roofs_);
    m.classification = classify(m.bounds);
    m.time_s = time_s.value_or(kernel_s);
    if (m.bounds.t_lower_bound > 0) m.headroom = m.time_s / m.bounds.t_lower_bound;
    return m;
  }

 private:
  struct Config {
    KernelRecord record;  // name, grid, block
    std::uint64_t measured = 0;
    std::map<std::string, double> sums;           // per quantity, over measured launches
    std::map<std::string, std::uint64_t> counts;  // measured launches that gave it
    std::uint64_t unreplayed = 0;                 // launches timed by their own records
    std::uint64_t unreplayed_ns = 0;
  };

  static KernelRecord kernel_record(const TraceEvent& e) {
    KernelRecord r;
    r.name = e.name;
    auto read = [&](const char* key, std::array<int, 3>& into) {
      const auto it = e.details.find(key);
      if (it == e.details.end() || !it->is_array() || it->size() != 3) return;
      for (std::size_t d = 0; d < 3; ++d)
        if ((*it)[d].is_number_integer()) into[d] = (*it)[d].get<int>();
    };
    read("grid", r.grid);
    read("block", r.block);
    return r;
  }

  const std::vector<TraceEvent>& events_;
  MachineRoofs roofs_;
  std::vector<Config> configs_;
  std::vector<std::optional<std::size_t>> config_of_;      // per event: kernels only
  std::vector<bool> measured_;                             // per event
  std::vector<bool> replayed_;                             // per event: measured by kernel replay
  std::vector<std::optional<double>> replay_duration_ns_;  // per measured event: its passes'
  std::map<std::size_t, std::map<std::string, double>> user_metrics_;  // per measured event
  std::uint64_t records_ = 0;
  std::uint64_t unmatched_ = 0;
  mutable std::map<std::size_t, KernelModel> per_call_;  // per configuration: one call
};

// The trace, indexed once: per thread the launches and API time the ranges are
// measured against, per process the GPU time (kernels at their model time:
// ModelBuilder::time_ns).
struct TraceIndex {
  // Per thread: (launching call's start, GPU record) by start, for attribution.
  std::map<ThreadKey, std::vector<std::pair<std::uint64_t, std::size_t>>> launches;
  std::map<ThreadKey, IntervalIndex> api_time;
  std::map<std::uint32_t, IntervalIndex> gpu_time;     // per process: all GPU work
  std::map<std::uint32_t, IntervalIndex> kernel_time;  // per process: kernels
  std::map<std::uint32_t, IntervalIndex> replay_time;  // per process: kernel_counters spans

  // `api_traced` false (`--api none`): GPU work has no launching call, so no
  // process; it counts as every process's (those of the host records).
  TraceIndex(const std::vector<TraceEvent>& events, bool api_traced,
             const std::vector<std::optional<std::size_t>>& launcher, const ModelBuilder& models) {
    std::set<std::uint32_t> processes;
    for (const TraceEvent& e : events) {
      if (is_api(e.kind)) api_time[{e.process_id, e.thread_id}].add(e.start_ns, e.end_ns);
      if (e.kind == TraceKind::kernel_counters) replay_time[e.process_id].add(e.start_ns, e.end_ns);
      if (!on_gpu(e.kind)) processes.insert(e.process_id);
    }
    auto add_gpu_time = [&](std::uint32_t process, std::size_t i) {
      const TraceEvent& e = events[i];
      const std::uint64_t end = models.end_ns(i);
      gpu_time[process].add(e.start_ns, end);
      if (e.kind == TraceKind::kernel) kernel_time[process].add(e.start_ns, end);
    };
    for (std::size_t i = 0; i < events.size(); ++i) {
      const TraceEvent& e = events[i];
      if (!launcher[i]) {
        if (!api_traced && on_gpu(e.kind))
          for (std::uint32_t process : processes) add_gpu_time(process, i);
        continue;
      }
      const TraceEvent& call = events[*launcher[i]];
      launches[{call.process_id, call.thread_id}].emplace_back(call.start_ns, i);
      add_gpu_time(call.process_id, i);
    }
    for (auto& [key, list] : launches) std::sort(list.begin(), list.end());
    for (auto& [key, index] : api_time) index.finish();
    for (auto& [key, index] : gpu_time) index.finish();
    for (auto& [key, index] : kernel_time) index.finish();
    for (auto& [key, index] : replay_time) index.finish();
  }

  template <typename Map, typename Key>
  static std::uint64_t covered(const Map& map, const Key& key, std::uint64_t lo, std::uint64_t hi) {
    const auto it = map.find(key);
    return it == map.end() ? 0 : it->second.covered(lo, hi);
  }
};

void add_gpu_record(RangeWork& work, const TraceEvent& e, std::uint64_t duration_ns) {
  if (e.kind == TraceKind::kernel) {
    ++work.kernels;
    work.kernel_ns += duration_ns;
  } else {
    ++work.copies;
    work.copy_ns += duration_ns;
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
// `kernels` receives the kernel launches attributed to it (indices into the trace).
RangeWork instance_work(const std::vector<TraceEvent>& events, const TraceIndex& index,
                        const ModelBuilder& models, const RangeInstance& r,
                        std::vector<std::size_t>& kernels) {
  const TraceEvent& range = events[r.event];
  const ThreadKey thread{range.process_id, range.thread_id};
  RangeWork work;
  if (const auto it = index.launches.find(thread); it != index.launches.end()) {
    const auto& list = it->second;
    auto first = std::lower_bound(list.begin(), list.end(),
                                  std::pair<std::uint64_t, std::size_t>{r.start_ns, 0});
    // A launch at the range's end belongs to what follows (as a range at a
    // sibling's end does).
    for (; first != list.end() && first->first < r.end_ns; ++first) {
      add_gpu_record(work, events[first->second], models.duration_ns(first->second));
      if (events[first->second].kind == TraceKind::kernel) kernels.push_back(first->second);
    }
  }
  work.api_ns = TraceIndex::covered(index.api_time, thread, r.start_ns, r.end_ns);
  work.gpu_idle_ns = (r.end_ns - r.start_ns) -
                     TraceIndex::covered(index.gpu_time, range.process_id, r.start_ns, r.end_ns);
  return work;
}

// Per range instance, what the tree is aggregated from.
struct InstanceTree {
  const std::vector<RangeInstance>& instances;
  std::vector<RangeWork> work;
  std::vector<std::vector<std::size_t>> kernels;   // launches attributed to each
  std::vector<std::vector<std::size_t>> children;  // instances directly inside each
};

// The instances `members` (siblings), grouped by name in order of first start,
// each group one node whose children group all its instances' children.
std::vector<RangeNode> aggregate(const std::vector<std::size_t>& members, const InstanceTree& tree,
                                 const ModelBuilder& models, const std::vector<TraceEvent>& events,
                                 const std::string& prefix) {
  const std::vector<RangeInstance>& instances = tree.instances;
  std::vector<RangeNode> nodes;
  std::vector<std::vector<std::size_t>> grouped;         // parallel to nodes: their children
  std::vector<std::vector<std::size_t>> kernels;         // parallel to nodes: their launches
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
      kernels.emplace_back();
    }
    RangeNode& node = nodes[slot->second];
    ++node.calls;
    node.wall_ns += r.end_ns - r.start_ns;
    add_work(node.work, tree.work[m]);
    if (!r.nested) ++node.not_nested;
    if (!r.closed) ++node.unclosed;
    auto& kids = grouped[slot->second];
    kids.insert(kids.end(), tree.children[m].begin(), tree.children[m].end());
    auto& launches = kernels[slot->second];
    launches.insert(launches.end(), tree.kernels[m].begin(), tree.kernels[m].end());
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].model = models.model(kernels[i], static_cast<double>(nodes[i].wall_ns) * 1e-9);
    nodes[i].children = aggregate(grouped[i], tree, models, events, nodes[i].path);
  }
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

// Kernel time within and beyond the roofs; none without a roof to judge by.
std::pair<std::optional<double>, std::optional<double>> roof_split(
    const std::optional<KernelModel>& model) {
  if (!model || model->bounds.t_kernel_roof <= 0) return {};
  return {model->classification.parts.within_roof_s, model->classification.parts.lost_to_roof_s};
}

// The class as findings.hpp words it, "" for the classes a profile finding skips.
std::string class_words(const Classification& c) {
  switch (c.bottleneck) {
    case Bottleneck::memory_bound:
      return std::string(display_name(c.level.value_or(Level::dram))) + "-bound";
    case Bottleneck::compute_bound:
      return c.unit == ComputeUnit::tensor_core ? "Tensor-Core-bound" : "CUDA-core-bound";
    case Bottleneck::latency_bound:
      return "latency-bound";
    default:
      return "";
  }
}

// The time the class names (the sweep findings' rank).
double explained_s(const KernelModel& m) {
  const PointBounds& b = m.bounds;
  switch (m.classification.bottleneck) {
    case Bottleneck::memory_bound:
      return b.level(m.classification.level.value_or(Level::dram)).time_s.value_or(0);
    case Bottleneck::compute_bound:
      return b.t_compute;
    case Bottleneck::latency_bound:
      return std::max(0.0, b.kernel_s.value_or(0) - b.t_kernel_roof);
    default:
      return 0;
  }
}

void add_finding(std::vector<ProfileFinding>& out, const std::string& subject,
                 const std::optional<KernelModel>& model, const std::string& share_text) {
  if (!model || !model->bounds.efficiency) return;
  const std::string words = class_words(model->classification);
  if (words.empty()) return;
  ProfileFinding f;
  f.subject = subject;
  f.text = subject + ": " + words + " at " + format_number(*model->bounds.efficiency, hint::share) +
           " of the roof; " + share_text;
  if (model->not_covered > 0)
    f.text += " (" + std::to_string(model->not_covered) + " of its " +
              std::to_string(model->launches + model->not_covered) +
              " kernel launches without counters)";
  f.explained_s = explained_s(*model);
  f.label = model->classification.label();
  out.push_back(std::move(f));
}

void range_findings(std::vector<ProfileFinding>& out, const RangeNode& node, const RangeNode& top) {
  if (&node != &top)
    add_finding(out, node.path, node.model,
                format_number(node.share_of_top, hint::share) + " of " + top.name);
  for (const RangeNode& child : node.children) range_findings(out, child, top);
}

// The iterations as launch-bound where the GPU sits idle (host-only time, less the
// replays of measured launches) for at least the sweeps' launch fraction of the
// median iteration: the host, not the kernels, sets the pace. Ranked by that
// host-only time over all iterations.
void iteration_finding(std::vector<ProfileFinding>& out, const ProfileAnalysis& a) {
  if (!a.iterations) return;
  const IterationBreakdown& b = *a.iterations;
  std::vector<double> shares;
  std::vector<std::uint64_t> host_only, walls, launches;
  double host_only_s = 0;
  for (const Iteration& it : b.iterations) {
    const std::uint64_t host = it.idle_ns - std::min(it.replay_ns, it.idle_ns);
    if (it.wall_ns == 0) continue;
    shares.push_back(static_cast<double>(host) / static_cast<double>(it.wall_ns));
    host_only.push_back(host);
    walls.push_back(it.wall_ns);
    launches.push_back(it.launches);
    host_only_s += static_cast<double>(host) * 1e-9;
  }
  if (shares.empty()) return;
  std::sort(shares.begin(), shares.end());
  const double share = shares[(shares.size() - 1) / 2];
  if (share < Thresholds{}.launch_fraction) return;
  const auto median = [](std::vector<std::uint64_t>& v) { return spread_of(v).median_ns; };
  const std::uint64_t host = median(host_only), wall = median(walls), count = median(launches);
  ProfileFinding f;
  f.subject = b.range;
  f.text = b.range + ": launch-bound, the GPU idle " + format_number(share, hint::share) +
           " of an iteration (median " + format_time(static_cast<double>(host) * 1e-9) + " of " +
           format_time(static_cast<double>(wall) * 1e-9) + ")";
  if (count > 0) {
    f.text += "; " + std::to_string(count) + (count == 1 ? " launch, " : " launches, ") +
              format_time(static_cast<double>(host) * 1e-9 / static_cast<double>(count)) +
              " of host-only time each";
    if (a.roofs && a.roofs->launch.available())
      f.text += " (launch roof " + format_time(*a.roofs->launch.value) + ")";
  }
  f.text += ": fewer launches or less host work between them (CUDA graphs, fusion) would cut it";
  f.explained_s = host_only_s;
  f.label = to_string(Bottleneck::launch_bound);
  out.push_back(std::move(f));
}

std::vector<ProfileFinding> profile_findings(const ProfileAnalysis& a) {
  std::vector<ProfileFinding> out;
  iteration_finding(out, a);
  for (const ThreadRanges& t : a.threads)
    for (const RangeNode& root : t.roots) range_findings(out, root, root);
  for (const KernelSummary& k : a.kernels)
    add_finding(out, k.name, k.model, format_number(k.share_of_busy, hint::share) + " of GPU busy");
  std::stable_sort(out.begin(), out.end(), [](const ProfileFinding& x, const ProfileFinding& y) {
    return x.explained_s > y.explained_s;
  });
  if (out.size() > kProfileFindings) out.resize(kProfileFindings);
  return out;
}

std::optional<IterationBreakdown> iteration_breakdown(const std::vector<TraceEvent>& events,
                                                      const TraceIndex& index,
                                                      const InstanceTree& tree,
                                                      const ModelBuilder& models,
                                                      const ProfileOptions& options) {
  const std::vector<RangeInstance>& instances = tree.instances;
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
  std::vector<std::size_t> kernels;  // of all its iterations
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const RangeInstance& r = instances[i];
    const TraceEvent& e = events[r.event];
    if (r.parent || e.name != name) continue;
    Iteration it;
    it.launches = tree.kernels[i].size();
    for (std::size_t k : tree.kernels[i])
      if (models.measured(k)) ++it.measured_launches;
    kernels.insert(kernels.end(), tree.kernels[i].begin(), tree.kernels[i].end());
    it.replay_ns = TraceIndex::covered(index.replay_time, e.process_id, r.start_ns, r.end_ns);
    std::tie(it.within_roof_s, it.lost_to_roof_s) = roof_split(models.model(tree.kernels[i], {}));
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
  std::tie(out.within_roof_s, out.lost_to_roof_s) = roof_split(models.model(kernels, {}));
  return out;
}

void summarize_kernels(ProfileAnalysis& a, const std::vector<TraceEvent>& events,
                       const ModelBuilder& models) {
  std::map<std::string, std::vector<std::uint64_t>> durations;
  std::map<std::string, std::vector<std::size_t>> launches;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind != TraceKind::kernel) continue;
    durations[events[i].name].push_back(models.duration_ns(i));
    launches[events[i].name].push_back(i);
  }
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
    k.model = models.model(launches[name], std::nullopt);
    std::map<std::string, std::pair<double, int>> sums;  // sum, launches
    for (std::size_t i : launches[name])
      if (const auto* user = models.user_metrics(i))
        for (const auto& [metric, value] : *user) {
          sums[metric].first += value;
          ++sums[metric].second;
        }
    for (const auto& [metric, sum] : sums) k.metrics[metric] = sum.first / sum.second;
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

std::optional<std::size_t> profile_roofs_run(const Run& profile, const std::vector<Run>& runs) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    if (r.machine.ceilings.empty() || profile.machine.gpu.name.empty() ||
        r.machine.gpu.name != profile.machine.gpu.name)
      continue;
    if (!best || std::tie(r.started_at, r.id) > std::tie(runs[*best].started_at, runs[*best].id))
      best = i;
  }
  return best;
}

void attach_profile_roofs(RunRecord& profile, const std::vector<Run>& candidates) {
  Machine& machine = profile.run.machine;
  if (!machine.ceilings.empty()) return;
  const auto chosen = profile_roofs_run(profile.run, candidates);
  if (!chosen) return;
  const Run& from = candidates[*chosen];
  machine.ceilings = from.machine.ceilings;
  machine.skipped = from.machine.skipped;
  machine.working_set = from.machine.working_set;
  profile.run.spec["roofs_from"] = "run " + std::to_string(from.id) + " (" + from.machine.gpu.name +
                                   ", started " + from.started_at + ")";
}

ProfileOptions profile_options(const RunRecord& record) {
  ProfileOptions options;
  const nlohmann::json& spec = record.run.spec;
  if (spec.contains("profile") && spec["profile"].is_object() && spec["profile"].contains("api") &&
      spec["profile"]["api"].is_string())
    options.api =
        find_api_tracing(spec["profile"]["api"].get<std::string>()).value_or(kStoredRunsApiTracing);
  if (record.run.machine.ceilings.empty()) return options;
  options.roofs = machine_roofs(record.run.machine);
  const auto named = record.run.spec.find("roofs_from");
  options.roofs_from = named != record.run.spec.end() && named->is_string()
                           ? named->get<std::string>()
                           : "run " + std::to_string(record.run.id) + " (its own ceilings)";
  return options;
}

std::vector<std::optional<std::size_t>> launching_calls(const std::vector<TraceEvent>& events) {
  // (process, correlation id) -> the API call, and correlation id alone for GPU
  // records of older traces, which name no process; a runtime call wins over
  // the driver call it made, which CUPTI may report with the same id.
  const auto key = [](std::uint32_t process, std::uint32_t correlation) {
    return std::uint64_t{process} << 32 | correlation;
  };
  const bool older_trace = std::any_of(events.begin(), events.end(), [](const TraceEvent& e) {
    return on_gpu(e.kind) && e.correlation_id != 0 && e.process_id == 0;
  });
  std::unordered_map<std::uint64_t, std::size_t> caller, caller_by_id;
  const auto keep = [&](std::unordered_map<std::uint64_t, std::size_t>& map, std::uint64_t k,
                        std::size_t i) {
    auto [it, inserted] = map.emplace(k, i);
    if (!inserted && events[i].kind == TraceKind::runtime_api &&
        events[it->second].kind == TraceKind::driver_api)
      it->second = i;
  };
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (!is_api(e.kind) || e.correlation_id == 0) continue;
    keep(caller, key(e.process_id, e.correlation_id), i);
    if (older_trace) keep(caller_by_id, e.correlation_id, i);
  }
  std::vector<std::optional<std::size_t>> out(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (!on_gpu(e.kind) || e.correlation_id == 0) continue;
    const auto& calls = e.process_id != 0 ? caller : caller_by_id;
    const auto it =
        calls.find(e.process_id != 0 ? key(e.process_id, e.correlation_id) : e.correlation_id);
    if (it != calls.end()) out[i] = it->second;
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
  a.api_tracing = options.api;
  std::tie(a.origin_ns, a.end_ns) = trace_bounds(events);

  const std::vector<std::optional<std::size_t>> launcher = launching_calls(events);
  const std::vector<RangeInstance> instances = range_instances(events);
  const ModelBuilder models(events, launcher, launch_contexts(events, launcher, instances),
                            options);
  const TraceIndex index(events, options.api != ApiTracing::none, launcher, models);
  std::map<std::uint32_t, std::vector<NsInterval>> per_device;
  for (std::size_t i = 0; i < events.size(); ++i)
    if (on_gpu(events[i].kind))
      per_device[events[i].device].push_back({events[i].start_ns, models.end_ns(i)});
  for (auto& [device, intervals] : per_device)
    a.gpu_busy_ns +=
        union_length(std::move(intervals), 0, std::numeric_limits<std::uint64_t>::max());
  a.roofs = options.roofs;
  a.roofs_from = options.roofs_from;
  a.counter_records = models.records();
  a.counters_unmatched = models.unmatched();
  summarize_kernels(a, events, models);
  summarize_copies_and_api(a, events);
  std::vector<std::size_t> all_kernels;
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i].kind == TraceKind::kernel) all_kernels.push_back(i);
  a.program = models.model(all_kernels, static_cast<double>(a.span_ns()) * 1e-9);
  for (std::size_t i : all_kernels)
    if (auto launch = models.launch(i)) a.launches.push_back(*launch);

  for (std::size_t i = 0; i < events.size(); ++i)
    if (on_gpu(events[i].kind) && !launcher[i])
      add_gpu_record(a.unattributed, events[i], models.duration_ns(i));

  InstanceTree tree{.instances = instances,
                    .work = {},
                    .kernels = std::vector<std::vector<std::size_t>>(instances.size()),
                    .children = std::vector<std::vector<std::size_t>>(instances.size())};
  std::map<ThreadKey, std::vector<std::size_t>> roots;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    tree.work.push_back(instance_work(events, index, models, instances[i], tree.kernels[i]));
    const TraceEvent& e = events[instances[i].event];
    if (instances[i].parent)
      tree.children[*instances[i].parent].push_back(i);
    else
      roots[{e.process_id, e.thread_id}].push_back(i);
  }
  for (const auto& [thread, members] : roots) {
    ThreadRanges t;
    t.process_id = thread.first;
    t.thread_id = thread.second;
    t.roots = aggregate(members, tree, models, events, "");
    for (RangeNode& root : t.roots) set_shares(root, root.wall_ns);
    a.threads.push_back(std::move(t));
  }
  a.iterations = iteration_breakdown(events, index, tree, models, options);
  a.findings = profile_findings(a);
  return a;
}

}  // namespace timeroof::roofline
