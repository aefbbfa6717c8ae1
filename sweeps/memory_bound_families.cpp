// The memory-bound families: pointwise, softmax and pool (axes and names fixed
// by issue 18's contract; `implementation` is an added axis, default own).
//
// Default sweeps (small: each well under 10 s on an H100 with counters):
//   pointwise (11 points): every op at 4096 tokens x 4096 hidden (LLaMA-7B) in
//     bf16; gelu at 4096 x 3072 (BERT-base MLP, fp16) and 4096 x 768 (fp32);
//     silu_mul at 4096 x 11008 (LLaMA-7B MLP, bf16); relu and add over a
//     ResNet-50 stage-1 block output, 32 x 256 x 56 x 56 (fp16).
//   softmax (8 points): attention scores batch x heads = rows of
//     seq_q x seq_kv: 96 x 128^2, 48 x 512^2 (fp16, and fp32), 32 x 1024^2,
//     8 x 2048^2, 2 x 4096^2 (bf16); a vocabulary row of 32000 for 4096 tokens
//     (bf16, fp32).
//   pool (8 points): ResNet-50's max pool 3x3 stride 2 pad 1 on 64 x 112 x 112
//     and its global average pool 7x7 on 2048 x 7 x 7, batch 1, 32, 128 in fp16;
//     batch 32 of each in fp32.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/family.hpp"
#include "sweeps/pointwise_problem.hpp"
#include "sweeps/pool_problem.hpp"
#include "sweeps/softmax_problem.hpp"

