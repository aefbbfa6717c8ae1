// Experiments on the measuring harness's own overhead and jitter (the timing
// issue's item 1): each candidate cause is switched on and off around the same
// prepared operator, in alternating rounds, and the times are compared. Prints one
// table per experiment and a summary of the ratios.
//
//   harness_overhead [--rounds N] [--only cupti|instances]
//
// --only cupti runs E1 alone (a fresh process per repetition: its "before" is a
// process that never touched CUPTI).
//
// Per case (the paper's conv2d layer, fp16, batch 16 and 1024, through cuDNN's
// graph API and its legacy API; the paper's LSTM, fp16 inference, batch 16):
//  E1 cupti     CUPTI left attached: T_call / T_stream / issue measured before any
//               CUPTI use (twice: the noise), after an activity trace, with a live
//               range-profiler session (what the sweep runner kept between counter
//               batches before), and after that session is destroyed. Runs first:
//               CUPTI's state is per process and does not go back.
//  E2 api       cuDNN's legacy convolution API against its graph API: T_call,
//               T_stream, T_graph and the host issue time.
//  E3 nvml      an NVML clock read inside the timed loop (every 10th call, between
//               the stop event and the synchronize: the old timing pass) or not.
//  E4 pinning   the measuring thread pinned to its core or free to migrate.
//  E5 sleep     waiting on a blocking-sync event (the thread sleeps) against the
//               default event (the thread spins).
//  E6 calls     every CUDA API one call makes (a trace), and the device memory
//               free before and after 100 calls (a per-call allocation shows).
//  E7 times     T_call, T_stream, T_graph, T_k (trace) and the issue time of each
//               case side by side: where the old single time (T_call) stood.
//  E8 host      the host's speed (measure/host_probe.hpp: core, memory, OS) and the
//               LSTM call's issue time, side by side every 50 ms for a few
//               seconds: whether the host-bound times follow the host's speed,
//               and which part of it.
//  E9 instances  eight separately prepared instances of one host-bound call (the
//               LSTM with cuDNN's persistent algorithm, fp32, batch 8; the conv at
//               batch 1), their issue times in alternating rounds: whether the
//               host's cost is a property of the instance (stable across rounds,
//               different between instances) or of the moment (moving together).
// A ratio is B / A of the medians over the rounds; "noise" is the A-against-A
// difference of the same rounds (each round measures A twice around B).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.hpp"
#include "core/elapsed.hpp"
#include "core/pinned_thread.hpp"
#include "core/statistics.hpp"
#include "counters/activity_tracer.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "measure/back_to_back.hpp"
#include "measure/counter_collection.hpp"
#include "measure/graph_replay.hpp"
#include "measure/host_probe.hpp"
#include "measure/synchronized.hpp"
#include "measure/trace_calls.hpp"
#include "measure/warmup.hpp"
#include "sweeps/family.hpp"
#include "sweeps/implementations.hpp"

