// The normalization problems, host only: LayerNorm / RMSNorm over the last
// dimension (the layernorm family) and BatchNorm2d (the batchnorm family), their
// specs, validation, analytic FLOPs and minimum bytes, the problems
// (sweeps/problem.hpp) and double-precision references. The cuDNN
// implementations that measure them are sweeps/norm.hpp.
//
// Layout and types, as cudnn-frontend's norm samples build them:
//   layernorm  x, y, dy, dx: rows x hidden, row-major (rows = batch x seq tokens),
//              in the precision; scale (gamma) and bias (beta, layer only) of
//              [hidden] in fp32; statistics (mean: layer only; inverse standard
//              deviation) of [rows] in fp32.
//   batchnorm  x, y, dy, dx: N x C x H x W stored NHWC, in the precision; scale,
//              bias, the saved mean / inverse standard deviation and the running
//              mean / variance of [C] in fp32.
// Epsilon is kNormEpsilon; the running statistics' momentum is kBatchnormMomentum
// (PyTorch's defaults: running = (1 - m) running + m batch, the variance unbiased).
//
// FLOPs per element (an add, multiply, subtract, divide or rsqrt is 1; a
// multiply-add is 2), e elements normalized per group (hidden for layernorm,
// N H W for batchnorm), G groups (rows, or channels):
//   layer norm fwd   mean 1 (sum), variance 3 (sub, square, sum), normalize 2
//                    (sub, mul by the inverse deviation), affine 2 (scale, bias):
//                    8 per element; per group: mean 1 (divide), variance 1
//                    (divide), inverse deviation 2 (+ eps, rsqrt): 4
//   rms norm fwd     mean square 2 (square, sum), normalize 1, scale 1: 4 per
//                    element; per group: divide, + eps, rsqrt: 3
//   batchnorm fwd training   as layer norm, 8 per element and 4 per channel, and
//                    the running-stat update per channel: mean 3 ((1-m) r + m mean),
//                    variance 4 (the same and the unbiasing e / (e - 1)): 4 + 7 = 11
//                    per channel
//   batchnorm fwd inference  normalize 2 and affine 2 per element with the running
//                    mean and variance: 4; per channel the inverse deviation
//                    (+ eps, rsqrt): 2
//   layer norm bwd, batchnorm bwd   xhat = (x - mean) inv 2, dscale += dy xhat 2,
//                    dbias += dy 1, g = dy scale 1, sum g 1, sum g xhat 2, dx =
//                    inv (g - mean g - xhat mean(g xhat)) 4: 13 per element; per
//                    group the two means: 2
//   rms norm bwd     xhat = x inv 1, dscale += dy xhat 2, g = dy scale 1, sum g
//                    xhat 2, dx = inv (g - xhat mean(g xhat)) 3: 9 per element; 1
//                    per group
// Inference and training forward count the same arithmetic for layernorm
// (training also writes the statistics).
//
// Minimum bytes: every tensor the call reads or writes once at its stored type:
//   layernorm fwd    x, y; scale (and bias); training: mean (layer) and inv_variance
//   layernorm bwd    x, dy, dx; scale, mean (layer), inv_variance; dscale (and dbias)
//   batchnorm fwd    x, y; scale, bias; training: saved mean and inv_variance written,
//                    running mean and variance read and written; inference: the
//                    running mean and variance read
//   batchnorm bwd    x, dy, dx; scale, mean, inv_variance; dscale, dbias
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/problem.hpp"

