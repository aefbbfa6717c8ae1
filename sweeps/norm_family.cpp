// The normalization families (sweeps/norm.hpp, norm_problem.hpp).
//
// layernorm keys: batch, seq (rows = batch x seq tokens), hidden (the normalized
// dimension), kind (layer | rms), phase (inference | training), direction
// (fwd | bwd: training only), precision (fp32 | fp16 | bf16).
// Default sweep (11 points; each point costs ~2-3 s of prepare, runtime
// compilation, timing, counters and the full check): BERT-base (hidden 768)
// LayerNorm at 1024 and 16384 tokens and LLaMA-7B (hidden 4096) RMSNorm at
// 8192 tokens, each fwd inference, fwd training and bwd in fp16; BERT's fwd
// training and LLaMA's bwd also in bf16.
//
// batchnorm keys: batch, channels, height, width (NHWC), phase, direction,
// precision, algorithm. Default sweep (10 points): ResNet-50's 64 ch 112 x 112
// (after conv1), 256 ch 56 x 56 (stage 1) and 2048 ch 7 x 7 (stage 4) at batch
// 32, fwd training, fwd inference and bwd, in fp16, and 256 ch 56 x 56 fwd
// training at batch 8.
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
ParamAxis algorithm_axis() {
  return text_axis("algorithm",
                   "heuristic = the first cuDNN configuration that finalizes (heuristic mode A, "
                   "then FALLBACK), fastest = every listed configuration timed in prepare",
                   names(kAllNormSelections), json::array({"heuristic"}));
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
      algorithm_axis(),
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
      algorithm_axis(),
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

json layernorm_point(std::int64_t tokens, std::int64_t hidden, const char* kind,
                     const char* precision) {
  constexpr std::int64_t kSeq = 128;
  return {{"batch", tokens / kSeq}, {"seq", kSeq},
          {"hidden", hidden},       {"kind", kind},
          {"precision", precision}, {"algorithm", "heuristic"}};
}

std::vector<json> layernorm_points() {
  std::vector<json> points;
  for (std::int64_t tokens : {1024, 16384})
    add_passes(points, layernorm_point(tokens, 768, "layer", "fp16"));
  add_passes(points, layernorm_point(8192, 4096, "rms", "fp16"));
  json bert = layernorm_point(16384, 768, "layer", "bf16");
  bert["phase"] = "training";
  bert["direction"] = "fwd";
  points.push_back(bert);
  json llama = layernorm_point(8192, 4096, "rms", "bf16");
  llama["phase"] = "training";
  llama["direction"] = "bwd";
  points.push_back(llama);
  return points;
}

json batchnorm_point(std::int64_t batch, std::int64_t channels, std::int64_t size) {
  return {{"batch", batch}, {"channels", channels}, {"height", size},
          {"width", size},  {"precision", "fp16"},  {"algorithm", "heuristic"}};
}

std::vector<json> batchnorm_points() {
  std::vector<json> points;
  struct Shape {
    std::int64_t channels, size;
  };
  constexpr Shape kShapes[] = {{64, 112}, {256, 56}, {2048, 7}};
  for (const Shape& shape : kShapes)
    add_passes(points, batchnorm_point(32, shape.channels, shape.size));
  json small = batchnorm_point(8, 256, 56);
  small["phase"] = "training";
  small["direction"] = "fwd";
  points.push_back(small);
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
  spec.selection =
      parse_norm_selection(family, axis_text(family, point, layernorm_axis("algorithm")));
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
  spec.selection =
      parse_norm_selection(family, axis_text(family, point, batchnorm_axis("algorithm")));
  return spec;
}

// Built as gemm_family() is: one template per operator.
OperatorFamily layernorm_family() {
  OperatorFamily family;
  family.name = "layernorm";
  family.help =
      "cuDNN graph LayerNorm / RMSNorm over the last dimension, fwd inference / training and bwd, "
      "fp32/fp16/bf16; default: BERT-base (768) and LLaMA-7B (4096) token counts (11 points)";
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
      "fp32/fp16/bf16; default: ResNet-50 shapes at batch 32 and 8 (10 points)";
  family.axes = batchnorm_axes();
  family.default_points = batchnorm_points;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<BatchnormProblem>(batchnorm_spec_from_params(point));
  };
  return family;
}

}  // namespace timeroof
