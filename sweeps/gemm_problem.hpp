// The gemm problem, host only: the spec of a (batched, strided) matrix product
// D = epilogue(alpha op(A) op(B) + bias) through cuBLASLt, its shapes, validation,
// analytic FLOPs and minimum bytes, and GemmProblem (sweeps/problem.hpp). The
// cuBLASLt implementation that measures it is Gemm (sweeps/gemm.hpp).
//
// Shapes are cuBLAS's, column-major: D is m x n (ld m); op(A) is m x k, stored
// m x k (trans_a = n, ld m) or k x m (trans_a = t, ld k); op(B) is k x n, stored
// k x n (trans_b = n, ld k) or n x k (trans_b = t, ld n). A batch of `batch`
// products has each matrix `batch` times, one after another (strided batched,
// stride = rows x cols); the bias, where an epilogue has one, is one vector of
// m elements shared by the batch (a linear layer's bias), added to every column.
//
// Inputs (GemmInputs, the family's precision axis), as cuBLASLt takes them:
//   fp32      f32 x f32 -> f32, fp32 compute on FMA units (math fma_only)
//   tf32      f32 x f32 -> f32, CUBLAS_COMPUTE_32F_FAST_TF32 (Tensor Cores)
//   fp16      f16 x f16 -> f16, fp32 compute
//   bf16      bf16 x bf16 -> bf16, fp32 compute
//   fp8_e4m3  e4m3 x e4m3 -> bf16, fp32 compute, A and B scale pointers (sm_89+)
//   fp8_e5m2  e5m2 x e4m3 -> bf16 (cuBLASLt has no e5m2 x e5m2), likewise
//   int8      s8 x s8 -> s32, int32 compute and scale
// fp8 and int8 are TN only (trans_a = t, trans_b = n), cuBLASLt's rule for its
// fp8 and its regular-order int8 (IMMA) kernels, with leading dimensions of 16
// bytes (fp8: m and k multiples of 16) or 4 elements (int8: m and k multiples of
// 4); int8 takes no epilogue (its int32 output has none here). The point's
// precision (Point::precision) is the vocabulary's: fp8 for both fp8 inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/problem.hpp"