namespace timeroof {
namespace {

struct Case {
  std::string label;
  const char* family;
  nlohmann::json params;
};

std::vector<Case> cases() {
  const auto conv = [](int batch, const char* api) {
    return nlohmann::json{{"batch", batch},   {"channels", 64},      {"height", 112},
                          {"width", 112},     {"filters", 64},       {"filter", 3},
                          {"stride", 2},      {"precision", "fp16"}, {"direction", "fwd"},
                          {"layout", "nhwc"}, {"cudnn_api", api}};
  };
  const nlohmann::json lstm = {{"batch", 16},       {"seq_length", 16},    {"input_size", 32},
                               {"hidden_size", 16}, {"pass", "inference"}, {"precision", "fp16"}};
  return {{"conv2d fp16 b16 graph", "conv2d", conv(16, "graph")},
          {"conv2d fp16 b16 legacy", "conv2d", conv(16, "legacy")},
          {"conv2d fp16 b1024 graph", "conv2d", conv(1024, "graph")},
          {"conv2d fp16 b1024 legacy", "conv2d", conv(1024, "legacy")},
          {"lstm fp16 inference b16", "lstm", lstm}};
}

// Short stop rules: many alternating rounds matter more than long single ones.
const StopRule kCallRule{.min_samples = 30, .max_samples = 2000, .budget_s = 0.12};
const StopRule kSequenceRule{.min_samples = 16, .max_samples = 1000, .budget_s = 0.08};

struct Times {
  double call = 0, stream = 0, graph = 0, issue = 0;
};

Times measure_times(const CallUnderTest& call, cudaStream_t s, bool with_graph = true) {
  warm_up(call, s);
  const SynchronizedTimes sync = time_synchronized(call, s, kCallRule);
  Times t;
  t.call = sync.call.stats.median_s;
  t.issue = sync.issue.stats.median_s;
  t.stream = time_back_to_back(call, s, kSequenceRule, t.call).stats.median_s;
  if (with_graph) {
    const GraphReplay graph = time_graph_replay(call, s, kSequenceRule);
    t.graph = graph.time ? graph.time->stats.median_s : 0;
  }
  return t;
}

// The old timing pass's loop: events around each call, an NVML read every 10th
// call between the stop event and the synchronize when `nvml` is set; `sleep`
// waits on a blocking-sync stop event instead.
double event_loop(Operator& op, cudaStream_t s, const ClockReader* nvml, bool sleep) {
  const Event start;
  const Event stop(sleep ? cudaEventBlockingSync : cudaEventDefault);
  std::vector<double> samples;
  for (int i = 0; i < 200; ++i) {
    start.record(s);
    op.run(s);
    stop.record(s);
    if (nvml && i % 10 == 0) (void)nvml->read();
    stop.synchronize();
    samples.push_back(stop.seconds_since(start));
  }
  return median_of(samples);
}

struct Comparison {
  std::vector<double> a, b, a_again;
  void add(double first_a, double value_b, double second_a) {
    a.push_back(first_a);
    b.push_back(value_b);
    a_again.push_back(second_a);
  }
  double ratio() const { return median_of(b) / median_of(pooled()); }
  double noise() const { return std::abs(median_of(a_again) / median_of(a) - 1); }
  std::vector<double> pooled() const {
    std::vector<double> both = a;
    both.insert(both.end(), a_again.begin(), a_again.end());
    return both;
  }
};

void print_comparison(const std::string& experiment, const std::string& label,
                      const std::string& quantity, const Comparison& c, const char* a_name,
                      const char* b_name) {
  if (c.a.empty()) return;
  const double ratio = c.ratio();
  const double noise = c.noise();
  std::printf("%-8s %-26s %-9s %-10s %9.2f us  %-10s %9.2f us  B/A %6.3f  noise %5.1f%%  %s\n",
              experiment.c_str(), label.c_str(), quantity.c_str(), a_name,
              median_of(c.pooled()) * 1e6, b_name, median_of(c.b) * 1e6, ratio, 100 * noise,
              std::abs(ratio - 1) <= std::max(0.02, noise) ? "no effect" : "EFFECT");
}

std::unique_ptr<Operator> prepared(const Case& c, const std::shared_ptr<LibraryHandles>& cudnn) {
  std::unique_ptr<Operator> op = make_operator(find_family(c.family), c.params, cudnn);
  op->prepare(nullptr);
  return op;
}

CallUnderTest run_of(Operator& op) {
  return {[&op](cudaStream_t s) { op.run(s); }, nullptr};
}

// E1: before any CUPTI use, after a trace, with a live profiler session, after it.
void cupti_experiment(const std::vector<Case>& all, const std::shared_ptr<LibraryHandles>& cudnn,
                      const Stream& stream) {
  std::printf("\n== E1 cupti: CUPTI left attached (run first: CUPTI's state does not go back)\n");
  std::vector<std::unique_ptr<Operator>> ops;
  for (const Case& c : all) ops.push_back(prepared(c, cudnn));
  const cudaStream_t s = stream.get();
  const char* stages[] = {"before", "before again", "after trace", "profiler alive",
                          "profiler gone"};
  std::vector<std::array<Times, 5>> seen(all.size());
  auto measure_all = [&](int stage) {
    for (std::size_t i = 0; i < all.size(); ++i)
      seen[i][static_cast<std::size_t>(stage)] = measure_times(run_of(*ops[i]), s, false);
  };
  measure_all(0);
  measure_all(1);
  for (std::size_t i = 0; i < all.size(); ++i) (void)trace_calls(run_of(*ops[i]), s, 5);
  measure_all(2);
  {
    ProfilerSession session;
    const CollectionPlan plan = plan_collection(session.chip(), quantities_for(OperatorNeeds{}),
                                                session.counter_availability());
    for (std::size_t i = 0; i < all.size(); ++i) {
      const TracedCalls traced = trace_calls(run_of(*ops[i]), s, 2);
      (void)session.profile_call_batch(
          plan.metrics, {counted_call(run_of(*ops[i]), s, traced.kernels.size(), 0)});
    }
    measure_all(3);
  }
  measure_all(4);
  std::printf("%-26s %-15s %11s %11s %11s\n", "case", "stage", "T_call us", "T_stream us",
              "issue us");
  for (std::size_t i = 0; i < all.size(); ++i)
    for (int stage = 0; stage < 5; ++stage) {
      const Times& t = seen[i][static_cast<std::size_t>(stage)];
      const Times& base = seen[i][0];
      std::printf("%-26s %-15s %11.2f %11.2f %11.2f   ratio to before: %.3f %.3f %.3f\n",
                  all[i].label.c_str(), stages[stage], t.call * 1e6, t.stream * 1e6, t.issue * 1e6,
                  t.call / base.call, t.stream / base.stream, t.issue / base.issue);
    }
}

// Pearson correlation of two equally long series (0 where either is constant).
double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double cov = 0, vx = 0, vy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    cov += (x[i] - mx) * (y[i] - my);
    vx += (x[i] - mx) * (x[i] - mx);
    vy += (y[i] - my) * (y[i] - my);
  }
  return vx > 0 && vy > 0 ? cov / std::sqrt(vx * vy) : 0.0;
}

