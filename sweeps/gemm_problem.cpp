// The gemm problem (sweeps/gemm_problem.hpp): names, types, validation and
// analytic counts, host only: no GPU, no CUDA or cuBLAS header.
#include "sweeps/gemm_problem.hpp"

#include <climits>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace timeroof {

const char* to_string(GemmInputs inputs) {
  switch (inputs) {
    case GemmInputs::fp32:
      return "fp32";
    case GemmInputs::tf32:
      return "tf32";
    case GemmInputs::fp16:
      return "fp16";
    case GemmInputs::bf16:
      return "bf16";
    case GemmInputs::fp8_e4m3:
      return "fp8_e4m3";
    case GemmInputs::fp8_e5m2:
      return "fp8_e5m2";
    case GemmInputs::int8:
      return "int8";
  }
  return "?";
}

namespace {

template <typename Enum, std::size_t N>
std::string spellings(const Enum (&values)[N]) {
  std::string text;
  for (Enum value : values) text += (text.empty() ? "" : ", ") + std::string(to_string(value));
  return text;
}

template <typename Enum, std::size_t N>
Enum parse_enum(const char* key, std::string_view text, const Enum (&values)[N]) {
  for (Enum value : values)
    if (text == to_string(value)) return value;
  throw usage_error(std::string("gemm: ") + key + " = '" + std::string(text) +
                    "' is not a known value; allowed: " + spellings(values));
}

}  // namespace

GemmInputs parse_gemm_inputs(std::string_view text) {
  return parse_enum("precision", text, kAllGemmInputs);
}

const char* to_string(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::none:
      return "none";
    case GemmEpilogue::bias:
      return "bias";
    case GemmEpilogue::relu:
      return "relu";
    case GemmEpilogue::gelu:
      return "gelu";
    case GemmEpilogue::bias_relu:
      return "bias_relu";
    case GemmEpilogue::bias_gelu:
      return "bias_gelu";
  }
  return "?";
}

GemmEpilogue parse_gemm_epilogue(std::string_view text) {
  return parse_enum("epilogue", text, kAllGemmEpilogues);
}

bool has_bias(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::bias || epilogue == GemmEpilogue::bias_relu ||
         epilogue == GemmEpilogue::bias_gelu;
}

GemmTypes gemm_types(GemmInputs inputs) {
  switch (inputs) {
    case GemmInputs::fp32:
    case GemmInputs::tf32:
      return {DataType::fp32, DataType::fp32, DataType::fp32, DataType::fp32};
    case GemmInputs::fp16:
      return {DataType::fp16, DataType::fp16, DataType::fp16, DataType::fp16};
    case GemmInputs::bf16:
      return {DataType::bf16, DataType::bf16, DataType::bf16, DataType::bf16};
    case GemmInputs::fp8_e4m3:
      return {DataType::fp8_e4m3, DataType::fp8_e4m3, DataType::bf16, DataType::bf16};
    case GemmInputs::fp8_e5m2:
      return {DataType::fp8_e5m2, DataType::fp8_e4m3, DataType::bf16, DataType::bf16};
    case GemmInputs::int8:
      return {DataType::int8, DataType::int8, DataType::int32, DataType::int32};
  }
  return {};
}

Precision gemm_precision(GemmInputs inputs) {
  switch (inputs) {
    case GemmInputs::fp32:
      return Precision::fp32;
    case GemmInputs::tf32:
      return Precision::tf32;
    case GemmInputs::fp16:
      return Precision::fp16;
    case GemmInputs::bf16:
      return Precision::bf16;
    case GemmInputs::fp8_e4m3:
    case GemmInputs::fp8_e5m2:
      return Precision::fp8;
    case GemmInputs::int8:
      return Precision::int8;
  }
  return Precision::fp32;
}

bool is_fp8(GemmInputs inputs) {
  return gemm_precision(inputs) == Precision::fp8;
}

MathMode gemm_math(const GemmSpec& spec) {
  return spec.inputs == GemmInputs::fp32 ? MathMode::fma_only : MathMode::tensor;
}

