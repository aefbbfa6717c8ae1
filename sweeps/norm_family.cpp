// The normalization families (sweeps/norm.hpp, norm_problem.hpp).
//
// layernorm keys: batch, seq (rows = batch x seq tokens), hidden (the normalized
// dimension), kind (layer | rms), phase (inference | training), direction
// (fwd | bwd: training only), precision (fp32 | fp16 | bf16).
// Default sweep (27 points): BERT-base (hidden 768) LayerNorm at 128, 1024,
// 4096 and 16384 tokens and LLaMA-7B (hidden 4096) RMSNorm at 128, 2048 and
// 8192 tokens, each fwd inference, fwd training and bwd, in fp16; the largest
// of each also in bf16.
//
// batchnorm keys: batch, channels, height, width (NHWC), phase, direction,
// precision. Default sweep (24 points): ResNet-50's 64 ch 112 x 112 (after
// conv1), 256 ch 56 x 56 (stage 1) and 2048 ch 7 x 7 (stage 4) at batch 8
// and 32, fwd training, fwd inference and bwd, in fp16, the 256 ch point also
// in bf16 at batch 32.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/family.hpp"
#include "sweeps/norm_problem.hpp"

namespace timeroof {
namespace {

using nlohmann::json;

template <typename Enum, std::size_t N>
std::vector<std::string> names(const Enum (&values)[N]) {
  std::vector<std::string> spelled;
  for (Enum value : values) spelled.emplace_back(to_string(value));
  return spelled;
}

ParamAxis precision_axis() {
  return text_axis("precision",
                   "x, y and their gradients: fp32, fp16 or bf16 (scale, bias and statistics fp32)",
                   names(kNormPrecisions), json::array({"fp16", "bf16"}));
}
ParamAxis phase_axis(const char* help, json defaults) {
  return text_axis("phase", help, names(kAllNormPhases), std::move(defaults));
}
ParamAxis direction_axis() {
  return text_axis("direction",
                   "fwd, or bwd (dx, dscale, dbias from the saved statistics of a training fwd "
                   "run in prepare; phase = training only)",
                   names(kAllNormDirections), json::array({"fwd", "bwd"}));
}

const std::vector<ParamAxis>& layernorm_axes() {
  static const std::vector<ParamAxis> kAxes = {
      integer_axis("batch", "sequences; rows = batch x seq tokens are normalized independently",
                   json::array({32, 1, 8, 16, 64, 128})),
      integer_axis("seq", "tokens per sequence", json::array({128})),
      integer_axis("hidden", "the normalized (last) dimension: 768 BERT-base, 4096 LLaMA-7B",
                   json::array({768, 4096})),
      text_axis("kind",
                "layer (LayerNorm: mean, variance, scale and bias) or rms (RMSNorm: mean "
                "square, scale only)",
                names(kAllNormKinds), json::array({"layer", "rms"})),
      phase_axis("inference (y only) or training (y and the saved mean / inverse deviation)",
                 json::array({"training", "inference"})),
      direction_axis(),
      precision_axis(),
  };
  return kAxes;
}

const std::vector<ParamAxis>& batchnorm_axes() {
  static const std::vector<ParamAxis> kAxes = {
      integer_axis("batch", "images (N)", json::array({32, 8})),
      integer_axis("channels", "channels (C), each normalized over N x H x W",
                   json::array({256, 64, 2048})),
      integer_axis("height", "rows of the feature map (H)", json::array({56, 112, 7})),
      integer_axis("width", "columns of the feature map (W)", json::array({56, 112, 7})),
      phase_axis("training (batch statistics, running-stat update) or inference (running stats)",
                 json::array({"training", "inference"})),
      direction_axis(),
      precision_axis(),
  };
  return kAxes;
}

const ParamAxis& layernorm_axis(const char* key) {
  return axis_of("layernorm", layernorm_axes(), key);
}
const ParamAxis& batchnorm_axis(const char* key) {
  return axis_of("batchnorm", batchnorm_axes(), key);
}

// The three passes of one shape: fwd inference, fwd training, bwd.
void add_passes(std::vector<json>& points, json point) {
  for (const auto& [phase, direction] :
       {std::pair{"inference", "fwd"}, std::pair{"training", "fwd"},
        std::pair{"training", "bwd"}}) {
    point["phase"] = phase;
    point["direction"] = direction;
    points.push_back(point);
  }
}

std::vector<json> layernorm_points() {
  std::vector<json> points;
  struct Model {
    const char* kind;
    std::int64_t hidden;
    std::vector<std::int64_t> tokens;  // batch x seq: batch of sequences of 128 (BERT) / 2048
    std::int64_t seq;
  };
  const Model models[] = {{"layer", 768, {128, 1024, 4096, 16384}, 128},
                          {"rms", 4096, {128, 2048, 8192}, 128}};
  for (const Model& model : models) {
    for (std::int64_t tokens : model.tokens)
      add_passes(points, {{"batch", tokens / model.seq},
                          {"seq", model.seq},
                          {"hidden", model.hidden},
                          {"kind", model.kind},
                          {"precision", "fp16"}});
    add_passes(points, {{"batch", model.tokens.back() / model.seq},
                        {"seq", model.seq},
                        {"hidden", model.hidden},
                        {"kind", model.kind},
                        {"precision", "bf16"}});
  }
  return points;
}

std::vector<json> batchnorm_points() {
  std::vector<json> points;
  struct Shape {
    std::int64_t channels, size;
  };
  constexpr Shape kShapes[] = {{64, 112}, {256, 56}, {2048, 7}};
  for (std::int64_t batch : {8, 32})
    for (const Shape& shape : kShapes)
      add_passes(points, {{"batch", batch},
                          {"channels", shape.channels},
                          {"height", shape.size},
                          {"width", shape.size},
                          {"precision", "fp16"}});
  add_passes(
      points,
      {{"batch", 32}, {"channels", 256}, {"height", 56}, {"width", 56}, {"precision", "bf16"}});
  return points;
}

}  // namespace

LayernormSpec layernorm_spec_from_params(const json& point) {
  const std::string family = "layernorm";
  require_known_keys(family, point, layernorm_axes());
  LayernormSpec spec;
  spec.batch = axis_integer(family, point, layernorm_axis("batch"), 1);
  spec.seq = axis_integer(family, point, layernorm_axis("seq"), 1);
  spec.hidden = axis_integer(family, point, layernorm_axis("hidden"), 1);
  spec.kind = parse_norm_kind(family, axis_text(family, point, layernorm_axis("kind")));
  spec.phase = parse_norm_phase(family, axis_text(family, point, layernorm_axis("phase")));
  spec.direction =
      parse_norm_direction(family, axis_text(family, point, layernorm_axis("direction")));
  spec.precision =
      parse_precision(axis_text(family, point, layernorm_axis("precision")), kNormPrecisions);
  return spec;
}

BatchnormSpec batchnorm_spec_from_params(const json& point) {
  const std::string family = "batchnorm";
  require_known_keys(family, point, batchnorm_axes());
  BatchnormSpec spec;
  spec.batch = axis_integer(family, point, batchnorm_axis("batch"), 1);
  spec.channels = axis_integer(family, point, batchnorm_axis("channels"), 1);
  spec.height = axis_integer(family, point, batchnorm_axis("height"), 1);
  spec.width = axis_integer(family, point, batchnorm_axis("width"), 1);
  spec.phase = parse_norm_phase(family, axis_text(family, point, batchnorm_axis("phase")));
  spec.direction =
      parse_norm_direction(family, axis_text(family, point, batchnorm_axis("direction")));
  spec.precision =
      parse_precision(axis_text(family, point, batchnorm_axis("precision")), kNormPrecisions);
  return spec;
}

// Built as gemm_family() is: one template per operator.
OperatorFamily layernorm_family() {
  OperatorFamily family;
  family.name = "layernorm";
  family.help =
      "cuDNN graph LayerNorm / RMSNorm over the last dimension, fwd inference / training and bwd, "
      "fp32/fp16/bf16; default: BERT-base (768) and LLaMA-7B (4096) token counts (27 points)";
  family.axes = layernorm_axes();
  family.default_points = layernorm_points;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<LayernormProblem>(layernorm_spec_from_params(point));
  };
  return family;
}

OperatorFamily batchnorm_family() {
  OperatorFamily family;
  family.name = "batchnorm";
  family.help =
      "cuDNN graph BatchNorm2d (NHWC), fwd training (running-stat update) / inference and bwd, "
      "fp32/fp16/bf16; default: ResNet-50 shapes at batch 8 and 32 (21 points)";
  family.axes = batchnorm_axes();
  family.default_points = batchnorm_points;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<BatchnormProblem>(batchnorm_spec_from_params(point));
  };
  return family;
}

}  // namespace timeroof
