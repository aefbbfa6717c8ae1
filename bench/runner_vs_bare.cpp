// The sweep runner's three times of a point against bare loops of the same cuDNN
// call (the timing issue's target: under 2% apart). Prints a table and the ratios.
//
//   runner_vs_bare [--rounds N]
//
// Bare loops: what an engineer writes by hand around one call, after 3 warm-up calls:
//  - call:   200 calls, each between two CUDA events and synchronized; the median;
//  - stream: 200 calls back to back between two events, per call; the median of 5;
//  - graph:  the call captured into a CUDA graph as many times as the runner's
//            graph holds it (details.timing.graph.copies_per_graph), 50 replays
//            back to back between two events, per call; the median of 5.
// Two comparisons per point, each over `rounds` alternating rounds (each side's
// figure is the median over its rounds):
//  - same operator: the runner's timing pass (SweepRunner::time_prepared) and the
//    bare loops on one prepared operator: the timing method alone;
//  - separate operators: SweepRunner::measure_point (build, prepare, check, time;
//    counters off: they do not touch the timing pass) against bare loops on an
//    operator of their own, which adds allocation and library-state differences.
// Each round runs the runner between two bare loops; the runner is compared with
// both pooled, and the second bare loop against the first is the noise floor: how
// far the same hand-written loop moves from one window to the next.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.hpp"
#include "core/statistics.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "sweeps/family.hpp"
#include "sweeps/implementations.hpp"
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

double median(std::vector<double> seconds) {
  return median_of(seconds);
}

// The three times per call of one bare round.
struct Bare {
  std::array<double, 3> seconds{};  // call, stream, graph
};

constexpr std::array<const char*, 3> kTimes = {"T_call", "T_stream", "T_graph"};

// The hand-written loops on a prepared operator; `copies`: calls per graph.
Bare bare_loops_on(Operator& op, int copies) {
  const Stream stream;
  const cudaStream_t s = stream.get();
  for (int i = 0; i < 3; ++i) op.run(s);
  TR_CUDA_CHECK(cudaStreamSynchronize(s));
  const Event start, stop;
  Bare bare;
  std::vector<double> samples;
  for (int i = 0; i < 200; ++i) {
    start.record(s);
    op.run(s);
    stop.record(s);
    stop.synchronize();
    samples.push_back(stop.seconds_since(start));
  }
  bare.seconds[0] = median(samples);
  samples.clear();
  for (int r = 0; r < 5; ++r) {
    start.record(s);
    for (int i = 0; i < 200; ++i) op.run(s);
    stop.record(s);
    stop.synchronize();
    samples.push_back(stop.seconds_since(start) / 200);
  }
  bare.seconds[1] = median(samples);
  samples.clear();
  TR_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < copies; ++i) op.run(s);
  cudaGraph_t raw = nullptr;
  TR_CUDA_CHECK(cudaStreamEndCapture(s, &raw));
  const Graph graph(raw);
  cudaGraphExec_t exec_raw = nullptr;
  TR_CUDA_CHECK(cudaGraphInstantiate(&exec_raw, graph.get(), 0));
  const GraphExec exec(exec_raw);
  for (int i = 0; i < 3; ++i) TR_CUDA_CHECK(cudaGraphLaunch(exec.get(), s));
  for (int r = 0; r < 5; ++r) {
    start.record(s);
    for (int i = 0; i < 50; ++i) TR_CUDA_CHECK(cudaGraphLaunch(exec.get(), s));
    stop.record(s);
    stop.synchronize();
    samples.push_back(stop.seconds_since(start) / (50.0 * copies));
  }
  bare.seconds[2] = median(samples);
  return bare;
}

std::unique_ptr<Operator> prepared(const OperatorFamily& family, const nlohmann::json& params,
                                   const std::shared_ptr<LibraryHandles>& cudnn) {
  std::unique_ptr<Operator> op = make_operator(family, params, cudnn);
  op->prepare(nullptr);
  return op;
}

std::array<std::optional<double>, 3> runner_times(const Point& p) {
  return {p.timing.call_s(), p.timing.stream_s(), p.timing.graph_s()};
}

