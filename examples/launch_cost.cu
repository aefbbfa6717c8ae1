// A launch-dense program for `timeroof profile`'s tracing cost (issue 17;
// scripts/device/launch_cost.py runs it untraced and under each --api choice):
// what the host pays per launch of an empty kernel, the cost a launch-bound
// program (a PyTorch model at small batch) pays on every kernel.
//
//   launch_cost [--batches B] [--batch-launches L]
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

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "launch_cost: %s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(2);
  }
}

struct Options {
  int batches = 200;
  int batch_launches = 256;  // well below the launch queue's depth (~1,000)
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
    else if (flag == "--batch-launches")
      o.batch_launches = value;
    else {
      std::fprintf(stderr, "launch_cost: unknown flag %s (--batches, --batch-launches)\n",
                   flag.c_str());
      std::exit(1);
    }
  }
  return o;
}

enum class Phase { launch, launch_nvtx, launch_sync, launch_checks };

// Host microseconds per launch of each batch.
std::vector<double> run_phase(Phase phase, const Options& o, cudaStream_t stream) {
  std::vector<double> per_launch_us;
  int device = 0;
  for (int b = 0; b < o.batches; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.batch_launches; ++i) {
      if (phase == Phase::launch_nvtx) nvtxRangePushA("launch");
      if (phase == Phase::launch_checks) check(cudaGetDevice(&device), "get device");
      empty_kernel<<<1, 32, 0, stream>>>(i);
      if (phase == Phase::launch_nvtx) nvtxRangePop();
      if (phase == Phase::launch_checks) check(cudaGetLastError(), "launch");
      if (phase == Phase::launch_sync) check(cudaStreamSynchronize(stream), "synchronize");
    }
    const auto end = std::chrono::steady_clock::now();
    check(cudaGetLastError(), "launch");
    check(cudaStreamSynchronize(stream), "synchronize");
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
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const struct {
    Phase phase;
    const char* name;
  } phases[] = {{Phase::launch, "launch"},
                {Phase::launch_nvtx, "launch_nvtx"},
                {Phase::launch_sync, "launch_sync"},
                {Phase::launch_checks, "launch_checks"}};
  // Warm-up: module load, the first launches' one-time costs.
  Options warm = o;
  warm.batches = std::max(1, o.batches / 10);
  for (const auto& [phase, name] : phases) run_phase(phase, warm, stream);
  for (const auto& [phase, name] : phases) {
    const std::vector<double> us = run_phase(phase, o, stream);
    std::printf("launch_cost %s: %.3f us per launch (p10 %.3f, p90 %.3f, %d batches of %d)\n", name,
                quantile(us, 0.5), quantile(us, 0.1), quantile(us, 0.9), o.batches,
                o.batch_launches);
  }
  check(cudaStreamDestroy(stream), "stream destroy");
  return 0;
}