double max_over_min(const std::vector<double>& v) {
  const auto [low, high] = std::minmax_element(v.begin(), v.end());
  return *high / *low;
}

// E8: does the issue time of a host-bound call follow the host's own speed, and
// which part of it: the core, the memory system or the OS (measure/host_probe.hpp)?
void host_experiment(const Case& c, const std::shared_ptr<LibraryHandles>& cudnn,
                     const Stream& stream) {
  std::printf("\n== E8 host: host probes and the issue time of %s, every 50 ms\n", c.label.c_str());
  std::unique_ptr<Operator> op = prepared(c, cudnn);
  const CallUnderTest call = run_of(*op);
  warm_up(call, stream.get());
  const StopRule quick{.min_samples = 20, .max_samples = 20, .budget_s = 1};
  std::vector<double> compute, memory, kernel, issues;
  for (int i = 0; i < 80; ++i) {
    const HostProbe probe = probe_host();
    compute.push_back(probe.compute_s);
    memory.push_back(probe.memory_s);
    kernel.push_back(probe.kernel_s);
    issues.push_back(time_synchronized(call, stream.get(), quick).issue.stats.median_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("issue: median %.2f us, max/min %.3f\n", median_of(issues) * 1e6,
              max_over_min(issues));
  const std::pair<const char*, const std::vector<double>*> probes[] = {
      {"compute", &compute}, {"memory", &memory}, {"kernel", &kernel}};
  for (const auto& [name, series] : probes)
    std::printf("probe %-8s median %8.2f us, max/min %.3f, correlation with issue %.3f\n", name,
                median_of(*series) * 1e6, max_over_min(*series), correlation(*series, issues));
  std::string rows;
  for (std::size_t i = 0; i < issues.size(); ++i) {
    char row[64];
    std::snprintf(row, sizeof row, "%.0f/%.0f/%.0f/%.1f ", compute[i] * 1e6, memory[i] * 1e6,
                  kernel[i] * 1e6, issues[i] * 1e6);
    rows += row;
  }
  std::printf("compute/memory/kernel probe / issue, us: %s\n", rows.c_str());
}

// E9: is a host-bound call's issue time a property of its prepared instance?
void instance_experiment(const std::shared_ptr<LibraryHandles>& cudnn, const Stream& stream,
                         int rounds) {
  const nlohmann::json lstm = {{"batch", 8},
                               {"seq_length", 16},
                               {"input_size", 32},
                               {"hidden_size", 16},
                               {"pass", "inference"},
                               {"precision", "fp32"},
                               {"algorithm", "persist_static_small_h"}};
  const Case conv = cases()[0];
  const StopRule quick{.min_samples = 40, .max_samples = 40, .budget_s = 1};
  for (const Case& c : {Case{"lstm fp32 persist b8", "lstm", lstm}, conv}) {
    std::printf("\n== E9 instances: issue time (us) of 8 instances of %s, %d rounds\n",
                c.label.c_str(), rounds);
    std::vector<std::unique_ptr<Operator>> ops;
    for (int i = 0; i < 8; ++i) ops.push_back(prepared(c, cudnn));
    std::vector<std::vector<double>> issue(ops.size());
    for (int r = 0; r < rounds; ++r)
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const CallUnderTest call = run_of(*ops[i]);
        warm_up(call, stream.get());
        issue[i].push_back(time_synchronized(call, stream.get(), quick).issue.stats.median_s);
      }
    std::vector<double> medians;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      std::string row;
      for (double v : issue[i]) {
        char cell[16];
        std::snprintf(cell, sizeof cell, " %6.1f", v * 1e6);
        row += cell;
      }
      const auto [low, high] = std::minmax_element(issue[i].begin(), issue[i].end());
      medians.push_back(median_of(issue[i]));
      std::printf("instance %zu:%s   median %.1f, max/min within %.3f\n", i, row.c_str(),
                  medians.back() * 1e6, *high / *low);
    }
    const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
    std::printf("between instances: max/min of the medians %.3f\n", *high / *low);
  }
}

