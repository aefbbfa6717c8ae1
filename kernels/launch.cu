// Empty kernels for the launch-latency ceilings (see launch.hpp).
#include <stdexcept>

#include "gpu/check.hpp"
#include "kernels/launch.hpp"

namespace timeroof {

namespace {

__global__ void empty_kernel() {}

}  // namespace

void launch_empty_kernel(cudaStream_t stream) {
  TR_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(empty_kernel), dim3(1), dim3(32),
                                 nullptr, 0, stream));
}

EmptyKernelGraph::EmptyKernelGraph(int nodes) : nodes_(nodes) {
  if (nodes <= 0) throw std::invalid_argument("a graph needs at least one node");
  Stream capture;
  TR_CUDA_CHECK(cudaStreamBeginCapture(capture.get(), cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    for (int i = 0; i < nodes; ++i) launch_empty_kernel(capture.get());
  } catch (...) {
    // End the capture so the stream is usable (and destroyable) again.
    if (cudaStreamEndCapture(capture.get(), &graph) == cudaSuccess && graph)
      TR_CUDA_WARN(cudaGraphDestroy(graph));
    throw;
  }
  TR_CUDA_CHECK(cudaStreamEndCapture(capture.get(), &graph));
  graph_ = Graph(graph);
  cudaGraphExec_t exec = nullptr;
  TR_CUDA_CHECK(cudaGraphInstantiate(&exec, graph_.get(), 0));
  exec_ = GraphExec(exec);
}

void EmptyKernelGraph::launch(cudaStream_t stream) const {
  TR_CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream));
}

}  // namespace timeroof
