#include "measure/synchronized.hpp"

#include <chrono>
#include <string>
#include <utility>

#include "core/elapsed.hpp"
#include "gpu/check.hpp"

namespace timeroof {

SynchronizedSampler::SynchronizedSampler(const CallUnderTest& call, cudaStream_t stream,
                                         std::function<void()> while_busy)
    : call_(call), stream_(stream), while_busy_(std::move(while_busy)) {}

void SynchronizedSampler::round(int n, std::vector<double>& call_samples) {
  for (int i = 0; i < n; ++i) {
    if (call_.prelude) {
      call_.prelude(stream_);
      TR_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    start_.record(stream_);
    const auto issued = std::chrono::steady_clock::now();
    call_.enqueue(stream_);
    issue_samples_.push_back(seconds_since(issued));
    stop_.record(stream_);
    if (i == 0 && while_busy_) while_busy_();
    stop_.synchronize();
    call_samples.push_back(stop_.seconds_since(start_));
  }
}

SynchronizedTimes SynchronizedSampler::times(std::span<const double> call_samples, bool converged,
                                             const StopRule& rule) const {
  SynchronizedTimes times;
  times.call.stats = time_stats(call_samples, 1, converged);
  times.call.method =
      std::string("CUDA events around one call on an idle GPU, synchronized after each") +
      (call_.prelude ? "; the prelude (L2 flush) waited for before the start event" : "");
  times.issue.stats = time_stats(issue_samples_, 1, interval_converged(issue_samples_, rule));
  times.issue.method =
      "steady clock around the enqueue of one call on an idle GPU (untraced, same calls as T_call)";
  return times;
}

SynchronizedTimes time_synchronized(const CallUnderTest& call, cudaStream_t stream,
                                    const StopRule& rule) {
  SynchronizedSampler sampler(call, stream);
  std::vector<double> samples;
  const bool converged = sample_until_converged(
      rule, samples, [&](int n, std::vector<double>& s) { sampler.round(n, s); });
  return sampler.times(samples, converged, rule);
}

}  // namespace timeroof
