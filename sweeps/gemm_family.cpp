// The gemm family: cuBLASLt GEMM and strided batched GEMM (sweeps/gemm.hpp).
//
// Keys (a point is a JSON object of these; a missing key takes its baseline,
// the first of the axis' defaults): m, n, k, batch, trans_a and trans_b (n | t),
// precision (fp32 | tf32 | fp16 | bf16 | fp8_e4m3 | fp8_e5m2 | int8), epilogue
// (none | bias | relu | gelu | bias_relu | bias_gelu) and algo (heuristic, or an
// index into cuBLASLt's heuristic list).
//
// Default sweep (45 points, TN, heuristic algorithm), in run order:
//   square m = n = k = 1024, 2048, 4096, 8192 in fp16, bf16, tf32, fp32   16
//   LLaMA-7B projections (hidden 4096, MLP 11008), (n, k) = (12288, 4096) fused
//     QKV, (11008, 4096) up / gate, (4096, 11008) down (the output projection
//     is the square 4096), for m = 4096 tokens (prefill) in fp16 and bf16 and
//     m = 16 tokens (decode) in bf16                                          9
//   batched 1024^3 fp16, batch 2, 4, ..., 64                                6
//   4096^3 fp16 with each epilogue                                          5
//   4096^3 and 8192^3 in fp8_e4m3 and int8, 4096^3 in fp8_e5m2             5
//   batched 512 x 512 x 64 fp16 (attention-like), batch 16 .. 1024 x4      4
// The largest points take a few ms per call on an H100, so the sweep's time is
// the runner's per-point overhead (sweep gemm --dry-run: about a minute).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sweeps/family.hpp"
#include "sweeps/gemm_problem.hpp"