namespace timeroof {

enum class GemmInputs { fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8 };
inline constexpr GemmInputs kAllGemmInputs[] = {
    GemmInputs::fp32,     GemmInputs::tf32,     GemmInputs::fp16, GemmInputs::bf16,
    GemmInputs::fp8_e4m3, GemmInputs::fp8_e5m2, GemmInputs::int8};
const char* to_string(GemmInputs inputs);  // "fp32", ..., "fp8_e4m3", "int8"
// Throws a usage error naming precision and the allowed values.
GemmInputs parse_gemm_inputs(std::string_view text);

// cuBLASLt's epilogues: bias adds the m-vector to every column, then relu
// (max(x, 0)) or gelu (cuBLASLt's tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x +
// 0.044715 x^3)))) applies elementwise.
enum class GemmEpilogue { none, bias, relu, gelu, bias_relu, bias_gelu };
inline constexpr GemmEpilogue kAllGemmEpilogues[] = {
    GemmEpilogue::none, GemmEpilogue::bias,      GemmEpilogue::relu,
    GemmEpilogue::gelu, GemmEpilogue::bias_relu, GemmEpilogue::bias_gelu};
const char* to_string(GemmEpilogue epilogue);
GemmEpilogue parse_gemm_epilogue(std::string_view text);
bool has_bias(GemmEpilogue epilogue);

// The stored types of one GEMM's operands (the table above).
struct GemmTypes {
  DataType a = DataType::fp32;
  DataType b = DataType::fp32;
  DataType d = DataType::fp32;     // C and D (beta = 0: C is never read)
  DataType bias = DataType::fp32;  // the epilogue's bias vector, where there is one
};
GemmTypes gemm_types(GemmInputs inputs);
// The vocabulary's precision of the product: fp8 for both fp8 inputs.
Precision gemm_precision(GemmInputs inputs);
// Either fp8 input type (gemm_precision() == fp8).
bool is_fp8(GemmInputs inputs);

// The product's largest k for int8: full-range int8 inputs (|a b| <= 2^14) sum
// without overflowing the int32 accumulator up to 2^31 / 2^14 = 131,072 terms.
inline constexpr std::int64_t kGemmInt8MaxK = 131'072;
// How many of cuBLASLt's heuristic results prepare() asks for: the fixed-algo
// index runs 0 .. this - 1.
inline constexpr int kGemmHeuristicResults = 32;

struct GemmSpec {
  std::int64_t m = 1, n = 1, k = 1, batch = 1;
  bool trans_a = true;  // TN: what every type accepts
  bool trans_b = false;
  GemmInputs inputs = GemmInputs::fp16;
  GemmEpilogue epilogue = GemmEpilogue::none;
  // nullopt: the heuristic's first result; else the index into its list.
  std::optional<int> algo;
};

// Throws a usage error before any GPU work when the spec cannot describe a
// GEMM cuBLASLt takes; the message names the field, the value and the fix.
void validate(const GemmSpec& spec);
// fp32 on FMA units, everything else on Tensor Cores.
MathMode gemm_math(const GemmSpec& spec);

// Element counts of A, B and D over the whole batch, and of the bias (m or 0).
double gemm_a_elements(const GemmSpec& spec);
double gemm_b_elements(const GemmSpec& spec);
double gemm_d_elements(const GemmSpec& spec);
double gemm_bias_elements(const GemmSpec& spec);

// FLOPs of the product alone: 2 m n k batch (a multiply-add is 2; int8
// operations count as FLOPs). What the Tensor-Core counters must show.
double gemm_product_flops(const GemmSpec& spec);
// Elementwise FLOPs of the epilogue per output element: bias 1 (an add), relu 1
// (a max), gelu 9 in its tanh form (x^3: 2, x 0.044715: 1, + x: 1, x sqrt(2/pi):
// 1, tanh: 1 as LSTM counts it, + 1: 1, x x: 1, x 0.5: 1); bias_* the sum.
double gemm_epilogue_flops_per_output(GemmEpilogue epilogue);
// flops = gemm_product_flops + m n batch x gemm_epilogue_flops_per_output.
double gemm_flops(const GemmSpec& spec);
// A, B, D (and the bias) once each at their stored types; C is not read (beta = 0):
//   min_bytes = |A| a + |B| b + |D| d + m bias.
double gemm_min_bytes(const GemmSpec& spec);

// "gemm" (batch 1) or "gemm_batched".
std::string gemm_op_name(const GemmSpec& spec);

// A point's params (the gemm family's keys, sweeps/gemm_family.cpp) as a
// GemmSpec; throws a usage error naming the key and the allowed values. The spec
// as a whole is validated by GemmProblem.
GemmSpec gemm_spec_from_params(const nlohmann::json& point);

// The problem of one validated spec (the constructor validates: usage error).
// Declared as Conv2dProblem and LstmProblem are: one template per operator.
class GemmProblem final : public Problem {
 public:
  explicit GemmProblem(GemmSpec spec);

  std::string op() const override;
  // m, n, k, batch, trans_a, trans_b ("n" / "t"), the stored types a_type, b_type,
  // d_type (and bias_type), the epilogue, "algorithm_selection" (heuristic /
  // fixed) and "algo" (the fixed index, or "heuristic").
  nlohmann::json params() const override;
  Precision precision() const override { return gemm_precision(spec_.inputs); }
  MathMode math_mode() const override { return gemm_math(spec_); }
  double flops() const override { return gemm_flops(spec_); }
  double min_bytes() const override { return gemm_min_bytes(spec_); }
  // One cuBLASLt kernel per call (a split-k algorithm may add a reduction kernel).
  double expected_launches() const override { return 1; }
  // The call's activations: A in, D out; B (the weights) and the bias stay resident.
  std::vector<TensorArgument> inputs() const override;
  std::vector<TensorArgument> outputs() const override;

  const GemmSpec& spec() const noexcept { return spec_; }

 private:
  GemmSpec spec_;
};

}  // namespace timeroof
