// The attention family: scaled dot-product attention, forward and backward,
// through cuDNN's graph API (sweeps/attention.hpp).
//
// Keys (a missing key takes its baseline, the first of the axis' defaults):
// batch, heads, kv_heads (0 = heads), seq_q, seq_kv (0 = seq_q), head_dim,
// mask (none | causal), direction (fwd | bwd), precision (fp16 | bf16 | fp8;
// fp8: e4m3 with per-tensor scales, Hopper+; bwd at head_dim 128 on Hopper).
//
// Default sweep (14 points), in run order:
//   BERT-base attention (H 12, D 64), B 8 and 32 x S 128 and 512, fp16, fwd    4
//   the same at B 32, S 512 in bf16                                            1
//   LLaMA-7B prefill (H 32, D 128, B 1), causal, S 1024, 2048, 4096, bf16      3
//   LLaMA decode step: seq_q 1 over a KV cache of 4096, B 8, causal, bf16     1
//   GQA (LLaMA-3-8B: H 32, kv_heads 8, D 128), B 1, S 2048, causal, bf16       1
//   bwd: BERT B 8 S 512 fp16; LLaMA S 1024 and 2048 causal bf16;
//        GQA S 1024 causal bf16                                                4
// Each call takes microseconds to a few milliseconds on an H100.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sweeps/attention_problem.hpp"
#include "sweeps/family.hpp"

namespace timeroof {
namespace {

using nlohmann::json;

template <typename Enum, std::size_t N>
std::vector<std::string> names(const Enum (&values)[N]) {
  std::vector<std::string> spelled;
  for (Enum value : values) spelled.emplace_back(to_string(value));
  return spelled;
}

std::vector<ParamAxis> attention_axes() {
  return {
      integer_axis("batch", "sequences per call (B)", json::array({8, 32})),
      integer_axis("heads", "query heads (H)", json::array({12, 32})),
      integer_axis("kv_heads", "key/value heads; 0 = heads (MHA), a divisor of heads for GQA / MQA",
                   json::array({0})),
      integer_axis("seq_q", "query length (rows of Q and O)", json::array({128, 512})),
      integer_axis("seq_kv", "key/value length; 0 = seq_q", json::array({0})),
      integer_axis("head_dim", "D, the same for Q, K and V; the scale is 1/sqrt(D)",
                   json::array({64, 128})),
      text_axis("mask",
                "none, or causal aligned to the bottom right (row i sees keys j <= i + seq_kv - "
                "seq_q, as decode with a KV cache)",
                names(kAllAttentionMasks), json::array({"none"})),
      text_axis("direction",
                "fwd (O from Q, K, V), or bwd (dQ, dK, dV from Q, K, V, O, dO and the softmax "
                "statistics of a forward pass done in prepare)",
                names(kAllAttentionDirections), json::array({"fwd"})),
      text_axis("precision",
                "Q, K, V, O (and gradients) stored in fp16 or bf16, or fp8 (e4m3 with per-tensor "
                "scales, Hopper+; bwd at D 128 on Hopper); fp32 softmax",
                names(kAttentionPrecisions), json::array({"fp16", "bf16"})),
  };
}

const std::vector<ParamAxis>& axes() {
  static const std::vector<ParamAxis> kAxes = attention_axes();
  return kAxes;
}

const ParamAxis& axis(const char* key) {
  return axis_of("attention", axes(), key);
}

struct Shape {
  std::int64_t batch, heads, kv_heads, seq_q, seq_kv, head_dim;
};

json point_of(const Shape& s, const char* mask, const char* direction, const char* precision) {
  return {{"batch", s.batch}, {"heads", s.heads},       {"kv_heads", s.kv_heads},
          {"seq_q", s.seq_q}, {"seq_kv", s.seq_kv},     {"head_dim", s.head_dim},
          {"mask", mask},     {"direction", direction}, {"precision", precision}};
}

std::vector<json> default_points() {
  std::vector<json> points;
  for (std::int64_t batch : {8, 32})
    for (std::int64_t seq : {128, 512})
      points.push_back(point_of({batch, 12, 0, seq, 0, 64}, "none", "fwd", "fp16"));
  points.push_back(point_of({32, 12, 0, 512, 0, 64}, "none", "fwd", "bf16"));
  for (std::int64_t seq : {1024, 2048, 4096})
    points.push_back(point_of({1, 32, 0, seq, 0, 128}, "causal", "fwd", "bf16"));
  points.push_back(point_of({8, 32, 0, 1, 4096, 128}, "causal", "fwd", "bf16"));
  points.push_back(point_of({1, 32, 8, 2048, 0, 128}, "causal", "fwd", "bf16"));
  // No fp8 point: on Hopper fp8 attention needs cuDNN 9.19+
  // (kAttentionFp8HopperMinCudnn; 9.14's fp8 forward writes wrong rows at random,
  // design.md), and the GPU machines' system cuDNN is 9.14: they would be refusals.
  points.push_back(point_of({8, 12, 0, 512, 0, 64}, "none", "bwd", "fp16"));
  for (std::int64_t seq : {1024, 2048})
    points.push_back(point_of({1, 32, 0, seq, 0, 128}, "causal", "bwd", "bf16"));
  points.push_back(point_of({1, 32, 8, 1024, 0, 128}, "causal", "bwd", "bf16"));
  return points;
}

template <typename Enum, std::size_t N>
Enum parse(const char* key, const json& point, const Enum (&values)[N]) {
  const std::string given = axis_text("attention", point, axis(key));
  for (Enum value : values)
    if (given == to_string(value)) return value;
  throw usage_error(std::string("attention: ") + key + " = '" + given + "' is not a known value");
}

}  // namespace

AttentionSpec attention_spec_from_params(const json& point) {
  require_known_keys("attention", point, axes());
  AttentionSpec spec;
  spec.batch = axis_integer("attention", point, axis("batch"), 1);
  spec.heads = axis_integer("attention", point, axis("heads"), 1);
  spec.kv_heads = axis_integer("attention", point, axis("kv_heads"), 0);
  spec.seq_q = axis_integer("attention", point, axis("seq_q"), 1);
  spec.seq_kv = axis_integer("attention", point, axis("seq_kv"), 0);
  spec.head_dim = axis_integer("attention", point, axis("head_dim"), 1);
  spec.mask = parse("mask", point, kAllAttentionMasks);
  spec.direction = parse("direction", point, kAllAttentionDirections);
  spec.precision = parse("precision", point, kAttentionPrecisions);
  return spec;  // AttentionProblem validates the whole
}

OperatorFamily attention_family() {
  OperatorFamily family;
  family.name = "attention";
  family.help =
      "scaled dot-product attention through cuDNN's graph API (fused flash attention): fwd and "
      "bwd, causal mask, GQA, fp16/bf16/fp8, BSHD; default: BERT-base and LLaMA prefill, "
      "decode and GQA (16 points)";
  family.axes = axes();
  family.default_points = default_points;
  family.problem = [](const json& point) -> std::unique_ptr<Problem> {
    return std::make_unique<AttentionProblem>(attention_spec_from_params(point));
  };
  return family;
}

}  // namespace timeroof
