// The softmax problem (sweeps/softmax_problem.hpp), host only.
#include "sweeps/softmax_problem.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace timeroof {

void validate(const SoftmaxSpec& spec) {
  (void)tensor_bytes("softmax", "x",
                     {{"batch", spec.batch}, {"rows", spec.rows}, {"columns", spec.columns}},
                     element_bytes(spec.precision), "smaller batch, rows or columns");
  if (spec.batch < 1 || spec.rows < 1 || spec.columns < 1)
    throw usage_error("softmax: batch, rows and columns must be >= 1 (got " +
                      std::to_string(spec.batch) + ", " + std::to_string(spec.rows) + ", " +
                      std::to_string(spec.columns) + ")");
  if (spec.implementation == KernelSource::own && spec.columns > kSoftmaxMaxColumns)
    throw usage_error("softmax: columns = " + std::to_string(spec.columns) +
                      " is longer than the own kernel's row (it holds a row in registers); "
                      "allowed: columns <= " +
                      std::to_string(kSoftmaxMaxColumns) + ", or implementation = cudnn");
}

double softmax_rows(const SoftmaxSpec& spec) {
  return static_cast<double>(spec.batch) * static_cast<double>(spec.rows);
}

double softmax_elements(const SoftmaxSpec& spec) {
  return softmax_rows(spec) * static_cast<double>(spec.columns);
}

double softmax_flops(const SoftmaxSpec& spec) {
  return 5 * softmax_elements(spec);
}

double softmax_min_bytes(const SoftmaxSpec& spec) {
  return 2 * softmax_elements(spec) * static_cast<double>(element_bytes(spec.precision));
}

SoftmaxLaunch softmax_launch(const SoftmaxSpec& spec) {
  SoftmaxLaunch launch;
  const auto full_vector = static_cast<std::int64_t>(16 / element_bytes(spec.precision));
  launch.vector_width = spec.columns % full_vector == 0 ? static_cast<int>(full_vector) : 1;
  constexpr std::int64_t kWarp = 32;
  const std::int64_t threads =
      (spec.columns + kSoftmaxValuesPerThread - 1) / kSoftmaxValuesPerThread;
  launch.warp_per_row = threads <= kWarp;
  launch.threads_per_row =
      launch.warp_per_row
          ? 32
          : static_cast<int>(std::min<std::int64_t>(1024, (threads + kWarp - 1) / kWarp * kWarp));
  return launch;
}

double softmax_own_fma_pipe_flops(const SoftmaxSpec& spec) {
  const SoftmaxLaunch launch = softmax_launch(spec);
  const double threads = launch.threads_per_row;
  const double per_row = 4.0 * static_cast<double>(spec.columns) + threads + 5 * threads +
                         (launch.warp_per_row ? 0 : 5 * 32);
  return softmax_rows(spec) * per_row;
}

SoftmaxProblem::SoftmaxProblem(SoftmaxSpec spec) : spec_(std::move(spec)) {
  validate(spec_);
}

nlohmann::json SoftmaxProblem::params() const {
  return {{"batch", spec_.batch},
          {"rows", spec_.rows},
          {"columns", spec_.columns},
          {"data_type", to_string(storage_type(spec_.precision))},
          {"implementation", to_string(spec_.implementation)}};
}

std::vector<TensorArgument> SoftmaxProblem::inputs() const {
  return {
      {"x", static_cast<std::size_t>(softmax_elements(spec_)) * element_bytes(spec_.precision)}};
}

std::vector<TensorArgument> SoftmaxProblem::outputs() const {
  return {
      {"y", static_cast<std::size_t>(softmax_elements(spec_)) * element_bytes(spec_.precision)}};
}

}  // namespace timeroof
