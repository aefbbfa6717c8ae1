// The normalization problems (sweeps/norm_problem.hpp): names, validation,
// analytic counts and the double references, host only.
#include "sweeps/norm_problem.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace timeroof {

const char* to_string(NormKind kind) {
  return kind == NormKind::layer ? "layer" : "rms";
}
const char* to_string(NormPhase phase) {
  return phase == NormPhase::inference ? "inference" : "training";
}
const char* to_string(NormDirection direction) {
  return direction == NormDirection::fwd ? "fwd" : "bwd";
}
const char* to_string(NormSelection selection) {
  return selection == NormSelection::heuristic ? "heuristic" : "fastest";
}

namespace {

template <typename Enum, std::size_t N>
Enum parse_enum(const std::string& family, const char* key, std::string_view text,
                const Enum (&values)[N]) {
  std::string allowed;
  for (Enum value : values) {
    if (text == to_string(value)) return value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(value));
  }
  throw usage_error(family + ": " + key + " = '" + std::string(text) +
                    "' is not a known value; allowed: " + allowed);
}

void require_norm_precision(const std::string& family, Precision precision) {
  for (Precision allowed : kNormPrecisions)
    if (precision == allowed) return;
  throw usage_error(family + ": precision = " + to_string(precision) +
                    " is not supported (cuDNN's norm engines take fp32, fp16 and bf16 data "
                    "with fp32 statistics); allowed: fp32, fp16, bf16");
}

void require_training_for_bwd(const std::string& family, NormPhase phase, NormDirection direction) {
  if (direction == NormDirection::bwd && phase != NormPhase::training)
    throw usage_error(family +
                      ": direction = bwd with phase = inference: the backward pass needs the "
                      "training forward's saved statistics; allowed: phase = training");
}

DataType data_type(Precision precision) {
  return storage_type(precision);
}

double total_bytes(const std::vector<NormTensor>& tensors) {
  double bytes = 0;
  for (const NormTensor& t : tensors)
    bytes += static_cast<double>(t.elements) * static_cast<double>(element_bytes(t.type));
  return bytes;
}

std::vector<TensorArgument> arguments(const std::vector<NormTensor>& tensors, bool written,
                                      bool (*is_parameter)(const std::string& role)) {
  std::vector<TensorArgument> args;
  for (const NormTensor& t : tensors)
    if (t.written == written && !is_parameter(t.role))
      args.push_back({t.role, static_cast<std::size_t>(t.elements) * element_bytes(t.type)});
  return args;
}

// Scale, bias, their gradients and the running statistics stay resident on the
// GPU between calls, as a framework keeps them (Operator::inputs()).
bool is_parameter(const std::string& role) {
  return role == "scale" || role == "bias" || role == "dscale" || role == "dbias" ||
         role == "running_mean" || role == "running_variance" || role == "next_running_mean" ||
         role == "next_running_variance";
}

}  // namespace

NormKind parse_norm_kind(const std::string& family, std::string_view text) {
  return parse_enum(family, "kind", text, kAllNormKinds);
}
NormPhase parse_norm_phase(const std::string& family, std::string_view text) {
  return parse_enum(family, "phase", text, kAllNormPhases);
}
NormDirection parse_norm_direction(const std::string& family, std::string_view text) {
  return parse_enum(family, "direction", text, kAllNormDirections);
}
NormSelection parse_norm_selection(const std::string& family, std::string_view text) {
  return parse_enum(family, "algorithm", text, kAllNormSelections);
}

// ---- layernorm ----------------------------------------------------------------

void validate(const LayernormSpec& spec) {
  for (const auto& [key, value] : {std::pair{"batch", spec.batch}, std::pair{"seq", spec.seq},
                                   std::pair{"hidden", spec.hidden}})
    if (value < 1 || value > INT32_MAX)
      throw usage_error(std::string("layernorm: ") + key + " = " + std::to_string(value) +
                        " is out of range; allowed: 1 .. " + std::to_string(INT32_MAX));
  require_norm_precision("layernorm", spec.precision);
  require_training_for_bwd("layernorm", spec.phase, spec.direction);
  if (spec.kind == NormKind::layer && spec.hidden < 2)
    throw usage_error(
        "layernorm: kind = layer with hidden = 1 normalizes every element to 0 "
        "(its variance is 0); allowed: hidden >= 2, or kind = rms");
  (void)tensor_bytes("layernorm", "x",
                     {{"batch", spec.batch}, {"seq", spec.seq}, {"hidden", spec.hidden}},
                     element_bytes(spec.precision), "smaller batch, seq or hidden");
}

NormFlopRates norm_flop_rates(const LayernormSpec& spec) {
  const bool layer = spec.kind == NormKind::layer;
  if (spec.direction == NormDirection::bwd)
    return layer ? NormFlopRates{13, 2} : NormFlopRates{9, 1};
  return layer ? NormFlopRates{8, 4} : NormFlopRates{4, 3};
}

double norm_flops(const LayernormSpec& spec) {
  const NormFlopRates rates = norm_flop_rates(spec);
  const auto rows = static_cast<double>(spec.rows());
  return rows * (rates.per_element * static_cast<double>(spec.hidden) + rates.per_group);
}

