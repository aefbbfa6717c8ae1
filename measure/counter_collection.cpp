#include "measure/counter_collection.hpp"

#include <algorithm>
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

void apply_counters(const CollectionPlan& plan, const ProfileResult& result,
                    nlohmann::json collection, Point& point) {
  point.counters = with_quantities(plan, sum_kernel_ranges(result));
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
  point.details["counters"] = std::move(collection);
}

}  // namespace timeroof
