#include "measure/synchronized.hpp"

#include <chrono>
#include <vector>

#include "core/elapsed.hpp"
#include "gpu/check.hpp"
#include "gpu/handles.hpp"

namespace timeroof {

SynchronizedTimes time_synchronized(const CallUnderTest& call, cudaStream_t stream,
                                    const StopRule& rule) {
  const Event start, stop;
  std::vector<double> call_samples, issue_samples;
  auto round = [&](int n, std::vector<double>& samples) {
    for (int i = 0; i < n; ++i) {
      if (call.prelude) {
        call.prelude(stream);
        TR_CUDA_CHECK(cudaStreamSynchronize(stream));
      }
      start.record(stream);
      const auto issued = std::chrono::steady_clock::now();
      call.enqueue(stream);
      issue_samples.push_back(seconds_since(issued));
      stop.record(stream);
      stop.synchronize();
      samples.push_back(stop.seconds_since(start));
    }
  };
  const bool converged = sample_until_converged(rule, call_samples, round);
  SynchronizedTimes times;
  times.call.stats = time_stats(call_samples, 1, converged);
  times.call.method =
      std::string("CUDA events around one call on an idle GPU, synchronized after each") +
      (call.prelude ? "; the prelude (L2 flush) waited for before the start event" : "");
  times.issue.stats = time_stats(issue_samples, 1, interval_converged(issue_samples, rule));
  times.issue.method =
      "steady clock around the enqueue of one call on an idle GPU (untraced, same calls as T_call)";
  return times;
}

}  // namespace timeroof
