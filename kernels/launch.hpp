// Launch-latency helpers (plain host view of kernels/launch.cu): an empty kernel
// and a CUDA graph of empty kernels, owned by RAII handles. The ceilings are
// measured in kernels/launch_ceilings.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include "gpu/handles.hpp"

namespace timeroof {

// Enqueues one empty kernel, one block of one warp (cudaLaunchKernel: the launch's
// own status is checked, no extra cudaGetLastError round per launch).
void launch_empty_kernel(cudaStream_t stream);

// An instantiated graph of `nodes` empty kernels in one chain, captured from a
// private stream (the legacy default stream cannot be captured).
class EmptyKernelGraph {
 public:
  explicit EmptyKernelGraph(int nodes);
  int nodes() const noexcept { return nodes_; }
  // Enqueues one replay of the whole graph.
  void launch(cudaStream_t stream) const;

 private:
  int nodes_;
  Graph graph_;
  GraphExec exec_;
};

}  // namespace timeroof
