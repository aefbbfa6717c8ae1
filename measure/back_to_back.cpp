#include "measure/back_to_back.hpp"

#include <string>

#include "measure/sequence_timing.hpp"

namespace timeroof {

MeasuredTime time_back_to_back(const CallUnderTest& call, cudaStream_t stream, const StopRule& rule,
                               double per_call_estimate_s, const BackToBackOptions& options,
                               const std::function<void()>& while_busy) {
  SequenceOptions sequence;
  sequence.launches_per_sample =
      launches_for(options.sample_seconds, per_call_estimate_s, options.max_calls_per_sample);
  MeasuredTime measured;
  measured.stats = time_sequence(call.enqueue, call.prelude, stream, rule, sequence, while_busy);
  measured.method =
      call.prelude
          ? "calls issued back to back with the prelude (L2 flush) before each, CUDA events "
            "around each call; one synchronization per chunk of calls"
          : "calls issued back to back, CUDA events every " +
                std::to_string(sequence.launches_per_sample) +
                " calls, 2 untimed calls first; one synchronization per chunk of calls";
  return measured;
}

}  // namespace timeroof
