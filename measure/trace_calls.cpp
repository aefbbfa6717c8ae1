#include "measure/trace_calls.hpp"

#include "counters/activity_tracer.hpp"

namespace timeroof {

TracedCalls trace_calls(const CallUnderTest& call, cudaStream_t stream, int calls) {
  ActivityTracer tracer;
  tracer.start();
  for (int i = 0; i < calls; ++i) {
    tracer.mark_call();
    call.enqueue(stream);
  }
  const Trace trace = tracer.stop();
  const TraceSummary summary = summarize_calls(trace, calls);
  TracedCalls traced;
  traced.timing = summary.timing();
  traced.kernels = median_call_kernels(trace, calls);
  std::map<std::string, double> per_call;
  for (const ApiActivity& api : trace.api_calls)
    if (!is_tracer_api(api)) per_call[api.name] += 1.0 / calls;
  traced.details = {{"calls", calls},
                    {"dropped_records", trace.dropped_records},
                    {"kernels_renamed", trace.kernels_renamed},
                    // the union of the call's kernel intervals: T_k minus their overlap
                    {"kernel_busy_s", summary.kernel_busy_ns * 1e-9},
                    {"api_calls_per_call", per_call}};
  // Each call's summed kernel time: T_k (their median) with the interval they span.
  std::vector<double> kernel_s_per_call;
  for (const double ns : summary.kernel_ns_per_call) kernel_s_per_call.push_back(ns * 1e-9);
  if (!kernel_s_per_call.empty()) traced.details["kernel_time_per_call_s"] = kernel_s_per_call;
  if (!trace.launch_naming_problem.empty())
    traced.details["kernel_naming"] = trace.launch_naming_problem;
  if (summary.launch_latency_ns)
    traced.details["launch_latency_s"] = *summary.launch_latency_ns * 1e-9;
  return traced;
}

}  // namespace timeroof
