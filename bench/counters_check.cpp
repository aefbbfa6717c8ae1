// Validation and speed of the counters against truth and against Nsight Compute.
//
//   counters_check ours    profile the workload in-process (after one warm-up run), print JSON:
//                          as the sweeps do, one range per kernel, every step replayed per
//                          pass, all steps in one collection (auto range, user replay,
//                          profile_call_batch; kernels per step counted by a trace first,
//                          as the runner's trace pass does); `ours-per-call`: the same
//                          with one collection per step; `ours-user-range`: one range per
//                          step (summed over its kernels), all steps in one collection;
//                          `ours-kernel-replay`: auto ranges with kernel replay
//   counters_check plain   run the workload with no profiler (what ncu profiles)
//   ... --keep-enabled     one range-profiler enablement for every collection (experiment)
//   ... --repeat N         every step N times in a row (ranges and ncu rows in the same
//                          order), to see each kernel's run-to-run spread
//   ... --extra M1,M2      also collect these metrics (for investigations; ncu gets them too)
//   ... --prelude V        what runs before each step (investigations of the L2 state
//                          ncu's --cache-control all leaves): flush (the default of
//                          `ours`: the runner's L2Flusher, a read of 2x L2), flush-idle
//                          (then wait 2 ms), flush-empty (then an empty kernel), write
//                          (write 2x L2: L2 left full of dirty lines), none (the default
//                          of `plain`). `plain --prelude V` under `ncu --replay-mode
//                          application --cache-control none` gives ncu the cache state
//                          `ours --prelude V` profiles in.
//   ... --conv             the workload is 18 cuDNN fp16 convolutions (the paper's layer,
//                          batch 1-256, K 64 and 128) and the metrics are the catalog's plan
//                          for an fp16 Conv2D: the speed comparison with ncu
// Every range starts from a cold L2 (the runner's L2 flush runs before it, outside
// the range), as ncu's default --cache-control all does.
//
// The workload: kernels with analytic counts (FFMA, DFMA and HFMA2 loops, a 4 GiB
// copy, cuBLASLt bf16/fp16/tf32 GEMMs). scripts/device/counters-vs-ncu.sh runs
// `ours`, then `plain` under `ncu --metrics` in a separate process (a process that
// uses the CUPTI profiler cannot be profiled by ncu), and compares ours, analytic
// and ncu per metric (scripts/device/counters_compare.py).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_profiler_api.h>

#include <nlohmann/json.hpp>

#include "bench/bench_main.hpp"
#include "counters/activity_tracer.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/check_cublas.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/cublas_reference.hpp"
#include "kernels/cuda_core.hpp"
#include "kernels/launch.hpp"
#include "kernels/memory.hpp"
#include "measure/l2_flush.hpp"
#include "sweeps/conv2d.hpp"

