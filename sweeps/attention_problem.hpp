// The attention problem: scaled dot-product attention O = softmax(Q K^T / sqrt(D)
// [+ causal mask]) V, forward and backward, as cuDNN's fused flash-attention
// engines compute it (sweeps/attention.hpp runs it through the cuDNN graph API).
// Host only: the spec, validation and the analytic counts, for the family, the
// dry run and the CPU tier.
//
// Tensors are [B, S, H, D] in memory (BSHD: a linear layer's output viewed per
// head), Q with `heads` heads and seq_q rows, K and V with kv_heads heads
// (grouped-query attention shares one K/V head among heads / kv_heads query
// heads) and seq_kv rows; the softmax statistics (log-sum-exp per query row,
// what the backward reads) are fp32 [B, H, seq_q].
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/vocabulary.hpp"
#include "sweeps/problem.hpp"

namespace timeroof {

enum class AttentionMask { none, causal };
enum class AttentionDirection { fwd, bwd };
inline constexpr AttentionMask kAllAttentionMasks[] = {AttentionMask::none, AttentionMask::causal};
inline constexpr AttentionDirection kAllAttentionDirections[] = {AttentionDirection::fwd,
                                                                 AttentionDirection::bwd};
// The precisions the family takes (Q, K, V, O and the gradients stored so;
// accumulation and softmax in fp32). fp8 is e4m3 with per-tensor scales
// (kAttentionFp8Scale; the backward's gradient scales calibrated from amax).
inline constexpr Precision kAttentionPrecisions[] = {Precision::fp16, Precision::bf16,
                                                     Precision::fp8};

const char* to_string(AttentionMask mask);
const char* to_string(AttentionDirection direction);

// cuDNN 9.14's fused attention on Hopper: head dimensions a multiple of 8, at
// most 256 forward and 128 backward.
inline constexpr std::int64_t kAttentionHeadDimMultiple = 8;
inline constexpr std::int64_t kAttentionMaxHeadDimFwd = 256;
inline constexpr std::int64_t kAttentionMaxHeadDimBwd = 128;
// cuDNN 9.14's backward engines need a padding mask when seq_kv is not a
// multiple of this (cudnn-frontend adds one as a workaround up to 9.15): the
// backward graph then carries it, with the actual lengths as seq_len tensors.
inline constexpr std::int64_t kAttentionBwdSeqKvMultiple = 128;
// cuDNN's fp8 attention (per-tensor scales): head dimensions a multiple of 16,
// at most 256 forward and 128 backward; on Hopper the backward takes 128 only
// (checked in prepare(), where the chip is known).
inline constexpr std::int64_t kAttentionFp8HeadDimMultiple = 16;
inline constexpr std::int64_t kAttentionFp8MaxHeadDim = 256;
inline constexpr std::int64_t kAttentionFp8HopperBwdHeadDim = 128;
// The fp8 quantisation scales of P (the softmax output) and O: both lie in
// [-1, 1] (P a probability, O a convex combination of V's rows, V in [-1, 1)),
// so x 256 maps them into e4m3's normal range (max 448) without overflow and
// keeps small probabilities and outputs (down to 2^-6 / 256) out of the
// subnormals; a power of two, so scale and descale (1/256) are exact in fp32.
// Q, K and V are stored as drawn (in [-1, 1)): descale 1.
inline constexpr float kAttentionFp8Scale = 256.0f;

struct AttentionSpec {
  std::int64_t batch = 1;
  std::int64_t heads = 1;
  std::int64_t kv_heads = 0;  // 0: heads (multi-head attention)
  std::int64_t seq_q = 1;
  std::int64_t seq_kv = 0;  // 0: seq_q
  std::int64_t head_dim = 64;
  AttentionMask mask = AttentionMask::none;
  AttentionDirection direction = AttentionDirection::fwd;
  Precision precision = Precision::fp16;

