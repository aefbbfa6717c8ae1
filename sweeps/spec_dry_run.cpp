// --dry-run's time model and listing of a sweep spec: each point's analytic FLOPs,
// bytes and copies, its expected seconds, and the table of points with the model
// spelled out. Separate from reading specs (spec.cpp, spec_toml.cpp).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/vocabulary.hpp"
#include "sweeps/spec_parts.hpp"

namespace timeroof {

using namespace spec_detail;

namespace {

// A value as the dry run prints it: text from a spec file may hold escape sequences.
std::string cell(const json& value) {
  return terminal_safe(value.is_string() ? value.get<std::string>() : value.dump());
}

double peak_for(const json& point, const DryRunRoofs& roofs) {
  const auto text = [&](const char* key) {
    return point.contains(key) && point.at(key).is_string() ? point.at(key).get<std::string>()
                                                            : std::string();
  };
  const std::string precision = text("precision");
  const std::optional<Precision> p = find_precision(precision);
  if (precision.empty() || p == Precision::fp32 ||
      find_math_mode(text("math")) == MathMode::fma_only)
    return roofs.cuda_core_flops_per_s;
  if (p == Precision::tf32) return roofs.tf32_flops_per_s;
  return roofs.tensor_flops_per_s;
}

std::string number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

PointEstimate estimate_point(const json& point, const OperatorFamily& family,
                             const DryRunRoofs& roofs, TransferMode transfer, bool pinned_host) {
  const std::unique_ptr<Problem> op = family.problem(point);
  PointEstimate estimate;
  estimate.flops = op->flops();
  estimate.min_bytes = op->min_bytes();
  if (transfer != TransferMode::none)
    for (const TensorArgument& t : op->inputs()) estimate.h2d_bytes += static_cast<double>(t.bytes);
  if (transfer == TransferMode::h2d_input_d2h_output)
    for (const TensorArgument& t : op->outputs())
      estimate.d2h_bytes += static_cast<double>(t.bytes);
  estimate.transfer_s = estimate.h2d_bytes / (pinned_host ? roofs.h2d_pinned_bytes_per_s
                                                          : roofs.h2d_pageable_bytes_per_s) +
                        estimate.d2h_bytes / (pinned_host ? roofs.d2h_pinned_bytes_per_s
                                                          : roofs.d2h_pageable_bytes_per_s);
  const double roof_s =
      std::max(estimate.flops / peak_for(point, roofs), estimate.min_bytes / roofs.bytes_per_s);
  const double run_s =
      std::max(roof_s / roofs.expected_efficiency, op->expected_launches() * roofs.launch_s) +
      roofs.call_overhead_s;
  estimate.call_s = run_s + estimate.transfer_s;
  const double sample_s = estimate.call_s + roofs.sample_overhead_s;
  const double warmup_s = std::max(roofs.warmup_calls * sample_s, roofs.warmup_s);
  const double stream_sample_s = std::max(estimate.call_s, roofs.stream_sample_s);
  const double stream_s = roofs.convergence * roofs.stream_min_samples * stream_sample_s;
  const double call_timing_s =
      std::min(roofs.convergence * roofs.call_min_samples * sample_s, roofs.call_budget_s);
  const double stream_timing_s = std::min(stream_s, roofs.stream_budget_s);
  const bool host_bound = op->expected_launches() * roofs.launch_s >= 0.02 * estimate.call_s;
  const double revisit_s =
      roofs.setup_s + warmup_s + roofs.revisit_budget_share * (call_timing_s + stream_timing_s);
  const double timing_s = call_timing_s + stream_timing_s + roofs.graph_capture_s +
                          std::min(stream_s, roofs.graph_budget_s) +
                          (host_bound ? std::max(0, roofs.host_windows - 1) * revisit_s : 0);
  const double trace_s = roofs.trace_calls * estimate.call_s + roofs.trace_overhead_s;
  // The counter passes replay the operator alone (its copies are not kernels),
  // after a warm-up call of its own, in a collection shared by counter_batch points.
  const double counters_s =
      roofs.counter_passes *
      (roofs.counter_pass_s / std::max(1, roofs.counter_batch) +
       2 * op->expected_launches() * roofs.counter_range_s + 2 * roofs.profiled_slowdown * run_s);
  estimate.point_s = roofs.setup_s + roofs.check_s + warmup_s + timing_s + trace_s + counters_s;
  return estimate;
}

std::string describe_points(const SweepSpec& spec, const OperatorFamily& family,
                            const DryRunRoofs& roofs, const std::set<int>* only) {
  // Keys in the family's order, then any others the points carry.
  std::vector<std::string> keys = axis_keys(family);
  for (const json& point : spec.points)
    if (point.is_object())
      for (const auto& [key, value] : point.items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  std::vector<std::string> varying, fixed;
  for (const std::string& key : keys) {
    std::set<std::string> seen;
    for (const json& point : spec.points)
      seen.insert(point.contains(key) ? point.at(key).dump() : std::string("-"));
    if (seen.size() > 1)
      varying.push_back(key);
    else if (!spec.points.empty() && spec.points.front().contains(key))
      fixed.push_back(key + "=" + cell(spec.points.front().at(key)));
  }

  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"seq"};
  header.insert(header.end(), varying.begin(), varying.end());
  const bool transfers = spec.transfer != TransferMode::none;
  for (const char* column : {"GFLOP", "MB", "xfer MB", "call", "point"})
    if (transfers || std::string(column) != "xfer MB") header.emplace_back(column);
  rows.push_back(header);
  double total_s = 0;
  std::size_t listed = 0;
  for (std::size_t i = 0; i < spec.points.size(); ++i) {
    if (only && !only->count(static_cast<int>(i))) continue;
    ++listed;
    const json& point = spec.points[i];
    const PointEstimate estimate =
        estimate_point(point, family, roofs, spec.transfer, spec.pinned_host);
    total_s += estimate.point_s;
    std::vector<std::string> row = {std::to_string(i)};
    for (const std::string& key : varying)
      row.push_back(point.contains(key) ? cell(point.at(key)) : "-");
    row.push_back(number("%.4g", estimate.flops / 1e9));
    row.push_back(number("%.4g", estimate.min_bytes / 1e6));
    if (transfers) row.push_back(number("%.4g", (estimate.h2d_bytes + estimate.d2h_bytes) / 1e6));
    row.push_back(format_si(estimate.call_s, "s"));
    row.push_back(format_si(estimate.point_s, "s"));
    rows.push_back(std::move(row));
  }
  // Right-align seq, the numbers of the estimate, and params whose values are all numbers.
  std::vector<bool> right(header.size(), true);
  for (std::size_t v = 0; v < varying.size(); ++v)
    for (const json& point : spec.points)
      if (!point.contains(varying[v]) || !point.at(varying[v]).is_number()) right[v + 1] = false;
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());

