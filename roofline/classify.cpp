#include "roofline/classify.hpp"

#include <algorithm>

namespace timeroof::roofline {

namespace {

std::string pct(double fraction) {
  return format_number(fraction, hint::percent_whole);
}

// "T_stream 45 us": a time with its name.
std::string named(const std::string& name, double seconds) {
  return name + " " + format_time(seconds);
}

// The name of T in sentences: "T_stream", "T_call", or "T_k + transfer".
std::string time_name(TimeSource source) {
  return source == TimeSource::none ? std::string("T_k + transfer") : to_string(source);
}

// Why measured parts exceed T by graph_above_time (see the header).
std::string graph_above_note(const Decomposition& d, double graph_s) {
  std::string out = "T_graph " + format_time_3(graph_s) + " (graph replay) exceeds " +
                    time_name(d.time_source) + " " + format_time_3(d.time_s) + " by " +
                    format_time_3(d.graph_above_time_s);
  switch (d.graph_vs_time) {
    case Separation::overlapping:
      return out + ", within their 95% intervals: noise";
    case Separation::apart:
      return out + ", beyond their 95% intervals: flagged, the two passes ran at different speeds";
    case Separation::unknown:
      break;
  }
  return out + " (no intervals to judge it by)";
}

// Where kernels and copies exceed the device time, why (see the header).
std::string kernels_above_note(const PointBounds& b, const Decomposition& d,
                               const std::string& device_name, double device_s) {
  const std::int64_t kernels = b.launches.value_or(0);
  std::string out = named("T_k", d.kernel_s) + " (trace pass";
  if (kernels > 0) out += ", " + std::to_string(kernels) + (kernels == 1 ? " kernel" : " kernels");
  out += ")";
  if (d.kernel_overlap_s > 0) out += " less their overlap " + format_time(d.kernel_overlap_s);
  if (d.transfer_s > 0) out += " plus transfers " + format_time(d.transfer_s);
  out += " exceed" + std::string(d.kernel_overlap_s > 0 || d.transfer_s > 0 ? "" : "s") + " " +
         named(device_name, device_s) + " by " + format_time(d.kernels_above_device_s) + " (" +
         pct(d.kernels_above_device_s / device_s) + "): ";
  if (b.kernel_busy_s)
    return out +
           "beyond the overlap the trace measured, the passes ran at different speeds "
           "(clocks, power)";
  if (kernels == 1)
    return out + "one kernel cannot overlap itself, so the trace pass ran it slower than the " +
           device_name + " pass (clocks, power)";
  return out +
         "the kernels may overlap on several streams (the trace recorded no busy time to "
         "tell) or the passes ran at different clocks";
}

// Why T_stream exceeds T_call beyond their intervals (see the header): which
// side's speed moved between the passes, with the numbers that say so.
std::string stream_above_call_note(const PointBounds& b, const Decomposition& d) {
  const std::string out = "T_stream " + format_time_3(b.stream->median_s) +
                          " (back to back) exceeds T_call " + format_time_3(b.call->median_s) +
                          " (one synchronized call) by " + format_time_3(d.stream_above_call_s) +
                          " (" + pct(d.stream_above_call_s / b.call->median_s) +
                          "), beyond their 95% intervals: flagged, ";
  const auto issue = b.issue_s();
  const auto graph = b.graph_s();
  const auto numbers = [&](const std::string& where) {
    return (issue ? "issue time " + format_time(*issue) + where : std::string()) +
           (issue && graph ? ", " : "") + (graph ? named("T_graph", *graph) : std::string());
  };
  // Host-bound: back to back the host sets the pace, so its speed moved.
  if (issue && graph && *issue > *graph)
    return out + "the host issued calls more slowly in the back-to-back pass than in the T_call " +
           "pass (" + numbers(" there") + ")";
  // The device floor itself at or above one call: the GPU ran slower (sustained
  // load against an idle GPU).
  if (graph && *graph >= b.call->median_s)
    return out + "the GPU ran the calls slower back to back than one at a time (clocks, power; " +
           numbers(" in the T_call pass") + ")";
  const std::string both = numbers(" in the T_call pass");
  return out + "the host or the GPU ran slower in the back-to-back pass" +
         (both.empty() ? std::string() : " (" + both + ": neither alone reaches T_stream)");
}

}  // namespace

const char* to_string(Bottleneck bottleneck) {
  switch (bottleneck) {
    case Bottleneck::unknown:
      return "unknown";
    case Bottleneck::transfer_bound:
      return "transfer_bound";
    case Bottleneck::launch_bound:
      return "launch_bound";
    case Bottleneck::compute_bound:
      return "compute_bound";
    case Bottleneck::memory_bound:
      return "memory_bound";
    case Bottleneck::latency_bound:
      return "latency_bound";
  }
  return "?";
}

const char* to_string(ComputeUnit unit) {
  switch (unit) {
    case ComputeUnit::none:
      return "none";
    case ComputeUnit::cuda_core:
      return "cuda_core";
    case ComputeUnit::tensor_core:
      return "tensor_core";
  }
  return "?";
}

const char* to_string(ClassRule rule) {
  switch (rule) {
    case ClassRule::no_time:
      return "no_time";
    case ClassRule::transfer_share:
      return "transfer_share";
    case ClassRule::host_issue:
      return "host_issue";
    case ClassRule::overhead_share:
      return "overhead_share";
    case ClassRule::launch_roof:
      return "launch_roof";
    case ClassRule::no_roof:
      return "no_roof";
    case ClassRule::near_roof:
      return "near_roof";
    case ClassRule::far_from_roof:
      return "far_from_roof";
  }
  return "?";
}

std::string Classification::label() const {
  std::string out = to_string(bottleneck);
  if (bottleneck == Bottleneck::memory_bound && level)
    out += std::string("(") + to_string(*level) + ")";
  if (bottleneck == Bottleneck::compute_bound) out += std::string("(") + to_string(unit) + ")";
  return out;
}

Decomposition decompose(const PointBounds& b) {
  Decomposition d;
  d.transfer_s = b.transfer_measured_s.value_or(b.t_xfer);
  d.kernel_s = b.kernel_s.value_or(0);
  d.within_roof_s = std::min(d.kernel_s, b.t_kernel_roof);
  d.lost_to_roof_s = d.kernel_s - d.within_roof_s;
  if (b.kernel_busy_s) d.kernel_overlap_s = std::max(0.0, d.kernel_s - *b.kernel_busy_s);
  const double busy = d.kernel_s - d.kernel_overlap_s;
  d.time_source = b.time_s ? b.time_source : TimeSource::none;
  d.time_s = b.time_s.value_or(busy + d.transfer_s);
  if (b.call && b.stream) {
    d.call_premium_s = b.call->median_s - b.stream->median_s;
    d.stream_above_call_s = std::max(0.0, -*d.call_premium_s);
    if (d.stream_above_call_s > 0) d.stream_vs_call = separation(*b.stream, *b.call);
  }

  const std::string t_name = time_name(d.time_source);
  std::string device_name = t_name;
  double device = d.time_s;
  if (const auto graph = b.graph_s()) {
    d.separated = true;
    device_name = "T_graph";
    device = *graph;
    d.host_overhead_s = std::max(0.0, d.time_s - *graph);
    d.device_gaps_s = std::max(0.0, *graph - busy - d.transfer_s);
    d.graph_above_time_s = std::max(0.0, *graph - d.time_s);
    if (d.graph_above_time_s > 0) {
      if (const auto& t = b.time_stats()) d.graph_vs_time = separation(*b.graph, *t);
      d.notes.push_back(graph_above_note(d, *graph));
    }
  } else {
    d.host_overhead_s = std::max(0.0, d.time_s - busy - d.transfer_s);
    if (b.time_s)
      d.notes.push_back("host overhead and device gaps not measured separately (no T_graph" +
                        (b.graph_unavailable.empty() ? std::string() : ": " + b.graph_unavailable) +
                        ")");
  }
  d.kernels_above_device_s = std::max(0.0, busy + d.transfer_s - device);
  if (d.kernels_above_device_s > 0 && b.time_s)
    d.notes.push_back(kernels_above_note(b, d, device_name, device));
  if (d.kernel_overlap_s > 0)
    d.notes.push_back("kernels overlap on several streams: " + named("T_k", d.kernel_s) +
                      " summed, busy " + format_time(*b.kernel_busy_s) + " (trace pass)");
  // Beside the parts, after their notes.
  if (d.stream_vs_call == Separation::apart) d.notes.push_back(stream_above_call_note(b, d));
  // The remainder from its labelled causes: exactly 0 where nothing exceeds T
  // (then H + D + X + K - O = T up to rounding).
  d.not_explained_s = 0.0 - (d.graph_above_time_s + d.kernels_above_device_s);  // never -0
  return d;
}

std::optional<double> device_time(const PointBounds& b, const Decomposition& d, std::string* what) {
  if (const auto graph = b.graph_s()) {
    if (what) *what = "T_graph";
    return graph;
  }
  if (!b.kernel_s) return std::nullopt;
  if (what) *what = d.transfer_s > 0 ? "T_k + transfer, no T_graph" : "T_k, no T_graph";
  return d.kernel_s - d.kernel_overlap_s + d.transfer_s;
}

Classification classify(const PointBounds& b, const Thresholds& th) {
  Classification c;
  c.parts = decompose(b);
  const Decomposition& d = c.parts;
  if (!b.time_s && !b.kernel_s) {
    c.reason = "no time and no kernel time";
    return c;
  }
  const double t = d.time_s;
  const std::string t_text = named(time_name(d.time_source), t);
  if (t > 0 && d.transfer_s / t >= th.transfer_fraction) {
    c.bottleneck = Bottleneck::transfer_bound;
    c.rule = ClassRule::transfer_share;
    c.reason =
        "transfers " + format_time(d.transfer_s) + " = " + pct(d.transfer_s / t) + " of " + t_text;
    return c;
  }
  std::string device_name;
  const std::optional<double> device = device_time(b, d, &device_name);
  if (b.issue_s() && device) {
    // The measured rule: the host against the device, per call.
    if (*b.issue_s() > th.issue_ratio * *device) {
      c.bottleneck = Bottleneck::launch_bound;
      c.rule = ClassRule::host_issue;
      c.reason = "the host issues a call in " + format_time(*b.issue_s()) +
                 ", the GPU runs it in " + format_time(*device) + " (" + device_name + ")";
      return c;
    }
  } else if (t > 0) {
    // Older runs: no issue time or no device time.
    const double t_launch = b.t_launch.value_or(0);
    if (d.host_overhead_s / t >= th.launch_fraction) {
      c.bottleneck = Bottleneck::launch_bound;
      c.rule = ClassRule::overhead_share;
      c.reason = "host overhead and device gaps (not measured separately) " +
                 format_time(d.host_overhead_s) + " = " + pct(d.host_overhead_s / t) + " of " +
                 t_text + " (kernels " + format_time(d.kernel_s) + ")";
      return c;
    }
    if (t_launch / t >= th.launch_fraction && t_launch >= b.t_kernel_roof) {
      c.bottleneck = Bottleneck::launch_bound;
      c.rule = ClassRule::launch_roof;
      c.reason = std::to_string(b.launches.value_or(0)) +
                 " launches x L = " + format_time(t_launch) + " = " + pct(t_launch / t) + " of " +
                 t_text + ", above the kernels' roof " + format_time(b.t_kernel_roof);
      return c;
    }
  }
  if (!(b.t_kernel_roof > 0)) {
    c.rule = ClassRule::no_roof;
    c.reason = "no roof to judge the kernels (" + format_time(d.kernel_s) +
               ") against: the run has no measured or theoretical roofs for their work, or "
               "their work was not counted; run `timeroof ceilings` into the same --db";
    return c;
  }
  if (d.kernel_s > 0 && b.t_kernel_roof / d.kernel_s >= th.roof_fraction) {
    // The largest bound; ties go to compute, then to the outer level.
    double best = b.t_compute;
    c.bottleneck = Bottleneck::compute_bound;
    c.rule = ClassRule::near_roof;
    c.unit = b.t_tensor >= b.t_cuda ? ComputeUnit::tensor_core : ComputeUnit::cuda_core;
    for (Level l : {Level::dram, Level::l2, Level::l1}) {
      const LevelBounds& lb = b.level(l);
      if (lb.time_s && *lb.time_s > best) {
        best = *lb.time_s;
        c.bottleneck = Bottleneck::memory_bound;
        c.level = l;
        c.unit = ComputeUnit::none;
      }
    }
    c.reason = "kernels " + format_time(d.kernel_s) + " at " + pct(b.t_kernel_roof / d.kernel_s) +
               " of the " +
               (c.level ? std::string(to_string(*c.level)) + " bandwidth"
                        : std::string(to_string(c.unit)) + " peak") +
               " bound " + format_time(best);
    return c;
  }
  c.bottleneck = Bottleneck::latency_bound;
  c.rule = ClassRule::far_from_roof;
  c.reason = "kernels " + format_time(d.kernel_s) + " reach only " +
             pct(d.kernel_s > 0 ? b.t_kernel_roof / d.kernel_s : 0) + " of their largest bound " +
             format_time(b.t_kernel_roof);
  return c;
}

}  // namespace timeroof::roofline
