#include "measure/warmup.hpp"

#include <chrono>

#include "core/elapsed.hpp"
#include "gpu/check.hpp"

namespace timeroof {

WarmupResult warm_up(const CallUnderTest& call, cudaStream_t stream, const WarmupPolicy& policy) {
  const auto start = std::chrono::steady_clock::now();
  WarmupResult result;
  while (result.calls < policy.min_calls || seconds_since(start) < policy.min_seconds) {
    if (call.prelude) call.prelude(stream);
    call.enqueue(stream);
    // Synchronized: the GPU's time, not the host's enqueue rate, paces the warm-up.
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (++result.calls == 1) result.first_call_s = seconds_since(start);
  }
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace timeroof
