// One run() of a prepared operator captured into a CUDA graph, for the GPU
// tests that check an operator's run() is capturable (the runner's T_graph).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

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

// Success when run() threw nothing and the capture ended cleanly; else why not.
inline ::testing::AssertionResult captured_ok(const CapturedRun& run) {
  if (run.captured.status != PointStatus::ok)
    return ::testing::AssertionFailure() << "run() while captured: " << run.captured.reason;
  if (run.ended != cudaSuccess)
    return ::testing::AssertionFailure()
           << "cudaStreamEndCapture: " << cudaGetErrorString(run.ended);
  return ::testing::AssertionSuccess();
}

// Instantiates the captured graph, launches it `times` times on `stream` and
// waits for them.
inline void replay(const CapturedRun& run, cudaStream_t stream, int times) {
  cudaGraphExec_t raw_exec = nullptr;
  TR_CUDA_CHECK(cudaGraphInstantiate(&raw_exec, run.graph.get(), 0));
  const GraphExec exec(raw_exec);
  for (int i = 0; i < times; ++i) TR_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace timeroof::test
