// LayerNorm / RMSNorm and BatchNorm2d through cuDNN's graph API, the library
// implementations of LayernormProblem and BatchnormProblem
// (sweeps/norm_problem.hpp). Each call is one operation in a cuDNN operation
// graph (sweeps/cudnn_graph.hpp), as cudnn-frontend's layernorm / rmsnorm /
// batchnorm / batchnorm_inference / dln / dbn nodes build it:
//   fwd  CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, mode CUDNN_LAYER_NORM,
//        CUDNN_RMS_NORM or CUDNN_BATCH_NORM, phase CUDNN_NORM_FWD_INFERENCE or
//        _TRAINING; epsilon (and batchnorm's momentum) a by-value fp32 scalar;
//        batchnorm inference takes the running mean and inverse deviation, no epsilon
//   bwd  CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR from x, dy, scale and the
//        saved statistics, which prepare() makes with a training forward graph
// prepare() ranks engine configurations with heuristic mode A (then FALLBACK)
// and takes the first that finalizes; run() is one cudnnBackendExecute.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/implementations.hpp"
#include "sweeps/norm_problem.hpp"
#include "sweeps/operator.hpp"

namespace timeroof {

class NormState;
struct NormLayout;

// What the two normalization operators share: buffers by role, the graph, its
// plan and the variant pack. The families' operators below add their problem,
// layout and check.
class NormOperator : public Operator {
 public:
  ~NormOperator() override;
  // The plan's name, e.g. "eng3 k<T>=..." (sweeps/cudnn_graph.hpp plan_name).
  std::string algorithm() const override;
  // "cudnn_operation", "norm_mode", "fwd_phase" (fwd), "engine", "knobs",
  // "numerical_notes", "behavior_notes", "heuristic_mode", "heuristic_rank",
  // "workspace_bytes", bwd "statistics_from" (the training forward's plan).
  nlohmann::json details() const override;
  std::vector<DeviceTensor> inputs() const override;
  std::vector<DeviceTensor> outputs() const override;
  // Allocates every tensor, fills x and dy with random data on the device and
  // the fp32 parameters from the host, builds the graph and its plan (bwd: runs
  // the training forward for the statistics first) and runs the call once.
  void prepare(cudaStream_t stream) override;
  // One cudnnBackendExecute on `stream`.
  void run(cudaStream_t stream) override;

 protected:
  explicit NormOperator(std::shared_ptr<LibraryHandles> libraries);
  virtual NormLayout layout() const = 0;
  // A tensor of the call (or of bwd's statistics forward) as doubles, by role.
  std::vector<double> download(const std::string& role) const;
  cudaStream_t prepared_stream() const;

 private:
  std::shared_ptr<LibraryHandles> libraries_;
  std::unique_ptr<NormState> state_;  // created by prepare()
};

// Declared as Gemm is: one template per operator.
class Layernorm final : public NormOperator {
 public:
  explicit Layernorm(LayernormSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  const LayernormProblem& problem() const override { return problem_; }
  // Every output against the double reference (norm_problem.hpp): y (fwd),
  // mean and inv_variance (training), dx, dscale, dbias (bwd). Tolerance: the
  // precision's (relative_tolerance), at least long_sum_tolerance of the
  // longest sum; the mean's error is relative to max |x| (a centred mean is near 0).
  CheckResult check() override;
  const LayernormSpec& spec() const noexcept { return problem_.spec(); }

 protected:
  NormLayout layout() const override;

 private:
  LayernormProblem problem_;
};

class Batchnorm final : public NormOperator {
 public:
  explicit Batchnorm(BatchnormSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  const BatchnormProblem& problem() const override { return problem_; }
  // As Layernorm's, per channel, and the running statistics' update (training).
  CheckResult check() override;
  const BatchnormSpec& spec() const noexcept { return problem_.spec(); }

 protected:
  NormLayout layout() const override;

 private:
  BatchnormProblem problem_;
};

}  // namespace timeroof
