// GEMM and strided batched GEMM through cuBLASLt, the library implementation of
// GemmProblem (sweeps/gemm_problem.hpp: the spec, shapes, types and analytic
// counts). prepare() builds the matmul descriptor and layouts once, asks
// cuBLASLt's heuristic for up to kGemmHeuristicResults algorithms (workspace at
// most kGemmMaxWorkspaceBytes) and takes the first, or the spec's fixed index;
// run() is one cublasLtMatmul on the caller's stream, capturable into a CUDA graph.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/gemm_problem.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/operator.hpp"

namespace timeroof {

// cuBLASLt's recommended workspace on Hopper.
inline constexpr std::size_t kGemmMaxWorkspaceBytes = std::size_t{32} << 20;
// check() compares this many rows and columns at most (evenly spaced, the first
// and last included) of the first and last product of a batch: every output of
// a small GEMM, and 128 x 128 x 2 dot products of length k of a large one.
inline constexpr std::int64_t kGemmCheckedRowsOrColumns = 128;
// fp8 scale factors (CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER): powers of two,
// so the scaled product is exact and the reference applies them as cuBLASLt does.
inline constexpr float kGemmFp8ScaleA = 2.0f;
inline constexpr float kGemmFp8ScaleB = 0.25f;

class GemmState;

// Declared as Conv2d and Lstm are: one template per operator.
class Gemm final : public Operator {
 public:
  // Validates `spec` (throws a usage error) and does no GPU work. `libraries`
  // null: prepare() creates its own cuBLASLt handle.
  explicit Gemm(GemmSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  ~Gemm() override;

  const GemmProblem& problem() const override { return problem_; }
  // "cublasLt algo=<id> tile=<id> stages=<id> splitk=<n> reduction=<scheme>
  // swizzle=<n> custom=<n> inner=<id> cluster=<id>": the algorithm configuration
  // cuBLASLt's heuristic gave (cublasLtMatmulAlgoConfigAttributes_t).
  std::string algorithm() const override;
  // "heuristic_index" (the place of the algorithm in the heuristic's list),
  // "heuristic_results" (the list's length), "algo_config" (each configuration
  // attribute by name), "waves_count", "workspace_bytes", "compute_type",
  // "scale_type", "algorithm_selection" (heuristic / fixed), fp8 "fp8_scales" and
  // "fp8_fast_accumulation" (false: cuBLASLt's default), and
  // "nvidia_tf32_override" when that variable is set.
  nlohmann::json details() const override;
  // A in, D out (GemmProblem::inputs()) in the operator's buffers.
  std::vector<DeviceTensor> inputs() const override;
  std::vector<DeviceTensor> outputs() const override;

  // Allocates A, B, D (and the bias) with random data, the workspace the chosen
  // algorithm needs, picks the algorithm and runs the call once.
  void prepare(cudaStream_t stream) override;
  // One cublasLtMatmul on `stream`: no allocation, no descriptor work.
  void run(cudaStream_t stream) override;
  // Sampled outputs (kGemmCheckedRowsOrColumns) against the device reference in
  // double (sweeps/gemm_reference.hpp). Tolerances: fp32 1e-5 (at least
  // 4 x 2^-24 sqrt(k)), tf32 1e-3, fp16, bf16 and fp8 1e-2 (relative_tolerance),
  // int8 exact; gelu epilogues at least 1e-3 (cuBLASLt may use the hardware's
  // approximate tanh, 2^-11 relative).
  CheckResult check() override;

  const GemmSpec& spec() const noexcept { return problem_.spec(); }

 private:
  void* buffer(const std::string& role) const;

  GemmProblem problem_;
  std::shared_ptr<LibraryHandles> libraries_;
  std::unique_ptr<GemmState> state_;  // created by prepare()
};

}  // namespace timeroof