std::vector<NormTensor> norm_tensors(const LayernormSpec& spec) {
  const DataType data = data_type(spec.precision);
  const std::int64_t elements = spec.rows() * spec.hidden;
  const bool layer = spec.kind == NormKind::layer;
  std::vector<NormTensor> tensors = {{"x", elements, data, false}};
  if (spec.direction == NormDirection::bwd) {
    tensors.push_back({"dy", elements, data, false});
    tensors.push_back({"scale", spec.hidden, DataType::fp32, false});
    if (layer) tensors.push_back({"mean", spec.rows(), DataType::fp32, false});
    tensors.push_back({"inv_variance", spec.rows(), DataType::fp32, false});
    tensors.push_back({"dx", elements, data, true});
    tensors.push_back({"dscale", spec.hidden, DataType::fp32, true});
    if (layer) tensors.push_back({"dbias", spec.hidden, DataType::fp32, true});
    return tensors;
  }
  tensors.push_back({"scale", spec.hidden, DataType::fp32, false});
  if (layer) tensors.push_back({"bias", spec.hidden, DataType::fp32, false});
  tensors.push_back({"y", elements, data, true});
  if (spec.phase == NormPhase::training) {
    if (layer) tensors.push_back({"mean", spec.rows(), DataType::fp32, true});
    tensors.push_back({"inv_variance", spec.rows(), DataType::fp32, true});
  }
  return tensors;
}

double norm_min_bytes(const LayernormSpec& spec) {
  return total_bytes(norm_tensors(spec));
}

std::string norm_op_name(const LayernormSpec& spec) {
  std::string name = spec.kind == NormKind::layer ? "layernorm_" : "rmsnorm_";
  name += to_string(spec.direction);
  if (spec.direction == NormDirection::fwd) name += std::string("_") + to_string(spec.phase);
  return name;
}

// ---- batchnorm ----------------------------------------------------------------

void validate(const BatchnormSpec& spec) {
  for (const auto& [key, value] :
       {std::pair{"batch", spec.batch}, std::pair{"channels", spec.channels},
        std::pair{"height", spec.height}, std::pair{"width", spec.width}})
    if (value < 1 || value > INT32_MAX)
      throw usage_error(std::string("batchnorm: ") + key + " = " + std::to_string(value) +
                        " is out of range; allowed: 1 .. " + std::to_string(INT32_MAX));
  require_norm_precision("batchnorm", spec.precision);
  require_training_for_bwd("batchnorm", spec.phase, spec.direction);
  (void)tensor_bytes("batchnorm", "x",
                     {{"batch", spec.batch},
                      {"channels", spec.channels},
                      {"height", spec.height},
                      {"width", spec.width}},
                     element_bytes(spec.precision), "smaller batch, channels, height or width");
  if (spec.phase == NormPhase::inference && spec.direction == NormDirection::fwd &&
      spec.selection == NormSelection::fastest)
    throw usage_error(
        "batchnorm: algorithm = fastest with phase = inference: cuDNN's graph has "
        "no engine for batchnorm inference, which runs cuDNN's one legacy call; "
        "allowed: algorithm = heuristic");
  if (spec.phase == NormPhase::training && spec.per_channel() < 2)
    throw usage_error("batchnorm: phase = training with batch x height x width = " +
                      std::to_string(spec.per_channel()) +
                      ": the running variance is unbiased (divides by N H W - 1); allowed: "
                      "batch x height x width >= 2, or phase = inference");
}

NormFlopRates norm_flop_rates(const BatchnormSpec& spec) {
  if (spec.direction == NormDirection::bwd) return {13, 2};
  if (spec.phase == NormPhase::inference) return {4, 2};
  return {8, 4 + 7};
}

double norm_flops(const BatchnormSpec& spec) {
  const NormFlopRates rates = norm_flop_rates(spec);
  return static_cast<double>(spec.channels) *
         (rates.per_element * static_cast<double>(spec.per_channel()) + rates.per_group);
}

std::vector<NormTensor> norm_tensors(const BatchnormSpec& spec) {
  const DataType data = data_type(spec.precision);
  const std::int64_t elements = spec.per_channel() * spec.channels;
  const std::int64_t c = spec.channels;
  std::vector<NormTensor> tensors = {{"x", elements, data, false}};
  if (spec.direction == NormDirection::bwd) {
    tensors.push_back({"dy", elements, data, false});
    tensors.push_back({"scale", c, DataType::fp32, false});
    tensors.push_back({"mean", c, DataType::fp32, false});
    tensors.push_back({"inv_variance", c, DataType::fp32, false});
    tensors.push_back({"dx", elements, data, true});
    tensors.push_back({"dscale", c, DataType::fp32, true});
    tensors.push_back({"dbias", c, DataType::fp32, true});
    return tensors;
  }
  tensors.push_back({"scale", c, DataType::fp32, false});
  tensors.push_back({"bias", c, DataType::fp32, false});
  if (spec.phase == NormPhase::inference) {
    tensors.push_back({"running_mean", c, DataType::fp32, false});
    tensors.push_back({"running_variance", c, DataType::fp32, false});
    tensors.push_back({"y", elements, data, true});
    return tensors;
  }
  tensors.push_back({"running_mean", c, DataType::fp32, false});
  tensors.push_back({"running_variance", c, DataType::fp32, false});
  tensors.push_back({"y", elements, data, true});
  tensors.push_back({"mean", c, DataType::fp32, true});
  tensors.push_back({"inv_variance", c, DataType::fp32, true});
  tensors.push_back({"next_running_mean", c, DataType::fp32, true});
  tensors.push_back({"next_running_variance", c, DataType::fp32, true});
  return tensors;
}

