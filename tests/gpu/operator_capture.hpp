// One run() of a prepared operator captured into a CUDA graph, for the GPU
// tests that check an operator's run() is capturable (the runner's T_graph).
#pragma once

#include <cuda_runtime_api.h>

#include "gpu/handles.hpp"
#include "sweeps/operator.hpp"

namespace timeroof::test {

struct CapturedRun {
  Outcome captured;                 // what run() threw while being captured
  cudaError_t ended = cudaSuccess;  // cudaStreamEndCapture's status
  Graph graph;
};

// Thread-local capture mode: a cudaMalloc or a synchronizing call inside run()
// fails the capture.
inline CapturedRun capture_run(Operator& op, cudaStream_t stream) {
  TR_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  CapturedRun run;
  run.captured = guarded([&] { op.run(stream); });
  cudaGraph_t raw_graph = nullptr;
  run.ended = cudaStreamEndCapture(stream, &raw_graph);
  run.graph = Graph(raw_graph);
  return run;
}

}  // namespace timeroof::test
