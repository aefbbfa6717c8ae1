// CPU tier, the normalization families without a GPU: axes and default sweeps,
// analytic FLOPs and bytes worked by hand, validation messages, the roles a call
// takes and gives, and the double references against hand values and against
// finite differences of the forward.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sweeps/family.hpp"
#include "sweeps/norm_problem.hpp"
#include "sweeps/spec.hpp"
#include "tests/support/family_checks.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using nlohmann::json;

using test::checked_axis_keys;
using test::problem_error;

// Every default point is valid and distinct; returns the ops the sweep covers.
std::set<std::string> check_default_points(const OperatorFamily& family, std::size_t expected) {
  const std::vector<json> points = family.default_points();
  EXPECT_EQ(points.size(), expected);
  std::set<std::string> distinct, ops;
  double total_s = 0;
  for (const json& point : points) {
    EXPECT_NO_THROW(ops.insert(family.problem(point)->op())) << point.dump();
    distinct.insert(point.dump());
    total_s += estimate_point(point, family, DryRunRoofs{}).point_s;
  }
  EXPECT_EQ(distinct.size(), points.size());
  EXPECT_LT(total_s, 60.0) << family.name;
  EXPECT_NO_THROW((void)default_spec(family.name));
  return ops;
}

TEST(NormFamilies, AxesFollowTheContractAndTheDefaultSweepsAreValid) {
  const OperatorFamily& layernorm = find_family("layernorm");
  EXPECT_EQ(checked_axis_keys(layernorm),
            (std::vector<std::string>{"batch", "seq", "hidden", "kind", "phase", "direction",
                                      "precision", "algorithm"}));
  EXPECT_EQ(
      check_default_points(layernorm, 11),
      (std::set<std::string>{"layernorm_fwd_inference", "layernorm_fwd_training", "layernorm_bwd",
                             "rmsnorm_fwd_inference", "rmsnorm_fwd_training", "rmsnorm_bwd"}));
  const OperatorFamily& batchnorm = find_family("batchnorm");
  EXPECT_EQ(checked_axis_keys(batchnorm),
            (std::vector<std::string>{"batch", "channels", "height", "width", "phase", "direction",
                                      "precision", "algorithm"}));
  EXPECT_EQ(check_default_points(batchnorm, 10),
            (std::set<std::string>{"batchnorm_fwd_inference", "batchnorm_fwd_training",
                                   "batchnorm_bwd"}));
}

LayernormSpec layernorm(NormKind kind, NormPhase phase, NormDirection direction,
                        Precision precision = Precision::fp16) {
  LayernormSpec spec;
  spec.batch = 2;
  spec.seq = 3;
  spec.hidden = 4;
  spec.kind = kind;
  spec.phase = phase;
  spec.direction = direction;
  spec.precision = precision;
  return spec;
}

BatchnormSpec batchnorm(NormPhase phase, NormDirection direction, Precision precision) {
  BatchnormSpec spec;
  spec.batch = 2;
  spec.channels = 3;
  spec.height = 4;
  spec.width = 5;
  spec.phase = phase;
  spec.direction = direction;
  spec.precision = precision;
  return spec;
}

constexpr auto kLayer = NormKind::layer;
constexpr auto kRms = NormKind::rms;
constexpr auto kTraining = NormPhase::training;
constexpr auto kInference = NormPhase::inference;
constexpr auto kFwd = NormDirection::fwd;
constexpr auto kBwd = NormDirection::bwd;

