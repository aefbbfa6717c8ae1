// The operation graphs of scaled dot-product attention on the project's cuDNN
// graph layer (sweeps/cudnn_graph.hpp), node for node the composite graphs
// cudnn-frontend builds for its SDPA forward and backward nodes (its
// scaled_dot_product_flash_attention.h, softmax.h and diagonal_band_mask.h),
// which cuDNN's fused flash-attention engines recognise:
//
// forward   S = Q K^T (matmul, fp32)  -> S x scale (pointwise MUL, by-value scale)
//           [causal: row = GEN_INDEX(axis 2) (+ seq_kv - seq_q: bottom right),
//            col = GEN_INDEX(axis 3), keep = row >= col (CMP_GE),
//            S = keep ? S : -inf (BINARY_SELECT)]
//           softmax: M = max_j S (reduction MAX), E = exp(S - M), L = sum_j E
//           (reduction ADD), [stats = M + log L], P = E / L (in the I/O type)
//           O = P V (matmul)
// fp8       (forward, cudnn-frontend's sdpa_fp8 with per-tensor scales) Q, K, V,
//           O in e4m3: S = Q K^T x scale x descale_q x descale_k (MULs by fp32
//           [1,1,1,1] tensors), masked, softmax as above with P in fp32,
//           amax_S = max |P| (reduction AMAX), P x scale_S into e4m3,
//           O' = P V (matmul, fp32) x descale_S x descale_V, amax_O = max |O'|,
//           O = O' x scale_O (into e4m3)
// fp8 bwd   (cudnn-frontend's sdpa_fp8_backward; make_backward_fp8 in the .cpp
//           says it node by node) every matmul's fp8 operands descaled after it,
//           dV, dQ, dK scaled into e4m3 with their amax, dS x scale_dP in e4m3
// backward  Delta = sum_d dO o O (MUL, reduction ADD; x 1 into an fp32 buffer)
//           S = Q K^T x scale [padding mask: rows < seq_len_q and columns <
//           seq_len_kv kept (GEN_INDEX, CMP_LT, LOGICAL_AND, BINARY_SELECT -inf),
//           the lengths int32 [B,1,1,1] tensors, also the matmuls' M/N/K
//           overrides; then causal as above, bottom right by the length tensors],
//           P = exp(S - stats)
//           dV = P^T dO (reshape + matmul; GQA: a reduction over the head group)
//           dP = dO V^T, dS = P o (dP - Delta) x scale
//           dK = dS^T Q (as dV), dQ = dS K (into an fp32 accumulator, then IDENTITY)
//
// Q, K, V, O and their gradients are [B, S, H, D] in memory; the graph sees
// them as [B, H, S, D] with BSHD strides (K and V transposed by strides only).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "sweeps/attention_problem.hpp"
#include "sweeps/cudnn_graph.hpp"

namespace timeroof::attention_graph {

// The uids of the tensors a variant pack binds to memory.
enum Uid : std::int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,       // fp32 [B, H, seq_q, 1]: log-sum-exp per query row
  kDO,          // bwd: dO (like O)
  kDQ,          // bwd
  kDK,          // bwd
  kDV,          // bwd
  kSoftmaxSum,  // bwd: fp32 [B, H, seq_q, 1] Delta, a buffer the engine writes
  kDQAccum,     // bwd: fp32 [B, H, seq_q, D], the engine's dQ accumulator
  kSeqLenQ,     // bwd with the padding mask: int32 [B, 1, 1, 1] actual seq_q
  kSeqLenKv,    // bwd with the padding mask: int32 [B, 1, 1, 1] actual seq_kv
  kDescaleQ,    // fp8: fp32 [1, 1, 1, 1] each
  kDescaleK,
  kDescaleV,
  kDescaleS,
  kScaleS,
  kScaleO,
  kAmaxS,  // fp8 outputs: fp32 [1, 1, 1, 1] max |P|, max |O| before scale_O
  kAmaxO,
  kDescaleO,  // fp8 bwd: fp32 [1, 1, 1, 1] each
  kDescaleDO,
  kDescaleDP,
  kScaleDP,
  kScaleDQ,
  kScaleDK,
  kScaleDV,
  kAmaxDP,  // fp8 bwd outputs: max |dS|, and of dQ, dK, dV before their scales
  kAmaxDQ,
  kAmaxDK,
  kAmaxDV,
};

