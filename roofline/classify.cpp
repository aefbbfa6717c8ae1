#include "roofline/classify.hpp"

#include <algorithm>
#include <cstdio>

namespace timeroof::roofline {

namespace {

std::string us(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  return buf;
}

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", fraction * 100);
  return buf;
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
  d.wall_s = b.wall_s.value_or(d.kernel_s + d.transfer_s);
  d.overhead_s = std::max(0.0, d.wall_s - d.kernel_s - d.transfer_s);
  d.within_roof_s = std::min(d.kernel_s, b.t_kernel_roof);
  d.lost_to_roof_s = d.kernel_s - d.within_roof_s;
  return d;
}

Classification classify(const PointBounds& b, const Thresholds& th) {
  Classification c;
  c.parts = decompose(b);
  const Decomposition& d = c.parts;
  if (!b.wall_s && !b.kernel_s) {
    c.reason = "no wall time and no kernel time";
    return c;
  }
  const double wall = d.wall_s;
  if (wall > 0 && d.transfer_s / wall >= th.transfer_fraction) {
    c.bottleneck = Bottleneck::transfer_bound;
    c.reason =
        "transfers " + us(d.transfer_s) + " = " + pct(d.transfer_s / wall) + " of " + us(wall);
    return c;
  }
  const double t_launch = b.t_launch.value_or(0);
  const bool issue_bound =
      wall > 0 && t_launch / wall >= th.launch_fraction && t_launch >= b.t_kernel_roof;
  if (wall > 0 && (d.overhead_s / wall >= th.launch_fraction || issue_bound)) {
    c.bottleneck = Bottleneck::launch_bound;
    c.reason = "launch/API overhead " + us(d.overhead_s) + " = " + pct(d.overhead_s / wall) +
               " of " + us(wall) + " (kernels " + us(d.kernel_s) + ")";
    if (b.t_launch && b.launches)
      c.reason += "; " + std::to_string(*b.launches) + " launches x L = " + us(*b.t_launch);
    return c;
  }
  if (d.kernel_s > 0 && b.t_kernel_roof / d.kernel_s >= th.roof_fraction) {
    // The largest bound; ties go to compute, then to the outer level.
    double best = b.t_compute;
    c.bottleneck = Bottleneck::compute_bound;
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
    c.reason = "kernels " + us(d.kernel_s) + " at " + pct(b.t_kernel_roof / d.kernel_s) +
               " of the " +
               (c.level ? std::string(to_string(*c.level)) + " bandwidth"
                        : std::string(to_string(c.unit)) + " peak") +
               " bound " + us(best);
    return c;
  }
  c.bottleneck = Bottleneck::latency_bound;
  c.reason = "kernels " + us(d.kernel_s) + " reach only " +
             pct(d.kernel_s > 0 ? b.t_kernel_roof / d.kernel_s : 0) + " of their largest bound " +
             us(b.t_kernel_roof);
  return c;
}

}  // namespace timeroof::roofline
