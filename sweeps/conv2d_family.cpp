// The conv2d family: the keys a sweep may set, the paper's default grid, and the
// mapping of a point's params onto a Conv2dSpec (sweeps/conv2d.hpp).
//
// Keys (a point is a JSON object of these; a missing key takes its baseline,
// the first of the axis' defaults):
//   batch N, channels C, height H, width W, filters K (output channels),
//   filter R = S, stride (both dims), pad (both dims; "same" = dilation (filter - 1) / 2,
//   i.e. filter / 2 for odd filters), dilation, groups, layout nchw | nhwc,
//   algorithm heuristic | exhaustive | a graph engine by plan name (eng<N>
//   [<knob>=<value> ...], cudnn_api graph) | a legacy cuDNN algorithm name
//   (cudnn_api legacy), cudnn_api graph | legacy, math auto | tensor | fma_only
//   (auto: the precision's default, fp32 -> fma_only, others -> tensor),
//   direction fwd | bwd_data | bwd_filter, precision fp32 | tf32 | fp16 | bf16.
//
// Default grid (docs/design.md, the paper's authors' scripts): around the baseline
// (input 112x112x64 NHWC, 64 filters 3x3, stride 2, same padding, batch 16) vary one
// parameter at a time, as the paper did, with its batch range extended to today's:
//   batch 1, 2, 4, ..., 1024 (11 points, the rest at the baseline)
//   stride 1, 3; filter 7x7, 9x9; filters 128, 256, 512 (7 points at batch 16)
// for each of fp16 and fp32 (math auto: fp16 on Tensor Cores, fp32 on FMA units)
// and each direction fwd, bwd_data, bwd_filter: 18 x 2 x 3 = 108 points. The full
// Cartesian product of the paper's values with the extended batch range would be
// 11 x 3 x 3 x 4 x 2 x 3 = 2,376 points, 22x as many, far over the 5-minute budget of
// the default conv2d + lstm sweeps; one-at-a-time keeps every curve the paper drew and
// adds the batch sweep the time-based roofline is read along.
// Order: precision, then direction, then the batch sweep, then the one-at-a-time
// variations, so each precision/direction block is contiguous.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "sweeps/conv2d_problem.hpp"
#include "sweeps/family.hpp"
#include "sweeps/spec.hpp"

