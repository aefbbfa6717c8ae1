// The softmax problem, host only: softmax over the last dimension of a
// batch x rows x columns tensor, y = exp(x - max) / sum(exp(x - max)) per row,
// its validation, analytic FLOPs and minimum bytes, the launch the project's
// kernel takes (for its exact FLOP count), and SoftmaxProblem. Measured by
// Softmax (sweeps/softmax.hpp): the project's row kernel or cuDNN's softmax.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/memory_bound.hpp"
#include "sweeps/problem.hpp"

namespace timeroof {

// The own kernel holds a row in registers (32 values a thread, at most 1024
// threads): longer rows are refused with this limit.
inline constexpr std::int64_t kSoftmaxMaxColumns = 32768;
inline constexpr int kSoftmaxValuesPerThread = 32;

struct SoftmaxSpec {
  std::int64_t batch = 1;
  std::int64_t rows = 1;     // per batch item
  std::int64_t columns = 1;  // the softmax dimension
  Precision precision = Precision::fp32;
  KernelSource implementation = KernelSource::own;
};

void validate(const SoftmaxSpec& spec);
double softmax_rows(const SoftmaxSpec& spec);      // batch x rows
double softmax_elements(const SoftmaxSpec& spec);  // batch x rows x columns
// Analytic FLOPs, 5 per element: the max (a comparison), x - max, exp, the
// sum's add, and the division (a multiply by the row's reciprocal).
double softmax_flops(const SoftmaxSpec& spec);
// x read once and y written once at the stored type: 2 x elements x bytes.
double softmax_min_bytes(const SoftmaxSpec& spec);

// How the own kernel runs a spec: 16-byte vectors of 16 / element_bytes values
// where a row is a whole number of them (else single values); one warp per row
// when a warp holds the row at kSoftmaxValuesPerThread values a lane, else one
// block of threads_per_row threads (a multiple of 32, up to 1024) per row.
struct SoftmaxLaunch {
  int vector_width = 1;
  int threads_per_row = 32;
  bool warp_per_row = true;
};
SoftmaxLaunch softmax_launch(const SoftmaxSpec& spec);
// What the own kernel executes as FADD / FMUL / FFMA (the fp32 FLOP counters;
// max is FMNMX, exp and the reciprocal MUFU, not counted), per row:
//   4 per element (FFMA x log2(e) - max log2(e), FADD into the sum, FMUL by the
//   reciprocal), + 1 FMUL max x log2(e) per thread of the row, + 5 FADDs per
//   lane of each warp's butterfly sum (160 a warp), + 160 for the block's
//   second stage (block per row only).
double softmax_own_fma_pipe_flops(const SoftmaxSpec& spec);

SoftmaxSpec softmax_spec_from_params(const nlohmann::json& point);

class SoftmaxProblem final : public Problem {
 public:
  explicit SoftmaxProblem(SoftmaxSpec spec);

  std::string op() const override { return "softmax"; }
  nlohmann::json params() const override;
  Precision precision() const override { return spec_.precision; }
  MathMode math_mode() const override { return MathMode::fma_only; }
  double flops() const override { return softmax_flops(spec_); }
  double min_bytes() const override { return softmax_min_bytes(spec_); }
  double expected_launches() const override { return 1; }
  std::vector<TensorArgument> inputs() const override;   // "x"
  std::vector<TensorArgument> outputs() const override;  // "y"

  const SoftmaxSpec& spec() const noexcept { return spec_; }

 private:
  SoftmaxSpec spec_;
};

}  // namespace timeroof
