// CUDA-core FMA and add/mul ceilings (kernels/cuda_core.hpp has the kernels and
// the FLOP convention). Each roof: a persistent grid (every SM full of resident
// blocks, one wave), the trip count sized so one launch lasts ~5 ms (1 ms quick),
// timed by the harness; the measured value is FLOP/s.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/format.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/clock_span.hpp"
#include "kernels/cuda_core.hpp"

namespace timeroof {

namespace {

using ceiling_support::concat;

constexpr int kProbeTrips = 64;
constexpr long long kMaxTrips = 1 << 24;
std::string flop_convention(const CudaCoreKernel& k) {
  const double per_instruction = k.lanes * k.flop_per_lane;
  return concat(per_instruction, " FLOP per thread instruction (", k.lanes, " lane",
                k.lanes > 1 ? "s" : "", " x ", k.flop_per_lane, " FLOP)");
}

}  // namespace

void measure_cuda_core_ceilings(const CeilingRequest& request, CeilingResults& out) {
  const int sms = ceiling_support::select_device_and_count_sms(request);
  const double target_s = request.quick ? 1e-3 : 5e-3;
  const int threads = kCudaCoreThreadsPerBlock;
  DeviceBuffer<double> sink;  // one double per thread: every chain's result lands here
  DeviceBuffer<ClockSpan> spans;

  for (const CudaCoreKernel& k : cuda_core_kernels()) {
    if (!request.wanted(k.ceiling)) continue;
    const int blocks_per_sm = cuda_core_blocks_per_sm(k.roof);
    if (blocks_per_sm <= 0) {
      out.skipped.push_back({k.ceiling, concat(k.kernel, " cannot be resident on an SM")});
      continue;
    }
    const int blocks = sms * blocks_per_sm;
    const std::size_t outputs = static_cast<std::size_t>(blocks) * threads;
    if (sink.size() < outputs) sink = DeviceBuffer<double>(outputs);
    // Each timed launch writes its blocks' clock spans into a slot of its own.
    const std::size_t span_count = static_cast<std::size_t>(blocks) * kClockSpanSlots;
    if (spans.size() < span_count) spans = DeviceBuffer<ClockSpan>(span_count);
    TR_CUDA_CHECK(cudaMemset(spans.get(), 0, spans.bytes()));
    int launches = 0;

    const auto launch_with = [&](int trips) {
      return [&, trips](cudaStream_t stream) {
        ClockSpan* slot =
            spans.get() + (launches++ % kClockSpanSlots) * static_cast<std::size_t>(blocks);
        launch_cuda_core_kernel(k.roof, blocks, threads, trips, sink.get(), slot, stream);
      };
    };
    const double probe_s = ceiling_support::time_one_call(launch_with(kProbeTrips), request.stream);
    const int trips = static_cast<int>(
        ceiling_support::count_for_target(probe_s, kProbeTrips, target_s, 1, kMaxTrips));
    const Measurement m = measure_on_stream(launch_with(trips), request.stream, request.timing());
    const double flops = cuda_core_flops(k.roof, blocks, threads, trips);
    const std::string method = concat(
        k.kernel, ": grid ", blocks, " x ", threads, " threads (", blocks_per_sm, " blocks/SM x ",
        sms, " SMs, one wave), ", kCudaCoreChains, " independent chains per thread x ",
        kCudaCoreInstructionsPerTrip, " unrolled ", k.instruction, " per chain per trip, ", trips,
        " trips = ", format_si(flops, "FLOP"), " per launch; ", flop_convention(k), "; median of ",
        m.repeats, " event-timed launches");
    Ceiling ceiling = make_ceiling(k.ceiling, CeilingKind::compute, "FLOP/s", flops, m, method);
    std::vector<ClockSpan> host_spans(span_count);
    TR_CUDA_CHECK(cudaMemcpy(host_spans.data(), spans.get(), span_count * sizeof(ClockSpan),
                             cudaMemcpyDeviceToHost));
    ceiling_support::take_kernel_clock(ceiling, slot_clocks_hz(host_spans, blocks), blocks);
    out.ceilings.push_back(std::move(ceiling));
  }
}

}  // namespace timeroof
