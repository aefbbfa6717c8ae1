// Tensor-Core ceilings (names and FLOP convention: tensor_mma.hpp). Each roof
// kernel runs a persistent grid; its iteration count is sized so one launch
// lasts ~20 ms (4 ms quick), then the harness times it. On compute capability
// 9.0 a type's roof is the best of its wgmma and mma.sync kernels, and the
// mma.sync figure is also kept as tensor_<type>_mma_sync.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/clock_span.hpp"
#include "kernels/measure.hpp"
#include "kernels/tensor_mma.hpp"
#include "kernels/tensor_types.hpp"
#include "kernels/tensor_wgmma.hpp"

namespace timeroof {

namespace {

using ceiling_support::concat;

constexpr long long kProbeIterations = 64;
constexpr long long kMaxIterations = 1LL << 40;

// A roof kernel as the timer sees it.
struct LoopRun {
  std::string label;  // short, for the list of alternatives in a method
  std::string description;
  double flops_per_iteration = 0;
  std::size_t sink_bytes = 0;  // accumulators, then one ClockSpan per block
  int blocks = 0;
  std::function<void(long long iterations, void* sink, cudaStream_t stream)> launch;
};

// The run of a tensor loop kernel of `shape` (MmaSyncLoopShape, WgmmaLoopShape),
// launched by `launch` (launch_mma_sync_loop, launch_wgmma_loop).
template <class Shape>
LoopRun loop_run(std::string label, const Shape& shape,
                 void (*launch)(const Shape&, long long, void*, cudaStream_t)) {
  return {std::move(label),
          shape.description,
          shape.flops_per_iteration,
          shape.sink_bytes,
          shape.blocks,
          [shape, launch](long long iterations, void* sink, cudaStream_t stream) {
            launch(shape, iterations, sink, stream);
          }};
}

LoopRun mma_sync_run(MmaSyncVariant variant, int sm_count) {
  const MmaSyncLoopShape shape = mma_sync_loop_shape(variant, sm_count);
  return loop_run(shape.label, shape, launch_mma_sync_loop);
}

LoopRun wgmma_run(Precision type, int n, int sm_count) {
  const WgmmaLoopShape shape = wgmma_loop_shape(type, n, sm_count);
  return loop_run(concat("wgmma m64n", n, "k", wgmma_k(type)), shape, launch_wgmma_loop);
}

struct TimedRoof {
  Ceiling ceiling;
  std::string label;
  LoopRun run;
  long long iterations = 0;
};

// Each timed launch of a round writes its clock spans into a slot of its own
// (kClockSpanSlots), so the clock of every launch of the last round is known.
constexpr std::size_t kSlotAlignment = 256;

std::size_t slot_stride(const LoopRun& run) {
  return (run.sink_bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
}

// Every slot's spans, which sit after that slot's accumulators, in slot order.
std::vector<ClockSpan> slot_spans(const LoopRun& run, const DeviceBuffer<unsigned char>& sink) {
  const auto blocks = static_cast<std::size_t>(run.blocks);
  const std::size_t span_bytes = blocks * sizeof(ClockSpan);
  std::vector<ClockSpan> spans(blocks * kClockSpanSlots);
  for (int slot = 0; slot < kClockSpanSlots; ++slot)
    TR_CUDA_CHECK(cudaMemcpy(spans.data() + slot * blocks,
                             sink.get() + slot * slot_stride(run) + (run.sink_bytes - span_bytes),
                             span_bytes, cudaMemcpyDeviceToHost));
  return spans;
}

TimedRoof time_roof(const CeilingRequest& request, const std::string& name, const LoopRun& run) {
  const double target_s = request.quick ? 4e-3 : 20e-3;
  DeviceBuffer<unsigned char> sink(slot_stride(run) * kClockSpanSlots);
  TR_CUDA_CHECK(cudaMemset(sink.get(), 0, sink.bytes()));
  int launches = 0;
  const auto launch_with = [&](long long iterations) {
    return [&, iterations](cudaStream_t stream) {
      run.launch(iterations, sink.get() + (launches++ % kClockSpanSlots) * slot_stride(run),
                 stream);
    };
  };
  // Probe with a growing count until one launch is long enough to scale from.
  long long probe = kProbeIterations;
  double probe_s = ceiling_support::time_one_call(launch_with(probe), request.stream);
  while (probe_s < target_s / 16 && probe < kMaxIterations / 8) {
    probe *= 8;
    probe_s = ceiling_support::time_one_call(launch_with(probe), request.stream);
  }
  const long long iterations =
      ceiling_support::count_for_target(probe_s, probe, target_s, 1, kMaxIterations);
  const Measurement m =
      measure_on_stream(launch_with(iterations), request.stream, request.timing());
  const double flops = run.flops_per_iteration * static_cast<double>(iterations);
  Ceiling ceiling =
      make_ceiling(name, CeilingKind::compute, "FLOP/s", flops, m,
                   concat(run.description, ", ", iterations, " iterations per launch"));
  ceiling_support::take_kernel_clock(ceiling, slot_clocks_hz(slot_spans(run, sink), run.blocks),
                                     run.blocks);
  return {ceiling, run.label, run, iterations};
}

// The roof under a load of request.sustained_seconds, with the same kernel and
// launch size as its burst figure.
void sustain(const CeilingRequest& request, const TimedRoof& roof, Ceiling& ceiling) {
  if (request.sustained_seconds <= 0) return;
  DeviceBuffer<unsigned char> sink(roof.run.sink_bytes);
  const SustainedMeasurement m = measure_sustained(
      [&](cudaStream_t stream) { roof.run.launch(roof.iterations, sink.get(), stream); },
      request.stream, request.sustained_seconds);
  ceiling.sustained =
      sustained_roof(roof.run.flops_per_iteration * static_cast<double>(roof.iterations), m);
}

const TimedRoof& fastest(const std::vector<TimedRoof>& roofs) {
  return *std::max_element(roofs.begin(), roofs.end(), [](const TimedRoof& a, const TimedRoof& b) {
    return a.ceiling.measured < b.ceiling.measured;
  });
}

// The fastest roof under `name`; with alternatives, its method lists them all.
Ceiling best_of(const std::vector<TimedRoof>& roofs, const std::string& name) {
  Ceiling ceiling = fastest(roofs).ceiling;
  ceiling.name = name;
  if (roofs.size() > 1) {
    ceiling.method += "; best of";
    const char* separator = ": ";
    for (const TimedRoof& roof : roofs) {
      ceiling.method +=
          concat(separator, roof.label, " ", roof.ceiling.measured * 1e-12, " TFLOP/s");
      separator = ", ";
    }
  }
  return ceiling;
}

std::string cc_text(int cc) {
  return concat(cc / 10, ".", cc % 10);
}

}  // namespace

void measure_tensor_ceilings(const CeilingRequest& request, CeilingResults& out) {
  const int sm_count = ceiling_support::select_device_and_count_sms(request);
  const int cc = request.gpu.cc_major * 10 + request.gpu.cc_minor;
  // wgmma is arch-specific (sm_90a): its kernels load on 9.0 only.
  const bool hopper = cc == 90;
  for (const Precision type : ceiling::kTensorPrecisions) {
    const std::string name = ceiling::tensor(type);
    const std::string mma_sync_name = ceiling::tensor_mma_sync(type);
    const bool has_wgmma = hopper && wgmma_supports(type);
    const bool want_best = request.wanted(name);
    const bool want_mma_sync = has_wgmma && request.wanted(mma_sync_name);
    if (!want_best && !want_mma_sync) continue;
    if (cc < tensor_type_min_cc(type)) {
      out.skipped.push_back(
          {name, concat(to_string(type), " tensor cores need compute capability ",
                        cc_text(tensor_type_min_cc(type)), "+; this GPU is ", cc_text(cc))});
      continue;
    }

    std::vector<TimedRoof> mma_sync_roofs;
    std::string unavailable;
    bool build_problem = false;
    for (const MmaSyncVariant variant : mma_sync_variants(type)) {
      if (const auto why = mma_sync_unavailable(variant)) {
        // fp64 m16n8k16 exists on sm_90 only; m8n8k4 stands for every GPU.
        if (variant != MmaSyncVariant::fp64_m16n8k16) {
          unavailable += (unavailable.empty() ? "" : "; ") + why->reason;
          build_problem = build_problem || why->build_problem;
        }
        continue;
      }
      mma_sync_roofs.push_back(time_roof(request, name, mma_sync_run(variant, sm_count)));
    }
    std::vector<TimedRoof> all = mma_sync_roofs;
    if (has_wgmma && want_best) {
      for (const int n : kWgmmaTileNs) {
        if (request.quick && n != kWgmmaTileNs[0]) continue;  // the larger tile is the likely best
        all.push_back(time_roof(request, name, wgmma_run(type, n, sm_count)));
      }
    }

    if (want_best) {
      if (all.empty()) {
        out.skipped.push_back({name, unavailable, build_problem});
      } else {
        out.ceilings.push_back(best_of(all, name));
        sustain(request, fastest(all), out.ceilings.back());
      }
    }
    if (want_mma_sync) {
      if (mma_sync_roofs.empty())
        out.skipped.push_back({mma_sync_name, unavailable, build_problem});
      else
        out.ceilings.push_back(best_of(mma_sync_roofs, mma_sync_name));
    }
  }
}

}  // namespace timeroof
