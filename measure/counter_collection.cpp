#include "measure/counter_collection.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace timeroof {

BatchedCall counted_call(const CallUnderTest& call, cudaStream_t stream, std::size_t kernels,
                         std::size_t prelude_kernels) {
  BatchedCall counted;
  counted.run = [enqueue = call.enqueue, stream] { enqueue(stream); };
  counted.kernels = kernels;
  if (call.prelude) {
    counted.prelude = [prelude = call.prelude, stream] { prelude(stream); };
    counted.prelude_kernels = prelude_kernels;
  } else {
    counted.prelude = counted.run;
    counted.prelude_kernels = kernels;
  }
  return counted;
}

std::map<std::string, double> with_quantities(const CollectionPlan& plan,
                                              std::map<std::string, double> values) {
  for (const auto& [quantity, value] : evaluate(plan, values)) values[to_string(quantity)] = value;
  return values;
}

std::map<std::string, double> sum_kernel_ranges(const ProfileResult& result) {
  const auto duration = std::find(result.metrics.begin(), result.metrics.end(),
                                  std::string("gpu__time_duration.sum"));
  std::map<std::string, double> totals;
  for (std::size_t i = 0; i < result.metrics.size(); ++i) {
    const std::string& metric = result.metrics[i];
    const bool rate = metric.size() > 11 && metric.rfind(".per_second") == metric.size() - 11;
    double sum = 0, weights = 0;
    for (const RangeValues& range : result.ranges) {
      const double weight =
          !rate ? 1.0
          : duration != result.metrics.end()
              ? range.values[static_cast<std::size_t>(duration - result.metrics.begin())]
              : 1.0;
      sum += weight * range.values[i];
      weights += weight;
    }
    totals[metric] = rate ? (weights > 0 ? sum / weights : 0.0) : sum;
  }
  return totals;
}

nlohmann::json kernel_mismatches(const ProfileResult& result,
                                 const std::vector<KernelRecord>& kernels) {
  nlohmann::json out = nlohmann::json::array();
  const auto metric = std::find(result.metrics.begin(), result.metrics.end(),
                                std::string("gpu__time_duration.sum"));
  if (metric == result.metrics.end() || result.ranges.size() != kernels.size()) return out;
  const auto column = static_cast<std::size_t>(metric - result.metrics.begin());
  // A counted time runs ~1 us longer than the traced one on small kernels (H200
  // and H100 samples), hence the slack; 2x apart is "disagrees", within 1.5x "fits".
  constexpr double kSlack = 1e-6, kFar = 2.0, kFits = 1.5;
  const auto ratio = [](double a, double b) { return std::max(a, b) / (std::min(a, b) + kSlack); };
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const double counted = result.ranges[k].values[column] * 1e-9;  // ns
    if (ratio(counted, kernels[k].duration_s) <= kFar) continue;
    for (std::size_t j = 0; j < kernels.size(); ++j) {
      if (j == k || ratio(counted, kernels[j].duration_s) > kFits) continue;
      out.push_back({{"range", k},
                     {"kernel", kernels[k].name},
                     {"counted_s", counted},
                     {"traced_s", kernels[k].duration_s},
                     {"fits_kernel", j},
                     {"fits_traced_s", kernels[j].duration_s}});
      break;
    }
  }
  return out;
}

void total_extra_metrics(const CollectionPlan& plan, const ProfileResult& result,
                         std::map<std::string, double>& totals) {
  const auto column = [&](const std::string& metric) -> std::optional<std::size_t> {
    const auto at = std::find(result.metrics.begin(), result.metrics.end(), metric);
    if (at == result.metrics.end()) return std::nullopt;
    return static_cast<std::size_t>(at - result.metrics.begin());
  };
  const std::optional<std::size_t> duration = column("gpu__time_duration.sum");
  for (const ExtraMetric& extra : plan.extra) {
    const std::optional<std::size_t> i = column(extra.name);
    if (!i || extra.in_catalog || result.ranges.empty()) continue;
    double value = result.ranges.front().values[*i];
    double weighted = 0, weights = 0;
    for (const RangeValues& range : result.ranges) {
      const double v = range.values[*i];
      if (extra.total == MetricTotal::max) value = std::max(value, v);
      if (extra.total == MetricTotal::min) value = std::min(value, v);
      const double weight = duration ? range.values[*duration] : 1.0;
      weighted += weight * v;
      weights += weight;
    }
    if (extra.total == MetricTotal::duration_weighted_mean)
      value = weights > 0 ? weighted / weights : 0.0;
    if (extra.total != MetricTotal::sum) totals[extra.name] = value;  // sum: as summed
  }
}

void apply_counters(const CollectionPlan& plan, const ProfileResult& result,
                    nlohmann::json collection, Point& point) {
  std::map<std::string, double> totals = sum_kernel_ranges(result);
  total_extra_metrics(plan, result, totals);
  point.counters = with_quantities(plan, std::move(totals));
  // Ranges come in launch order, and so do the trace's kernels (median_call_kernels).
  const bool per_kernel = result.ranges.size() == point.kernels.size();
  if (per_kernel) {
    for (std::size_t k = 0; k < result.ranges.size(); ++k) {
      std::map<std::string, double> values;
      for (std::size_t i = 0; i < result.metrics.size(); ++i)
        values[result.metrics[i]] = result.ranges[k].values[i];
      point.kernels[k].metrics = with_quantities(plan, values);
    }
  }
  collection.update({{"collected", true},
                     {"chip", plan.chip},
                     {"passes", result.passes},
                     {"kernel_ranges", result.ranges.size()},
                     // kernels of the trace pass matched one to one
                     {"per_kernel", per_kernel}});
  if (!plan.extra.empty()) {
    // The user's metrics (--metrics) and how each operator total was formed
    // (counters/metric_catalog.hpp MetricTotal); per kernel they are as counted.
    nlohmann::json extra = nlohmann::json::array();
    for (const ExtraMetric& m : plan.extra)
      extra.push_back(
          {{"name", m.name},
           {"total", m.in_catalog ? std::string("as the catalog's") : to_string(m.total)}});
    collection["extra_metrics"] = std::move(extra);
  }
  if (per_kernel) {
    nlohmann::json mismatches = kernel_mismatches(result, point.kernels);
    if (!mismatches.empty()) {
      collection["warning"] =
          std::to_string(mismatches.size()) +
          " kernel range(s) counted a GPU time more than 2x their traced kernel's while another "
          "kernel of the call fits it: per-kernel counters may sit on the wrong kernels (the "
          "operator's totals are unaffected)";
      collection["kernel_mismatches"] = std::move(mismatches);
    }
  }
  point.details["counters"] = std::move(collection);
}

}  // namespace timeroof