  std::ostringstream out;
  out << "sweep '" << terminal_safe(spec.name) << "': " << spec.family << ", " << spec.points.size()
      << (spec.points.size() == 1 ? " point" : " points") << "; transfer "
      << to_string(spec.transfer) << ", "
      << to_string(spec.pinned_host ? HostMemory::pinned : HostMemory::pageable) << " host memory, "
      << (spec.cold_l2 ? "cold" : "warm") << " L2\n";
  if (!spec.metrics.empty()) out << "extra metrics: " << join(spec.metrics) << "\n";
  if (!fixed.empty()) out << "every point: " << join(fixed, " ") << "\n";
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += (c ? "  " : "") + (right[c] ? pad + row[c] : row[c] + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  out << "estimated time: " << format_si(total_s, "s") << " for " << listed
      << (only ? " of " + std::to_string(spec.points.size()) : std::string())
      << (listed == 1 && !only ? " point" : " points") << "\n"
      << "model: per point " << format_si(roofs.setup_s, "s") << " setup + "
      << format_si(roofs.check_s, "s") << " check + warm-up max(" << roofs.warmup_calls
      << " calls, " << format_si(roofs.warmup_s, "s")
      << ") + T_call, T_stream, T_graph until +-1% (at most " << format_si(roofs.call_budget_s, "s")
      << " + " << format_si(roofs.stream_budget_s, "s") << " + "
      << format_si(roofs.graph_budget_s, "s") << "), T_call and T_stream " << roofs.host_windows - 1
      << " more times at " << roofs.revisit_budget_share
      << " of their budgets where launches take >= 2% of the call, + " << roofs.trace_calls
      << " traced calls + "
      << (roofs.counter_passes > 0
              ? std::to_string(roofs.counter_passes) + " counter passes x (" +
                    format_si(roofs.counter_pass_s, "s") + " / " +
                    std::to_string(roofs.counter_batch) + " points + 2 x launches x " +
                    format_si(roofs.counter_range_s, "s") + " + 2 profiled calls)"
              : std::string("no counters"))
      << "; call = max(max(FLOPs / peak, min bytes / " << format_si(roofs.bytes_per_s, "B/s")
      << ") / " << roofs.expected_efficiency << ", launches x " << format_si(roofs.launch_s, "s")
      << ") + " << format_si(roofs.call_overhead_s, "s") << "; peaks: CUDA cores "
      << format_si(roofs.cuda_core_flops_per_s, "FLOP/s") << ", Tensor Cores fp16/bf16 "
      << format_si(roofs.tensor_flops_per_s, "FLOP/s") << ", tf32 "
      << format_si(roofs.tf32_flops_per_s, "FLOP/s");
  if (transfers) {
    const bool pinned = spec.pinned_host;
    out << "; transfers (" << to_string(spec.transfer) << ", "
        << to_string(pinned ? HostMemory::pinned : HostMemory::pageable)
        << ") serial with each call: H2D "
        << format_si(pinned ? roofs.h2d_pinned_bytes_per_s : roofs.h2d_pageable_bytes_per_s, "B/s");
    if (spec.transfer == TransferMode::h2d_input_d2h_output)
      out << ", D2H "
          << format_si(pinned ? roofs.d2h_pinned_bytes_per_s : roofs.d2h_pageable_bytes_per_s,
                       "B/s");
    out << " but not the profiled ones; weights stay on the device";
  }
  out << "; CPU reference checks and exhaustive search not modelled\n";
  return out.str();
}

}  // namespace timeroof
