// The library implementations of the memory-bound families: Pointwise
// (PointwiseProblem), Softmax (SoftmaxProblem) and Pool (PoolProblem). Each runs
// the project's own kernel (sweeps/memory_bound_kernels.hpp) or, with
// implementation = cudnn, cuDNN: a graph of pointwise operations, the graph
// API's resample (pooling) operation, or the legacy cudnnSoftmaxForward (the
// graph API has no standalone softmax). A cuDNN graph whose heuristics list no
// configuration that finalizes is `unsupported` with cuDNN's reasons.
// algorithm() names what ran ("own pointwise_gelu (16-byte vectors, tile grid)", "cuDNN graph
// eng<N> ...", "cudnnSoftmaxForward CUDNN_SOFTMAX_ACCURATE"); details() the launch.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/handles.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/operator.hpp"
#include "sweeps/pointwise_problem.hpp"
#include "sweeps/pool_problem.hpp"
#include "sweeps/softmax_problem.hpp"

namespace timeroof {

// What cuDNN's path built in prepare(): one call on a stream, its name and facts.
struct CudnnCall {
  std::function<void(cudaStream_t)> execute;
  std::string name;
  nlohmann::json details = nlohmann::json::object();
  std::shared_ptr<void> keep_alive;  // descriptors, plans, workspace
};

// The shared life of the three: random inputs (fill_random, uniform [-1, 1)),
// an output, the own kernel or the cuDNN call, run once in prepare().
class MemoryBoundOperator : public Operator {
 public:
  MemoryBoundOperator(KernelSource source, std::shared_ptr<LibraryHandles> libraries);
  ~MemoryBoundOperator() override;

  std::string algorithm() const override;
  nlohmann::json details() const override;
  std::vector<DeviceTensor> inputs() const override;
  std::vector<DeviceTensor> outputs() const override;
  void prepare(cudaStream_t stream) override;
  void run(cudaStream_t stream) override;

 protected:
  // The stored type of every tensor.
  DataType data_type() const { return storage_type(problem().precision()); }
  virtual std::string own_kernel_name() const = 0;
  virtual nlohmann::json own_launch() const { return nlohmann::json::object(); }
  virtual void launch_own(cudaStream_t stream) const = 0;
  virtual CudnnCall make_cudnn_call(cudnnHandle_t handle) = 0;

  const void* input(std::size_t index) const { return inputs_.at(index).get(); }
  void* output() const { return output_.get(); }
  cudaStream_t prepared_stream() const { return stream_; }
  KernelSource source() const { return source_; }
  void require_prepared(const char* family) const;
  // Runs the call on the prepare() stream and synchronizes: check()'s first step.
  void run_for_check();

 private:
  KernelSource source_;
  std::shared_ptr<LibraryHandles> libraries_;
  cudaStream_t stream_ = nullptr;
  std::vector<DeviceBuffer<std::byte>> inputs_;
  DeviceBuffer<std::byte> output_;
  std::unique_ptr<CudnnCall> cudnn_;
  bool prepared_ = false;
};

class Pointwise final : public MemoryBoundOperator {
 public:
  explicit Pointwise(PointwiseSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  const PointwiseProblem& problem() const override { return problem_; }
  // Up to 8 evenly spaced windows of 65,536 outputs (every output of a small
  // tensor) against the double reference of the formulas in pointwise_problem.hpp.
  // Tolerance: the precision's (fp32 1e-5); cuDNN's gelu and silu at least 1e-3.
  CheckResult check() override;

 private:
  std::string own_kernel_name() const override;
  nlohmann::json own_launch() const override;
  void launch_own(cudaStream_t stream) const override;
  CudnnCall make_cudnn_call(cudnnHandle_t handle) override;
  PointwiseProblem problem_;
};

class Softmax final : public MemoryBoundOperator {
 public:
  explicit Softmax(SoftmaxSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  const SoftmaxProblem& problem() const override { return problem_; }
  // Up to 16 evenly spaced whole rows against the double reference.
  CheckResult check() override;

 private:
  std::string own_kernel_name() const override;
  nlohmann::json own_launch() const override;
  void launch_own(cudaStream_t stream) const override;
  CudnnCall make_cudnn_call(cudnnHandle_t handle) override;
  SoftmaxProblem problem_;
};

class Pool final : public MemoryBoundOperator {
 public:
  explicit Pool(PoolSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  const PoolProblem& problem() const override { return problem_; }
  // The first and last image of the batch, every output, against the double reference.
  CheckResult check() override;

 private:
  std::string own_kernel_name() const override;
  nlohmann::json own_launch() const override;
  void launch_own(cudaStream_t stream) const override;
  CudnnCall make_cudnn_call(cudnnHandle_t handle) override;
  PoolProblem problem_;
};

}  // namespace timeroof
