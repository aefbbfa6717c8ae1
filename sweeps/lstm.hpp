// LSTM through cuDNN's RNN v8 API (cudnn_adv_v9.h), the library implementation
// of LstmProblem (sweeps/lstm_problem.hpp: the cell, shapes, passes and
// analytic counts).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/implementations.hpp"
#include "sweeps/lstm_problem.hpp"
#include "sweeps/operator.hpp"

namespace timeroof {

// ---------------------------------------------------------------------------
// The operator.

// check() compares against the CPU reference while the reference's work stays
// under this many FLOPs (forward GEMM FLOPs, x3 for a backward pass: 3e8 took
// 0.1 s of host time; every point of the default sweep is below it). Above it, against a second
// cuDNN run of the same pass in fp32 / fma_only on the same stored inputs (converted), each output
// compared on the device; an fp32 / fma_only point above the limit is its own reference, so its
// check is skipped with that reason. The tolerance is the precision's (relative_tolerance()), twice
// that for backward passes below fp32 (TF32 operands are truncated, so GEMM-only outputs carry a
// ~2^-10 bias; fp16 / bf16 gate gradients multiply ~5 activations stored at the data precision), at
// least 4 * 2^-24 * sqrt(K) for reductions of length K in fp32 (the weight
// gradients sum B T products), plus the fp32 run's own when that is the
// reference.
inline constexpr double kLstmCpuReferenceMaxFlops = 4e8;
enum class LstmCheckMethod { automatic, cpu_reference, fp32_reference };

enum class LstmTensor { x, hx, cx, y, hy, cy, dy, dhy, dcy, dx, dhx, dcx };

class LstmState;

// Declared as Conv2d is on purpose: every operator follows one template
// (docs/design.md, "Adding an operator"), so `duplicates` pairs the two.
class Lstm final : public Operator {
 public:
  // Validates `spec` (throws a usage error) and does no GPU work. `libraries`
  // are the library handles shared between the operators of a sweep; null:
  // prepare() creates its own.
  explicit Lstm(LstmSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  ~Lstm() override;

  const LstmProblem& problem() const override { return problem_; }
  // cuDNN's algorithm, "CUDNN_RNN_ALGO_STANDARD", ...; empty before prepare().
  std::string algorithm() const override;
  // {"workspace_bytes", "reserve_bytes", "weight_space_bytes", "cudnn_math_type",
  //  "cudnn_math_precision", "cudnn_data_type", "deterministic", "prepare_calls"
  //  (what prepare() ran before the timed call), "run_calls" (what one run()
  //  enqueues), for backward_data "restored_reserve_bytes", and for
  //  backward_weights "wgrad_mode" ("CUDNN_WGRAD_MODE_SET", or
  //  "CUDNN_WGRAD_MODE_ADD" after a cudaMemsetAsync of dw in every run(): cuDNN
  //  9.14 refuses SET for RNNs)}.
  nlohmann::json details() const override;
  // The problem's tensors (LstmProblem::inputs()) in the operator's buffers;
  // backward_weights' dw after prepare() at cuDNN's weight-space size.
  std::vector<DeviceTensor> inputs() const override;
  std::vector<DeviceTensor> outputs() const override;

  // Allocates, fills every input with random non-zero data on the device (x, h,
  // c and gradients uniform in [-1, 1), weights and biases in [-1/sqrt(H),
  // 1/sqrt(H)) as nn.LSTM initialises them, which keeps the recurrence stable),
  // sizes the weight, work and reserve spaces by cuDNN, for the backward passes
  // runs the calls they depend on (see sweeps/lstm_problem.hpp), and runs the pass
  // once, so a configuration cuDNN cannot run fails here. Synchronizes.
  void prepare(cudaStream_t stream) override;
  // One cuDNN call of the pass on `stream`, preceded where idempotence needs it
  // by one copy: backward_data restores the reserve space (cudaMemcpyAsync),
  // backward_weights under CUDNN_WGRAD_MODE_ADD zeroes dw (cudaMemsetAsync).
  // details()["run_calls"] lists what one run() enqueues.
  void run(cudaStream_t stream) override;
  CheckResult check() override { return check(LstmCheckMethod::automatic); }
  CheckResult check(LstmCheckMethod method);

  const LstmSpec& spec() const noexcept { return problem_.spec(); }
  // Copies to the host (synchronizes the prepare() stream): a tensor as doubles;
  // the weights (or their gradients) per matrix, found by cudnnGetRNNWeightParams;
  // and the raw bytes of everything the pass writes (y hy cy / dx dhx dcx / the
  // whole gradient weight space), for bitwise comparisons.
  std::vector<double> download(LstmTensor which) const;
  LstmWeights download_weights(bool gradient = false) const;
  std::vector<std::byte> download_outputs_bytes() const;

 private:
  void* buffer(const std::string& role) const;

  LstmProblem problem_;
  std::shared_ptr<LibraryHandles> libraries_;
  std::unique_ptr<LstmState> state_;  // created by prepare()
};

}  // namespace timeroof
