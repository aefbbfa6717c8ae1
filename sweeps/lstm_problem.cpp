// The LSTM problem (sweeps/lstm_problem.hpp): names, validation, analytic
// counts and params <-> spec, host only: no GPU and no cuDNN.
#include <algorithm>
#include <climits>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "sweeps/lstm_problem.hpp"

namespace timeroof {

// ---------------------------------------------------------------------------
// Names, validation and analytic counts (host only, no GPU).

bool is_backward(LstmPass pass) {
  return pass == LstmPass::backward_data || pass == LstmPass::backward_weights;
}

const char* to_string(LstmPass pass) {
  switch (pass) {
    case LstmPass::inference:
      return "inference";
    case LstmPass::training_forward:
      return "training_forward";
    case LstmPass::backward_data:
      return "backward_data";
    case LstmPass::backward_weights:
      return "backward_weights";
  }
  return "?";
}

const char* to_string(LstmAlgorithm algorithm) {
  switch (algorithm) {
    case LstmAlgorithm::standard:
      return "standard";
    case LstmAlgorithm::persist_static:
      return "persist_static";
    case LstmAlgorithm::persist_dynamic:
      return "persist_dynamic";
    case LstmAlgorithm::persist_static_small_h:
      return "persist_static_small_h";
  }
  return "?";
}

const char* cudnn_name(LstmAlgorithm algorithm) {
  switch (algorithm) {
    case LstmAlgorithm::standard:
      return "CUDNN_RNN_ALGO_STANDARD";
    case LstmAlgorithm::persist_static:
      return "CUDNN_RNN_ALGO_PERSIST_STATIC";
    case LstmAlgorithm::persist_dynamic:
      return "CUDNN_RNN_ALGO_PERSIST_DYNAMIC";
    case LstmAlgorithm::persist_static_small_h:
      return "CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H";
  }
  return "?";
}

LstmPass parse_lstm_pass(std::string_view text) {
  for (LstmPass p : {LstmPass::inference, LstmPass::training_forward, LstmPass::backward_data,
                     LstmPass::backward_weights})
    if (text == to_string(p)) return p;
  throw usage_error("lstm: pass: unknown value '" + std::string(text) +
                    "'; allowed: inference, training_forward, backward_data, backward_weights");
}

LstmAlgorithm parse_lstm_algorithm(std::string_view text) {
  for (LstmAlgorithm a : {LstmAlgorithm::standard, LstmAlgorithm::persist_static,
                          LstmAlgorithm::persist_dynamic, LstmAlgorithm::persist_static_small_h})
    if (text == to_string(a)) return a;
  throw usage_error("lstm: algorithm: unknown value '" + std::string(text) +
                    "'; allowed: standard, persist_static, persist_dynamic, "
                    "persist_static_small_h");
}

namespace {

void require_range(const char* field, std::int64_t value, std::int64_t low) {
  if (value < low || value > INT_MAX)
    throw usage_error(std::string("lstm: ") + field + " = " + std::to_string(value) +
                      " is out of range; allowed: " + std::to_string(low) + " .. " +
                      std::to_string(INT_MAX));
}

double d(std::int64_t value) {
  return static_cast<double>(value);
}

}  // namespace

MathMode resolved_math(const LstmSpec& spec) {
  if (spec.math) return *spec.math;
  return spec.precision == Precision::fp32 ? MathMode::fma_only : MathMode::tensor;
}

void validate(const LstmSpec& spec) {
  const std::pair<const char*, std::int64_t> at_least_one[] = {{"batch", spec.batch},
                                                               {"seq_length", spec.seq_length},
                                                               {"input_size", spec.input_size},
                                                               {"hidden_size", spec.hidden_size},
                                                               {"layers", spec.layers}};
  for (const auto& [field, value] : at_least_one) require_range(field, value, 1);
  // cuDNN takes the vector widths as int: the widest is D H (y) and 4 H (gates).
  if (4 * spec.hidden_size > INT_MAX)
    throw usage_error("lstm: hidden_size = " + std::to_string(spec.hidden_size) +
                      " is too large (4 hidden_size must fit an int); allowed: 1 .. " +
                      std::to_string(INT_MAX / 4));
  switch (spec.pass) {
    case LstmPass::inference:
    case LstmPass::training_forward:
    case LstmPass::backward_data:
    case LstmPass::backward_weights:
      break;
    default:
      throw usage_error(
          "lstm: pass is not a known value; allowed: inference, training_forward, "
          "backward_data, backward_weights");
  }
  switch (spec.precision) {
    case Precision::fp32:
    case Precision::tf32:
    case Precision::fp16:
    case Precision::bf16:
      break;
    default:
      throw usage_error("lstm: precision is not a known value; allowed: fp32, tf32, fp16, bf16");
  }
  switch (spec.algorithm) {
    case LstmAlgorithm::standard:
    case LstmAlgorithm::persist_static:
    case LstmAlgorithm::persist_dynamic:
    case LstmAlgorithm::persist_static_small_h:
      break;
    default:
      throw usage_error(
          "lstm: algorithm is not a known value; allowed: standard, persist_static, "
          "persist_dynamic, persist_static_small_h");
  }
  for (LstmShape shape : {LstmShape::x, LstmShape::y, LstmShape::state, LstmShape::weights})
    (void)lstm_tensor_bytes(spec, shape);
  if (spec.math && *spec.math != MathMode::tensor && *spec.math != MathMode::fma_only)
    throw usage_error("lstm: math is not a known value; allowed: tensor, fma_only");
  if (spec.precision == Precision::fp32 && resolved_math(spec) == MathMode::tensor)
    throw usage_error(
        "lstm: math = tensor with precision = fp32: fp32 tensors on Tensor Cores are "
        "precision tf32; allowed with fp32: fma_only");
  if (spec.precision == Precision::tf32 && resolved_math(spec) == MathMode::fma_only)
    throw usage_error(
        "lstm: math = fma_only with precision = tf32: TF32 exists only on Tensor Cores "
        "(fp32 on FMA units is precision fp32); allowed with tf32: tensor");
}

std::int64_t lstm_directions(const LstmSpec& spec) {
  return spec.bidirectional ? 2 : 1;
}

std::int64_t lstm_layer_input_size(const LstmSpec& spec, std::int64_t layer) {
  return layer == 0 ? spec.input_size : lstm_directions(spec) * spec.hidden_size;
}

double lstm_x_elements(const LstmSpec& spec) {
  return d(spec.seq_length) * d(spec.batch) * d(spec.input_size);
}

double lstm_y_elements(const LstmSpec& spec) {
  return d(spec.seq_length) * d(spec.batch) * d(lstm_directions(spec)) * d(spec.hidden_size);
}

double lstm_state_elements(const LstmSpec& spec) {
  return d(spec.layers) * d(lstm_directions(spec)) * d(spec.batch) * d(spec.hidden_size);
}

// Layer 0 reads I features, the L - 1 deeper layers D H each: sums over layers in
// closed form (layers may be up to INT_MAX; a loop over them took seconds).
double lstm_weight_elements(const LstmSpec& spec) {
  const double h = d(spec.hidden_size);
  const auto per_layer = [&](double input) { return 4 * h * input + 4 * h * h + 8 * h; };
  return d(lstm_directions(spec)) *
         (per_layer(d(spec.input_size)) +
          d(spec.layers - 1) * per_layer(d(lstm_layer_input_size(spec, 1))));
}

double lstm_gemm_flops(const LstmSpec& spec) {
  const double h = d(spec.hidden_size);
  const double inputs =
      d(spec.input_size) + h + d(spec.layers - 1) * (d(lstm_layer_input_size(spec, 1)) + h);
  return 2 * 4 * h * inputs * d(spec.batch) * d(lstm_directions(spec)) * d(spec.seq_length);
}

std::int64_t lstm_tensor_bytes(const LstmSpec& spec, LstmShape shape) {
  const std::size_t element = element_bytes(spec.precision);
  const std::int64_t t = spec.seq_length, b = spec.batch, i = spec.input_size, h = spec.hidden_size,
                     l = spec.layers, dirs = lstm_directions(spec);
  switch (shape) {
    case LstmShape::x:
      return tensor_bytes("lstm", "x", {{"seq_length", t}, {"batch", b}, {"input_size", i}},
                          element, "smaller seq_length, batch or input_size");
    case LstmShape::y:
      return tensor_bytes(
          "lstm", "y", {{"seq_length", t}, {"batch", b}, {"directions", dirs}, {"hidden_size", h}},
          element, "smaller seq_length, batch or hidden_size");
    case LstmShape::state:
      return tensor_bytes("lstm", "hx",
                          {{"layers", l}, {"directions", dirs}, {"batch", b}, {"hidden_size", h}},
                          element, "fewer layers, or smaller batch or hidden_size");
    case LstmShape::weights: {
      // D (4 H I + 4 H H + 8 H) for layer 0, D (4 H D H + 4 H H + 8 H) for each deeper one.
      const auto per_layer = [&](std::int64_t input) {
        return checked_sum(
            {checked_product({4, h, input}), checked_product({4, h, h}), checked_product({8, h})});
      };
      const std::optional<std::int64_t> first = per_layer(i), deeper = per_layer(dirs * h);
      const std::optional<std::int64_t> elements =
          first && deeper ? checked_sum({checked_product({dirs, *first}),
                                         checked_product({l - 1, dirs, *deeper})})
                          : std::nullopt;
      const std::optional<std::int64_t> bytes =
          elements ? checked_product({*elements, static_cast<std::int64_t>(element)})
                   : std::nullopt;
      if (!bytes)
        throw tensor_too_large("lstm",
                               "w = directions (4 hidden_size (input_size + hidden_size + 2)) + "
                               "(layers - 1) directions (4 hidden_size ((directions + 1) "
                               "hidden_size + 2)) elements (layers = " +
                                   std::to_string(l) + ", directions = " + std::to_string(dirs) +
                                   ", input_size = " + std::to_string(i) +
                                   ", hidden_size = " + std::to_string(h) + ")",
                               element, "fewer layers, or smaller input_size or hidden_size");
      return *bytes;
    }
  }
  return 0;
}

double lstm_flops(const LstmSpec& spec) {
  double elementwise = kLstmForwardElementwiseFlops;
  if (spec.pass == LstmPass::backward_data) elementwise = kLstmBackwardDataElementwiseFlops;
  if (spec.pass == LstmPass::backward_weights) elementwise = kLstmBackwardWeightsElementwiseFlops;
  // Elementwise work per hidden unit, batch entry, step, direction and layer.
  const double units = d(spec.layers) * d(lstm_directions(spec)) * d(spec.seq_length) *
                       d(spec.hidden_size) * d(spec.batch);
  return lstm_gemm_flops(spec) + elementwise * units;
}

double lstm_min_bytes(const LstmSpec& spec) {
  const double x = lstm_x_elements(spec);
  const double y = lstm_y_elements(spec);
  const double s = lstm_state_elements(spec);
  const double p = lstm_weight_elements(spec);
  double elements = 0;
  switch (spec.pass) {
    case LstmPass::inference:
    case LstmPass::training_forward:
      elements = x + 2 * s + p + y + 2 * s;
      break;
    case LstmPass::backward_data:
      elements = 2 * y + 4 * s + p + x + 2 * s;
      break;
    case LstmPass::backward_weights:
      elements = x + s + y + p;
      break;
  }
  return static_cast<double>(element_bytes(spec.precision)) * elements;
}

std::string lstm_op_name(LstmPass pass) {
  return std::string("lstm_") + to_string(pass);
}

// ---------------------------------------------------------------------------
// Params <-> spec.

namespace {

constexpr const char* kParamKeys[] = {"batch",  "seq_length",    "input_size", "hidden_size",
                                      "layers", "bidirectional", "pass",       "precision",
                                      "math",   "algorithm"};

std::string key_list() {
  std::string text;
  for (const char* key : kParamKeys) text += (text.empty() ? "" : ", ") + std::string(key);
  return text;
}

std::int64_t integer_param(const nlohmann::json& params, const char* key, std::int64_t fallback) {
  if (!params.contains(key)) return fallback;
  const nlohmann::json& value = params.at(key);
  if (!value.is_number_integer())
    throw usage_error(std::string("lstm: ") + key + " = " + value.dump() +
                      " is not an integer; allowed: 1 .. " + std::to_string(INT_MAX));
  return value.get<std::int64_t>();
}

std::string text_param(const nlohmann::json& params, const char* key, const char* allowed) {
  const nlohmann::json& value = params.at(key);
  if (!value.is_string())
    throw usage_error(std::string("lstm: ") + key + " = " + value.dump() +
                      " is not text; allowed: " + allowed);
  return value.get<std::string>();
}

}  // namespace

LstmSpec lstm_spec_from_params(const nlohmann::json& params) {
  if (!params.is_object())
    throw usage_error("lstm: a point must be an object of parameters; allowed keys: " + key_list());
  for (const auto& item : params.items()) {
    const bool known = std::any_of(std::begin(kParamKeys), std::end(kParamKeys),
                                   [&](const char* key) { return item.key() == key; });
    if (!known) throw usage_error("lstm: unknown key '" + item.key() + "'; allowed: " + key_list());
  }
  LstmSpec spec;
  spec.batch = integer_param(params, "batch", spec.batch);
  spec.seq_length = integer_param(params, "seq_length", spec.seq_length);
  spec.input_size = integer_param(params, "input_size", spec.input_size);
  spec.hidden_size = integer_param(params, "hidden_size", spec.hidden_size);
  spec.layers = integer_param(params, "layers", spec.layers);
  if (params.contains("bidirectional")) {
    const nlohmann::json& value = params.at("bidirectional");
    if (value.is_boolean()) {
      spec.bidirectional = value.get<bool>();
    } else if (value.is_number_integer() &&
               (value.get<std::int64_t>() == 0 || value.get<std::int64_t>() == 1)) {
      spec.bidirectional = value.get<std::int64_t>() == 1;
    } else {
      throw usage_error("lstm: bidirectional = " + value.dump() +
                        " is not a direction choice; allowed: 0 (unidirectional), 1 "
                        "(bidirectional), false, true");
    }
  }
  if (params.contains("pass"))
    spec.pass = parse_lstm_pass(
        text_param(params, "pass", "inference, training_forward, backward_data, backward_weights"));
  if (params.contains("precision"))
    spec.precision = parse_precision(text_param(params, "precision", "fp32, tf32, fp16, bf16"),
                                     kOperatorPrecisions);
  if (params.contains("math")) {
    // auto: the precision's default (fp32 -> fma_only, others -> tensor), as conv2d.
    const std::string math = text_param(params, "math", "auto, tensor, fma_only");
    if (math != "auto") spec.math = parse_math_mode(math);
  }
  if (params.contains("algorithm"))
    spec.algorithm = parse_lstm_algorithm(text_param(
        params, "algorithm", "standard, persist_static, persist_dynamic, persist_static_small_h"));
  return spec;
}

nlohmann::json lstm_params(const LstmSpec& spec) {
  return {{"batch", spec.batch},
          {"seq_length", spec.seq_length},
          {"input_size", spec.input_size},
          {"hidden_size", spec.hidden_size},
          {"layers", spec.layers},
          {"bidirectional", spec.bidirectional ? 1 : 0},
          {"pass", to_string(spec.pass)},
          {"precision", to_string(spec.precision)},
          {"math", to_string(resolved_math(spec))},
          {"algorithm", to_string(spec.algorithm)}};
}

// ---------------------------------------------------------------------------
// The problem: its members read as Conv2dProblem's on purpose (one template;
// `duplicates` pairs the two files' names, switches and tensor lists).

LstmProblem::LstmProblem(LstmSpec spec) : spec_(std::move(spec)) {
  validate(spec_);
}

std::string LstmProblem::op() const {
  return lstm_op_name(spec_.pass);
}

nlohmann::json LstmProblem::params() const {
  nlohmann::json params = lstm_params(spec_);
  params.erase("precision");  // a Point carries precision and math mode in fields of their own
  params.erase("math");
  return params;
}

MathMode LstmProblem::math_mode() const {
  return resolved_math(spec_);
}
double LstmProblem::flops() const {
  return lstm_flops(spec_);
}
double LstmProblem::min_bytes() const {
  return lstm_min_bytes(spec_);
}

double LstmProblem::expected_launches() const {
  const double stacks = static_cast<double>(spec_.layers * lstm_directions(spec_));
  if (spec_.pass == LstmPass::backward_weights) return 4 * stacks;
  return (2 * static_cast<double>(spec_.seq_length) + 1) * stacks;
}

namespace {

// The call's tensors by role; each has the shape of x, y or a state (h, c).
std::vector<TensorArgument> lstm_tensors(const LstmSpec& spec,
                                         std::initializer_list<const char*> roles) {
  std::vector<TensorArgument> tensors;
  for (const std::string role : roles) {
    const std::string name = role.size() > 1 && role[0] == 'd' ? role.substr(1) : role;
    const LstmShape shape = name == "x"   ? LstmShape::x
                            : name == "y" ? LstmShape::y
                                          : LstmShape::state;
    tensors.push_back({role, static_cast<std::size_t>(lstm_tensor_bytes(spec, shape))});
  }
  return tensors;
}

}  // namespace

std::vector<TensorArgument> LstmProblem::inputs() const {
  switch (spec_.pass) {
    case LstmPass::inference:
    case LstmPass::training_forward:
      return lstm_tensors(spec_, {"x", "hx", "cx"});
    case LstmPass::backward_data:
      return lstm_tensors(spec_, {"y", "dy", "hx", "dhy", "cx", "dcy"});
    case LstmPass::backward_weights:
      return lstm_tensors(spec_, {"x", "hx", "y"});
  }
  return {};
}

std::vector<TensorArgument> LstmProblem::outputs() const {
  switch (spec_.pass) {
    case LstmPass::inference:
    case LstmPass::training_forward:
      return lstm_tensors(spec_, {"y", "hy", "cy"});
    case LstmPass::backward_data:
      return lstm_tensors(spec_, {"dx", "dhx", "dcx"});
    case LstmPass::backward_weights:
      return {{"dw", static_cast<std::size_t>(lstm_tensor_bytes(spec_, LstmShape::weights))}};
  }
  return {};
}

}  // namespace timeroof
