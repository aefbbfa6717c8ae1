// The pointwise problem, host only: element-wise operations and activations over
// batch x elements values, their validation, analytic FLOPs and minimum bytes,
// and PointwiseProblem (sweeps/problem.hpp). Measured by Pointwise
// (sweeps/pointwise.hpp): the project's vectorised kernels or a cuDNN graph.
//
// Operations (a, b inputs, y output; arithmetic in fp32 at every precision):
//   add       y = a + b
//   mul       y = a * b
//   relu      y = max(a, 0)
//   gelu      y = a / 2 (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))   (tanh form)
//   silu      y = a sigmoid(a) = a / (1 + exp(-a))
//   silu_mul  y = silu(a) * b                                       (LLaMA's SwiGLU)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/memory_bound.hpp"
#include "sweeps/problem.hpp"

namespace timeroof {

enum class PointwiseOp { add, mul, relu, gelu, silu, silu_mul };
inline constexpr PointwiseOp kAllPointwiseOps[] = {PointwiseOp::add,  PointwiseOp::mul,
                                                   PointwiseOp::relu, PointwiseOp::gelu,
                                                   PointwiseOp::silu, PointwiseOp::silu_mul};
const char* to_string(PointwiseOp op);
// Throws a usage error naming op and the allowed values.
PointwiseOp parse_pointwise_op(std::string_view text);
// 2 for add, mul and silu_mul; 1 for the others.
int pointwise_input_count(PointwiseOp op);

// Analytic FLOPs per output element, every operation of the formula counted as
// one (a transcendental as one, as LSTM and GEMM count tanh):
//   add 1, mul 1, relu 1 (a max),
//   gelu 9 (a^2, a^2 x 0.044715, + 1, x a, x sqrt(2/pi), exp, + 1, reciprocal, x a:
//           0.5 (1 + tanh(z)) is computed as 1 / (1 + exp(-2z))),
//   silu 5 (x -1, exp, + 1, reciprocal, x a), silu_mul 6 (silu and x b).
double pointwise_flops_per_element(PointwiseOp op);
// The part of those the project's kernels execute as FADD / FMUL / FFMA, what
// the fp32 FLOP counters show (the max is an FMNMX, exp and reciprocal are
// MUFU.EX2 and MUFU.RCP, which the FLOP counters do not count):
//   add 1, mul 1, relu 0, gelu 7, silu 3, silu_mul 4.
double pointwise_fma_pipe_flops_per_element(PointwiseOp op);

struct PointwiseSpec {
  PointwiseOp op = PointwiseOp::add;
  std::int64_t batch = 1;
  std::int64_t elements = 1;  // per batch item
  Precision precision = Precision::fp32;
  KernelSource implementation = KernelSource::own;
};

// Throws a usage error naming the field and the fix.
void validate(const PointwiseSpec& spec);
double pointwise_total_elements(const PointwiseSpec& spec);  // batch x elements
// flops = batch x elements x pointwise_flops_per_element(op).
double pointwise_flops(const PointwiseSpec& spec);
// Each input and the output once at the stored type:
//   (inputs + 1) x batch x elements x element_bytes(precision).
double pointwise_min_bytes(const PointwiseSpec& spec);

// A point's params as a PointwiseSpec (sweeps/pointwise_family.cpp).
PointwiseSpec pointwise_spec_from_params(const nlohmann::json& point);

class PointwiseProblem final : public Problem {
 public:
  explicit PointwiseProblem(PointwiseSpec spec);

  std::string op() const override;  // "pointwise_<op>", e.g. "pointwise_gelu"
  // op, batch, elements, inputs (1 or 2), the stored type and the implementation.
  nlohmann::json params() const override;
  Precision precision() const override { return spec_.precision; }
  MathMode math_mode() const override { return MathMode::fma_only; }
  double flops() const override { return pointwise_flops(spec_); }
  double min_bytes() const override { return pointwise_min_bytes(spec_); }
  double expected_launches() const override { return 1; }
  // "a" (and "b") in, "y" out.
  std::vector<TensorArgument> inputs() const override;
  std::vector<TensorArgument> outputs() const override;

  const PointwiseSpec& spec() const noexcept { return spec_; }

 private:
  PointwiseSpec spec_;
};

}  // namespace timeroof
