// The attention problem (sweeps/attention_problem.hpp): validation and analytic
// counts, host only.
#include "sweeps/attention_problem.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace timeroof {

const char* to_string(AttentionMask mask) {
  return mask == AttentionMask::causal ? "causal" : "none";
}

const char* to_string(AttentionDirection direction) {
  return direction == AttentionDirection::bwd ? "bwd" : "fwd";
}

namespace {

constexpr const char* kSmaller = "smaller batch, heads, seq_q, seq_kv or head_dim";

std::string text(std::int64_t value) {
  return std::to_string(value);
}

}  // namespace

void validate(const AttentionSpec& spec) {
  for (const auto& [key, value] :
       {std::pair{"batch", spec.batch}, std::pair{"heads", spec.heads},
        std::pair{"seq_q", spec.seq_q}, std::pair{"head_dim", spec.head_dim}})
    if (value < 1 || value > INT_MAX)
      throw usage_error(std::string("attention: ") + key + " = " + text(value) +
                        " is out of range; allowed: 1 .. " + text(INT_MAX));
  for (const auto& [key, value] :
       {std::pair{"kv_heads", spec.kv_heads}, std::pair{"seq_kv", spec.seq_kv}})
    if (value < 0 || value > INT_MAX)
      throw usage_error(std::string("attention: ") + key + " = " + text(value) +
                        " is out of range; allowed: 0 (the same as " +
                        (std::string(key) == "kv_heads" ? "heads" : "seq_q") + ") .. " +
                        text(INT_MAX));
  if (spec.precision != Precision::fp16 && spec.precision != Precision::bf16 &&
      spec.precision != Precision::fp8)
    throw usage_error(std::string("attention: precision = ") + to_string(spec.precision) +
                      " is not supported by cuDNN's fused attention here; allowed: fp16, bf16, "
                      "fp8");
  if (spec.heads % spec.key_heads() != 0)
    throw usage_error("attention: kv_heads = " + text(spec.kv_heads) +
                      " does not divide heads = " + text(spec.heads) +
                      " (each K/V head serves heads / kv_heads query heads); allowed: a divisor "
                      "of heads, or 0 for kv_heads = heads");
  const bool bwd = spec.direction == AttentionDirection::bwd;
  const bool fp8 = spec.precision == Precision::fp8;
  const std::int64_t max_dim = bwd   ? kAttentionMaxHeadDimBwd
                               : fp8 ? kAttentionFp8MaxHeadDim
                                     : kAttentionMaxHeadDimFwd;
  const std::int64_t dim_multiple = fp8 ? kAttentionFp8HeadDimMultiple : kAttentionHeadDimMultiple;
  if (spec.head_dim % dim_multiple != 0 || spec.head_dim > max_dim)
    throw usage_error("attention: head_dim = " + text(spec.head_dim) +
                      " is not supported by cuDNN's fused " + to_string(spec.direction) +
                      " attention in " + to_string(spec.precision) + "; allowed: a multiple of " +
                      text(dim_multiple) + " up to " + text(max_dim));
  if (spec.mask == AttentionMask::causal && spec.seq_q > spec.key_length())
    throw usage_error("attention: mask = causal with seq_q = " + text(spec.seq_q) +
                      " > seq_kv = " + text(spec.key_length()) +
                      ": the bottom-right causal mask would leave the first query rows without "
                      "a key; allowed: seq_q <= seq_kv, or mask = none");
  const std::size_t bytes = element_bytes(attention_data_type(spec));
  (void)tensor_bytes("attention", "Q",
                     {{"batch", spec.batch},
                      {"seq_q", spec.seq_q},
                      {"heads", spec.heads},
                      {"head_dim", spec.head_dim}},
                     bytes, kSmaller);
  (void)tensor_bytes("attention", "K",
                     {{"batch", spec.batch},
                      {"seq_kv", spec.key_length()},
                      {"kv_heads", spec.key_heads()},
                      {"head_dim", spec.head_dim}},
                     bytes, kSmaller);
}

DataType attention_data_type(const AttentionSpec& spec) {
  if (spec.precision == Precision::fp8) return DataType::fp8_e4m3;
  return spec.precision == Precision::bf16 ? DataType::bf16 : DataType::fp16;
}

bool attention_needs_padding_mask(const AttentionSpec& spec) {
  return spec.direction == AttentionDirection::bwd &&
         spec.key_length() % kAttentionBwdSeqKvMultiple != 0;
}