namespace timeroof {
namespace {

using nlohmann::json;

ParamAxis precision_axis(const char* defaults) {
  return text_axis("precision",
                   "stored type of every tensor: fp32, fp16, bf16 (arithmetic in fp32)",
                   memory_bound_precision_names(), json::array({defaults}));
}

ParamAxis implementation_axis(const char* cudnn_path) {
  return text_axis("implementation",
                   std::string("own (the project's CUDA kernels) or cudnn (") + cudnn_path + ")",
                   {"own", "cudnn"}, json::array({"own"}));
}

// --- pointwise --------------------------------------------------------------

const std::vector<ParamAxis>& pointwise_axes() {
  static const std::vector<ParamAxis> kAxes = [] {
    std::vector<std::string> ops;
    for (PointwiseOp op : kAllPointwiseOps) ops.emplace_back(to_string(op));
    return std::vector<ParamAxis>{
        text_axis("op",
                  "add, mul (two inputs), relu, gelu (tanh form), silu, silu_mul (silu(a) * b, "
                  "SwiGLU)",
                  ops, json::array({"add", "mul", "relu", "gelu", "silu", "silu_mul"})),
        integer_axis("batch", "batch items (tokens of a layer)", json::array({4096})),
        integer_axis("elements", "elements per batch item (hidden size)", json::array({4096})),
        precision_axis("bf16"),
        implementation_axis("a graph of cuDNN pointwise operations"),
    };
  }();
  return kAxes;
}

json pointwise_point(const char* op, std::int64_t batch, std::int64_t elements,
                     const char* precision) {
  return {{"op", op},
          {"batch", batch},
          {"elements", elements},
          {"precision", precision},
          {"implementation", "own"}};
}

std::vector<json> pointwise_defaults() {
  std::vector<json> points;
  for (PointwiseOp op : kAllPointwiseOps)
    points.push_back(pointwise_point(to_string(op), 4096, 4096, "bf16"));
  points.push_back(pointwise_point("gelu", 4096, 3072, "fp16"));
  points.push_back(pointwise_point("gelu", 4096, 768, "fp32"));
  points.push_back(pointwise_point("silu_mul", 4096, 11008, "bf16"));
  points.push_back(pointwise_point("relu", 32, 256 * 56 * 56, "fp16"));
  points.push_back(pointwise_point("add", 32, 256 * 56 * 56, "fp16"));
  return points;
}

// --- softmax ----------------------------------------------------------------

const std::vector<ParamAxis>& softmax_axes() {
  static const std::vector<ParamAxis> kAxes = {
      integer_axis("batch", "batch items (batch x heads for attention scores)", json::array({48})),
      integer_axis("rows", "rows per batch item (query positions)", json::array({512})),
      integer_axis("columns", "the softmax dimension (key positions, vocabulary)",
                   json::array({512})),
      precision_axis("fp16"),
      implementation_axis("cudnnSoftmaxForward, CUDNN_SOFTMAX_ACCURATE"),
  };
  return kAxes;
}

json softmax_point(std::int64_t batch, std::int64_t rows, std::int64_t columns,
                   const char* precision) {
  return {{"batch", batch},
          {"rows", rows},
          {"columns", columns},
          {"precision", precision},
          {"implementation", "own"}};
}

std::vector<json> softmax_defaults() {
  return {softmax_point(96, 128, 128, "fp16"),   softmax_point(48, 512, 512, "fp16"),
          softmax_point(48, 512, 512, "fp32"),   softmax_point(32, 1024, 1024, "bf16"),
          softmax_point(8, 2048, 2048, "bf16"),  softmax_point(2, 4096, 4096, "bf16"),
          softmax_point(1, 4096, 32000, "bf16"), softmax_point(1, 4096, 32000, "fp32")};
}

// --- pool -------------------------------------------------------------------

const std::vector<ParamAxis>& pool_axes() {
  static const std::vector<ParamAxis> kAxes = {
      integer_axis("batch", "images", json::array({32})),
      integer_axis("channels", "channels (C of NHWC)", json::array({64})),
      integer_axis("height", "input height", json::array({112})),
      integer_axis("width", "input width", json::array({112})),
      integer_axis("window", "square window side", json::array({3})),
      integer_axis("stride", "window step in both dimensions", json::array({2})),
      integer_axis("pad", "zero padding on each side, at most window / 2", json::array({1})),
      text_axis("mode", "max, or avg (padding counted as zeros: count_include_pad)", {"max", "avg"},
                json::array({"max"})),
      precision_axis("fp16"),
      implementation_axis("the graph API's resample operation"),
  };
  return kAxes;
}

json pool_point(std::int64_t batch, bool resnet_max, const char* precision) {
  return {{"batch", batch},
          {"channels", resnet_max ? 64 : 2048},
          {"height", resnet_max ? 112 : 7},
          {"width", resnet_max ? 112 : 7},
          {"window", resnet_max ? 3 : 7},
          {"stride", resnet_max ? 2 : 1},
          {"pad", resnet_max ? 1 : 0},
          {"mode", resnet_max ? "max" : "avg"},
          {"precision", precision},
          {"implementation", "own"}};
}

std::vector<json> pool_defaults() {
  std::vector<json> points;
  for (bool resnet_max : {true, false}) {
    for (std::int64_t batch : {1, 32, 128}) points.push_back(pool_point(batch, resnet_max, "fp16"));
    points.push_back(pool_point(32, resnet_max, "fp32"));
  }
  return points;
}

}  // namespace

PointwiseSpec pointwise_spec_from_params(const json& point) {
  const auto& axes = pointwise_axes();
  require_known_keys("pointwise", point, axes);
  PointwiseSpec spec;
  spec.op = parse_pointwise_op(axis_text("pointwise", point, axis_of("pointwise", axes, "op")));
  spec.batch = axis_integer("pointwise", point, axis_of("pointwise", axes, "batch"), 1);
  spec.elements = axis_integer("pointwise", point, axis_of("pointwise", axes, "elements"), 1);
  spec.precision = parse_memory_bound_precision(
      "pointwise", axis_text("pointwise", point, axis_of("pointwise", axes, "precision")));
  spec.implementation = parse_kernel_source(
      "pointwise", axis_text("pointwise", point, axis_of("pointwise", axes, "implementation")));
  return spec;
}

SoftmaxSpec softmax_spec_from_params(const json& point) {
  const auto& axes = softmax_axes();
  require_known_keys("softmax", point, axes);
  SoftmaxSpec spec;
  spec.batch = axis_integer("softmax", point, axis_of("softmax", axes, "batch"), 1);
  spec.rows = axis_integer("softmax", point, axis_of("softmax", axes, "rows"), 1);
  spec.columns = axis_integer("softmax", point, axis_of("softmax", axes, "columns"), 1);
  spec.precision = parse_memory_bound_precision(
      "softmax", axis_text("softmax", point, axis_of("softmax", axes, "precision")));
  spec.implementation = parse_kernel_source(
      "softmax", axis_text("softmax", point, axis_of("softmax", axes, "implementation")));
  return spec;
}

PoolSpec pool_spec_from_params(const json& point) {
  const auto& axes = pool_axes();
  require_known_keys("pool", point, axes);
  auto integer = [&](const char* key, std::int64_t low) {
    return axis_integer("pool", point, axis_of("pool", axes, key), low);
  };
  PoolSpec spec;
  spec.batch = integer("batch", 1);
  spec.channels = integer("channels", 1);
  spec.height = integer("height", 1);
  spec.width = integer("width", 1);
  spec.window = integer("window", 1);
  spec.stride = integer("stride", 1);
  spec.pad = integer("pad", 0);
  spec.mode = parse_pool_mode(axis_text("pool", point, axis_of("pool", axes, "mode")));
  spec.precision = parse_memory_bound_precision(
      "pool", axis_text("pool", point, axis_of("pool", axes, "precision")));
  spec.implementation = parse_kernel_source(
      "pool", axis_text("pool", point, axis_of("pool", axes, "implementation")));
  return spec;
}

OperatorFamily pointwise_family() {
  OperatorFamily family;
  family.name = "pointwise";
  family.help =
      "element-wise add, mul and activations relu, gelu, silu, silu_mul over batch x elements "
      "(own vectorised kernels, or cuDNN graph pointwise); default: LLaMA-7B, BERT and ResNet-50 "
      "activations (11 points)";
  family.axes = pointwise_axes();
  family.default_points = pointwise_defaults;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<PointwiseProblem>(pointwise_spec_from_params(point));
  };
  return family;
}

OperatorFamily softmax_family() {
  OperatorFamily family;
  family.name = "softmax";
  family.help =
      "softmax over the last dimension of batch x rows x columns (own row kernel, or cuDNN); "
      "default: attention scores 128^2 .. 4096^2 and a 32000 vocabulary row (8 points)";
  family.axes = softmax_axes();
  family.default_points = softmax_defaults;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<SoftmaxProblem>(softmax_spec_from_params(point));
  };
  return family;
}

OperatorFamily pool_family() {
  OperatorFamily family;
  family.name = "pool";
  family.help =
      "NHWC max and average pooling, square window, stride, padding (own kernel, or cuDNN "
      "resample); default: ResNet-50's max pool 3x3/2 and global average pool 7x7 (8 points)";
  family.axes = pool_axes();
  family.default_points = pool_defaults;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<PoolProblem>(pool_spec_from_params(point));
  };
  return family;
}

}  // namespace timeroof