int copies_of(const Point& p) {
  const nlohmann::json& copies = p.details["timing"]["graph"]["copies_per_graph"];
  return copies.is_number_integer() ? std::max(1, copies.get<int>()) : 1;
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
  int rounds = 5;
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
  auto cudnn = std::make_shared<LibraryHandles>();
  std::printf("runner vs bare loops on %s (%d rounds each, alternating)\n", gpu.name.c_str(),
              rounds);
  std::printf("%-40s %-9s %-8s %11s %11s %12s %9s\n", "point", "operator", "time", "runner us",
              "bare us", "runner/bare", "bare/bare");
  std::array<Tally, 3> same_tally, fresh_tally;
  int within_noise = 0;
  for (const Case& c : cases()) {
    const OperatorFamily& family = find_family(c.family);
    const std::string label = std::string(c.family) + " " +
                              c.params.value("precision", std::string()) + " " +
                              c.params.value("direction", std::string()) + " batch " +
                              std::to_string(c.params["batch"].get<int>());
    for (const bool same : {true, false}) {
      std::array<std::vector<double>, 3> runner_s, bare_s, again_s;
      std::string status;
      std::unique_ptr<Operator> shared = same ? prepared(family, c.params, cudnn) : nullptr;
      auto bare = [&](int copies) {
        return same ? bare_loops_on(*shared, copies)
                    : bare_loops_on(*prepared(family, c.params, cudnn), copies);
      };
      for (int r = 0; r < rounds && status.empty(); ++r) {
        const Point p = same ? runner.time_prepared(*shared)
                             : runner.measure_point(family, c.params, "bench", 0);
        if (p.status != PointStatus::ok || !p.timing.call) {
          status = std::string(to_string(p.status)) + ": " + p.reason;
          break;
        }
        const int copies = copies_of(p);
        const Bare first = bare(copies);
        const Bare again = bare(copies);
        const auto times = runner_times(p);
        for (std::size_t t = 0; t < 3; ++t) {
          if (!times[t]) continue;
          runner_s[t].push_back(*times[t]);
          bare_s[t].push_back(first.seconds[t]);
          again_s[t].push_back(again.seconds[t]);
        }
      }
      if (!status.empty()) {
        std::printf("%-40s %-9s %s\n", label.c_str(), same ? "same" : "separate", status.c_str());
        continue;
      }
      for (std::size_t t = 0; t < 3; ++t) {
        if (runner_s[t].empty()) {
          std::printf("%-40s %-9s %-8s not measured by the runner\n", label.c_str(),
                      same ? "same" : "separate", kTimes[t]);
          continue;
        }
        // The runner against both bare loops pooled; the noise floor from the two.
        std::vector<double> both = bare_s[t];
        both.insert(both.end(), again_s[t].begin(), again_s[t].end());
        const double ratio = median(runner_s[t]) / median(both);
        const double noise = std::abs(median(again_s[t]) / median(bare_s[t]) - 1);
        (same ? same_tally : fresh_tally)[t].add(ratio);
        const bool ok = std::abs(ratio - 1) < 0.02;
        within_noise += !ok && std::abs(ratio - 1) <= noise;
        std::printf("%-40s %-9s %-8s %11.2f %11.2f %+11.2f%% %8.2f%%  %s\n", label.c_str(),
                    same ? "same" : "separate", kTimes[t], median(runner_s[t]) * 1e6,
                    median(both) * 1e6, 100 * (ratio - 1), 100 * noise,
                    ok                             ? "within 2%"
                    : std::abs(ratio - 1) <= noise ? "within the bare loop's own noise"
                                                   : "OUTSIDE");
      }
    }
  }
  for (std::size_t t = 0; t < 3; ++t) {
    std::printf(
        "%s same operator: %d of %d points within 2%% of the bare loop; largest |runner/bare - 1| "
        "= %.2f%%\n",
        kTimes[t], same_tally[t].within, same_tally[t].total, 100 * same_tally[t].worst);
    std::printf(
        "%s separate operators: %d of %d points within 2%%; largest |runner/bare - 1| = %.2f%%\n",
        kTimes[t], fresh_tally[t].within, fresh_tally[t].total, 100 * fresh_tally[t].worst);
  }
  std::printf("beyond 2%% but within the bare loop's own round-to-round difference: %d\n",
              within_noise);
  return 0;
}

}  // namespace
}  // namespace timeroof

int main(int argc, char** argv) {
  return timeroof::bench_main("runner_vs_bare", timeroof::main_checked, argc, argv);
}
