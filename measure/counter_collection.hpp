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

// The raw CUPTI metrics ("__") with the catalog's quantities (snake_case) beside them.
std::map<std::string, double> with_quantities(const CollectionPlan& plan,
                                              std::map<std::string, double> values);

// Writes one call's counters into `point`: the totals, each kernel's where the
// ranges match the traced kernels one to one, and details["counters"] =
// `collection` plus the chip, passes and range count.
void apply_counters(const CollectionPlan& plan, const ProfileResult& result,
                    nlohmann::json collection, Point& point);

}  // namespace timeroof