int main_checked(int argc, char** argv) {
  int rounds = 4;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::string(argv[i]) == "--only" && i + 1 < argc &&
               (std::string(argv[i + 1]) == "cupti" || std::string(argv[i + 1]) == "instances")) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: harness_overhead [--rounds N] [--only cupti|instances]\n");
      return 1;
    }
  }
  select_gpu(0);
  const GpuInfo gpu = query_gpu(0);
  std::printf("harness experiments on %s, %d alternating rounds (A, B, A)\n", gpu.name.c_str(),
              rounds);
  const auto cudnn = std::make_shared<LibraryHandles>();
  const Stream stream;
  const cudaStream_t s = stream.get();
  const std::vector<Case> all = cases();
  if (only == "instances") {
    instance_experiment(cudnn, stream, rounds);
    host_experiment(all.back(), cudnn, stream);
    return 0;
  }
  cupti_experiment(all, cudnn, stream);
  if (only == "cupti") return 0;

  std::printf("\n== E2 api, E3 nvml, E4 pinning, E5 sleep\n");
  const ClockReader clocks(gpu.index);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Case& c = all[i];
    std::unique_ptr<Operator> op = prepared(c, cudnn);
    warm_up(run_of(*op), s);
    if (c.params.contains("cudnn_api") && c.params["cudnn_api"] == "graph" && i + 1 < all.size()) {
      std::unique_ptr<Operator> legacy = prepared(all[i + 1], cudnn);
      std::array<Comparison, 4> api;
      for (int r = 0; r < rounds; ++r) {
        const Times a = measure_times(run_of(*legacy), s);
        const Times b = measure_times(run_of(*op), s);
        const Times again = measure_times(run_of(*legacy), s);
        api[0].add(a.call, b.call, again.call);
        api[1].add(a.stream, b.stream, again.stream);
        api[2].add(a.graph, b.graph, again.graph);
        api[3].add(a.issue, b.issue, again.issue);
      }
      const char* names[] = {"T_call", "T_stream", "T_graph", "issue"};
      for (int q = 0; q < 4; ++q)
        print_comparison("E2 api", c.label, names[q], api[static_cast<std::size_t>(q)], "legacy",
                         "graph");
      std::printf("         algorithms: legacy %s | graph %s\n", legacy->algorithm().c_str(),
                  op->algorithm().c_str());
    }
    Comparison nvml, sleep, pin_call, pin_stream;
    for (int r = 0; r < rounds; ++r) {
      nvml.add(event_loop(*op, s, nullptr, false), event_loop(*op, s, &clocks, false),
               event_loop(*op, s, nullptr, false));
      sleep.add(event_loop(*op, s, nullptr, false), event_loop(*op, s, nullptr, true),
                event_loop(*op, s, nullptr, false));
      Times pinned_a, free_b, pinned_again;
      {
        const PinnedThread pin;
        pinned_a = measure_times(run_of(*op), s, false);
      }
      free_b = measure_times(run_of(*op), s, false);
      {
        const PinnedThread pin;
        pinned_again = measure_times(run_of(*op), s, false);
      }
      pin_call.add(pinned_a.call, free_b.call, pinned_again.call);
      pin_stream.add(pinned_a.stream, free_b.stream, pinned_again.stream);
    }
    print_comparison("E3 nvml", c.label, "T_call", nvml, "no read", "NVML read");
    print_comparison("E4 pin", c.label, "T_call", pin_call, "pinned", "free");
    print_comparison("E4 pin", c.label, "T_stream", pin_stream, "pinned", "free");
    print_comparison("E5 sleep", c.label, "T_call", sleep, "spin", "sleep");
  }

  std::printf(
      "\n== E6 calls and E7 times: the three times, T_k, the issue time, the CUDA API calls of "
      "one call and the device memory over 100 calls\n");
  std::printf("%-26s %10s %10s %10s %10s %10s %8s  %s\n", "case", "T_call us", "T_stream us",
              "T_graph us", "T_k us", "issue us", "copies", "API calls per call");
  for (const Case& c : all) {
    std::unique_ptr<Operator> op = prepared(c, cudnn);
    const CallUnderTest call = run_of(*op);
    warm_up(call, s);
    const SynchronizedTimes sync = time_synchronized(call, s, kCallRule);
    const MeasuredTime stream_time =
        time_back_to_back(call, s, kCallRule, sync.call.stats.median_s);
    const GraphReplay graph = time_graph_replay(call, s, kCallRule);
    std::size_t free_before = 0, free_after = 0, total = 0;
    TR_CUDA_CHECK(cudaStreamSynchronize(s));
    TR_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
    for (int i = 0; i < 100; ++i) op->run(s);
    TR_CUDA_CHECK(cudaStreamSynchronize(s));
    TR_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
    const TracedCalls traced = trace_calls(call, s, 5);
    std::string api;
    for (const auto& [name, count] : traced.details["api_calls_per_call"].items())
      api += name + " x" + nlohmann::json(count).dump() + ", ";
    std::printf("%-26s %10.2f %10.2f %10.2f %10.2f %10.2f %8d  %s\n", c.label.c_str(),
                sync.call.stats.median_s * 1e6, stream_time.stats.median_s * 1e6,
                graph.time ? graph.time->stats.median_s * 1e6 : -1.0,
                traced.timing.kernel_time_s.value_or(-1e-6) * 1e6, sync.issue.stats.median_s * 1e6,
                graph.copies, api.c_str());
    if (!graph.time) std::printf("    T_graph unavailable: %s\n", graph.unavailable.c_str());
    std::printf("    device memory free before/after 100 calls: %zu / %zu bytes (%+lld)\n",
                free_before, free_after,
                static_cast<long long>(free_after) - static_cast<long long>(free_before));
  }
  host_experiment(all.back(), cudnn, stream);
  return 0;
}

}  // namespace
}  // namespace timeroof

int main(int argc, char** argv) {
  return timeroof::bench_main("harness_overhead", timeroof::main_checked, argc, argv);
}
