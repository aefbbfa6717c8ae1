// The pointwise problem (sweeps/pointwise_problem.hpp): names, validation and
// analytic counts, host only.
#include "sweeps/pointwise_problem.hpp"

#include <utility>

#include "core/error.hpp"

namespace timeroof {

const char* to_string(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::add:
      return "add";
    case PointwiseOp::mul:
      return "mul";
    case PointwiseOp::relu:
      return "relu";
    case PointwiseOp::gelu:
      return "gelu";
    case PointwiseOp::silu:
      return "silu";
    case PointwiseOp::silu_mul:
      return "silu_mul";
  }
  return "?";
}

PointwiseOp parse_pointwise_op(std::string_view text) {
  for (PointwiseOp op : kAllPointwiseOps)
    if (text == to_string(op)) return op;
  throw usage_error("pointwise: op = " + std::string(text) +
                    " is not known; allowed: add, mul, relu, gelu, silu, silu_mul");
}

int pointwise_input_count(PointwiseOp op) {
  return op == PointwiseOp::add || op == PointwiseOp::mul || op == PointwiseOp::silu_mul ? 2 : 1;
}

double pointwise_flops_per_element(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::add:
    case PointwiseOp::mul:
    case PointwiseOp::relu:
      return 1;
    case PointwiseOp::gelu:
      return 9;
    case PointwiseOp::silu:
      return 5;
    case PointwiseOp::silu_mul:
      return 6;
  }
  return 0;
}

double pointwise_fma_pipe_flops_per_element(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::add:
    case PointwiseOp::mul:
      return 1;
    case PointwiseOp::relu:
      return 0;
    case PointwiseOp::gelu:
      return 7;  // FMUL a^2, FFMA 1 + 0.044715 a^2, FMUL x a, FMUL x -2 sqrt(2/pi) log2(e), FADD +
                 // 1, FMUL x a
    case PointwiseOp::silu:
      return 3;  // FMUL x -log2(e), FADD + 1, FMUL x a
    case PointwiseOp::silu_mul:
      return 4;  // silu and FMUL x b
  }
  return 0;
}

void validate(const PointwiseSpec& spec) {
  (void)tensor_bytes("pointwise", "y", {{"batch", spec.batch}, {"elements", spec.elements}},
                     element_bytes(spec.precision), "smaller batch or elements");
  if (spec.batch < 1 || spec.elements < 1)
    throw usage_error("pointwise: batch = " + std::to_string(spec.batch) +
                      ", elements = " + std::to_string(spec.elements) + "; allowed: both >= 1");
}

double pointwise_total_elements(const PointwiseSpec& spec) {
  return static_cast<double>(spec.batch) * static_cast<double>(spec.elements);
}

double pointwise_flops(const PointwiseSpec& spec) {
  return pointwise_total_elements(spec) * pointwise_flops_per_element(spec.op);
}

double pointwise_min_bytes(const PointwiseSpec& spec) {
  return (pointwise_input_count(spec.op) + 1) * pointwise_total_elements(spec) *
         static_cast<double>(element_bytes(spec.precision));
}

PointwiseProblem::PointwiseProblem(PointwiseSpec spec) : spec_(std::move(spec)) {
  validate(spec_);
}

std::string PointwiseProblem::op() const {
  return std::string("pointwise_") + to_string(spec_.op);
}

nlohmann::json PointwiseProblem::params() const {
  return {{"op", to_string(spec_.op)},
          {"batch", spec_.batch},
          {"elements", spec_.elements},
          {"inputs", pointwise_input_count(spec_.op)},
          {"data_type", to_string(storage_type(spec_.precision))},
          {"implementation", to_string(spec_.implementation)}};
}

std::vector<TensorArgument> PointwiseProblem::inputs() const {
  const auto bytes =
      static_cast<std::size_t>(pointwise_total_elements(spec_)) * element_bytes(spec_.precision);
  if (pointwise_input_count(spec_.op) == 2) return {{"a", bytes}, {"b", bytes}};
  return {{"a", bytes}};
}

std::vector<TensorArgument> PointwiseProblem::outputs() const {
  return {{"y", static_cast<std::size_t>(pointwise_total_elements(spec_)) *
                    element_bytes(spec_.precision)}};
}

}  // namespace timeroof
