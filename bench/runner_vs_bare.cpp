// The sweep runner's timing of a point against a bare loop of the same cuDNN call
// (the sweeps issue's target: under 2% apart). Prints a table and the ratios.
//
//   runner_vs_bare [--rounds N]
//
// Bare loop: what an engineer writes by hand around one call: the operator built
// and prepared on its own, 3 warm-up calls, then 200 calls, each between two CUDA
// events and synchronized, and the median. The runner's figure is the point's
// wall_median_s from SweepRunner::measure_point (counters off: they do not touch
// the timing pass). The two alternate, `rounds` times each, so drift in clocks or
// temperature hits both; each side's figure is the median over its rounds.
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
  std::string algorithm;
};

Bare bare_loop(const OperatorFamily& family, const nlohmann::json& params,
               const std::shared_ptr<CudnnHandle>& cudnn) {
  const Stream stream;
  const cudaStream_t s = stream.get();
  std::unique_ptr<Operator> op = family.make(params, cudnn);
  op->prepare(s);
  for (int i = 0; i < 3; ++i) op->run(s);
  TR_CUDA_CHECK(cudaStreamSynchronize(s));
  const Event start, stop;
  std::vector<double> samples;
  for (int i = 0; i < 200; ++i) {
    start.record(s);
    op->run(s);
    stop.record(s);
    stop.synchronize();
    samples.push_back(stop.seconds_since(start));
  }
  start.record(s);
  for (int i = 0; i < 200; ++i) op->run(s);
  stop.record(s);
  stop.synchronize();
  return {median(samples), stop.seconds_since(start) / 200, op->algorithm()};
}

int main_checked(int argc, char** argv) {
  int rounds = 3;
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
  RunnerOptions options;
  options.counters = false;
  SweepRunner runner(gpu, options);
  auto cudnn = std::make_shared<CudnnHandle>();
  std::printf("runner vs bare loop on %s (%d rounds each, alternating)\n", gpu.name.c_str(),
              rounds);
  std::printf("%-44s %12s %12s %10s %14s\n", "point", "runner us", "bare us", "runner/bare",
              "back-to-back us");
  double worst = 0;
  int within = 0, total = 0;
  for (const Case& c : cases()) {
    const OperatorFamily& family = find_family(c.family);
    std::vector<double> runner_s, bare_s, pipelined_s;
    std::string status, rounds_text;
    for (int r = 0; r < rounds && status.empty(); ++r) {
      const Bare bare = bare_loop(family, c.params, cudnn);
      bare_s.push_back(bare.per_call_median_s);
      pipelined_s.push_back(bare.back_to_back_s);
      const Point p = runner.measure_point(family, c.params, "bench", 0);
      if (p.status != PointStatus::ok || !p.timing.wall_median_s) {
        status = std::string(to_string(p.status)) + ": " + p.reason;
        break;
      }
      runner_s.push_back(*p.timing.wall_median_s);
      char text[160];
      std::snprintf(text, sizeof text, " [%.1f/%.1f us, %d repeats, spread %.2f%s]",
                    runner_s.back() * 1e6, bare.per_call_median_s * 1e6, p.timing.repeats,
                    p.timing.wall_spread.value_or(0),
                    p.algorithm == bare.algorithm ? "" : ", algorithms differ");
      rounds_text += text;
    }
    const std::string label = std::string(c.family) + " " +
                              c.params.value("precision", std::string()) + " " +
                              c.params.value("direction", std::string()) + " batch " +
                              std::to_string(c.params["batch"].get<int>());
    if (!status.empty()) {
      std::printf("%-44s %s\n", label.c_str(), status.c_str());
      continue;
    }
    const double ratio = median(runner_s) / median(bare_s);
    worst = std::max(worst, std::abs(ratio - 1));
    within += std::abs(ratio - 1) < 0.02;
    ++total;
    std::printf("%-44s %12.2f %12.2f %+9.2f%% %14.2f\n", label.c_str(), median(runner_s) * 1e6,
                median(bare_s) * 1e6, 100 * (ratio - 1), median(pipelined_s) * 1e6);
    std::printf("    rounds runner/bare:%s\n", rounds_text.c_str());
  }
  std::printf("%d of %d points within 2%% of the bare loop; largest |runner/bare - 1| = %.2f%%\n",
              within, total, 100 * worst);
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
