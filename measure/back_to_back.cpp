#include "measure/back_to_back.hpp"

namespace timeroof {

SequenceOptions back_to_back_sequence(double per_call_estimate_s,
                                      const BackToBackOptions& options) {
  SequenceOptions sequence;
  sequence.launches_per_sample =
      launches_for(options.sample_seconds, per_call_estimate_s, options.max_calls_per_sample);
  return sequence;
}

std::string back_to_back_method(const CallUnderTest& call, const SequenceOptions& sequence) {
  return call.prelude
             ? "calls issued back to back with the prelude (L2 flush) before each, CUDA events "
               "around each call; one synchronization per chunk of calls"
             : "calls issued back to back, CUDA events every " +
                   std::to_string(sequence.launches_per_sample) + " calls, " +
                   std::to_string(sequence.lead_launches) +
                   " untimed calls first; one synchronization per chunk of calls";
}

MeasuredTime time_back_to_back(const CallUnderTest& call, cudaStream_t stream, const StopRule& rule,
                               double per_call_estimate_s, const BackToBackOptions& options,
                               const std::function<void()>& while_busy) {
  const SequenceOptions sequence = back_to_back_sequence(per_call_estimate_s, options);
  MeasuredTime measured;
  measured.stats = time_sequence(call.enqueue, call.prelude, stream, rule, sequence, while_busy);
  measured.method = back_to_back_method(call, sequence);
  return measured;
}

}  // namespace timeroof