double norm_min_bytes(const BatchnormSpec& spec) {
  return total_bytes(norm_tensors(spec));
}

std::string norm_op_name(const BatchnormSpec& spec) {
  std::string name = std::string("batchnorm_") + to_string(spec.direction);
  if (spec.direction == NormDirection::fwd) name += std::string("_") + to_string(spec.phase);
  return name;
}

// ---- the problems -------------------------------------------------------------

namespace {

// The keys both families' params share.
template <typename Spec>
nlohmann::json shared_params(const Spec& spec) {
  return {{"phase", to_string(spec.phase)},
          {"direction", to_string(spec.direction)},
          {"data_type", to_string(data_type(spec.precision))},
          {"parameter_type", "fp32"},
          {"statistics_type", "fp32"},
          {"epsilon", kNormEpsilon},
          {"algorithm", to_string(spec.selection)}};
}

}  // namespace

template <>
nlohmann::json NormProblem<LayernormSpec>::params() const {
  nlohmann::json params = shared_params(spec_);
  params.update({{"batch", spec_.batch},
                 {"seq", spec_.seq},
                 {"hidden", spec_.hidden},
                 {"rows", spec_.rows()},
                 {"kind", to_string(spec_.kind)}});
  return params;
}

template <>
nlohmann::json NormProblem<BatchnormSpec>::params() const {
  nlohmann::json params = shared_params(spec_);
  params.update({{"batch", spec_.batch},
                 {"channels", spec_.channels},
                 {"height", spec_.height},
                 {"width", spec_.width},
                 {"layout", "nhwc"},
                 {"momentum", kBatchnormMomentum}});
  return params;
}

template <typename Spec>
NormProblem<Spec>::NormProblem(Spec spec) : spec_(std::move(spec)) {
  validate(spec_);
}

template <typename Spec>
std::vector<TensorArgument> NormProblem<Spec>::inputs() const {
  return arguments(norm_tensors(spec_), false, is_parameter);
}

template <typename Spec>
std::vector<TensorArgument> NormProblem<Spec>::outputs() const {
  return arguments(norm_tensors(spec_), true, is_parameter);
}

template class NormProblem<LayernormSpec>;
template class NormProblem<BatchnormSpec>;

// ---- references ---------------------------------------------------------------

NormGroupStats norm_group_stats(std::span<const double> x, NormKind kind, double epsilon) {
  NormGroupStats stats;
  const auto n = static_cast<double>(x.size());
  if (kind == NormKind::layer) {
    double sum = 0;
    for (double v : x) sum += v;
    stats.mean = sum / n;
  }
  double squares = 0;
  for (double v : x) squares += (v - stats.mean) * (v - stats.mean);
  stats.variance = squares / n;
  stats.inv_variance = 1.0 / std::sqrt(stats.variance + epsilon);
  return stats;
}

namespace {
double at_or_broadcast(std::span<const double> values, std::size_t i) {
  return values.size() == 1 ? values[0] : values[i];
}
}  // namespace

std::vector<double> norm_forward(std::span<const double> x, const NormGroupStats& stats,
                                 std::span<const double> scale, std::span<const double> bias) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    y[i] = (x[i] - stats.mean) * stats.inv_variance * at_or_broadcast(scale, i);
    if (!bias.empty()) y[i] += at_or_broadcast(bias, i);
  }
  return y;
}

NormGroupGradients norm_backward(std::span<const double> x, std::span<const double> dy,
                                 const NormGroupStats& stats, std::span<const double> scale,
                                 NormKind kind) {
  const std::size_t n = x.size();
  NormGroupGradients gradients;
  gradients.dx.resize(n);
  gradients.dscale.resize(n);
  gradients.dbias.assign(dy.begin(), dy.end());
  std::vector<double> xhat(n), g(n);
  double sum_g = 0, sum_g_xhat = 0;
  for (std::size_t i = 0; i < n; ++i) {
    xhat[i] = (x[i] - stats.mean) * stats.inv_variance;
    g[i] = dy[i] * at_or_broadcast(scale, i);
    gradients.dscale[i] = dy[i] * xhat[i];
    sum_g += g[i];
    sum_g_xhat += g[i] * xhat[i];
  }
  const double mean_g = kind == NormKind::layer ? sum_g / static_cast<double>(n) : 0;
  const double mean_g_xhat = sum_g_xhat / static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i)
    gradients.dx[i] = stats.inv_variance * (g[i] - mean_g - xhat[i] * mean_g_xhat);
  return gradients;
}

}  // namespace timeroof
