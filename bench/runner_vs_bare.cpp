// The sweep runner's timing of a point against a bare loop of the same cuDNN call
// (the sweeps issue's target: under 2% apart). Prints a table and the ratios.
//
//   runner_vs_bare [--rounds N]
//
// Bare loop: what an engineer writes by hand around one call: 3 warm-up calls,
// then 200 calls, each between two CUDA events and synchronized, and the median.
// Two comparisons per point, each over `rounds` alternating rounds (each side's
// figure is the median over its rounds):
//  - same operator: the runner's timing pass (SweepRunner::time_prepared) and the
//    bare loop on one prepared operator: the timing method alone;
//  - separate operators: SweepRunner::measure_point (build, prepare, check, time;
//    counters off: they do not touch the timing pass) against a bare loop on an
//    operator of its own, which adds allocation and library-state differences.
// Each round runs the runner between two bare loops; the runner is compared with
// both pooled, and the second bare loop against the first is the noise floor: how
// far the same hand-written loop moves from one ~50 ms window to the next (on an
// H200, up to 10% for launch-bound LSTM calls and under the power cap). Each round
// shows the runner's and the first bare loop's SM clock (NVML, read mid-loop).
// Also shown: the back-to-back time per call (200 calls between two events), the
// rate when the host enqueues ahead of the GPU, a different quantity.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/measure.hpp"
#include "sweeps/family.hpp"
#include "sweeps/runner.hpp"