TEST(NormCounts, LayernormFlopsAndBytesByHand) {
  // 6 rows of hidden 4. Layer fwd: 8 per element, 4 per row: 6 x (32 + 4).
  EXPECT_EQ(norm_flops(layernorm(kLayer, kTraining, kFwd)), 216.0);
  EXPECT_EQ(norm_flops(layernorm(kLayer, kInference, kFwd)), 216.0);
  // RMS fwd: 4 per element, 3 per row: 6 x (16 + 3).
  EXPECT_EQ(norm_flops(layernorm(kRms, kTraining, kFwd)), 114.0);
  // Bwd: layer 13 and 2, rms 9 and 1: 6 x 54, 6 x 37.
  EXPECT_EQ(norm_flops(layernorm(kLayer, kTraining, kBwd)), 324.0);
  EXPECT_EQ(norm_flops(layernorm(kRms, kTraining, kBwd)), 222.0);

  // fp16 x and y 24 x 2 = 48 each; scale, bias 4 x 4 = 16; mean, inv_variance 6 x 4 = 24.
  EXPECT_EQ(norm_min_bytes(layernorm(kLayer, kInference, kFwd)), 48 + 48 + 16 + 16.0);
  EXPECT_EQ(norm_min_bytes(layernorm(kLayer, kTraining, kFwd)), 48 + 48 + 16 + 16 + 24 + 24.0);
  EXPECT_EQ(norm_min_bytes(layernorm(kRms, kTraining, kFwd)), 48 + 48 + 16 + 24.0);
  // Bwd: x, dy, dx; scale, mean, inv_variance; dscale, dbias.
  EXPECT_EQ(norm_min_bytes(layernorm(kLayer, kTraining, kBwd)), 3 * 48 + 16 + 24 + 24 + 16 + 16.0);
  EXPECT_EQ(norm_min_bytes(layernorm(kRms, kTraining, kBwd)), 3 * 48 + 16 + 24 + 16.0);
  // fp32 data doubles x, y.
  EXPECT_EQ(norm_min_bytes(layernorm(kRms, kInference, kFwd, Precision::fp32)), 96 + 96 + 16.0);
  // BERT-base at 4096 tokens, layer fwd training fp16: 4096 x (8 x 768 + 4) FLOPs.
  LayernormSpec bert = layernorm(kLayer, kTraining, kFwd);
  bert.batch = 32;
  bert.seq = 128;
  bert.hidden = 768;
  EXPECT_EQ(norm_flops(bert), 4096.0 * (8 * 768 + 4));
  EXPECT_EQ(norm_min_bytes(bert), 2.0 * 4096 * 768 * 2 + 2 * 768 * 4 + 2 * 4096 * 4);
}

TEST(NormCounts, BatchnormFlopsAndBytesByHand) {
  // 3 channels of 2 x 4 x 5 = 40 elements.
  // Training: 8 per element, 4 + 7 (running update) per channel: 3 x (320 + 11).
  EXPECT_EQ(norm_flops(batchnorm(kTraining, kFwd, Precision::fp32)), 993.0);
  // Inference: 4 per element, 2 per channel (the inverse deviation): 3 x 162.
  EXPECT_EQ(norm_flops(batchnorm(kInference, kFwd, Precision::fp16)), 486.0);
  // Bwd: 13 per element, 2 per channel: 3 x 522.
  EXPECT_EQ(norm_flops(batchnorm(kTraining, kBwd, Precision::bf16)), 1566.0);
  // fp32 training: x, y 120 x 4 each; scale, bias, running mean / variance in and
  // out, saved mean / inv_variance: 8 x 3 x 4.
  EXPECT_EQ(norm_min_bytes(batchnorm(kTraining, kFwd, Precision::fp32)), 480 + 480 + 96.0);
  // fp16 inference: x, y 240 each; scale, bias, running mean and variance 4 x 12.
  EXPECT_EQ(norm_min_bytes(batchnorm(kInference, kFwd, Precision::fp16)), 240 + 240 + 48.0);
  // bf16 bwd: x, dy, dx 240 each; scale, mean, inv_variance, dscale, dbias 5 x 12.
  EXPECT_EQ(norm_min_bytes(batchnorm(kTraining, kBwd, Precision::bf16)), 720 + 60.0);
}

std::vector<std::string> roles(const std::vector<TensorArgument>& arguments) {
  std::vector<std::string> names;
  for (const TensorArgument& a : arguments) names.push_back(a.role);
  return names;
}