namespace timeroof {
namespace {

// The roofline quantities checked, in the order ncu is asked for them.
const std::vector<std::string> kMetrics = {
    "gpu__time_duration.sum",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex.sum",  // the catalog's L2 bytes / 32
    "lts__t_bytes.sum",                // shown: includes L2-partition traffic
    "l1tex__t_bytes.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
};

struct Step {
  std::string name;
  std::map<std::string, double> analytic;  // metric or quantity name -> expected value
  std::function<void(cudaStream_t)> launch;
  // cuDNN may pad a tile's work (seen: +6% and +14% on two small convs, the same
  // under ncu): its analytic count is the least the kernels must do.
  bool analytic_is_minimum = false;
  std::size_t kernels = 0;  // launches of one step (count_kernels)
};

struct Workload {
  DeviceBuffer<double> out{264 * 256};
  DeviceBuffer<uint4> copy_src, copy_dst;
  LtHandle lt;
  std::vector<std::unique_ptr<LtGemm>> gemms;
  std::vector<DeviceBuffer<char>> gemm_buffers;
  DeviceBuffer<char> workspace{64 << 20};
  std::shared_ptr<LibraryHandles> cudnn;
  std::vector<std::unique_ptr<Conv2d>> convs;
  std::unique_ptr<L2Flusher> flusher;  // the runner's cold-L2 prelude
  DeviceBuffer<uint4> flush;           // 2x L2, for the write prelude
  std::vector<Step> steps;
};

void flush_l2(const Workload& w) {
  w.flusher->flush(nullptr);
}

void build_convs(Workload& w) {
  w.cudnn = std::make_shared<LibraryHandles>();
  for (const std::int64_t k : {64, 128}) {
    for (std::int64_t n = 1; n <= 256; n *= 2) {
      Conv2dSpec spec;  // the paper's layer: 112x112x64 NHWC, 3x3, stride 2
      spec.n = n;
      spec.c = 64;
      spec.h = spec.w = 112;
      spec.k = k;
      spec.r = spec.s = 3;
      spec.stride_h = spec.stride_w = 2;
      spec.pad_h = spec.pad_w = 1;
      spec.precision = Precision::fp16;
      auto conv = std::make_unique<Conv2d>(spec, w.cudnn);
      conv->prepare(nullptr);
      const Conv2d* op = conv.get();
      w.steps.push_back({"conv_n" + std::to_string(n) + "_k" + std::to_string(k),
                         {{"tensor_fp16_flops", op->flops()}},
                         [op](cudaStream_t s) { const_cast<Conv2d*>(op)->run(s); },
                         true});
      w.convs.push_back(std::move(conv));
    }
  }
}

void add_cuda_core(Workload& w, CudaCoreRoof roof, const char* metric, double flop_per_inst) {
  const int blocks = 264, threads = 256, trips = 64;
  const double flops = cuda_core_flops(roof, blocks, threads, trips);
  w.steps.push_back({cuda_core_kernel(roof).ceiling,
                     {{metric, flops / flop_per_inst}},
                     [&w, roof](cudaStream_t s) {
                       launch_cuda_core_kernel(roof, 264, 256, 64, w.out.get(), nullptr, s);
                     }});
}

void add_gemm(Workload& w, Precision type, const char* metric) {
  const int n = 4096;
  auto gemm = std::make_unique<LtGemm>(w.lt, type, n, n, n);
  const auto algorithms = gemm->algorithms(1, w.workspace.bytes());
  if (algorithms.empty()) return;
  const LibraryGemmTypes& t = gemm->types();
  const std::size_t in_bytes = element_bytes(t.input) * n * n;
  w.gemm_buffers.emplace_back(in_bytes);
  fill_random(w.gemm_buffers.back().get(), std::size_t{n} * n, t.input, 1, nullptr);
  char* a = w.gemm_buffers.back().get();
  w.gemm_buffers.emplace_back(in_bytes);
  fill_random(w.gemm_buffers.back().get(), std::size_t{n} * n, t.input, 2, nullptr);
  char* b = w.gemm_buffers.back().get();
  w.gemm_buffers.emplace_back(element_bytes(t.output) * n * n);
  char* d = w.gemm_buffers.back().get();
  const LtGemm* g = gemm.get();
  const cublasLtMatmulAlgo_t algorithm = algorithms.front().algo;
  w.steps.push_back(
      {ceiling::library(type), {{metric, g->flops()}}, [&w, g, algorithm, a, b, d](cudaStream_t s) {
         TR_CUBLAS_CHECK(g->run(algorithm, a, b, d, w.workspace.get(), w.workspace.bytes(), s));
       }});
  w.gemms.push_back(std::move(gemm));
}

void build(Workload& w, bool conv) {
  const std::int64_t l2_bytes = query_gpu(0).l2_bytes;
  w.flusher = std::make_unique<L2Flusher>(l2_bytes);
  const std::size_t l2_elements = static_cast<std::size_t>(l2_bytes) / sizeof(uint4);
  w.flush = DeviceBuffer<uint4>(2 * l2_elements);
  if (conv) {
    build_convs(w);
    TR_CUDA_CHECK(cudaDeviceSynchronize());
    return;
  }
  add_cuda_core(w, CudaCoreRoof::fp32_fma, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2);
  add_cuda_core(w, CudaCoreRoof::fp64_fma, "sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 2);
  add_cuda_core(w, CudaCoreRoof::fp16_fma, "sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 4);
  // 4 GiB: the output still dirty in L2 when the copy ends (up to the L2 size)
  // is then under 1% of the bytes written.
  const std::size_t count = (std::size_t{4} << 30) / sizeof(uint4);
  w.copy_src = DeviceBuffer<uint4>(count);
  w.copy_dst = DeviceBuffer<uint4>(count);
  fill_pattern(w.copy_src.get(), count, 7, nullptr);
  const HbmVariant& copy = hbm_copy_variants().front();
  w.steps.push_back(
      {"hbm_copy_4GiB",
       {{"dram__bytes_read.sum", 4294967296.0}, {"dram__bytes_write.sum", 4294967296.0}},
       [&w, copy, count](cudaStream_t s) {
         launch_hbm_copy(copy, w.copy_src.get(), w.copy_dst.get(), count,
                         hbm_blocks_for(copy, count), s);
       }});
  add_gemm(w, Precision::bf16, "sm__ops_path_tensor_src_bf16_dst_fp32.sum");
  add_gemm(w, Precision::fp16, "sm__ops_path_tensor_src_fp16.sum");
  add_gemm(w, Precision::tf32, "sm__ops_path_tensor_src_tf32_dst_fp32.sum");
  TR_CUDA_CHECK(cudaDeviceSynchronize());
}

// The steps in profiling order: `repeat` rounds of the whole workload.
std::vector<const Step*> sequence(const Workload& w, int repeat) {
  std::vector<const Step*> order;
  for (int r = 0; r < repeat; ++r)
    for (const Step& step : w.steps) order.push_back(&step);
  return order;
}

// No L2 flushes unless asked: ncu flushes by itself (--cache-control all) before
// each kernel.
void run_all(const Workload& w, int repeat, const std::function<void()>& prelude = nullptr) {
  for (const Step* step : sequence(w, repeat)) {
    if (prelude) prelude();
    step->launch(nullptr);
  }
  TR_CUDA_CHECK(cudaDeviceSynchronize());
}

// The launches of each step, from an activity trace of one run of it.
void count_kernels(Workload& w) {
  for (Step& step : w.steps) {
    ActivityTracer tracer;
    tracer.start();
    step.launch(nullptr);
    step.kernels = tracer.stop().kernels.size();
  }
}

// Ranges of every mode, each with the step it belongs to.
struct Collected {
  std::vector<RangeValues> ranges;
  std::vector<std::string> steps;
  std::vector<int> calls;  // which call of the sequence (a step's run) the range is from
  std::size_t passes = 0, dropped_ranges = 0;
};

// The prelude of `ours` (--prelude) and how many kernels it launches.
std::pair<std::function<void()>, std::size_t> prelude_of(const std::string& variant,
                                                         const Workload& w) {
  if (variant == "none") return {nullptr, 0};
  constexpr std::size_t kFlush = L2Flusher::kernels_per_flush;
  if (variant == "flush") return {[&w] { flush_l2(w); }, kFlush};
  if (variant == "flush-idle") {
    return {[&w] {
              flush_l2(w);
              TR_CUDA_CHECK(cudaDeviceSynchronize());
              std::this_thread::sleep_for(std::chrono::milliseconds(2));
            },
            kFlush};
  }
  if (variant == "flush-empty") {
    return {[&w] {
              flush_l2(w);
              launch_empty_kernel(nullptr);
            },
            kFlush + 1};
  }
  if (variant == "write") {
    return {[&w] {
              const HbmVariant& write = hbm_write_variants().front();
              launch_hbm_write(write, const_cast<uint4*>(w.flush.get()), w.flush.size(), 5,
                               hbm_blocks_for(write, w.flush.size()), nullptr);
            },
            1};
  }
  throw usage_error("--prelude: unknown variant '" + variant +
                    "'; allowed: flush, flush-idle, flush-empty, write, none");
}

Collected collect(ProfilerSession& session, const std::string& mode,
                  const std::vector<std::string>& metrics, const Workload& w, int repeat,
                  const std::string& prelude) {
  Collected c;
  const std::vector<const Step*> order = sequence(w, repeat);
  auto take = [&](ProfileResult result, const std::string& step, int call) {
    c.passes = std::max(c.passes, result.passes);
    c.dropped_ranges += result.dropped_ranges;
    for (RangeValues& range : result.ranges) {
      c.ranges.push_back(std::move(range));
      c.steps.push_back(step);
      c.calls.push_back(call);
    }
  };
  if (mode == "ours") {
    std::vector<BatchedCall> calls;
    const auto [before, before_kernels] = prelude_of(prelude, w);
    for (const Step* step : order) {
      BatchedCall call;
      call.prelude = before;
      call.prelude_kernels = before_kernels;
      call.run = [step] { step->launch(nullptr); };
      call.kernels = step->kernels;
      calls.push_back(std::move(call));
    }
    std::vector<ProfileResult> results = session.profile_call_batch(metrics, calls);
    for (std::size_t i = 0; i < order.size(); ++i)
      take(std::move(results[i]), order[i]->name, static_cast<int>(i));
  } else if (mode == "ours-per-call") {
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Step* step = order[i];
      take(session.profile_call_kernels(
               metrics, {step->name, [step] { step->launch(nullptr); }, [&w] { flush_l2(w); }}),
           step->name, static_cast<int>(i));
    }
  } else if (mode == "ours-user-range") {
    std::vector<UserRange> ranges;
    for (const Step* step : order)
      ranges.push_back({step->name, [step] { step->launch(nullptr); }, [&w] { flush_l2(w); }});
    const ProfileResult result = session.profile_ranges(metrics, ranges);
    c.passes = result.passes;
    c.dropped_ranges = result.dropped_ranges;
    c.ranges = result.ranges;
    for (std::size_t i = 0; i < c.ranges.size(); ++i) {
      c.steps.push_back(c.ranges[i].name);
      c.calls.push_back(static_cast<int>(i));
    }
  } else {  // kernel replay: no flush between kernels is possible inside the collection
    take(session.profile_kernels(metrics, [&] { run_all(w, repeat); }), "", -1);
    // Auto ranges are launches: name them by step when each step is one kernel.
    if (c.ranges.size() == order.size()) {
      for (std::size_t i = 0; i < order.size(); ++i) {
        c.steps[i] = order[i]->name;
        c.calls[i] = static_cast<int>(i);
      }
    }
  }
  return c;
}

int main_checked(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "ours" && mode != "ours-per-call" && mode != "ours-user-range" &&
      mode != "ours-kernel-replay" && mode != "plain") {
    std::fprintf(
        stderr,
        "usage: counters_check ours|ours-per-call|ours-user-range|ours-kernel-replay|plain "
        "[--conv] [--repeat N] [--extra M1,M2] [--prelude V]\n");
    return 1;
  }
  bool conv = false;
  int repeat = 1;
  bool keep_enabled = false;  // experiment: one range-profiler enablement for all collections
  std::string prelude = mode == "plain" ? "none" : "flush";
  std::vector<std::string> extra;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--conv") {
      conv = true;
    } else if (arg == "--keep-enabled") {
      keep_enabled = true;
    } else if (arg == "--prelude" && i + 1 < argc) {
      prelude = argv[++i];
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--extra" && i + 1 < argc) {
      std::string list = argv[++i];
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) extra.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    } else {
      std::fprintf(stderr, "counters_check: unknown argument '%s'\n", arg.c_str());
      return 1;
    }
  }
  select_gpu(0);
  Workload w;
  build(w, conv);
  if (mode == "plain") {
    // Once, between cudaProfilerStart/Stop: ncu (--profile-from-start off) then
    // sees exactly the kernel sequence `ours` profiles, not the setup fills.
    const auto before = prelude_of(prelude, w).first;  // checked before profiling starts
    TR_CUDA_CHECK(cudaProfilerStart());
    run_all(w, repeat, before);
    TR_CUDA_CHECK(cudaProfilerStop());
    return 0;
  }
  run_all(w, 1);     // warm-up: module loads and cuBLASLt setup stay out of the numbers
  count_kernels(w);  // the runner knows this from its trace pass, before any counters
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ProfilerSession session;
  session.keep_enabled(keep_enabled);
  std::vector<std::string> metrics = kMetrics;
  std::optional<CollectionPlan> plan;
  if (conv) {
    OperatorNeeds needs;
    needs.precision = Precision::fp16;
    plan = plan_collection(session.chip(), quantities_for(needs), session.counter_availability());
    metrics = plan->metrics;
  }
  metrics.insert(metrics.end(), extra.begin(), extra.end());
  const auto t1 = Clock::now();
  const Collected result = collect(session, mode, metrics, w, repeat, prelude);
  const auto t2 = Clock::now();
  const double seconds = std::chrono::duration<double>(t2 - t0).count();
  nlohmann::json doc = {{"gpu", query_gpu(0).name},
                        {"metrics", metrics},
                        {"passes", result.passes},
                        {"dropped_ranges", result.dropped_ranges},
                        {"mode", mode},
                        {"repeat", repeat},
                        {"profile_seconds", seconds},
                        {"session_seconds", std::chrono::duration<double>(t1 - t0).count()},
                        {"collect_seconds", std::chrono::duration<double>(t2 - t1).count()},
                        {"keep_enabled", keep_enabled},
                        {"prelude", prelude},
                        {"phase_seconds",
                         {{"enable", session.phase_seconds().enable},
                          {"configure", session.phase_seconds().configure},
                          {"replay", session.phase_seconds().replay},
                          {"decode", session.phase_seconds().decode},
                          {"disable", session.phase_seconds().disable},
                          {"collections", session.phase_seconds().collections}}},
                        {"steps", nlohmann::json::array()},
                        {"ranges", nlohmann::json::array()}};
  for (const Step& step : w.steps)
    doc["steps"].push_back({{"name", step.name},
                            {"analytic", step.analytic},
                            {"analytic_is_minimum", step.analytic_is_minimum}});
  for (std::size_t r = 0; r < result.ranges.size(); ++r) {
    const RangeValues& range = result.ranges[r];
    nlohmann::json values;
    std::map<std::string, double> by_metric;
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      values[metrics[i]] = range.values[i];
      by_metric[metrics[i]] = range.values[i];
    }
    nlohmann::json entry = {{"name", range.name},
                            {"step", result.steps[r]},
                            {"call", result.calls[r]},
                            {"values", values}};
    if (plan) {
      for (const auto& [quantity, value] : evaluate(*plan, by_metric))
        entry["quantities"][to_string(quantity)] = value;
    }
    doc["ranges"].push_back(entry);
  }
  std::printf("%s\n", doc.dump(1).c_str());
  return 0;
}

}  // namespace
}  // namespace timeroof

int main(int argc, char** argv) {
  return timeroof::bench_main("counters_check", timeroof::main_checked, argc, argv);
}