namespace timeroof {
namespace {

struct Case {
  const char* family;
  nlohmann::json params;
};

std::vector<Case> cases() {
  const auto conv = [](int batch, const char* precision, const char* direction) {
    return nlohmann::json{{"batch", batch},  {"channels", 64},         {"height", 112},
                          {"width", 112},    {"filters", 64},          {"filter", 3},
                          {"stride", 2},     {"precision", precision}, {"direction", direction},
                          {"layout", "nhwc"}};
  };
  const auto lstm = [](int batch, const char* precision) {
    return nlohmann::json{{"batch", batch},
                          {"seq_length", 16},
                          {"input_size", 512},
                          {"hidden_size", 512},
                          {"precision", precision}};
  };
  return {{"conv2d", conv(1, "fp16", "fwd")},
          {"conv2d", conv(16, "fp16", "fwd")},
          {"conv2d", conv(256, "fp16", "fwd")},
          {"conv2d", conv(32, "fp32", "fwd")},
          {"conv2d", conv(32, "fp16", "bwd_data")},
          {"lstm", lstm(8, "fp32")},
          {"lstm", lstm(64, "fp16")},
          {"lstm", lstm(512, "fp16")}};
}

// The median as every timeroof measurement takes it.
double median(std::vector<double> seconds) {
  return summarize(std::move(seconds)).median_s;
}

struct Bare {
  double per_call_median_s = 0;
  double back_to_back_s = 0;
  double sm_clock_hz = 0;  // one NVML reading halfway through the loop
};

// The hand-written loop on a prepared operator.
Bare bare_loop_on(Operator& op, const ClockReader& clocks) {
  const Stream stream;
  const cudaStream_t s = stream.get();
  for (int i = 0; i < 3; ++i) op.run(s);
  TR_CUDA_CHECK(cudaStreamSynchronize(s));
  const Event start, stop;
  std::vector<double> samples;
  Bare bare;
  for (int i = 0; i < 200; ++i) {
    start.record(s);
    op.run(s);
    stop.record(s);
    if (i == 100) bare.sm_clock_hz = clocks.read().sm_hz.value_or(0);
    stop.synchronize();
    samples.push_back(stop.seconds_since(start));
  }
  start.record(s);
  for (int i = 0; i < 200; ++i) op.run(s);
  stop.record(s);
  stop.synchronize();
  bare.per_call_median_s = median(samples);
  bare.back_to_back_s = stop.seconds_since(start) / 200;
  return bare;
}

std::unique_ptr<Operator> prepared(const OperatorFamily& family, const nlohmann::json& params,
                                   const std::shared_ptr<CudnnHandle>& cudnn) {
  std::unique_ptr<Operator> op = family.make(params, cudnn);
  op->prepare(nullptr);
  return op;
}

double sm_clock_of(const Point& p) {
  const nlohmann::json& hz = p.details["timing"]["sm_clock_hz"];
  return hz.is_number() ? hz.get<double>() : 0.0;
}

struct Tally {
  double worst = 0;
  int within = 0, total = 0;
  void add(double ratio) {
    worst = std::max(worst, std::abs(ratio - 1));
    within += std::abs(ratio - 1) < 0.02;
    ++total;
  }
};

int main_checked(int argc, char** argv) {
  int rounds = 11;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: runner_vs_bare [--rounds N]\n");
      return 1;
    }
  }
  select_gpu(0);
  GpuInfo gpu = query_gpu(0);
  const ClockReader clocks(0);
  RunnerOptions options;
  options.counters = false;
  SweepRunner runner(gpu, options);
  auto cudnn = std::make_shared<CudnnHandle>();
  std::printf(
      "runner vs bare loop on %s (%d rounds each, alternating; runner warm-up %d calls and "
      "%.0f ms)\n",
      gpu.name.c_str(), rounds, options.warmup_calls, options.warmup_seconds * 1e3);
  std::printf("%-40s %-9s %10s %10s %10s %9s %14s\n", "point", "operator", "runner us", "bare us",
              "runner/bare", "bare/bare", "back-to-back us");
  Tally same_tally, fresh_tally;
  int within_noise = 0;
  for (const Case& c : cases()) {
    const OperatorFamily& family = find_family(c.family);
    const std::string label = std::string(c.family) + " " +
                              c.params.value("precision", std::string()) + " " +
                              c.params.value("direction", std::string()) + " batch " +
                              std::to_string(c.params["batch"].get<int>());
    // Same operator: the runner's timing pass and the bare loop on one prepared
    // operator: the timing method alone. Separate operators: measure_point (build,
    // prepare, check, time) against a bare loop on an operator of its own: adds
    // placement and library-state differences. Each round runs the runner between
    // two bare loops; the second bare loop against the first is the noise floor:
    // how far the same hand-written loop moves between two windows.
    for (const bool same : {true, false}) {
      std::vector<double> runner_s, bare_s, again_s, pipelined_s;
      std::string status, rounds_text;
      std::unique_ptr<Operator> shared = same ? prepared(family, c.params, cudnn) : nullptr;
      auto bare = [&] {
        return same ? bare_loop_on(*shared, clocks)
                    : bare_loop_on(*prepared(family, c.params, cudnn), clocks);
      };
      for (int r = 0; r < rounds && status.empty(); ++r) {
        const Bare first = bare();
        const Point p = same ? runner.time_prepared(*shared)
                             : runner.measure_point(family, c.params, "bench", 0);
        const Bare again = bare();
        if (p.status != PointStatus::ok || !p.timing.wall_median_s) {
          status = std::string(to_string(p.status)) + ": " + p.reason;
          break;
        }
        runner_s.push_back(*p.timing.wall_median_s);
        bare_s.push_back(first.per_call_median_s);
        again_s.push_back(again.per_call_median_s);
        pipelined_s.push_back(first.back_to_back_s);
        char text[200];
        std::snprintf(text, sizeof text, " [%.1f/%.1f/%.1f us, SM %.0f/%.0f MHz]",
                      runner_s.back() * 1e6, first.per_call_median_s * 1e6,
                      again.per_call_median_s * 1e6, sm_clock_of(p) / 1e6, first.sm_clock_hz / 1e6);
        rounds_text += text;
      }
      if (!status.empty()) {
        std::printf("%-40s %-9s %s\n", label.c_str(), same ? "same" : "separate", status.c_str());
        continue;
      }
      // The runner against both bare loops pooled; the noise floor from the two.
      std::vector<double> both = bare_s;
      both.insert(both.end(), again_s.begin(), again_s.end());
      const double ratio = median(runner_s) / median(both);
      const double noise = std::abs(median(again_s) / median(bare_s) - 1);
      (same ? same_tally : fresh_tally).add(ratio);
      const bool ok = std::abs(ratio - 1) < 0.02;
      within_noise += !ok && std::abs(ratio - 1) <= noise;
      std::printf("%-40s %-9s %10.2f %10.2f %+9.2f%% %8.2f%% %14.2f  %s\n", label.c_str(),
                  same ? "same" : "separate", median(runner_s) * 1e6, median(both) * 1e6,
                  100 * (ratio - 1), 100 * noise, median(pipelined_s) * 1e6,
                  ok                             ? "within 2%"
                  : std::abs(ratio - 1) <= noise ? "within the bare loop's own noise"
                                                 : "OUTSIDE");
      std::printf("    rounds runner/bare/bare again:%s\n", rounds_text.c_str());
    }
  }
  std::printf(
      "same operator: %d of %d points within 2%% of the bare loop; largest |runner/bare - 1| = "
      "%.2f%%\n",
      same_tally.within, same_tally.total, 100 * same_tally.worst);
  std::printf(
      "separate operators: %d of %d points within 2%%; largest |runner/bare - 1| = %.2f%%\n",
      fresh_tally.within, fresh_tally.total, 100 * fresh_tally.worst);
  std::printf("beyond 2%% but within the bare loop's own round-to-round difference: %d\n",
              within_noise);
  return 0;
}

}  // namespace
}  // namespace timeroof

int main(int argc, char** argv) {
  try {
    return timeroof::main_checked(argc, argv);
  } catch (const timeroof::Error& e) {
    std::fprintf(stderr, "runner_vs_bare: %s\n", e.what());
    return static_cast<int>(e.code());
  }
}