TEST(NormProblems, IdentityParamsAndTheRolesACallTakesAndGives) {
  const LayernormProblem training(layernorm(kLayer, kTraining, kFwd));
  EXPECT_EQ(training.op(), "layernorm_fwd_training");
  EXPECT_EQ(training.math_mode(), MathMode::fma_only);
  EXPECT_EQ(training.precision(), Precision::fp16);
  EXPECT_EQ(training.params()["rows"], 6);
  EXPECT_EQ(training.params()["data_type"], "fp16");
  EXPECT_EQ(roles(training.inputs()), (std::vector<std::string>{"x"}));
  EXPECT_EQ(roles(training.outputs()), (std::vector<std::string>{"y", "mean", "inv_variance"}));
  EXPECT_EQ(training.inputs()[0].bytes, 48u);
  const LayernormProblem rms_bwd(layernorm(kRms, kTraining, kBwd));
  EXPECT_EQ(rms_bwd.op(), "rmsnorm_bwd");
  EXPECT_EQ(roles(rms_bwd.inputs()), (std::vector<std::string>{"x", "dy", "inv_variance"}));
  EXPECT_EQ(roles(rms_bwd.outputs()), (std::vector<std::string>{"dx"}));
  const BatchnormProblem bn(batchnorm(kTraining, kFwd, Precision::fp16));
  EXPECT_EQ(bn.op(), "batchnorm_fwd_training");
  EXPECT_EQ(bn.params()["layout"], "nhwc");
  EXPECT_EQ(roles(bn.inputs()), (std::vector<std::string>{"x"}));
  EXPECT_EQ(roles(bn.outputs()), (std::vector<std::string>{"y", "mean", "inv_variance"}));
  const BatchnormProblem bn_inference(batchnorm(kInference, kFwd, Precision::fp16));
  EXPECT_EQ(bn_inference.op(), "batchnorm_fwd_inference");
  EXPECT_EQ(roles(bn_inference.outputs()), (std::vector<std::string>{"y"}));
}