namespace {

const char* transpose_name(bool transposed) {
  return transposed ? "t" : "n";
}

// Rows and columns of A and B as stored (column-major), by the transposes.
std::int64_t a_rows(const GemmSpec& spec) {
  return spec.trans_a ? spec.k : spec.m;
}
std::int64_t a_cols(const GemmSpec& spec) {
  return spec.trans_a ? spec.m : spec.k;
}
std::int64_t b_rows(const GemmSpec& spec) {
  return spec.trans_b ? spec.n : spec.k;
}
std::int64_t b_cols(const GemmSpec& spec) {
  return spec.trans_b ? spec.k : spec.n;
}

constexpr const char* kSmaller = "smaller m, n, k or batch";

// fp8 and int8: TN only, with the leading dimensions cuBLASLt requires.
void validate_narrow_types(const GemmSpec& spec) {
  const std::string name = to_string(spec.inputs);
  const bool fp8 = is_fp8(spec.inputs);
  if (!fp8 && spec.inputs != GemmInputs::int8) return;
  if (!spec.trans_a || spec.trans_b)
    throw usage_error("gemm: precision = " + name +
                      " with trans_a = " + transpose_name(spec.trans_a) +
                      ", trans_b = " + transpose_name(spec.trans_b) + ": cuBLASLt's " + name +
                      " kernels take only the TN layout; allowed: trans_a = t, trans_b = n");
  const std::int64_t multiple = fp8 ? 16 : 4;
  for (const auto& [key, value] : {std::pair{"m", spec.m}, std::pair{"k", spec.k}})
    if (value % multiple != 0)
      throw usage_error("gemm: precision = " + name + " with " + key + " = " +
                        std::to_string(value) + ": cuBLASLt's " + name +
                        " kernels need m and k (leading dimensions) to be multiples of " +
                        std::to_string(multiple) + "; allowed: " + key + " = " +
                        std::to_string((value / multiple + 1) * multiple) + " or another multiple");
  if (spec.inputs != GemmInputs::int8) return;
  if (spec.epilogue != GemmEpilogue::none)
    throw usage_error(
        "gemm: precision = int8 with epilogue = " + std::string(to_string(spec.epilogue)) +
        ": the int32 output of int8 GEMMs takes no epilogue here; allowed: "
        "epilogue = none");
  if (spec.k > kGemmInt8MaxK)
    throw usage_error("gemm: precision = int8 with k = " + std::to_string(spec.k) +
                      ": full-range int8 products can overflow the int32 accumulator beyond k = " +
                      std::to_string(kGemmInt8MaxK) +
                      "; allowed: k <= " + std::to_string(kGemmInt8MaxK));
}

}  // namespace

void validate(const GemmSpec& spec) {
  for (const auto& [key, value] : {std::pair{"m", spec.m}, std::pair{"n", spec.n},
                                   std::pair{"k", spec.k}, std::pair{"batch", spec.batch}})
    if (value < 1 || value > INT_MAX)
      throw usage_error(std::string("gemm: ") + key + " = " + std::to_string(value) +
                        " is out of range; allowed: 1 .. " + std::to_string(INT_MAX));
  if (spec.algo && (*spec.algo < 0 || *spec.algo >= kGemmHeuristicResults))
    throw usage_error("gemm: algo = " + std::to_string(*spec.algo) +
                      " is out of range; allowed: heuristic or an index 0 .. " +
                      std::to_string(kGemmHeuristicResults - 1) +
                      " into cuBLASLt's heuristic list");
  const GemmTypes types = gemm_types(spec.inputs);
  (void)tensor_bytes("gemm", "A",
                     {{"rows", a_rows(spec)}, {"cols", a_cols(spec)}, {"batch", spec.batch}},
                     element_bytes(types.a), kSmaller);
  (void)tensor_bytes("gemm", "B",
                     {{"rows", b_rows(spec)}, {"cols", b_cols(spec)}, {"batch", spec.batch}},
                     element_bytes(types.b), kSmaller);
  (void)tensor_bytes("gemm", "D", {{"m", spec.m}, {"n", spec.n}, {"batch", spec.batch}},
                     element_bytes(types.d), kSmaller);
  validate_narrow_types(spec);
}