double attention_score_pairs(const AttentionSpec& spec) {
  const std::int64_t rows = spec.seq_q;
  const std::int64_t columns = spec.key_length();
  if (spec.mask == AttentionMask::none)
    return static_cast<double>(rows) * static_cast<double>(columns);
  // Row i keeps columns 0 .. i + (columns - rows): i + columns - rows + 1 of them,
  // at most `columns`; rows <= columns (validate), so every row keeps at least one.
  // Sum over i = 0 .. rows - 1 of (columns - rows + 1 + i) = rows (columns - rows + 1)
  // + rows (rows - 1) / 2.
  const double r = static_cast<double>(rows);
  const double offset = static_cast<double>(columns - rows + 1);
  return r * offset + r * (r - 1) / 2;
}

double attention_q_elements(const AttentionSpec& spec) {
  return static_cast<double>(spec.batch) * static_cast<double>(spec.seq_q) *
         static_cast<double>(spec.heads) * static_cast<double>(spec.head_dim);
}

double attention_kv_elements(const AttentionSpec& spec) {
  return static_cast<double>(spec.batch) * static_cast<double>(spec.key_length()) *
         static_cast<double>(spec.key_heads()) * static_cast<double>(spec.head_dim);
}

double attention_stats_elements(const AttentionSpec& spec) {
  return static_cast<double>(spec.batch) * static_cast<double>(spec.heads) *
         static_cast<double>(spec.seq_q);
}

double attention_flops(const AttentionSpec& spec) {
  const double per_pair = spec.direction == AttentionDirection::bwd ? 10.0 : 4.0;
  return per_pair * static_cast<double>(spec.batch) * static_cast<double>(spec.heads) *
         static_cast<double>(spec.head_dim) * attention_score_pairs(spec);
}

double attention_min_bytes(const AttentionSpec& spec) {
  const auto bytes = static_cast<double>(element_bytes(attention_data_type(spec)));
  const double q = attention_q_elements(spec) * bytes;
  const double kv = attention_kv_elements(spec) * bytes;
  if (spec.direction == AttentionDirection::fwd) return 2 * q + 2 * kv;  // Q, O; K, V
  // Q, O, dO, dQ; K, V, dK, dV; the fp32 statistics.
  return 4 * q + 4 * kv + attention_stats_elements(spec) * 4;
}

std::string attention_op_name(const AttentionSpec& spec) {
  return std::string("attention_") + to_string(spec.direction);
}

AttentionProblem::AttentionProblem(AttentionSpec spec) : spec_(std::move(spec)) {
  validate(spec_);
}

std::string AttentionProblem::op() const {
  return attention_op_name(spec_);
}

nlohmann::json AttentionProblem::params() const {
  return {{"batch", spec_.batch},
          {"heads", spec_.heads},
          {"kv_heads", spec_.key_heads()},
          {"seq_q", spec_.seq_q},
          {"seq_kv", spec_.key_length()},
          {"head_dim", spec_.head_dim},
          {"mask", to_string(spec_.mask)},
          {"direction", to_string(spec_.direction)},
          {"layout", "bshd"},
          {"scale", 1.0 / std::sqrt(static_cast<double>(spec_.head_dim))},
          {"score_pairs", attention_score_pairs(spec_)}};
}

std::vector<TensorArgument> AttentionProblem::inputs() const {
  const std::size_t bytes = element_bytes(attention_data_type(spec_));
  const auto q = static_cast<std::size_t>(attention_q_elements(spec_)) * bytes;
  const auto kv = static_cast<std::size_t>(attention_kv_elements(spec_)) * bytes;
  if (spec_.direction == AttentionDirection::fwd) return {{"q", q}, {"k", kv}, {"v", kv}};
  return {{"q", q},  {"k", kv},
          {"v", kv}, {"o", q},
          {"do", q}, {"stats", static_cast<std::size_t>(attention_stats_elements(spec_)) * 4}};
}

std::vector<TensorArgument> AttentionProblem::outputs() const {
  const std::size_t bytes = element_bytes(attention_data_type(spec_));
  const auto q = static_cast<std::size_t>(attention_q_elements(spec_)) * bytes;
  const auto kv = static_cast<std::size_t>(attention_kv_elements(spec_)) * bytes;
  if (spec_.direction == AttentionDirection::fwd) return {{"o", q}};
  return {{"dq", q}, {"dk", kv}, {"dv", kv}};
}

}  // namespace timeroof
