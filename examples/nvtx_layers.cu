// A tiny "model" for `timeroof profile` (issue 17) and its GPU test: each of
// --iterations steps is an NVTX range "step" (push/pop, colored, category 1)
// holding ranges "layer0" and "layer1", each launching two known kernels; one
// start/end range "upload" around the one host-to-device copy, one memset, one
// device-to-host copy at the end and a mark "done". It times every kernel
// itself with CUDA events and prints, as its last stdout line, one JSON object
// with what a trace of it must contain:
//   {"iterations", "elements", "copy_bytes", "memset_bytes", "kernels_per_step",
//    "kernel_ms": [[per kernel of step 0], ...], "layer_ms": {"layer0": [...], "layer1": [...]}}
//
//   nvtx_layers [--iterations N] [--elements E] [--work W] [--sleep-ms MS] [--exit-code K]
// --sleep-ms: a pause after each step, which prints "step I done" first (the
// kill test waits for it). --exit-code: ends through exit(K) after everything.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

// At file scope, so the trace names them plainly ("scale_layer(float*, int, int)").
// Enough arithmetic per element that a kernel lasts ~0.1-1 ms: event timing
// and the trace then differ by far less than the kernel.
__global__ void scale_layer(float* x, int n, int work) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < work; ++k) v = v * 0.999f + 0.001f;
  x[i] = v;
}

__global__ void add_layer(float* x, const float* y, int n, int work) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  const float w = y[i];
  for (int k = 0; k < work; ++k) v = v * 0.5f + w;
  x[i] = v;
}

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "nvtx_layers: %s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(2);
  }
}

struct Options {
  int iterations = 3;
  int elements = 1 << 20;
  int work = 20000;
  int sleep_ms = 0;
  int exit_code = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "nvtx_layers: %s needs a value\n", flag.c_str());
      std::exit(1);
    }
    const int value = std::atoi(argv[++i]);
    if (flag == "--iterations")
      o.iterations = value;
    else if (flag == "--elements")
      o.elements = value;
    else if (flag == "--work")
      o.work = value;
    else if (flag == "--sleep-ms")
      o.sleep_ms = value;
    else if (flag == "--exit-code")
      o.exit_code = value;
    else {
      std::fprintf(stderr, "nvtx_layers: unknown flag %s\n", flag.c_str());
      std::exit(1);
    }
  }
  return o;
}

// One CUDA event pair per kernel, read after the step.
struct TimedKernel {
  cudaEvent_t start{}, stop{};
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::size_t bytes = static_cast<std::size_t>(o.elements) * sizeof(float);
  std::vector<float> host(o.elements, 1.0f);
  float* x = nullptr;
  float* y = nullptr;
  check(cudaMalloc(&x, bytes), "cudaMalloc");
  check(cudaMalloc(&y, bytes), "cudaMalloc");

  nvtxRangeId_t upload = nvtxRangeStartA("upload");
  check(cudaMemcpy(x, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  nvtxRangeEnd(upload);
  check(cudaMemset(y, 0, bytes), "cudaMemset");

  const int block = 256;
  const int grid = (o.elements + block - 1) / block;
  constexpr int kKernelsPerStep = 4;
  std::vector<TimedKernel> events(kKernelsPerStep);
  for (TimedKernel& e : events) {
    check(cudaEventCreate(&e.start), "cudaEventCreate");
    check(cudaEventCreate(&e.stop), "cudaEventCreate");
  }
  std::vector<std::vector<float>> kernel_ms;
  std::vector<float> layer0_ms, layer1_ms;

  nvtxEventAttributes_t step_attributes{};
  step_attributes.version = NVTX_VERSION;
  step_attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  step_attributes.colorType = NVTX_COLOR_ARGB;
  step_attributes.color = 0xFF3366CCu;
  step_attributes.category = 1;
  step_attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  step_attributes.message.ascii = "step";

  for (int step = 0; step < o.iterations; ++step) {
    nvtxRangePushEx(&step_attributes);
    int k = 0;
    for (const char* layer : {"layer0", "layer1"}) {
      nvtxRangePushA(layer);
      check(cudaEventRecord(events[k].start), "cudaEventRecord");
      scale_layer<<<grid, block>>>(x, o.elements, o.work);
      check(cudaEventRecord(events[k].stop), "cudaEventRecord");
      ++k;
      check(cudaEventRecord(events[k].start), "cudaEventRecord");
      add_layer<<<grid, block>>>(x, y, o.elements, o.work);
      check(cudaEventRecord(events[k].stop), "cudaEventRecord");
      ++k;
      check(cudaGetLastError(), "kernel launch");
      // The range ends when its work has: its time is the layer's GPU time.
      check(cudaEventSynchronize(events[k - 1].stop), "cudaEventSynchronize");
      nvtxRangePop();
    }
    nvtxRangePop();
    std::vector<float> times(kKernelsPerStep);
    for (int i = 0; i < kKernelsPerStep; ++i)
      check(cudaEventElapsedTime(&times[i], events[i].start, events[i].stop),
            "cudaEventElapsedTime");
    float layer0 = 0, layer1 = 0;
    check(cudaEventElapsedTime(&layer0, events[0].start, events[1].stop), "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&layer1, events[2].start, events[3].stop), "cudaEventElapsedTime");
    kernel_ms.push_back(times);
    layer0_ms.push_back(layer0);
    layer1_ms.push_back(layer1);
    if (o.sleep_ms > 0) {
      std::printf("step %d done\n", step);
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(o.sleep_ms));
    }
  }

  check(cudaMemcpy(host.data(), x, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  nvtxMarkA("done");

  std::string out = "{\"iterations\": " + std::to_string(o.iterations) +
                    ", \"elements\": " + std::to_string(o.elements) +
                    ", \"copy_bytes\": " + std::to_string(bytes) +
                    ", \"memset_bytes\": " + std::to_string(bytes) +
                    ", \"kernels_per_step\": " + std::to_string(kKernelsPerStep) +
                    ", \"kernel_ms\": [";
  for (std::size_t s = 0; s < kernel_ms.size(); ++s) {
    out += s ? ", [" : "[";
    for (std::size_t i = 0; i < kernel_ms[s].size(); ++i)
      out += (i ? ", " : "") + std::to_string(kernel_ms[s][i]);
    out += "]";
  }
  auto list = [](const std::vector<float>& v) {
    std::string text = "[";
    for (std::size_t i = 0; i < v.size(); ++i) text += (i ? ", " : "") + std::to_string(v[i]);
    return text + "]";
  };
  out += "], \"layer_ms\": {\"layer0\": " + list(layer0_ms) + ", \"layer1\": " + list(layer1_ms) +
         "}}";
  std::printf("%s\n", out.c_str());
  std::fflush(stdout);

  for (TimedKernel& e : events) {
    cudaEventDestroy(e.start);
    cudaEventDestroy(e.stop);
  }
  cudaFree(x);
  cudaFree(y);
  if (o.exit_code != 0) std::exit(o.exit_code);
  return 0;
}
