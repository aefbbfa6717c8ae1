// The pool problem, host only: 2-D max and average pooling of an NHWC tensor
// with a square window, stride and zero padding on both sides, its validation,
// analytic FLOPs and minimum bytes, and PoolProblem. Measured by Pool
// (sweeps/pool.hpp): the project's NHWC kernel or cuDNN's resample operation.
//
// Output height (width likewise): (height + 2 pad - window) / stride + 1.
// max ignores padding; avg divides by window^2 with padding counted as zeros
// (PyTorch's count_include_pad = True, cuDNN's AVERAGE_COUNT_INCLUDE_PADDING).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/memory_bound.hpp"
#include "sweeps/problem.hpp"

namespace timeroof {

enum class PoolMode { max, avg };
const char* to_string(PoolMode mode);  // "max", "avg"
PoolMode parse_pool_mode(std::string_view text);

struct PoolSpec {
  std::int64_t batch = 1, channels = 1, height = 1, width = 1;
  std::int64_t window = 1, stride = 1, pad = 0;
  PoolMode mode = PoolMode::max;
  Precision precision = Precision::fp32;
  KernelSource implementation = KernelSource::own;
};

// Throws a usage error: a window larger than the padded input, pad > window / 2
// (a window wholly in the padding), sizes below 1.
void validate(const PoolSpec& spec);
std::int64_t pool_output_height(const PoolSpec& spec);
std::int64_t pool_output_width(const PoolSpec& spec);
double pool_input_elements(const PoolSpec& spec);   // N C H W
double pool_output_elements(const PoolSpec& spec);  // N C OH OW
// The window positions inside the input, summed over every output of one
// (image, channel): the taps the pooling reads (edge windows have fewer).
double pool_window_taps(const PoolSpec& spec);
// Analytic FLOPs: max one comparison per tap; avg one add per tap and one
// multiply by 1 / window^2 per output. Times batch x channels. The own kernel
// executes exactly these (avg: FADD and FMUL, counted; max: FMNMX, which the
// FLOP counters do not count).
double pool_flops(const PoolSpec& spec);
// Input read once, output written once at the stored type.
double pool_min_bytes(const PoolSpec& spec);

PoolSpec pool_spec_from_params(const nlohmann::json& point);

class PoolProblem final : public Problem {
 public:
  explicit PoolProblem(PoolSpec spec);

  std::string op() const override;  // "pool_max", "pool_avg"
  nlohmann::json params() const override;
  Precision precision() const override { return spec_.precision; }
  MathMode math_mode() const override { return MathMode::fma_only; }
  double flops() const override { return pool_flops(spec_); }
  double min_bytes() const override { return pool_min_bytes(spec_); }
  double expected_launches() const override { return 1; }
  std::vector<TensorArgument> inputs() const override;   // "x"
  std::vector<TensorArgument> outputs() const override;  // "y"

  const PoolSpec& spec() const noexcept { return spec_; }

 private:
  PoolSpec spec_;
};

}  // namespace timeroof
