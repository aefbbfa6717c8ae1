// CPU tier, LSTM without a GPU: analytic FLOPs and bytes worked by hand (the
// paper's baseline, every pass; a bidirectional two-layer case), spec and params
// validation that names the field, the operator's identity, the family's default
// sweep, and the double-precision reference: a one-step cell computed by hand, and
// the analytic backward against finite differences of the forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sweeps/family.hpp"
#include "sweeps/lstm.hpp"
#include "sweeps/operator.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using test::usage_message;

// The paper's baseline: batch 16, 16 steps, 32 features, hidden 16.
LstmSpec baseline(LstmPass pass, Precision precision = Precision::fp32) {
  LstmSpec spec;
  spec.batch = 16;
  spec.seq_length = 16;
  spec.input_size = 32;
  spec.hidden_size = 16;
  spec.pass = pass;
  spec.precision = precision;
  return spec;
}

TEST(LstmSpec, BaselineFlopsByHand) {
  // Per step: the four gates' GEMMs 2 * 4H * (I + H) * B = 8 * 16 * 48 * 16 = 98,304.
  // 16 steps, 1 layer, 1 direction: 1,572,864 GEMM FLOPs.
  EXPECT_EQ(lstm_gemm_flops(baseline(LstmPass::inference)), 1'572'864.0);
  // Elementwise per hidden unit and step, H B = 256 units, 16 steps = 4,096:
  //   forward 17 x 4,096 = 69,632          -> 1,642,496
  //   backward data 23 x 4,096 = 94,208    -> 1,667,072
  //   backward weights 8 x 4,096 = 32,768  -> 1,605,632
  EXPECT_EQ(lstm_flops(baseline(LstmPass::inference)), 1'642'496.0);
  EXPECT_EQ(lstm_flops(baseline(LstmPass::training_forward)), 1'642'496.0);
  EXPECT_EQ(lstm_flops(baseline(LstmPass::backward_data)), 1'667'072.0);
  EXPECT_EQ(lstm_flops(baseline(LstmPass::backward_weights)), 1'605'632.0);
  // Precision does not change the work.
  EXPECT_EQ(lstm_flops(baseline(LstmPass::inference, Precision::fp16)), 1'642'496.0);
}

// The samples' batch-64 point, which the counters put at 1.50x (issue #20; see
// roofline_sweep_test's LstmRedundantWorkIsTheKernelsOwn): per layer, direction,
// step and batch entry, the gates' input GEMM 4H x I (2 * 64 * 32 = 4,096 FLOPs),
// the recurrent GEMM 4H x H (2 * 64 * 16 = 2,048) and 17 elementwise FLOPs per
// hidden unit (8 bias adds, 3 sigmoids + 2 tanhs at 1 each, 3 for c, 1 for h: 272).
TEST(LstmSpec, SampleBatch64FlopsByHand) {
  LstmSpec spec = baseline(LstmPass::inference);
  spec.batch = 64;
  const double steps = 16 * 64;                                   // T B
  EXPECT_EQ(lstm_gemm_flops(spec), (4'096.0 + 2'048.0) * steps);  // 4,194,304 + 2,097,152
  EXPECT_EQ(lstm_flops(spec), (4'096.0 + 2'048.0 + 272.0) * steps);
  EXPECT_EQ(lstm_flops(spec), 6'569'984.0);
  spec.pass = LstmPass::training_forward;
  EXPECT_EQ(lstm_flops(spec), 6'569'984.0);
}