  // The resolved values of the 0 = "same as" axes.
  std::int64_t key_heads() const { return kv_heads == 0 ? heads : kv_heads; }
  std::int64_t key_length() const { return seq_kv == 0 ? seq_q : seq_kv; }
};

// The sizes of a spec with kv_heads and seq_kv resolved, by their usual letters
// (the graph's and the reference's [B, H, S, D]).
struct AttentionShape {
  std::int64_t b, h, hk, sq, skv, d;
  explicit AttentionShape(const AttentionSpec& spec)
      : b(spec.batch),
        h(spec.heads),
        hk(spec.key_heads()),
        sq(spec.seq_q),
        skv(spec.key_length()),
        d(spec.head_dim) {}
};

// Throws a usage error before any GPU work: which field, its value, the fix.
void validate(const AttentionSpec& spec);
DataType attention_data_type(const AttentionSpec& spec);  // fp16, bf16 or fp8_e4m3

// True for a backward whose seq_kv is not a multiple of kAttentionBwdSeqKvMultiple:
// its graph carries the padding mask (actual lengths seq_q, seq_kv per batch item).
bool attention_needs_padding_mask(const AttentionSpec& spec);

// The (query row, key column) pairs whose score counts, per (batch, head):
// seq_q x seq_kv without a mask; with the causal mask aligned to the bottom
// right (row i sees columns j <= i + seq_kv - seq_q, as decode with a KV cache
// does) sum_i min(i + seq_kv - seq_q + 1, seq_kv), which is seq (seq + 1) / 2
// for seq_q = seq_kv = seq: the triangle with its diagonal.
double attention_score_pairs(const AttentionSpec& spec);

// Analytic FLOPs, the matrix products only (a multiply-add is 2); the softmax's
// few element-wise operations per score (scale, max, subtract, exp, sum,
// divide) are left out, as FlashAttention's papers count, so the figure is what
// the Tensor-Core counters show for an engine that skips every masked tile.
//   fwd: S = Q K^T and O = P V, 2 x 2 D per score pair:
//        4 B H D pairs  (pairs = seq_q seq_kv unmasked)
//   bwd: the flash backward's five products: the recompute of S = Q K^T,
//        dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q:
//        10 B H D pairs = 2.5 x fwd
double attention_flops(const AttentionSpec& spec);

// Element counts over the whole batch.
double attention_q_elements(const AttentionSpec& spec);      // B seq_q H D (Q, O, dO, dQ)
double attention_kv_elements(const AttentionSpec& spec);     // B seq_kv kv_heads D (K, V, dK, dV)
double attention_stats_elements(const AttentionSpec& spec);  // B H seq_q (fp32)

// Minimum traffic, every tensor once at its stored type:
//   fwd: Q, K, V read, O written;
//   bwd: Q, K, V, O, dO and the fp32 statistics read, dQ, dK, dV written.
// cuDNN's workspace (the fp32 dQ accumulator, the row sums of dO o O) is not counted.
double attention_min_bytes(const AttentionSpec& spec);

// "attention_fwd" / "attention_bwd".
std::string attention_op_name(const AttentionSpec& spec);

// A point's params (the attention family's keys) as a spec; throws a usage
// error naming the key. AttentionProblem validates the spec as a whole.
AttentionSpec attention_spec_from_params(const nlohmann::json& point);

class AttentionProblem final : public Problem {
 public:
  explicit AttentionProblem(AttentionSpec spec);

  std::string op() const override;
  // batch, heads, kv_heads, seq_q, seq_kv (resolved), head_dim, mask, direction,
  // layout ("bshd"), scale (1/sqrt(D)) and score_pairs.
  nlohmann::json params() const override;
  Precision precision() const override { return spec_.precision; }
  MathMode math_mode() const override { return MathMode::tensor; }
  double flops() const override { return attention_flops(spec_); }
  double min_bytes() const override { return attention_min_bytes(spec_); }
  double expected_launches() const override { return 1; }
  // fwd: q, k, v in, o out; bwd: q, k, v, o, do, stats in, dq, dk, dv out
  // (attention has no weights: every tensor is a per-call activation).
  std::vector<TensorArgument> inputs() const override;
  std::vector<TensorArgument> outputs() const override;

  const AttentionSpec& spec() const noexcept { return spec_; }

 private:
  AttentionSpec spec_;
};

}  // namespace timeroof