namespace timeroof {

inline constexpr double kNormEpsilon = 1e-5;
inline constexpr double kBatchnormMomentum = 0.1;

enum class NormKind { layer, rms };
enum class NormPhase { inference, training };
enum class NormDirection { fwd, bwd };
// How the cuDNN plan is picked: the heuristic's first configuration that
// finalizes, or the fastest of every configuration the heuristics list (each
// timed in prepare(); the point's details list them).
enum class NormSelection { heuristic, fastest };
inline constexpr NormSelection kAllNormSelections[] = {NormSelection::heuristic,
                                                       NormSelection::fastest};
inline constexpr NormKind kAllNormKinds[] = {NormKind::layer, NormKind::rms};
inline constexpr NormPhase kAllNormPhases[] = {NormPhase::inference, NormPhase::training};
inline constexpr NormDirection kAllNormDirections[] = {NormDirection::fwd, NormDirection::bwd};
const char* to_string(NormKind kind);            // "layer", "rms"
const char* to_string(NormPhase phase);          // "inference", "training"
const char* to_string(NormDirection direction);  // "fwd", "bwd"
const char* to_string(NormSelection selection);  // "heuristic", "fastest"
// Usage errors "<family>: <key> = 'x' is not a known value; allowed: ...".
NormKind parse_norm_kind(const std::string& family, std::string_view text);
NormPhase parse_norm_phase(const std::string& family, std::string_view text);
NormDirection parse_norm_direction(const std::string& family, std::string_view text);
NormSelection parse_norm_selection(const std::string& family, std::string_view text);

// The precisions the normalization families take (statistics stay fp32).
inline constexpr Precision kNormPrecisions[] = {Precision::fp32, Precision::fp16, Precision::bf16};

struct LayernormSpec {
  std::int64_t batch = 1, seq = 1, hidden = 768;
  NormKind kind = NormKind::layer;
  NormPhase phase = NormPhase::training;
  NormDirection direction = NormDirection::fwd;
  Precision precision = Precision::fp16;
  NormSelection selection = NormSelection::heuristic;
  std::int64_t rows() const { return batch * seq; }
};

struct BatchnormSpec {
  std::int64_t batch = 1, channels = 64, height = 56, width = 56;
  NormPhase phase = NormPhase::training;
  NormDirection direction = NormDirection::fwd;
  Precision precision = Precision::fp16;
  // Batchnorm inference runs cuDNN's legacy call (no graph engine): heuristic only.
  NormSelection selection = NormSelection::heuristic;
  // Elements normalized per channel: N H W.
  std::int64_t per_channel() const { return batch * height * width; }
};

// Throw a usage error naming the field, the value and the fix.
void validate(const LayernormSpec& spec);
void validate(const BatchnormSpec& spec);

// FLOPs of one call per normalized element and per group (the table above).
struct NormFlopRates {
  double per_element = 0;
  double per_group = 0;
};
NormFlopRates norm_flop_rates(const LayernormSpec& spec);
NormFlopRates norm_flop_rates(const BatchnormSpec& spec);

double norm_flops(const LayernormSpec& spec);
double norm_flops(const BatchnormSpec& spec);
double norm_min_bytes(const LayernormSpec& spec);
double norm_min_bytes(const BatchnormSpec& spec);

// "layernorm_fwd", "rmsnorm_bwd", "batchnorm_fwd_inference", ...: kind, direction
// and, for the forward, the phase.
std::string norm_op_name(const LayernormSpec& spec);
std::string norm_op_name(const BatchnormSpec& spec);

// One tensor of a normalization call: its role, element count and stored type.
struct NormTensor {
  std::string role;  // "x", "y", "scale", "bias", "mean", "inv_variance", "running_mean", ...
  std::int64_t elements = 0;
  DataType type = DataType::fp32;
  bool written = false;  // an output of the call
};
// Every tensor of the call (the min_bytes sum), inputs first.
std::vector<NormTensor> norm_tensors(const LayernormSpec& spec);
std::vector<NormTensor> norm_tensors(const BatchnormSpec& spec);

// A point's params as a spec (the families' keys, sweeps/norm_family.cpp); the
// problem validates the spec as a whole.
LayernormSpec layernorm_spec_from_params(const nlohmann::json& point);
BatchnormSpec batchnorm_spec_from_params(const nlohmann::json& point);

// The problem of one validated spec (the constructor validates: usage error),
// on the operators' one template (as GemmProblem is), for both families.
template <typename Spec>
class NormProblem final : public Problem {
 public:
  explicit NormProblem(Spec spec);
  std::string op() const override { return norm_op_name(spec_); }
  // The shape, kind (layernorm) or layout (batchnorm), phase, direction, the stored
  // types, epsilon (and batchnorm's momentum) and the algorithm selection.
  nlohmann::json params() const override;
  Precision precision() const override { return spec_.precision; }
  MathMode math_mode() const override { return MathMode::fma_only; }
  double flops() const override { return norm_flops(spec_); }
  double min_bytes() const override { return norm_min_bytes(spec_); }
  // The activations (x; bwd also dy and the saved statistics) in, y (bwd: dx) and
  // the saved statistics out; scale, bias, their gradients and the running
  // statistics are parameters, resident between calls.
  std::vector<TensorArgument> inputs() const override;
  std::vector<TensorArgument> outputs() const override;
  const Spec& spec() const noexcept { return spec_; }

 private:
  Spec spec_;
};
using LayernormProblem = NormProblem<LayernormSpec>;
using BatchnormProblem = NormProblem<BatchnormSpec>;

// ---- References in double ---------------------------------------------------
// One group's normalization: `x` holds the group's elements (a row of layernorm,
// a channel of batchnorm), scale and bias per element (batchnorm: the channel's
// one value repeated by the caller, or a span of one, broadcast).

struct NormGroupStats {
  double mean = 0;          // layer / batch: the mean; rms: 0
  double inv_variance = 0;  // 1 / sqrt(var + eps); rms: 1 / sqrt(mean(x^2) + eps)
  double variance = 0;      // biased (layer / batch) or the mean square (rms)
};
NormGroupStats norm_group_stats(std::span<const double> x, NormKind kind, double epsilon);

// y_i = (x_i - mean) inv scale_i + bias_i (rms: x_i inv scale_i (+ bias_i));
// scale and bias of size 1 broadcast.
std::vector<double> norm_forward(std::span<const double> x, const NormGroupStats& stats,
                                 std::span<const double> scale, std::span<const double> bias);

// The gradients of one group: dx of its elements and its contributions to
// dscale and dbias (per element; batchnorm sums them over the channel).
struct NormGroupGradients {
  std::vector<double> dx;
  std::vector<double> dscale;  // dy_i xhat_i
  std::vector<double> dbias;   // dy_i
};
NormGroupGradients norm_backward(std::span<const double> x, std::span<const double> dy,
                                 const NormGroupStats& stats, std::span<const double> scale,
                                 NormKind kind);

}  // namespace timeroof