// The fp8 forward's scale and descale inputs, in uid order kDescaleQ .. kScaleO.
inline constexpr Uid kFp8ScaleUids[] = {kDescaleQ, kDescaleK, kDescaleV,
                                        kDescaleS, kScaleS,   kScaleO};

// A matmul's actual sizes per batch item (int32 [B, 1, 1, 1] tensors; null: the
// dims' own), as a padding mask needs them.
struct MatmulOverrides {
  const cudnn_graph::Descriptor* m = nullptr;
  const cudnn_graph::Descriptor* n = nullptr;
  const cudnn_graph::Descriptor* k = nullptr;
};

// An operation graph with every descriptor it refers to and the host values of
// its by-value scalars (bound by host pointer: they must not move).
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const cudnn_graph::Descriptor& descriptor() const { return *graph_; }
  // The by-value scalars' uids and host pointers, for the variant pack.
  const std::vector<cudnn_graph::TensorPointer>& scalars() const { return scalar_pointers_; }

  // Building (used by make_forward / make_backward).
  const cudnn_graph::Descriptor& tensor(const cudnn_graph::TensorSpec& spec);
  // A virtual intermediate of `dims` and `strides` (a fresh uid).
  const cudnn_graph::Descriptor& intermediate(std::vector<std::int64_t> dims,
                                              std::vector<std::int64_t> strides,
                                              cudnnDataType_t type = CUDNN_DATA_FLOAT);
  const cudnn_graph::Descriptor& scalar(float value);
  const cudnn_graph::Descriptor& scalar(std::int32_t value);
  // y = mode(x [, b [, t]]); `axis` for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, const cudnn_graph::Descriptor& x,
                 const cudnn_graph::Descriptor* b, const cudnn_graph::Descriptor* t,
                 const cudnn_graph::Descriptor& y, cudnnDataType_t math = CUDNN_DATA_FLOAT,
                 std::int64_t axis = -1);
  void reduction(cudnnReduceTensorOp_t op, const cudnn_graph::Descriptor& x,
                 const cudnn_graph::Descriptor& y);
  // c = a b; the overrides give the actual M, N or K per batch item.
  void matmul(const cudnn_graph::Descriptor& a, const cudnn_graph::Descriptor& b,
              const cudnn_graph::Descriptor& c, MatmulOverrides overrides = {});
  void reshape(const cudnn_graph::Descriptor& x, const cudnn_graph::Descriptor& y);
  void finish(cudnnHandle_t handle);

  std::size_t operation_count() const { return operations_.size(); }

 private:
  const cudnn_graph::Descriptor& keep(cudnn_graph::Descriptor descriptor);

  union ScalarValue {
    float f;
    std::int32_t i;
  };
  std::vector<std::shared_ptr<const cudnn_graph::Descriptor>> parts_;
  std::vector<const cudnn_graph::Descriptor*> operations_;
  std::vector<std::unique_ptr<ScalarValue>> scalar_values_;
  std::vector<cudnn_graph::TensorPointer> scalar_pointers_;
  std::int64_t next_uid_ = 1000;
  std::unique_ptr<cudnn_graph::Descriptor> graph_;
};

// The forward graph (stats: also write the log-sum-exp, as training does).
std::unique_ptr<Graph> make_forward(cudnnHandle_t handle, const AttentionSpec& spec,
                                    bool with_stats);
// The backward graph (spec.direction is not consulted).
std::unique_ptr<Graph> make_backward(cudnnHandle_t handle, const AttentionSpec& spec);

}  // namespace timeroof::attention_graph