double gemm_a_elements(const GemmSpec& spec) {
  return static_cast<double>(spec.m) * static_cast<double>(spec.k) *
         static_cast<double>(spec.batch);
}
double gemm_b_elements(const GemmSpec& spec) {
  return static_cast<double>(spec.k) * static_cast<double>(spec.n) *
         static_cast<double>(spec.batch);
}
double gemm_d_elements(const GemmSpec& spec) {
  return static_cast<double>(spec.m) * static_cast<double>(spec.n) *
         static_cast<double>(spec.batch);
}
double gemm_bias_elements(const GemmSpec& spec) {
  return has_bias(spec.epilogue) ? static_cast<double>(spec.m) : 0;
}

double gemm_product_flops(const GemmSpec& spec) {
  return 2.0 * gemm_d_elements(spec) * static_cast<double>(spec.k);
}

double gemm_epilogue_flops_per_output(GemmEpilogue epilogue) {
  constexpr double kGelu = 9;
  switch (epilogue) {
    case GemmEpilogue::none:
      return 0;
    case GemmEpilogue::bias:
    case GemmEpilogue::relu:
      return 1;
    case GemmEpilogue::gelu:
      return kGelu;
    case GemmEpilogue::bias_relu:
      return 2;
    case GemmEpilogue::bias_gelu:
      return 1 + kGelu;
  }
  return 0;
}

double gemm_flops(const GemmSpec& spec) {
  return gemm_product_flops(spec) +
         gemm_d_elements(spec) * gemm_epilogue_flops_per_output(spec.epilogue);
}

double gemm_min_bytes(const GemmSpec& spec) {
  const GemmTypes types = gemm_types(spec.inputs);
  return gemm_a_elements(spec) * static_cast<double>(element_bytes(types.a)) +
         gemm_b_elements(spec) * static_cast<double>(element_bytes(types.b)) +
         gemm_d_elements(spec) * static_cast<double>(element_bytes(types.d)) +
         gemm_bias_elements(spec) * static_cast<double>(element_bytes(types.bias));
}

std::string gemm_op_name(const GemmSpec& spec) {
  return spec.batch > 1 ? "gemm_batched" : "gemm";
}

// ---------------------------------------------------------------------------
// The problem, on the operators' one template.

GemmProblem::GemmProblem(GemmSpec spec) : spec_(std::move(spec)) {
  validate(spec_);
}

std::string GemmProblem::op() const {
  return gemm_op_name(spec_);
}

nlohmann::json GemmProblem::params() const {
  const GemmTypes types = gemm_types(spec_.inputs);
  nlohmann::json params = {{"m", spec_.m},
                           {"n", spec_.n},
                           {"k", spec_.k},
                           {"batch", spec_.batch},
                           {"trans_a", transpose_name(spec_.trans_a)},
                           {"trans_b", transpose_name(spec_.trans_b)},
                           {"inputs", to_string(spec_.inputs)},
                           {"a_type", to_string(types.a)},
                           {"b_type", to_string(types.b)},
                           {"d_type", to_string(types.d)},
                           {"epilogue", to_string(spec_.epilogue)},
                           {"algorithm_selection", spec_.algo ? "fixed" : "heuristic"}};
  if (has_bias(spec_.epilogue)) params["bias_type"] = to_string(types.bias);
  params["algo"] = spec_.algo ? nlohmann::json(*spec_.algo) : nlohmann::json("heuristic");
  return params;
}

std::vector<TensorArgument> GemmProblem::inputs() const {
  const GemmTypes types = gemm_types(spec_.inputs);
  return {{"a", static_cast<std::size_t>(gemm_a_elements(spec_)) * element_bytes(types.a)}};
}

std::vector<TensorArgument> GemmProblem::outputs() const {
  const GemmTypes types = gemm_types(spec_.inputs);
  return {{"d", static_cast<std::size_t>(gemm_d_elements(spec_)) * element_bytes(types.d)}};
}

}  // namespace timeroof