TEST(NormValidation, BadPointsAreOneLineErrorsNamingTheFix) {
  std::string m = problem_error("layernorm", {{"direction", "bwd"}, {"phase", "inference"}});
  EXPECT_MENTIONS(m, "layernorm: direction = bwd with phase = inference");
  EXPECT_MENTIONS(m, "allowed: phase = training");
  m = problem_error("batchnorm", {{"direction", "bwd"}, {"phase", "inference"}});
  EXPECT_MENTIONS(m, "batchnorm: direction = bwd");
  m = problem_error("layernorm", {{"precision", "tf32"}});
  EXPECT_MENTIONS(m, "tf32");
  EXPECT_MENTIONS(m, "fp32, fp16, bf16");
  m = problem_error("layernorm", {{"hidden", 1}, {"kind", "layer"}});
  EXPECT_MENTIONS(m, "hidden >= 2, or kind = rms");
  EXPECT_NO_THROW((void)find_family("layernorm").problem({{"hidden", 1}, {"kind", "rms"}}));
  m = problem_error("layernorm", {{"hidden", 0}});
  EXPECT_MENTIONS(m, "hidden = 0 is out of range; allowed: 1 .. ");
  m = problem_error("layernorm", {{"kind", "group"}});
  EXPECT_MENTIONS(m, "kind");
  EXPECT_MENTIONS(m, "layer, rms");
  m = problem_error("layernorm", {{"channels", 3}});
  EXPECT_MENTIONS(m, "unknown key 'channels'");
  m = problem_error("batchnorm",
                    {{"batch", 1}, {"height", 1}, {"width", 1}, {"phase", "training"}});
  EXPECT_MENTIONS(m, "batch x height x width >= 2, or phase = inference");
  EXPECT_NO_THROW((void)find_family("batchnorm")
                      .problem({{"batch", 1},
                                {"height", 1},
                                {"width", 1},
                                {"phase", "inference"},
                                {"direction", "fwd"}}));
  m = problem_error("batchnorm",
                    {{"batch", 65536}, {"channels", 65536}, {"height", 65536}, {"width", 65536}});
  EXPECT_MENTIONS(m, "smaller batch, channels, height or width");
  m = problem_error("batchnorm",
                    {{"phase", "inference"}, {"direction", "fwd"}, {"algorithm", "fastest"}});
  EXPECT_MENTIONS(m, "allowed: algorithm = heuristic");
  m = problem_error("layernorm", {{"algorithm", "exhaustive"}});
  EXPECT_MENTIONS(m, "heuristic, fastest");
  m = problem_error("batchnorm", {{"phase", "eval"}});
  EXPECT_MENTIONS(m, "inference, training");
  for (const std::string& message : {m, problem_error("layernorm", {{"seq", -1}})})
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(NormReference, StatisticsAndForwardByHand) {
  const std::vector<double> x = {1, 2, 3, 4};
  // Mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
  const NormGroupStats layer = norm_group_stats(x, NormKind::layer, 0.0);
  EXPECT_DOUBLE_EQ(layer.mean, 2.5);
  EXPECT_DOUBLE_EQ(layer.variance, 1.25);
  EXPECT_DOUBLE_EQ(layer.inv_variance, 1 / std::sqrt(1.25));
  // RMS: mean square (1 + 4 + 9 + 16) / 4 = 7.5, no mean.
  const NormGroupStats rms = norm_group_stats(x, NormKind::rms, 0.5);
  EXPECT_DOUBLE_EQ(rms.mean, 0.0);
  EXPECT_DOUBLE_EQ(rms.inv_variance, 1 / std::sqrt(8.0));
  // y = (x - 2.5) / sqrt(1.25) x 2 + 1 with a broadcast scale and bias.
  const std::vector<double> two = {2}, one = {1};
  const std::vector<double> y = norm_forward(x, layer, two, one);
  EXPECT_DOUBLE_EQ(y[0], -1.5 / std::sqrt(1.25) * 2 + 1);
  EXPECT_DOUBLE_EQ(y[3], 1.5 / std::sqrt(1.25) * 2 + 1);
  // RMS without bias: x / sqrt(8) x scale per element.
  const std::vector<double> scale = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(norm_forward(x, rms, scale, {})[2], 9 / std::sqrt(8.0));
}

// loss = sum dy_i y_i(x): dx from central differences of the forward, dscale
// and dbias by definition.
void expect_backward_matches_finite_differences(NormKind kind) {
  const std::vector<double> x = {0.3, -1.2, 0.7, 2.1, -0.4};
  const std::vector<double> dy = {0.5, -0.25, 1.0, 0.75, -1.5};
  const std::vector<double> scale = {1.1, 0.9, -0.7, 1.3, 0.6};
  const std::vector<double> bias = {0.1, 0.2, 0.3, 0.4, 0.5};
  constexpr double kEpsilon = 1e-3;
  auto loss = [&](const std::vector<double>& at) {
    const std::vector<double> y =
        norm_forward(at, norm_group_stats(at, kind, kEpsilon), scale, bias);
    double sum = 0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += dy[i] * y[i];
    return sum;
  };
  const NormGroupStats stats = norm_group_stats(x, kind, kEpsilon);
  const NormGroupGradients g = norm_backward(x, dy, stats, scale, kind);
  constexpr double kStep = 1e-6;
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::vector<double> up = x, down = x;
    up[i] += kStep;
    down[i] -= kStep;
    EXPECT_NEAR(g.dx[i], (loss(up) - loss(down)) / (2 * kStep), 1e-7) << i;
    EXPECT_DOUBLE_EQ(g.dscale[i], dy[i] * (x[i] - stats.mean) * stats.inv_variance);
    EXPECT_DOUBLE_EQ(g.dbias[i], dy[i]);
  }
}

TEST(NormReference, BackwardMatchesFiniteDifferencesOfTheForward) {
  expect_backward_matches_finite_differences(NormKind::layer);
  expect_backward_matches_finite_differences(NormKind::rms);
}

}  // namespace
}  // namespace timeroof
