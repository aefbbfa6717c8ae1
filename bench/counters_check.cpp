// Validation and speed of the counters against truth and against Nsight Compute.
//
//   counters_check ours    profile the workload in-process (after one warm-up run), print JSON:
//                          user ranges (one per step) and user replay, as the sweeps do;
//                          `ours-kernel-replay` uses auto ranges and kernel replay instead
//   counters_check plain   run the workload once with no profiler (what ncu profiles)
//
// The workload: kernels with analytic counts (FFMA, DFMA and HFMA2 loops, a 1 GiB
// copy, cuBLASLt bf16/fp16/tf32 GEMMs). scripts/device/counters-vs-ncu.sh runs
// `ours`, then `plain` under `ncu --metrics` in a separate process (a process that
// uses the CUPTI profiler cannot be profiled by ncu), and compares ours, analytic
// and ncu per metric (scripts/device/counters_compare.py).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>

#include <nlohmann/json.hpp>

#include "counters/range_profiler.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/cublas_reference.hpp"
#include "kernels/cuda_core.hpp"
#include "kernels/memory.hpp"

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
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
};

struct Step {
  std::string name;
  std::map<std::string, double> analytic;  // metric -> exact expected value
  std::function<void(cudaStream_t)> launch;
};

struct Workload {
  DeviceBuffer<double> out{264 * 256};
  DeviceBuffer<uint4> copy_src, copy_dst;
  LtHandle lt;
  std::vector<std::unique_ptr<LtGemm>> gemms;
  std::vector<DeviceBuffer<char>> gemm_buffers;
  DeviceBuffer<char> workspace{64 << 20};
  std::vector<Step> steps;
};

void add_cuda_core(Workload& w, CudaCoreRoof roof, const char* metric, double flop_per_inst) {
  const int blocks = 264, threads = 256, trips = 64;
  const double flops = cuda_core_flops(roof, blocks, threads, trips);
  w.steps.push_back({cuda_core_kernel(roof).ceiling,
                     {{metric, flops / flop_per_inst}},
                     [&w, roof](cudaStream_t s) {
                       launch_cuda_core_kernel(roof, 264, 256, 64, w.out.get(), s);
                     }});
}

void add_gemm(Workload& w, TensorType type, const char* metric) {
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
  w.steps.push_back({std::string("cublaslt_") + tensor_type_name(type),
                     {{metric, g->flops()}},
                     [&w, g, algorithm, a, b, d](cudaStream_t s) {
                       TR_CUBLAS_CHECK(
                           g->run(algorithm, a, b, d, w.workspace.get(), w.workspace.bytes(), s));
                     }});
  w.gemms.push_back(std::move(gemm));
}

void build(Workload& w) {
  add_cuda_core(w, CudaCoreRoof::fp32_fma, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2);
  add_cuda_core(w, CudaCoreRoof::fp64_fma, "sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 2);
  add_cuda_core(w, CudaCoreRoof::fp16_fma, "sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 4);
  const std::size_t count = (std::size_t{1} << 30) / sizeof(uint4);
  w.copy_src = DeviceBuffer<uint4>(count);
  w.copy_dst = DeviceBuffer<uint4>(count);
  fill_pattern(w.copy_src.get(), count, 7, nullptr);
  const HbmVariant& copy = hbm_copy_variants().front();
  w.steps.push_back(
      {"hbm_copy_1GiB",
       {{"dram__bytes_read.sum", 1073741824.0}, {"dram__bytes_write.sum", 1073741824.0}},
       [&w, copy, count](cudaStream_t s) {
         launch_hbm_copy(copy, w.copy_src.get(), w.copy_dst.get(), count,
                         hbm_blocks_for(copy, count), s);
       }});
  add_gemm(w, TensorType::bf16, "sm__ops_path_tensor_src_bf16_dst_fp32.sum");
  add_gemm(w, TensorType::fp16, "sm__ops_path_tensor_src_fp16.sum");
  add_gemm(w, TensorType::tf32, "sm__ops_path_tensor_src_tf32_dst_fp32.sum");
  TR_CUDA_CHECK(cudaDeviceSynchronize());
}

void run_all(const Workload& w) {
  for (const Step& step : w.steps) step.launch(nullptr);
  TR_CUDA_CHECK(cudaDeviceSynchronize());
}

int main_checked(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "ours" && mode != "ours-kernel-replay" && mode != "plain") {
    std::fprintf(stderr, "usage: counters_check ours|ours-kernel-replay|plain\n");
    return 1;
  }
  select_gpu(0);
  Workload w;
  build(w);
  if (mode == "plain") {
    // Once, between cudaProfilerStart/Stop: ncu (--profile-from-start off) then
    // sees exactly the kernel sequence `ours` profiles, not the setup fills.
    TR_CUDA_CHECK(cudaProfilerStart());
    run_all(w);
    TR_CUDA_CHECK(cudaProfilerStop());
    return 0;
  }
  run_all(w);  // warm-up: module loads and cuBLASLt setup stay out of the numbers
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ProfilerSession session;
  const auto t1 = Clock::now();
  ProfileResult result;
  if (mode == "ours") {
    std::vector<UserRange> ranges;
    for (const Step& step : w.steps)
      ranges.push_back({step.name, [&step] { step.launch(nullptr); }});
    result = session.profile_ranges(kMetrics, ranges);
  } else {
    result = session.profile_kernels(kMetrics, [&] { run_all(w); });
  }
  const auto t2 = Clock::now();
  const double seconds = std::chrono::duration<double>(t2 - t0).count();
  nlohmann::json doc = {{"gpu", query_gpu(0).name},
                        {"metrics", kMetrics},
                        {"passes", result.passes},
                        {"dropped_ranges", result.dropped_ranges},
                        {"mode", mode},
                        {"profile_seconds", seconds},
                        {"session_seconds", std::chrono::duration<double>(t1 - t0).count()},
                        {"collect_seconds", std::chrono::duration<double>(t2 - t1).count()},
                        {"steps", nlohmann::json::array()},
                        {"ranges", nlohmann::json::array()}};
  for (const Step& step : w.steps)
    doc["steps"].push_back({{"name", step.name}, {"analytic", step.analytic}});
  for (const RangeValues& range : result.ranges) {
    nlohmann::json values;
    for (std::size_t i = 0; i < kMetrics.size(); ++i) values[kMetrics[i]] = range.values[i];
    doc["ranges"].push_back({{"name", range.name}, {"values", values}});
  }
  std::printf("%s\n", doc.dump(1).c_str());
  return 0;
}

}  // namespace
}  // namespace timeroof

int main(int argc, char** argv) {
  try {
    return timeroof::main_checked(argc, argv);
  } catch (const timeroof::Error& e) {
    std::fprintf(stderr, "counters_check: %s\n", e.what());
    return static_cast<int>(e.code());
  }
}