namespace timeroof {
namespace {

using nlohmann::json;

// The legacy names come right after the two searches (as before the graph
// path); the engine pattern last (sweeps/spec.hpp: a value with '<' is a pattern).
std::vector<std::string> algorithm_values() {
  std::vector<std::string> values = {"heuristic", "exhaustive"};
  for (ConvDirection d : {ConvDirection::fwd, ConvDirection::bwd_data, ConvDirection::bwd_filter})
    for (std::string& name : conv2d_algorithm_names(d)) values.push_back(std::move(name));
  values.emplace_back(kConv2dEngineNamePattern);
  return values;
}

// The axes in Cartesian nesting order: the first varies fastest (see sweeps/spec.hpp).
// Each axis' defaults[0] is the paper's baseline; the rest are the values the default
// sweep visits besides it.
std::vector<ParamAxis> conv2d_axes() {
  return {
      integer_axis("batch", "batch size N",
                   json::array({16, 1, 2, 4, 8, 32, 64, 128, 256, 512, 1024})),
      integer_axis("channels", "input channels C", json::array({64})),
      integer_axis("height", "input height H", json::array({112})),
      integer_axis("width", "input width W", json::array({112})),
      integer_axis("filters", "output channels K (number of filters)",
                   json::array({64, 128, 256, 512})),
      integer_axis("filter", "filter size R = S", json::array({3, 7, 9})),
      integer_axis("stride", "stride, both dimensions", json::array({2, 1, 3})),
      integer_axis("pad", "zero padding each side, or same = dilation (filter - 1) / 2",
                   json::array({"same"}), {"same"}),
      integer_axis("dilation", "filter dilation, both dimensions", json::array({1})),
      integer_axis("groups", "groups (divides channels and filters)", json::array({1})),
      text_axis("layout", "tensor memory order", {"nchw", "nhwc"}, json::array({"nhwc"})),
      text_axis("algorithm",
                "cuDNN heuristic, exhaustive search, or a fixed choice: with cudnn_api graph an "
                "engine as timeroof prints plans (eng<N>, or eng<N> <knob>=<value> ...), with "
                "cudnn_api legacy a CUDNN_CONVOLUTION_*_ALGO_* name",
                algorithm_values(), json::array({"heuristic"})),
      text_axis("cudnn_api",
                "graph = cuDNN's graph (backend) API with an execution plan built once, as "
                "PyTorch calls cuDNN; legacy = the deprecated cudnnConvolution* calls",
                {"graph", "legacy"}, json::array({"graph"})),
      text_axis("math",
                "Tensor Cores allowed or FMA units only; auto = fp32 -> fma_only, others -> "
                "tensor",
                {"auto", "tensor", "fma_only"}, json::array({"auto"})),
      text_axis("direction", "forward, backward-data or backward-filter",
                {"fwd", "bwd_data", "bwd_filter"}, json::array({"fwd", "bwd_data", "bwd_filter"})),
      text_axis("precision", "storage and arithmetic precision", operator_precision_names(),
                json::array({"fp16", "fp32"})),
  };
}

const std::vector<ParamAxis>& axes() {
  static const std::vector<ParamAxis> kAxes = conv2d_axes();
  return kAxes;
}

json baseline() {
  json point = json::object();
  for (const ParamAxis& axis : axes()) point[axis.key] = axis.defaults.at(0);
  return point;
}

// A point's integer value of `key` (its baseline when absent), in [low, INT_MAX].
std::int64_t integer(const json& point, const ParamAxis& axis, std::int64_t low) {
  return axis_integer("conv2d", point, axis, low);
}

std::string text(const json& point, const ParamAxis& axis) {
  return axis_text("conv2d", point, axis);
}

const ParamAxis& axis(const char* key) {
  return axis_of("conv2d", axes(), key);
}

}  // namespace

Conv2dSpec conv2d_spec_from_params(const json& point) {
  require_known_keys("conv2d", point, axes());
  Conv2dSpec spec;
  spec.n = integer(point, axis("batch"), 1);
  spec.c = integer(point, axis("channels"), 1);
  spec.h = integer(point, axis("height"), 1);
  spec.w = integer(point, axis("width"), 1);
  spec.k = integer(point, axis("filters"), 1);
  spec.r = spec.s = integer(point, axis("filter"), 1);
  spec.stride_h = spec.stride_w = integer(point, axis("stride"), 1);
  spec.dilation_h = spec.dilation_w = integer(point, axis("dilation"), 1);
  spec.groups = integer(point, axis("groups"), 1);
  const ParamAxis& pad = axis("pad");
  const json& pad_value = point.contains("pad") ? point.at("pad") : pad.defaults.at(0);
  spec.pad_h = spec.pad_w =
      pad_value == "same" ? spec.dilation_h * (spec.r - 1) / 2 : integer(point, pad, 0);
  spec.layout = text(point, axis("layout")) == "nchw" ? Layout::nchw : Layout::nhwc;
  spec.algorithm = text(point, axis("algorithm"));
  spec.api = parse_cudnn_api(text(point, axis("cudnn_api")));
  const std::string math = text(point, axis("math"));
  if (math != "auto") spec.math = parse_math_mode(math);
  spec.direction = parse_direction(text(point, axis("direction")));
  spec.precision = parse_precision(text(point, axis("precision")), kOperatorPrecisions);

  // The shape checks of validate(spec), worded with the sweep's keys.
  if (spec.c % spec.groups != 0 || spec.k % spec.groups != 0)
    throw usage_error("conv2d: groups = " + std::to_string(spec.groups) +
                      " must divide both channels = " + std::to_string(spec.c) +
                      " and filters = " + std::to_string(spec.k) +
                      "; allowed: a common divisor of channels and filters");
  const std::int64_t span = spec.dilation_h * (spec.r - 1) + 1;
  for (const auto& [name, size] : {std::pair{"height", spec.h}, std::pair{"width", spec.w}}) {
    if (span <= size + 2 * spec.pad_h) continue;
    throw usage_error("conv2d: filter = " + std::to_string(spec.r) +
                      " (dilation = " + std::to_string(spec.dilation_h) + ": spans " +
                      std::to_string(span) + " pixels) is larger than the padded input " + name +
                      " + 2 pad = " + std::to_string(size + 2 * spec.pad_h) + " (" + name + " = " +
                      std::to_string(size) + ", pad = " + std::to_string(spec.pad_h) +
                      "); allowed: dilation (filter - 1) + 1 <= " + name + " + 2 pad");
  }
  return spec;  // Conv2dProblem validates the rest (math with precision, algorithm)
}

namespace {

std::vector<json> default_points() {
  std::vector<json> points;
  const json base = baseline();
  auto add = [&](const char* key, const json& value, const json& precision, const json& direction) {
    json point = base;
    point[key] = value;
    point["precision"] = precision;
    point["direction"] = direction;
    points.push_back(std::move(point));
  };
  std::vector<json> batches;
  for (std::int64_t b = 1; b <= 1024; b *= 2) batches.emplace_back(b);
  for (const json& precision : axis("precision").defaults)
    for (const json& direction : axis("direction").defaults) {
      for (const json& b : batches) add("batch", b, precision, direction);
      for (const char* key : {"stride", "filter", "filters"}) {
        const json& values = axis(key).defaults;
        for (std::size_t i = 1; i < values.size(); ++i) add(key, values[i], precision, direction);
      }
    }
  return points;
}

}  // namespace

// Built as lstm_family() is, on purpose: one template per operator (docs/design.md,
// "Adding an operator").
OperatorFamily conv2d_family() {
  OperatorFamily family;
  family.name = "conv2d";
  family.help =
      "cuDNN 2-D convolution: NCHW/NHWC, forward and backward, fp32/tf32/fp16/bf16; default: "
      "the paper's grid (112x112x64, 3x3x64x64, stride 2) with batch 1..1024";
  family.axes = axes();
  family.default_points = default_points;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<Conv2dProblem>(conv2d_spec_from_params(point));
  };
  return family;
}

}  // namespace timeroof
