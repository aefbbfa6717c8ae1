// The counters strategy: hardware counters per kernel of one call, from the
// CUPTI range profiler (counters/range_profiler.hpp: auto ranges, user replay,
// several calls per collection), turned into a point's counters. Before each
// counted call a prelude puts L2 where the timing strategies found it: the L2
// flush when cold; one call of the same operator when warm, as the timed calls
// ran back to back.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "measure/call_under_test.hpp"

namespace timeroof {

// One call of a profile_call_batch collection. `kernels`: the launches one call
// makes (from its trace); `prelude_kernels`: those one prelude makes, when the
// call has a prelude (a warm call's prelude is the call itself).
BatchedCall counted_call(const CallUnderTest& call, cudaStream_t stream, std::size_t kernels,
                         std::size_t prelude_kernels);

// Operator totals from its kernels' ranges: counts add up; rates (".per_second",
// e.g. the SM clock) are averaged weighted by each kernel's duration.
std::map<std::string, double> sum_kernel_ranges(const ProfileResult& result);

// The operator totals of the plan's extra metrics (--metrics) that sum_kernel_ranges
// cannot form, by their MetricTotal: max, min or the duration-weighted mean over
// the kernels' ranges replace the plain sum in `totals`. Catalog metrics keep
// sum_kernel_ranges' totals, so a plan without extra metrics changes nothing.
void total_extra_metrics(const CollectionPlan& plan, const ProfileResult& result,
                         std::map<std::string, double>& totals);

// The raw CUPTI metrics ("__") with the catalog's quantities (snake_case) beside them.
std::map<std::string, double> with_quantities(const CollectionPlan& plan,
                                              std::map<std::string, double> values);

// The safety net of the position match (issue #20): each range whose counted GPU
// time (gpu__time_duration.sum) is more than 2x its matched kernel's traced time
// while another kernel of the call is within 1.5x of it (both with 1 us of slack
// for replay's overhead), as {"range", "kernel", "counted_s", "traced_s",
// "fits_kernel", "fits_traced_s"}. Empty without the metric or a one-to-one match.
nlohmann::json kernel_mismatches(const ProfileResult& result,
                                 const std::vector<KernelRecord>& kernels);

// Writes one call's counters into `point`: the totals, each kernel's where the
// ranges match the traced kernels one to one (both in launch order), and
// details["counters"] = `collection` plus the chip, passes and range count, and
// where kernel_mismatches finds any, "kernel_mismatches" and a "warning"
// (the match is reported, never silently reassigned).
void apply_counters(const CollectionPlan& plan, const ProfileResult& result,
                    nlohmann::json collection, Point& point);

}  // namespace timeroof