TEST(LstmSpec, BaselineBytesByHand) {
  const LstmSpec spec = baseline(LstmPass::inference);
  // X = T B I = 8,192; Y = T B H = 4,096; S = L D B H = 256;
  // P = 4 H (I + H) + 8 H = 4 * 16 * 48 + 128 = 3,200.
  EXPECT_EQ(lstm_x_elements(spec), 8'192.0);
  EXPECT_EQ(lstm_y_elements(spec), 4'096.0);
  EXPECT_EQ(lstm_state_elements(spec), 256.0);
  EXPECT_EQ(lstm_weight_elements(spec), 3'200.0);
  // Forward: x + hx + cx + w + y + hy + cy = 8,192 + 512 + 3,200 + 4,096 + 512 = 16,512.
  EXPECT_EQ(lstm_min_bytes(baseline(LstmPass::inference)), 4 * 16'512.0);
  EXPECT_EQ(lstm_min_bytes(baseline(LstmPass::training_forward)), 4 * 16'512.0);
  EXPECT_EQ(lstm_min_bytes(baseline(LstmPass::inference, Precision::fp16)), 2 * 16'512.0);
  EXPECT_EQ(lstm_min_bytes(baseline(LstmPass::inference, Precision::tf32)), 4 * 16'512.0);
  // Backward data: y + dy + hx + cx + dhy + dcy + w + dx + dhx + dcx
  //   = 2 * 4,096 + 4 * 256 + 3,200 + 8,192 + 2 * 256 = 21,120.
  EXPECT_EQ(lstm_min_bytes(baseline(LstmPass::backward_data)), 4 * 21'120.0);
  // Backward weights: x + hx + y + dw = 8,192 + 256 + 4,096 + 3,200 = 15,744.
  EXPECT_EQ(lstm_min_bytes(baseline(LstmPass::backward_weights)), 4 * 15'744.0);
  EXPECT_EQ(lstm_min_bytes(baseline(LstmPass::backward_weights, Precision::bf16)), 2 * 15'744.0);
}

TEST(LstmSpec, BidirectionalTwoLayerCountsByHand) {
  LstmSpec spec;
  spec.batch = 2;
  spec.seq_length = 3;
  spec.input_size = 5;
  spec.hidden_size = 4;
  spec.layers = 2;
  spec.bidirectional = true;
  EXPECT_EQ(lstm_directions(spec), 2);
  EXPECT_EQ(lstm_layer_input_size(spec, 0), 5);
  EXPECT_EQ(lstm_layer_input_size(spec, 1), 8);  // both directions' h
  // Weights per direction: layer 0: 4*4*5 + 4*4*4 + 8*4 = 176; layer 1: 4*4*8 + 64 + 32 = 224.
  EXPECT_EQ(lstm_weight_elements(spec), 2.0 * (176 + 224));
  // GEMMs per step and direction: layer 0: 8*4*(5+4)*2 = 576; layer 1: 8*4*(8+4)*2 = 768;
  // x 2 directions x 3 steps = 8,064. Elementwise: 17 x (L D T H B = 2*2*3*4*2 = 96) = 1,632.
  EXPECT_EQ(lstm_gemm_flops(spec), 8'064.0);
  EXPECT_EQ(lstm_flops(spec), 9'696.0);
  EXPECT_EQ(lstm_x_elements(spec), 30.0);
  EXPECT_EQ(lstm_y_elements(spec), 48.0);  // T B 2H
  EXPECT_EQ(lstm_state_elements(spec), 32.0);
}

TEST(LstmSpec, ValidationNamesTheField) {
  LstmSpec spec;
  spec.batch = 0;
  std::string message = usage_message([&] { validate(spec); });
  EXPECT_MENTIONS(message, "batch = 0");
  EXPECT_MENTIONS(message, "allowed: 1 ..");
  for (auto [field, setter] : std::vector<std::pair<std::string, std::function<void(LstmSpec&)>>>{
           {"seq_length", [](LstmSpec& s) { s.seq_length = -1; }},
           {"input_size", [](LstmSpec& s) { s.input_size = 0; }},
           {"hidden_size", [](LstmSpec& s) { s.hidden_size = std::int64_t{1} << 40; }},
           {"layers", [](LstmSpec& s) { s.layers = 0; }}}) {
    LstmSpec bad;
    setter(bad);
    EXPECT_MENTIONS(usage_message([&] { validate(bad); }), field);
  }
  LstmSpec fp32_tensor;
  fp32_tensor.math = MathMode::tensor;
  message = usage_message([&] { validate(fp32_tensor); });
  EXPECT_MENTIONS(message, "precision tf32");
  EXPECT_MENTIONS(message, "allowed with fp32: fma_only");
  LstmSpec tf32_fma;
  tf32_fma.precision = Precision::tf32;
  tf32_fma.math = MathMode::fma_only;
  EXPECT_MENTIONS(usage_message([&] { validate(tf32_fma); }), "allowed with tf32: tensor");
  // The operator validates on construction, before any GPU work.
  EXPECT_MENTIONS(usage_message([&] { Lstm op(spec); }), "batch");
  EXPECT_MENTIONS(usage_message([] { (void)parse_lstm_pass("forward"); }),
                  "allowed: inference, training_forward, backward_data, backward_weights");
  EXPECT_MENTIONS(usage_message([] { (void)parse_lstm_algorithm("fast"); }), "persist_static");
}

TEST(LstmSpec, ParamsAreValidatedByKey) {
  EXPECT_MENTIONS(usage_message([] {
                    (void)lstm_spec_from_params({{"steps", 16}});
                  }),
                  "unknown key 'steps'; allowed: batch, seq_length");
  EXPECT_MENTIONS(usage_message([] {
                    (void)lstm_spec_from_params({{"batch", "16"}});
                  }),
                  "batch = \"16\" is not an integer");
  EXPECT_MENTIONS(usage_message([] { (void)lstm_spec_from_params({{"batch", 2.5}}); }), "batch");
  EXPECT_MENTIONS(usage_message([] {
                    (void)lstm_spec_from_params({{"bidirectional", 2}});
                  }),
                  "bidirectional = 2");
  EXPECT_MENTIONS(usage_message([] {
                    (void)lstm_spec_from_params({{"pass", "fwd"}});
                  }),
                  "pass: unknown value 'fwd'");
  EXPECT_MENTIONS(usage_message([] {
                    (void)lstm_spec_from_params({{"precision", "fp64"}});
                  }),
                  "precision");
  EXPECT_MENTIONS(usage_message([] {
                    (void)lstm_spec_from_params({{"math", 1}});
                  }),
                  "math = 1 is not text");
  EXPECT_MENTIONS(usage_message([] {
                    (void)LstmProblem(lstm_spec_from_params({{"hidden_size", 0}}));
                  }),
                  "hidden_size = 0");
  EXPECT_MENTIONS(usage_message([] { (void)lstm_spec_from_params(nlohmann::json::array()); }),
                  "allowed keys");
  // Absent keys are the paper's baseline; true/false are accepted for bidirectional.
  const LstmSpec defaults = lstm_spec_from_params(nlohmann::json::object());
  EXPECT_EQ(defaults.batch, 16);
  EXPECT_EQ(defaults.seq_length, 16);
  EXPECT_EQ(defaults.input_size, 32);
  EXPECT_EQ(defaults.hidden_size, 16);
  EXPECT_EQ(resolved_math(defaults), MathMode::fma_only);
  EXPECT_TRUE(lstm_spec_from_params({{"bidirectional", true}}).bidirectional);
}

TEST(LstmSpec, ParamsRoundTrip) {
  LstmSpec spec;
  spec.batch = 3;
  spec.seq_length = 5;
  spec.input_size = 7;
  spec.hidden_size = 9;
  spec.layers = 2;
  spec.bidirectional = true;
  spec.pass = LstmPass::backward_weights;
  spec.precision = Precision::bf16;
  spec.algorithm = LstmAlgorithm::persist_static;
  const nlohmann::json params = lstm_params(spec);
  EXPECT_EQ(params["bidirectional"], 1);
  EXPECT_EQ(params["math"], "tensor");
  const LstmSpec back = lstm_spec_from_params(params);
  EXPECT_EQ(back.batch, 3);
  EXPECT_EQ(back.seq_length, 5);
  EXPECT_EQ(back.input_size, 7);
  EXPECT_EQ(back.hidden_size, 9);
  EXPECT_EQ(back.layers, 2);
  EXPECT_TRUE(back.bidirectional);
  EXPECT_EQ(back.pass, LstmPass::backward_weights);
  EXPECT_EQ(back.precision, Precision::bf16);
  EXPECT_EQ(resolved_math(back), MathMode::tensor);
  EXPECT_EQ(back.algorithm, LstmAlgorithm::persist_static);
  EXPECT_EQ(lstm_params(back), params);
}

TEST(LstmSpec, OperatorIdentityWithoutGpu) {
  Lstm op(baseline(LstmPass::backward_data, Precision::fp16));
  EXPECT_EQ(op.op(), "lstm_backward_data");
  EXPECT_EQ(op.precision(), Precision::fp16);
  EXPECT_EQ(op.math_mode(), MathMode::tensor);
  EXPECT_EQ(op.algorithm(), "");  // before prepare()
  EXPECT_EQ(op.details(), nlohmann::json::object());
  EXPECT_EQ(op.flops(), 1'667'072.0);
  EXPECT_EQ(op.min_bytes(), 2 * 21'120.0);
  const Point point = describe(op);
  EXPECT_EQ(point.op, "lstm_backward_data");
  EXPECT_EQ(point.params["batch"], 16);
  EXPECT_EQ(point.params["pass"], "backward_data");
  EXPECT_FALSE(point.params.contains("precision"));  // a field of its own
  EXPECT_EQ(point.math_mode, "tensor");
  EXPECT_EQ(point.flops, 1'667'072.0);
  for (LstmPass pass : {LstmPass::inference, LstmPass::training_forward, LstmPass::backward_data,
                        LstmPass::backward_weights})
    EXPECT_EQ(lstm_op_name(pass), std::string("lstm_") + to_string(pass));
  EXPECT_STREQ(cudnn_name(LstmAlgorithm::standard), "CUDNN_RNN_ALGO_STANDARD");
}

// The dry run's kernel count: the H200 traced 33 for the 16-step baseline.
TEST(LstmSpec, ExpectedLaunchesForTheDryRun) {
  EXPECT_EQ(Lstm(baseline(LstmPass::inference, Precision::fp16)).expected_launches(), 33);
  EXPECT_EQ(Lstm(baseline(LstmPass::backward_weights, Precision::fp16)).expected_launches(), 4);
  LstmSpec deep = baseline(LstmPass::training_forward, Precision::fp32);
  deep.layers = 2;
  deep.bidirectional = true;
  EXPECT_EQ(Lstm(deep).expected_launches(), 4 * 33);
}

TEST(LstmFamily, DefaultSweepIsThePapersGridWithBatchTo1024) {
  const OperatorFamily family = lstm_family();
  EXPECT_EQ(family.name, "lstm");
  const std::vector<nlohmann::json> points = family.default_points();
  ASSERT_EQ(points.size(), 152u);  // 19 shapes x 2 precisions x 4 passes
  std::set<std::string> keys;
  for (const ParamAxis& axis : family.axes) keys.insert(axis.key);
  std::set<std::int64_t> batches;
  std::set<std::string> precisions, passes;
  for (const nlohmann::json& point : points) {
    (void)family.problem(point);
    for (const auto& item : point.items()) EXPECT_TRUE(keys.count(item.key())) << item.key();
    batches.insert(point["batch"].get<std::int64_t>());
    precisions.insert(point["precision"].get<std::string>());
    passes.insert(point["pass"].get<std::string>());
    // One parameter at a time from the baseline.
    const int changed = (point["batch"] != 16) + (point["seq_length"] != 16) +
                        (point["input_size"] != 32) + (point["hidden_size"] != 16);
    EXPECT_LE(changed, 1) << point.dump();
  }
  EXPECT_EQ(batches.size(), 11u);
  EXPECT_EQ(*batches.begin(), 1);
  EXPECT_EQ(*batches.rbegin(), 1024);
  EXPECT_EQ(precisions, (std::set<std::string>{"fp16", "fp32"}));
  EXPECT_EQ(passes.size(), 4u);
  EXPECT_EQ(points.front()["batch"], 1);
  EXPECT_EQ(points.front()["precision"], "fp32");
  EXPECT_EQ(points.front()["math"], "fma_only");
  // Every axis's defaults are allowed values of the axis.
  for (const ParamAxis& axis : family.axes) {
    ASSERT_TRUE(axis.defaults.is_array()) << axis.key;
    EXPECT_FALSE(axis.defaults.empty()) << axis.key;
    if (axis.kind == ParamAxis::Kind::text)
      for (const nlohmann::json& value : axis.defaults)
        EXPECT_NE(std::find(axis.allowed.begin(), axis.allowed.end(), value.get<std::string>()),
                  axis.allowed.end())
            << axis.key;
  }
  // problem() builds the problem without GPU work and names bad keys.
  const auto op = family.problem(points.back());
  EXPECT_EQ(op->op(), "lstm_backward_weights");
  EXPECT_EQ(op->precision(), Precision::fp16);
  EXPECT_MENTIONS(usage_message([&] {
                    (void)family.problem({{"features", 32}});
                  }),
                  "unknown key 'features'");
}

// ---------------------------------------------------------------------------
// The reference.

LstmSpec one_unit(std::int64_t steps) {
  LstmSpec spec;
  spec.batch = 1;
  spec.seq_length = steps;
  spec.input_size = 1;
  spec.hidden_size = 1;
  return spec;
}

using V = std::vector<double>;

double sigmoid(double v) {
  return 1 / (1 + std::exp(-v));
}

TEST(LstmReference, OneCellByHand) {
  const LstmSpec spec = one_unit(1);
  LstmWeights w = lstm_zero_weights(spec);
  ASSERT_EQ(w.size(), 1u);
  ASSERT_EQ(w[0].w.size(), 4u);  // gates i f g o, 1 x 1 each
  // All weights zero: i = f = o = 1/2, g = 0: c = cx / 2, h = tanh(c) / 2.
  LstmForwardResult out = lstm_reference_forward(spec, V{1.0}, V{0.5}, V{2.0}, w);
  EXPECT_DOUBLE_EQ(out.cy[0], 1.0);
  EXPECT_DOUBLE_EQ(out.hy[0], 0.5 * std::tanh(1.0));
  EXPECT_DOUBLE_EQ(out.y[0], out.hy[0]);
  // W_g = 1 with x = 1: g = tanh(1); R_i = 2 with hx = 0.5: i = sigmoid(1);
  // bW_f = ln 3: f = 3/4; bR_o = -ln 3: o = 1/4.
  w[0].w[2] = 1.0;
  w[0].r[0] = 2.0;
  w[0].bw[1] = std::log(3.0);
  w[0].br[3] = -std::log(3.0);
  out = lstm_reference_forward(spec, V{1.0}, V{0.5}, V{2.0}, w);
  const double c = 0.75 * 2.0 + sigmoid(1.0) * std::tanh(1.0);
  EXPECT_NEAR(out.cy[0], c, 1e-15);
  EXPECT_NEAR(out.hy[0], 0.25 * std::tanh(c), 1e-15);
}

TEST(LstmReference, TwoStepsCarryTheState) {
  const LstmSpec spec = one_unit(2);
  LstmWeights w = lstm_zero_weights(spec);
  w[0].r[2] = 1.0;  // g = tanh(h_{t-1})
  const std::vector<double> x = {0.0, 0.0};
  const LstmForwardResult out = lstm_reference_forward(spec, x, V{0.8}, V{0.0}, w);
  const double c0 = 0.5 * std::tanh(0.8);  // f c + i g with c = 0
  const double h0 = 0.5 * std::tanh(c0);
  const double c1 = 0.5 * c0 + 0.5 * std::tanh(h0);
  EXPECT_NEAR(out.y[0], h0, 1e-15);
  EXPECT_NEAR(out.y[1], 0.5 * std::tanh(c1), 1e-15);
  EXPECT_NEAR(out.cy[0], c1, 1e-15);
  // Reversed in time, the backward direction sees the same (all-zero) inputs.
  LstmSpec bi = spec;
  bi.bidirectional = true;
  LstmWeights wb = lstm_zero_weights(bi);
  wb[0] = w[0];
  wb[1] = w[0];
  const LstmForwardResult both = lstm_reference_forward(bi, x, V{0.8, 0.8}, V{0.0, 0.0}, wb);
  ASSERT_EQ(both.y.size(), 4u);                        // T x B x 2H
  EXPECT_NEAR(both.y[0], h0, 1e-15);                   // forward, t = 0
  EXPECT_NEAR(both.y[3], h0, 1e-15);                   // backward direction starts at t = 1
  EXPECT_NEAR(both.y[1], 0.5 * std::tanh(c1), 1e-15);  // backward, t = 0: its second step
  EXPECT_THROW((void)lstm_reference_forward(spec, V{1.0}, V{0.8}, V{0.0}, w),
               std::invalid_argument);
}

std::vector<double> random_values(std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> values(count);
  for (double& v : values) v = dist(rng);
  return values;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// The analytic backward equals central differences of the loss
// sum(dy y) + sum(dhy hy) + sum(dcy cy) for every input, state and weight.
void expect_backward_matches_finite_differences(const LstmSpec& spec) {
  std::mt19937 rng(42);
  auto n = [](double count) { return static_cast<std::size_t>(count); };
  std::vector<double> x = random_values(n(lstm_x_elements(spec)), rng);
  std::vector<double> hx = random_values(n(lstm_state_elements(spec)), rng);
  std::vector<double> cx = random_values(n(lstm_state_elements(spec)), rng);
  LstmWeights w = lstm_zero_weights(spec);
  for (LstmLayerWeights& layer : w)
    for (std::vector<double>* part : {&layer.w, &layer.r, &layer.bw, &layer.br})
      *part = random_values(part->size(), rng);
  const std::vector<double> dy = random_values(n(lstm_y_elements(spec)), rng);
  const std::vector<double> dhy = random_values(n(lstm_state_elements(spec)), rng);
  const std::vector<double> dcy = random_values(n(lstm_state_elements(spec)), rng);
  const LstmBackwardResult grad = lstm_reference_backward(spec, x, hx, cx, w, dy, dhy, dcy);
  auto loss = [&] {
    const LstmForwardResult out = lstm_reference_forward(spec, x, hx, cx, w);
    return dot(dy, out.y) + dot(dhy, out.hy) + dot(dcy, out.cy);
  };
  auto numeric = [&](double& value) {
    const double eps = 1e-6, saved = value;
    value = saved + eps;
    const double up = loss();
    value = saved - eps;
    const double down = loss();
    value = saved;
    return (up - down) / (2 * eps);
  };
  int compared = 0;
  auto compare = [&](std::vector<double>& values, const std::vector<double>& analytic,
                     const char* name) {
    ASSERT_EQ(values.size(), analytic.size()) << name;
    for (std::size_t i = 0; i < values.size(); ++i, ++compared)
      EXPECT_NEAR(numeric(values[i]), analytic[i], 1e-7) << name << "[" << i << "]";
  };
  compare(x, grad.dx, "dx");
  compare(hx, grad.dhx, "dhx");
  compare(cx, grad.dcx, "dcx");
  for (std::size_t pl = 0; pl < w.size(); ++pl) {
    compare(w[pl].w, grad.dw[pl].w, "dW");
    compare(w[pl].r, grad.dw[pl].r, "dR");
    compare(w[pl].bw, grad.dw[pl].bw, "dbW");
    compare(w[pl].br, grad.dw[pl].br, "dbR");
    EXPECT_EQ(grad.dw[pl].bw, grad.dw[pl].br);  // both biases enter every gate alike
  }
  EXPECT_EQ(static_cast<double>(compared),
            lstm_x_elements(spec) + 2 * lstm_state_elements(spec) + lstm_weight_elements(spec));
}

TEST(LstmReference, BackwardMatchesFiniteDifferences) {
  LstmSpec spec;
  spec.batch = 2;
  spec.seq_length = 4;
  spec.input_size = 3;
  spec.hidden_size = 2;
  expect_backward_matches_finite_differences(spec);
}

TEST(LstmReference, BidirectionalTwoLayerBackwardMatchesFiniteDifferences) {
  LstmSpec spec;
  spec.batch = 2;
  spec.seq_length = 3;
  spec.input_size = 3;
  spec.hidden_size = 2;
  spec.layers = 2;
  spec.bidirectional = true;
  expect_backward_matches_finite_differences(spec);
}

}  // namespace
}  // namespace timeroof
