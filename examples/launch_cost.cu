// A launch-dense program for `timeroof profile`'s tracing cost (issue 17;
// scripts/device/launch_cost.py runs it untraced and under each --api choice):
// what the host pays per launch of an empty kernel, the cost a launch-bound
// program (a PyTorch model at small batch) pays on every kernel.
//
//   launch_cost [--batches B] [--batch-launches L] [--busy-us U]
//
// Phases, each B batches of L launches on one stream; only the launching is
// timed (steady_clock), and each batch ends with a synchronize outside the
// timed part, so the launch queue never fills:
//   launch       <<<1, 32>>> of an empty kernel
//   launch_nvtx  the same, each inside an NVTX push/pop range
//   launch_sync  each launch followed by cudaStreamSynchronize, both timed
//   launch_checks  each launch between the runtime queries PyTorch makes around
//                one (cudaGetDevice before, cudaGetLastError after): calls a
//                tracer may intercept without recording them
//   gpu_empty    the GPU's time per kernel, not the host's: a gate kernel holds
//                the stream while the batch is launched behind it, and the
//                clock runs from opening the gate to the batch's end. What
//                tracing adds here it adds on the GPU, between kernels (CUPTI's
//                timestamps), whatever the host pays per launch
//   gpu_busy     the same with kernels that keep every SM busy for --busy-us (2)
// The last stdout lines, one per phase:
//   launch_cost PHASE: MEDIAN us per launch (p10 P10, p90 P90, B batches of L)
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

__global__ void empty_kernel(int) {}

__device__ unsigned long long global_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Spins for `ns` of wall time, whatever the clock: the same work traced or not.
__global__ void busy_kernel(unsigned long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) {
  }
}

// Holds the stream until the host opens the gate (mapped host memory).
__global__ void gate_kernel(const volatile int* open) {
  while (*open == 0) {
  }
}

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "launch_cost: %s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(2);
  }
}

constexpr int kMostBatchLaunches = 512;  // the launch queue holds ~1,000

struct Options {
  int batches = 200;
  int batch_launches = 256;
  int busy_us = 2;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "launch_cost: %s needs a value\n", flag.c_str());
      std::exit(1);
    }
    const int value = std::atoi(argv[++i]);
    if (value < 1) {
      std::fprintf(stderr, "launch_cost: %s needs a positive count\n", flag.c_str());
      std::exit(1);
    }
    if (flag == "--batches")
      o.batches = value;
    else if (flag == "--batch-launches" && value <= kMostBatchLaunches)
      o.batch_launches = value;
    else if (flag == "--batch-launches") {
      // The gate kernel holds the stream while a batch is launched behind it.
      std::fprintf(stderr, "launch_cost: --batch-launches at most %d (the launch queue's depth)\n",
                   kMostBatchLaunches);
      std::exit(1);
    } else if (flag == "--busy-us")
      o.busy_us = value;
    else {
      std::fprintf(stderr,
                   "launch_cost: unknown flag %s (--batches, --batch-launches, --busy-us)\n",
                   flag.c_str());
      std::exit(1);
    }
  }
  return o;
}

enum class Phase { launch, launch_nvtx, launch_sync, launch_checks, gpu_empty, gpu_busy };

struct Gpu {
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  volatile int* gate = nullptr;  // mapped host memory the gate kernel polls
};

// Microseconds per launch of each batch: the host's, or for gpu_* the GPU's.
std::vector<double> run_phase(Phase phase, const Options& o, const Gpu& gpu) {
  std::vector<double> per_launch_us;
  int device = 0;
  const bool on_gpu = phase == Phase::gpu_empty || phase == Phase::gpu_busy;
  const unsigned long long busy_ns = 1000ull * static_cast<unsigned long long>(o.busy_us);
  for (int b = 0; b < o.batches; ++b) {
    if (on_gpu) {
      *gpu.gate = 0;
      gate_kernel<<<1, 1, 0, gpu.stream>>>(gpu.gate);
    }
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.batch_launches; ++i) {
      if (phase == Phase::launch_nvtx) nvtxRangePushA("launch");
      if (phase == Phase::launch_checks) check(cudaGetDevice(&device), "get device");
      if (phase == Phase::gpu_busy)
        busy_kernel<<<gpu.sm_count, 128, 0, gpu.stream>>>(busy_ns);
      else
        empty_kernel<<<1, 32, 0, gpu.stream>>>(i);
      if (phase == Phase::launch_nvtx) nvtxRangePop();
      if (phase == Phase::launch_checks) check(cudaGetLastError(), "launch");
      if (phase == Phase::launch_sync) check(cudaStreamSynchronize(gpu.stream), "synchronize");
    }
    if (on_gpu) {
      start = std::chrono::steady_clock::now();
      *gpu.gate = 1;
      check(cudaStreamSynchronize(gpu.stream), "synchronize");
    }
    const auto end = std::chrono::steady_clock::now();
    check(cudaGetLastError(), "launch");
    check(cudaStreamSynchronize(gpu.stream), "synchronize");
    per_launch_us.push_back(std::chrono::duration<double, std::micro>(end - start).count() /
                            o.batch_launches);
  }
  return per_launch_us;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Gpu gpu;
  check(cudaDeviceGetAttribute(&gpu.sm_count, cudaDevAttrMultiProcessorCount, 0), "SM count");
  check(cudaStreamCreateWithFlags(&gpu.stream, cudaStreamNonBlocking), "stream");
  int* gate = nullptr;
  check(cudaHostAlloc(&gate, sizeof(int), cudaHostAllocMapped), "gate");
  gpu.gate = gate;
  const struct {
    Phase phase;
    const char* name;
  } phases[] = {{Phase::launch, "launch"},           {Phase::launch_nvtx, "launch_nvtx"},
                {Phase::launch_sync, "launch_sync"}, {Phase::launch_checks, "launch_checks"},
                {Phase::gpu_empty, "gpu_empty"},     {Phase::gpu_busy, "gpu_busy"}};
  // Warm-up: module load, the first launches' one-time costs.
  Options warm = o;
  warm.batches = std::max(1, o.batches / 10);
  for (const auto& [phase, name] : phases) run_phase(phase, warm, gpu);
  for (const auto& [phase, name] : phases) {
    const std::vector<double> us = run_phase(phase, o, gpu);
    std::printf("launch_cost %s: %.3f us per launch (p10 %.3f, p90 %.3f, %d batches of %d)\n", name,
                quantile(us, 0.5), quantile(us, 0.1), quantile(us, 0.9), o.batches,
                o.batch_launches);
  }
  check(cudaFreeHost(gate), "gate free");
  check(cudaStreamDestroy(gpu.stream), "stream destroy");
  return 0;
}