namespace timeroof {
namespace {

using nlohmann::json;

template <typename Enum, std::size_t N>
std::vector<std::string> names(const Enum (&values)[N]) {
  std::vector<std::string> spelled;
  for (Enum value : values) spelled.emplace_back(to_string(value));
  return spelled;
}

// The axes in Cartesian nesting order: the first varies fastest (sweeps/spec.hpp).
std::vector<ParamAxis> gemm_axes() {
  return {
      integer_axis("m", "rows of D and op(A) (tokens of a linear layer)",
                   json::array({1024, 2048, 4096, 8192})),
      integer_axis("n", "columns of D and op(B) (output features)",
                   json::array({1024, 2048, 4096, 8192})),
      integer_axis("k", "the reduction: columns of op(A), rows of op(B) (input features)",
                   json::array({1024, 2048, 4096, 8192})),
      integer_axis("batch", "independent products per call; > 1 is strided batched GEMM",
                   json::array({1, 2, 4, 8, 16, 32, 64})),
      text_axis("trans_a", "A stored transposed (t: k x m) or not (n: m x k), column-major",
                {"n", "t"}, json::array({"t"})),
      text_axis("trans_b", "B stored transposed (t: n x k) or not (n: k x n), column-major",
                {"n", "t"}, json::array({"n"})),
      text_axis("precision",
                "A and B types: fp32 (FMA units), tf32, fp16, bf16 (-> same type), fp8_e4m3 / "
                "fp8_e5m2 (x e4m3 -> bf16, sm_89+), int8 (-> int32); fp8 and int8 TN only",
                names(kAllGemmInputs), json::array({"fp16", "bf16", "tf32", "fp32"})),
      text_axis("epilogue",
                "cuBLASLt epilogue on D: bias (an m-vector), relu, gelu (tanh form), or both",
                names(kAllGemmEpilogues), json::array({"none"})),
      integer_axis("algo",
                   "heuristic = cuBLASLt's first heuristic result, or an index 0 .. 31 into its "
                   "heuristic list (the algorithm that ran is recorded)",
                   json::array({"heuristic"}), {"heuristic"}),
  };
}

const std::vector<ParamAxis>& axes() {
  static const std::vector<ParamAxis> kAxes = gemm_axes();
  return kAxes;
}

const ParamAxis& axis(const char* key) {
  return axis_of("gemm", axes(), key);
}

bool transposed(const json& point, const char* key) {
  return axis_text("gemm", point, axis(key)) == "t";
}

json point_of(std::int64_t m, std::int64_t n, std::int64_t k, const char* precision,
              std::int64_t batch = 1, const char* epilogue = "none") {
  return {{"m", m},
          {"n", n},
          {"k", k},
          {"batch", batch},
          {"trans_a", "t"},
          {"trans_b", "n"},
          {"precision", precision},
          {"epilogue", epilogue},
          {"algo", "heuristic"}};
}

std::vector<json> default_points() {
  std::vector<json> points;
  for (const char* precision : {"fp16", "bf16", "tf32", "fp32"})
    for (std::int64_t size : {1024, 2048, 4096, 8192})
      points.push_back(point_of(size, size, size, precision));
  constexpr std::pair<std::int64_t, std::int64_t> kProjections[] = {
      {12288, 4096}, {11008, 4096}, {4096, 11008}};
  for (const char* precision : {"fp16", "bf16"})
    for (const auto& [n, k] : kProjections) points.push_back(point_of(4096, n, k, precision));
  for (const auto& [n, k] : kProjections) points.push_back(point_of(16, n, k, "bf16"));
  for (std::int64_t batch = 2; batch <= 64; batch *= 2)
    points.push_back(point_of(1024, 1024, 1024, "fp16", batch));
  for (GemmEpilogue epilogue : kAllGemmEpilogues)
    if (epilogue != GemmEpilogue::none)
      points.push_back(point_of(4096, 4096, 4096, "fp16", 1, to_string(epilogue)));
  for (const char* precision : {"fp8_e4m3", "int8"})
    for (std::int64_t size : {4096, 8192}) points.push_back(point_of(size, size, size, precision));
  points.push_back(point_of(4096, 4096, 4096, "fp8_e5m2"));
  for (std::int64_t batch = 16; batch <= 1024; batch *= 4)
    points.push_back(point_of(512, 512, 64, "fp16", batch));
  return points;
}

}  // namespace

GemmSpec gemm_spec_from_params(const json& point) {
  require_known_keys("gemm", point, axes());
  GemmSpec spec;
  spec.m = axis_integer("gemm", point, axis("m"), 1);
  spec.n = axis_integer("gemm", point, axis("n"), 1);
  spec.k = axis_integer("gemm", point, axis("k"), 1);
  spec.batch = axis_integer("gemm", point, axis("batch"), 1);
  spec.trans_a = transposed(point, "trans_a");
  spec.trans_b = transposed(point, "trans_b");
  spec.inputs = parse_gemm_inputs(axis_text("gemm", point, axis("precision")));
  spec.epilogue = parse_gemm_epilogue(axis_text("gemm", point, axis("epilogue")));
  const ParamAxis& algo = axis("algo");
  const json& algo_value = point.contains("algo") ? point.at("algo") : algo.defaults.at(0);
  if (algo_value != "heuristic") spec.algo = static_cast<int>(axis_integer("gemm", point, algo, 0));
  return spec;  // GemmProblem validates the rest (types with transposes, sizes)
}

// Built as conv2d_family() and lstm_family() are: one template per operator.
OperatorFamily gemm_family() {
  OperatorFamily family;
  family.name = "gemm";
  family.help =
      "cuBLASLt GEMM and strided batched GEMM: fp32/tf32/fp16/bf16/fp8/int8, transposes, bias / "
      "relu / gelu epilogues, heuristic or fixed algorithm; default: square 1024..8192, LLaMA-7B "
      "projections, batch, epilogues, fp8 and int8 (45 points)";
  family.axes = axes();
  family.default_points = default_points;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<GemmProblem>(gemm_spec_from_params(point));
  };
  return family;
}

}  // namespace timeroof
