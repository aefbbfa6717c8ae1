// The pool problem (sweeps/pool_problem.hpp), host only.
#include "sweeps/pool_problem.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace timeroof {

const char* to_string(PoolMode mode) {
  return mode == PoolMode::max ? "max" : "avg";
}

PoolMode parse_pool_mode(std::string_view text) {
  if (text == "max") return PoolMode::max;
  if (text == "avg") return PoolMode::avg;
  throw usage_error("pool: mode = " + std::string(text) + " is not known; allowed: max, avg");
}

namespace {

std::int64_t output_extent(std::int64_t input, const PoolSpec& spec) {
  return (input + 2 * spec.pad - spec.window) / spec.stride + 1;
}

// Taps inside [0, input) summed over the windows along one dimension.
double taps_along(std::int64_t input, const PoolSpec& spec) {
  double taps = 0;
  for (std::int64_t o = 0; o < output_extent(input, spec); ++o) {
    const std::int64_t first = o * spec.stride - spec.pad;
    taps += static_cast<double>(std::min(first + spec.window, input) -
                                std::max(first, std::int64_t{0}));
  }
  return taps;
}

}  // namespace

void validate(const PoolSpec& spec) {
  for (const auto& [key, value] :
       {std::pair{"batch", spec.batch}, std::pair{"channels", spec.channels},
        std::pair{"height", spec.height}, std::pair{"width", spec.width},
        std::pair{"window", spec.window}, std::pair{"stride", spec.stride}})
    if (value < 1)
      throw usage_error(std::string("pool: ") + key + " = " + std::to_string(value) +
                        "; allowed: >= 1");
  if (spec.pad < 0 || 2 * spec.pad > spec.window)
    throw usage_error(
        "pool: pad = " + std::to_string(spec.pad) +
        " with window = " + std::to_string(spec.window) +
        ": a window would lie wholly in the padding; allowed: 0 <= pad <= window / 2");
  for (const auto& [key, value] :
       {std::pair{"height", spec.height}, std::pair{"width", spec.width}})
    if (spec.window > value + 2 * spec.pad)
      throw usage_error("pool: window = " + std::to_string(spec.window) + " is larger than " + key +
                        " + 2 pad = " + std::to_string(value + 2 * spec.pad) +
                        "; allowed: window <= " + std::to_string(value + 2 * spec.pad) +
                        ", or a larger " + key + " or pad");
  (void)tensor_bytes("pool", "x",
                     {{"batch", spec.batch},
                      {"channels", spec.channels},
                      {"height", spec.height},
                      {"width", spec.width}},
                     element_bytes(spec.precision), "smaller batch, channels, height or width");
}

std::int64_t pool_output_height(const PoolSpec& spec) {
  return output_extent(spec.height, spec);
}

std::int64_t pool_output_width(const PoolSpec& spec) {
  return output_extent(spec.width, spec);
}

double pool_input_elements(const PoolSpec& spec) {
  return static_cast<double>(spec.batch) * static_cast<double>(spec.channels) *
         static_cast<double>(spec.height) * static_cast<double>(spec.width);
}

double pool_output_elements(const PoolSpec& spec) {
  return static_cast<double>(spec.batch) * static_cast<double>(spec.channels) *
         static_cast<double>(pool_output_height(spec)) *
         static_cast<double>(pool_output_width(spec));
}

double pool_window_taps(const PoolSpec& spec) {
  return taps_along(spec.height, spec) * taps_along(spec.width, spec);
}

double pool_flops(const PoolSpec& spec) {
  const double images = static_cast<double>(spec.batch) * static_cast<double>(spec.channels);
  const double taps = images * pool_window_taps(spec);
  return spec.mode == PoolMode::max ? taps : taps + pool_output_elements(spec);
}

double pool_min_bytes(const PoolSpec& spec) {
  return (pool_input_elements(spec) + pool_output_elements(spec)) *
         static_cast<double>(element_bytes(spec.precision));
}

PoolProblem::PoolProblem(PoolSpec spec) : spec_(std::move(spec)) {
  validate(spec_);
}

std::string PoolProblem::op() const {
  return std::string("pool_") + to_string(spec_.mode);
}

nlohmann::json PoolProblem::params() const {
  return {{"batch", spec_.batch},
          {"channels", spec_.channels},
          {"height", spec_.height},
          {"width", spec_.width},
          {"window", spec_.window},
          {"stride", spec_.stride},
          {"pad", spec_.pad},
          {"mode", to_string(spec_.mode)},
          {"layout", "nhwc"},
          {"output_height", pool_output_height(spec_)},
          {"output_width", pool_output_width(spec_)},
          {"data_type", to_string(storage_type(spec_.precision))},
          {"implementation", to_string(spec_.implementation)}};
}

std::vector<TensorArgument> PoolProblem::inputs() const {
  return {
      {"x", static_cast<std::size_t>(pool_input_elements(spec_)) * element_bytes(spec_.precision)}};
}

std::vector<TensorArgument> PoolProblem::outputs() const {
  return {{"y",
           static_cast<std::size_t>(pool_output_elements(spec_)) * element_bytes(spec_.precision)}};
}

}  // namespace timeroof
