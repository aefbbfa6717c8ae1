// The "lstm" operator family: cuDNN LSTM (sweeps/lstm.hpp) over batch, steps,
// features and hidden size, per pass and precision.
//
// The default sweep is the paper's grid (docs/design.md): from the baseline batch 16,
// 16 steps, 32 features, hidden 16 (1 layer, unidirectional), one parameter at a
// time: batch 1, 2, 4, ..., 1024 (the paper's 16-128 extended to today's range),
// steps 32, 64, 128, features 64, 128, hidden 32, 64, 128 (16-128 in the paper):
// 11 + 3 + 2 + 3 = 19 shapes; each in fp32 (FMA only) and fp16 (Tensor Cores), in
// all four passes (inference, training forward, backward data, backward
// weights): 19 x 2 x 4 = 152 points. A full cross product of the paper's ranges
// would be 11 x 4 x 3 x 4 x 2 x 4 = 4,224 points, far beyond the 5-minute budget
// of the default sweeps; one-at-a-time keeps every curve the paper draws.
// Run order: precision, then pass, then the shapes above (batch sweep first).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/family.hpp"
#include "sweeps/lstm_problem.hpp"

namespace timeroof {

namespace {

struct Shape {
  std::int64_t batch, seq_length, input_size, hidden_size;
};

std::vector<Shape> default_shapes() {
  const LstmSpec base;  // the paper's baseline
  std::vector<Shape> shapes;
  for (std::int64_t batch = 1; batch <= 1024; batch *= 2)
    shapes.push_back({batch, base.seq_length, base.input_size, base.hidden_size});
  for (std::int64_t steps : {32, 64, 128})
    shapes.push_back({base.batch, steps, base.input_size, base.hidden_size});
  for (std::int64_t features : {64, 128})
    shapes.push_back({base.batch, base.seq_length, features, base.hidden_size});
  for (std::int64_t hidden : {32, 64, 128})
    shapes.push_back({base.batch, base.seq_length, base.input_size, hidden});
  return shapes;
}

constexpr LstmPass kPasses[] = {LstmPass::inference, LstmPass::training_forward,
                                LstmPass::backward_data, LstmPass::backward_weights};
constexpr Precision kDefaultPrecisions[] = {Precision::fp32, Precision::fp16};

std::vector<nlohmann::json> default_points() {
  std::vector<nlohmann::json> points;
  for (Precision precision : kDefaultPrecisions)
    for (LstmPass pass : kPasses)
      for (const Shape& shape : default_shapes()) {
        LstmSpec spec;
        spec.batch = shape.batch;
        spec.seq_length = shape.seq_length;
        spec.input_size = shape.input_size;
        spec.hidden_size = shape.hidden_size;
        spec.pass = pass;
        spec.precision = precision;
        points.push_back(lstm_params(spec));
      }
  return points;
}

}  // namespace

// Built as conv2d_family() is, on purpose: one template per operator (docs/design.md,
// "Adding an operator").
OperatorFamily lstm_family() {
  OperatorFamily family;
  family.name = "lstm";
  family.help =
      "cuDNN LSTM (RNN v8 API): inference / training forward, backward data / weights; the "
      "default sweep is the paper's grid, one parameter at a time from batch 16, 16 steps, 32 "
      "features, hidden 16, batch extended to 1..1024 (152 points)";
  // The baseline (a flag sweep's value for an axis left out) is each axis' first
  // default: the paper's batch 16 first, then the rest of 1..1024.
  nlohmann::json batches = nlohmann::json::array({16});
  for (std::int64_t batch = 1; batch <= 1024; batch *= 2)
    if (batch != 16) batches.push_back(batch);
  family.axes = {
      integer_axis("batch", "B, sequences per call (default sweep: 1..1024, x2)", batches),
      integer_axis("seq_length", "T, time steps per sequence (the paper's 'steps')",
                   nlohmann::json::array({16, 32, 64, 128})),
      integer_axis("input_size", "I, features per step of x (the paper's 'features')",
                   nlohmann::json::array({32, 64, 128})),
      integer_axis("hidden_size", "H, width of h and c (the paper's 'hidden')",
                   nlohmann::json::array({16, 32, 64, 128})),
      integer_axis("layers", "L, stacked LSTM layers", nlohmann::json::array({1})),
      integer_axis("bidirectional", "0 = unidirectional, 1 = bidirectional (2H-wide output)",
                   nlohmann::json::array({0})),
      text_axis("pass",
                "what run() times: inference or training forward, backward data or weights "
                "(the backward passes run their forward once in prepare)",
                {"inference", "training_forward", "backward_data", "backward_weights"},
                nlohmann::json::array(
                    {"inference", "training_forward", "backward_data", "backward_weights"})),
      text_axis("precision", "stored data type; fp16 and bf16 accumulate in fp32",
                operator_precision_names(), nlohmann::json::array({"fp32", "fp16"})),
      text_axis("math",
                "Tensor Cores allowed or FMA units only; auto = fp32 -> fma_only, others -> "
                "tensor",
                {"auto", "tensor", "fma_only"}, nlohmann::json::array({"auto"})),
      text_axis("algorithm", "cuDNN recurrence algorithm",
                {"standard", "persist_static", "persist_dynamic", "persist_static_small_h"},
                nlohmann::json::array({"standard"})),
  };
  family.default_points = default_points;
  family.problem = [](const nlohmann::json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<LstmProblem>(lstm_spec_from_params(point));
  };
  return family;
}

}  // namespace timeroof
