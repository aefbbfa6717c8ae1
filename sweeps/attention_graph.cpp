#include "sweeps/attention_graph.hpp"

#include <cmath>
#include <limits>
#include <utility>

namespace timeroof::attention_graph {

namespace cg = cudnn_graph;

const cg::Descriptor& Graph::keep(cg::Descriptor descriptor) {
  parts_.push_back(std::make_shared<const cg::Descriptor>(std::move(descriptor)));
  return *parts_.back();
}

const cg::Descriptor& Graph::tensor(const cg::TensorSpec& spec) {
  return keep(cg::make_tensor(spec));
}

const cg::Descriptor& Graph::intermediate(std::vector<std::int64_t> dims,
                                          std::vector<std::int64_t> strides, cudnnDataType_t type) {
  cg::TensorSpec spec;
  spec.uid = next_uid_++;
  spec.data_type = type;
  spec.dims = std::move(dims);
  spec.strides = std::move(strides);
  spec.is_virtual = true;
  return tensor(spec);
}

namespace {

cg::TensorSpec scalar_spec(std::int64_t uid, cudnnDataType_t type) {
  cg::TensorSpec spec;
  spec.uid = uid;
  spec.data_type = type;
  spec.dims = {1, 1, 1, 1};
  spec.strides = {1, 1, 1, 1};
  spec.is_by_value = true;
  return spec;
}

}  // namespace

const cg::Descriptor& Graph::scalar(float value) {
  scalar_values_.push_back(std::make_unique<ScalarValue>());
  scalar_values_.back()->f = value;
  const std::int64_t uid = next_uid_++;
  scalar_pointers_.push_back({uid, &scalar_values_.back()->f});
  return tensor(scalar_spec(uid, CUDNN_DATA_FLOAT));
}

const cg::Descriptor& Graph::scalar(std::int32_t value) {
  scalar_values_.push_back(std::make_unique<ScalarValue>());
  scalar_values_.back()->i = value;
  const std::int64_t uid = next_uid_++;
  scalar_pointers_.push_back({uid, &scalar_values_.back()->i});
  return tensor(scalar_spec(uid, CUDNN_DATA_INT32));
}

void Graph::pointwise(cudnnPointwiseMode_t mode, const cg::Descriptor& x, const cg::Descriptor* b,
                      const cg::Descriptor* t, const cg::Descriptor& y, cudnnDataType_t math,
                      std::int64_t axis) {
  cg::Descriptor descriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  descriptor.set(CUDNN_ATTR_POINTWISE_MODE, mode).set(CUDNN_ATTR_POINTWISE_MATH_PREC, math);
  if (axis >= 0) descriptor.set(CUDNN_ATTR_POINTWISE_AXIS, axis);
  descriptor.finalize();
  const cg::Descriptor& kept = keep(std::move(descriptor));
  cg::Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, kept)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (b) op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  if (t) op.set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
  op.finalize();
  operations_.push_back(&keep(std::move(op)));
}

void Graph::reduction(cudnnReduceTensorOp_t reduce, const cg::Descriptor& x,
                      const cg::Descriptor& y) {
  cg::Descriptor descriptor(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  descriptor.set(CUDNN_ATTR_REDUCTION_OPERATOR, reduce)
      .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)
      .finalize();
  const cg::Descriptor& kept = keep(std::move(descriptor));
  cg::Descriptor op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  op.set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
      .set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
      .set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, kept)
      .finalize();
  operations_.push_back(&keep(std::move(op)));
}

void Graph::matmul(const cg::Descriptor& a, const cg::Descriptor& b, const cg::Descriptor& c,
                   MatmulOverrides overrides) {
  cg::Descriptor descriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  descriptor.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT).finalize();
  const cg::Descriptor& kept = keep(std::move(descriptor));
  cg::Descriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  op.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
      .set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
      .set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
      .set(CUDNN_ATTR_OPERATION_MATMUL_DESC, kept);
  if (overrides.m) op.set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, *overrides.m);
  if (overrides.n) op.set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, *overrides.n);
  if (overrides.k) op.set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, *overrides.k);
  op.finalize();
  operations_.push_back(&keep(std::move(op)));
}

void Graph::reshape(const cg::Descriptor& x, const cg::Descriptor& y) {
  cg::Descriptor op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  op.set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x)
      .set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y)
      .finalize();
  operations_.push_back(&keep(std::move(op)));
}

void Graph::finish(cudnnHandle_t handle) {
  graph_ = std::make_unique<cg::Descriptor>(cg::make_operation_graph(handle, operations_));
}

namespace {

using Dims = std::vector<std::int64_t>;

// The shapes of one spec, in the graph's [B, H, S, D] order.
struct Shapes : AttentionShape {
  cudnnDataType_t io;

  explicit Shapes(const AttentionSpec& spec) : AttentionShape(spec), io(io_type(spec)) {}

  static cudnnDataType_t io_type(const AttentionSpec& spec) {
    if (spec.precision == Precision::fp8) return CUDNN_DATA_FP8_E4M3;
    return spec.precision == Precision::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  }

  // A BSHD tensor seen as [B, heads, rows, D].
  cg::TensorSpec bshd(std::int64_t uid, std::int64_t heads, std::int64_t rows) const {
    return {.uid = uid,
            .data_type = io,
            .dims = {b, heads, rows, d},
            .strides = {rows * heads * d, d, heads * d, 1}};
  }
  // The same memory seen transposed: [B, heads, D, rows].
  cg::TensorSpec bshd_transposed(std::int64_t uid, std::int64_t heads, std::int64_t rows) const {
    return {.uid = uid,
            .data_type = io,
            .dims = {b, heads, d, rows},
            .strides = {rows * heads * d, d, 1, heads * d}};
  }
  Dims scores() const { return {b, h, sq, skv}; }
  Dims score_strides() const { return {h * sq * skv, sq * skv, skv, 1}; }
  Dims rows() const { return {b, h, sq, 1}; }
  Dims row_strides() const { return {h * sq, sq, 1, 1}; }
  cg::TensorSpec row_buffer(std::int64_t uid) const {
    return {.uid = uid, .data_type = CUDNN_DATA_FLOAT, .dims = rows(), .strides = row_strides()};
  }
  // One int32 per batch item: the actual sequence lengths of the padding mask.
  cg::TensorSpec lengths(std::int64_t uid) const {
    return {
        .uid = uid, .data_type = CUDNN_DATA_INT32, .dims = {b, 1, 1, 1}, .strides = {1, 1, 1, 1}};
  }
};

// A per-tensor fp32 scale or amax in device memory: [1, 1, 1, 1].
cg::TensorSpec unit_tensor(std::int64_t uid) {
  return {.uid = uid, .data_type = CUDNN_DATA_FLOAT, .dims = {1, 1, 1, 1}, .strides = {1, 1, 1, 1}};
}

// The actual lengths of a padded graph (both null without the padding mask).
struct Lengths {
  const cg::Descriptor* q = nullptr;
  const cg::Descriptor* kv = nullptr;
};

// y = x o factor, a fresh intermediate shaped as x (dims, strides, type).
const cg::Descriptor& times(Graph& g, const cg::Descriptor& x, const cg::Descriptor& factor,
                            const Dims& dims, const Dims& strides,
                            cudnnDataType_t type = CUDNN_DATA_FLOAT) {
  const cg::Descriptor& y = g.intermediate(dims, strides, type);
  g.pointwise(CUDNN_POINTWISE_MUL, x, &factor, nullptr, y);
  return y;
}

// The fp8 descales of Q and K that S = Q K^T needs.
struct ScoreDescales {
  const cg::Descriptor* q;
  const cg::Descriptor* k;
};

// cudnn-frontend's matmul_fp8 on [B, heads, rows, D] operands: c = (a b, summed
// over each head group where c has fewer heads than a) x descale_a x descale_b
// x scale_c into c's type; amax = max |c before scale_c|.
struct Fp8Product {
  const cg::Descriptor& descale_a;
  const cg::Descriptor& descale_b;
  const cg::Descriptor& scale_c;
  const cg::Descriptor& amax;
};
void fp8_product(Graph& g, const Shapes& s, const cg::Descriptor& a, const cg::Descriptor& b,
                 std::int64_t a_heads, std::int64_t rows, const cg::Descriptor& c,
                 std::int64_t c_heads, const Fp8Product& f, MatmulOverrides overrides = {}) {
  auto shape = [&](std::int64_t heads) {
    return std::pair<Dims, Dims>{{s.b, heads, rows, s.d}, {heads * rows * s.d, rows * s.d, s.d, 1}};
  };
  const auto [full_dims, full_strides] = shape(a_heads);
  const cg::Descriptor& product = g.intermediate(full_dims, full_strides);
  g.matmul(a, b, product, overrides);
  const auto [dims, strides] = shape(c_heads);
  const cg::Descriptor* sum = &product;
  if (c_heads != a_heads) {
    sum = &g.intermediate(dims, strides);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, product, *sum);
  }
  const cg::Descriptor& descaled_a = times(g, *sum, f.descale_a, dims, strides);
  const cg::Descriptor& descaled = times(g, descaled_a, f.descale_b, dims, strides);
  g.pointwise(CUDNN_POINTWISE_MUL, descaled, &f.scale_c, nullptr, c);
  g.reduction(CUDNN_REDUCE_TENSOR_AMAX, descaled, f.amax);
}

// S with the padding mask applied: rows >= seq_len_q and columns >= seq_len_kv
// set to -inf (cudnn-frontend's padding_mask score modifier).
const cg::Descriptor& padded(Graph& g, const Shapes& s, const Lengths& lengths,
                             const cg::Descriptor& scores) {
  const cg::Descriptor& row = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, row, CUDNN_DATA_INT32, 2);
  const cg::Descriptor& col = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, col, CUDNN_DATA_INT32, 3);
  const cg::Descriptor& row_in = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_LT, row, lengths.q, nullptr, row_in, CUDNN_DATA_BOOLEAN);
  const cg::Descriptor& col_in = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_LT, col, lengths.kv, nullptr, col_in, CUDNN_DATA_BOOLEAN);
  const cg::Descriptor& keep = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_LOGICAL_AND, row_in, &col_in, nullptr, keep, CUDNN_DATA_BOOLEAN);
  const cg::Descriptor& out = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores,
              &g.scalar(-std::numeric_limits<float>::infinity()), &keep, out);
  return out;
}

// S (already scaled) with the causal mask applied, or S itself without one;
// with `lengths`, the bottom-right shift reads the actual lengths' tensors as
// cudnn-frontend's sliding_window_mask does with a padding mask.
const cg::Descriptor& masked(Graph& g, const Shapes& s, const AttentionSpec& spec,
                             const Lengths& lengths, const cg::Descriptor& scores) {
  if (spec.mask == AttentionMask::none) return scores;
  const cg::Descriptor* row = &g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, *row, CUDNN_DATA_FLOAT, 2);
  const cg::Descriptor& col = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, col, CUDNN_DATA_FLOAT, 3);
  if (s.sq != s.skv) {
    // Bottom right: row + seq_kv - seq_q, two int32 steps as cudnn-frontend builds them.
    const cg::Descriptor& plus_kv = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_INT32);
    const cg::Descriptor* kv_length =
        lengths.kv ? lengths.kv : &g.scalar(static_cast<std::int32_t>(s.skv));
    g.pointwise(CUDNN_POINTWISE_ADD, *row, kv_length, nullptr, plus_kv, CUDNN_DATA_INT32, 3);
    const cg::Descriptor& minus_q = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_INT32);
    const cg::Descriptor* q_length =
        lengths.q ? lengths.q : &g.scalar(static_cast<std::int32_t>(s.sq));
    g.pointwise(CUDNN_POINTWISE_SUB, plus_kv, q_length, nullptr, minus_q, CUDNN_DATA_INT32, 3);
    row = &minus_q;
  }
  const cg::Descriptor& keep = g.intermediate(s.scores(), s.score_strides(), CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, *row, &col, nullptr, keep, CUDNN_DATA_BOOLEAN);
  const cg::Descriptor& out = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores,
              &g.scalar(-std::numeric_limits<float>::infinity()), &keep, out);
  return out;
}

// Q K^T x scale [x descale_q x descale_k], [padding-masked,] masked.
const cg::Descriptor& scaled_scores(Graph& g, const Shapes& s, const AttentionSpec& spec,
                                    const cg::Descriptor& q, const cg::Descriptor& k_transposed,
                                    const ScoreDescales* fp8, const Lengths& lengths) {
  const cg::Descriptor& product = g.intermediate(s.scores(), s.score_strides());
  g.matmul(q, k_transposed, product, {.m = lengths.q, .n = lengths.kv});
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  const cg::Descriptor* scores = &times(g, product, g.scalar(scale), s.scores(), s.score_strides());
  if (fp8) {
    scores = &times(g, *scores, *fp8->q, s.scores(), s.score_strides());
    scores = &times(g, *scores, *fp8->k, s.scores(), s.score_strides());
  }
  if (lengths.q) scores = &padded(g, s, lengths, *scores);
  return masked(g, s, spec, lengths, *scores);
}

}  // namespace

std::unique_ptr<Graph> make_forward(cudnnHandle_t handle, const AttentionSpec& spec,
                                    bool with_stats) {
  auto graph = std::make_unique<Graph>();
  Graph& g = *graph;
  const Shapes s(spec);
  const cg::Descriptor& q = g.tensor(s.bshd(kQ, s.h, s.sq));
  const cg::Descriptor& k = g.tensor(s.bshd_transposed(kK, s.hk, s.skv));
  const cg::Descriptor& v = g.tensor(s.bshd(kV, s.hk, s.skv));
  const cg::Descriptor& o = g.tensor(s.bshd(kO, s.h, s.sq));
  const bool fp8 = spec.precision == Precision::fp8;
  ScoreDescales descales{};
  if (fp8) descales = {&g.tensor(unit_tensor(kDescaleQ)), &g.tensor(unit_tensor(kDescaleK))};
  const cg::Descriptor& scores = scaled_scores(g, s, spec, q, k, fp8 ? &descales : nullptr, {});

  // Softmax with its statistics (cudnn-frontend's softmax node).
  const cg::Descriptor& row_max = g.intermediate(s.rows(), s.row_strides());
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scores, row_max);
  const cg::Descriptor& shifted = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_SUB, scores, &row_max, nullptr, shifted);
  const cg::Descriptor& exponent = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, nullptr, exponent);
  const cg::Descriptor& row_sum = g.intermediate(s.rows(), s.row_strides());
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, exponent, row_sum);
  // The statistics M + log L; virtual for inference, as cudnn-frontend's softmax
  // node builds them either way.
  const cg::Descriptor& log_sum = g.intermediate(s.rows(), s.row_strides());
  g.pointwise(CUDNN_POINTWISE_LOG, row_sum, nullptr, nullptr, log_sum);
  g.pointwise(
      CUDNN_POINTWISE_ADD, row_max, &log_sum, nullptr,
      with_stats ? g.tensor(s.row_buffer(kStats)) : g.intermediate(s.rows(), s.row_strides()));
  // P in the I/O type: the second product's A operand (fp8: fp32 first, for amax_S
  // and the scale into e4m3).
  const cg::Descriptor& p =
      g.intermediate(s.scores(), s.score_strides(), fp8 ? CUDNN_DATA_FLOAT : s.io);
  g.pointwise(CUDNN_POINTWISE_DIV, exponent, &row_sum, nullptr, p);
  if (!fp8) {
    g.matmul(p, v, o);
    g.finish(handle);
    return graph;
  }
  g.reduction(CUDNN_REDUCE_TENSOR_AMAX, p, g.tensor(unit_tensor(kAmaxS)));
  const cg::Descriptor& p_fp8 =
      times(g, p, g.tensor(unit_tensor(kScaleS)), s.scores(), s.score_strides(), s.io);
  const cg::Descriptor& descale_s = g.tensor(unit_tensor(kDescaleS));
  const cg::Descriptor& descale_v = g.tensor(unit_tensor(kDescaleV));
  const cg::Descriptor& scale_o = g.tensor(unit_tensor(kScaleO));
  fp8_product(g, s, p_fp8, v, s.h, s.sq, o, s.h,
              {descale_s, descale_v, scale_o, g.tensor(unit_tensor(kAmaxO))});
  g.finish(handle);
  return graph;
}

namespace {

// The tensors both backward graphs bind (and the padding mask's lengths).
struct BackwardTensors {
  cg::TensorSpec k_transposed;
  const cg::Descriptor *q, *k, *v, *o, *d_o, *stats, *d_q, *d_k, *d_v;
  Lengths lengths;

  BackwardTensors(Graph& g, const Shapes& s, const AttentionSpec& spec)
      : k_transposed(s.bshd_transposed(kK, s.hk, s.skv)),
        q(&g.tensor(s.bshd(kQ, s.h, s.sq))),
        k(&g.tensor(k_transposed)),
        v(&g.tensor(s.bshd_transposed(kV, s.hk, s.skv))),
        o(&g.tensor(s.bshd(kO, s.h, s.sq))),
        d_o(&g.tensor(s.bshd(kDO, s.h, s.sq))),
        stats(&g.tensor(s.row_buffer(kStats))),
        d_q(&g.tensor(s.bshd(kDQ, s.h, s.sq))),
        d_k(&g.tensor(s.bshd(kDK, s.hk, s.skv))),
        d_v(&g.tensor(s.bshd(kDV, s.hk, s.skv))) {
    if (attention_needs_padding_mask(spec))
      lengths = {&g.tensor(s.lengths(kSeqLenQ)), &g.tensor(s.lengths(kSeqLenKv))};
  }
  // K back in [B, kv_heads, seq_kv, D] (a reshape of its transposed view): dS K's B.
  const cg::Descriptor& key_rows(Graph& g, const Shapes& s) const {
    const cg::Descriptor& rows = g.intermediate(
        {k_transposed.dims[0], k_transposed.dims[1], k_transposed.dims[3], k_transposed.dims[2]},
        {k_transposed.strides[0], k_transposed.strides[1], k_transposed.strides[3],
         k_transposed.strides[2]},
        s.io);
    g.reshape(*k, rows);
    return rows;
  }
};

// The fp8 backward (cudnn-frontend's sdpa_fp8_backward, per-tensor scales): Q, K,
// V, O, dO and the gradients in e4m3; Delta = sum dO o O x descale_dO x
// descale_O (virtual); S = Q K^T x scale x descale_q x descale_k, masked,
// P = exp(S - stats) (fp32); dV = P x scale_S (e4m3), transposed, times dO
// (matmul_fp8: descale_S, descale_dO, scale_dV, amax_dV); dS = (dO V^T x
// descale_dO x descale_V - Delta) o P x scale, amax_dP, x scale_dP into e4m3;
// dQ = dS K (descale_dP, descale_K, scale_dQ, amax_dQ); dK = dS^T Q (descale_dP,
// descale_Q, scale_dK, amax_dK).
void add_backward_fp8(Graph& g, const Shapes& s, const AttentionSpec& spec,
                      const BackwardTensors& t) {
  const cg::Descriptor &q = *t.q, &k = *t.k, &v = *t.v, &o = *t.o, &d_o = *t.d_o;
  const cg::Descriptor &stats = *t.stats, &d_q = *t.d_q, &d_k = *t.d_k, &d_v = *t.d_v;
  const Lengths& lengths = t.lengths;
  auto unit = [&](Uid uid) -> const cg::Descriptor& { return g.tensor(unit_tensor(uid)); };
  const cg::Descriptor& descale_q = unit(kDescaleQ);
  const cg::Descriptor& descale_k = unit(kDescaleK);
  const cg::Descriptor& descale_v = unit(kDescaleV);
  const cg::Descriptor& descale_o = unit(kDescaleO);
  const cg::Descriptor& descale_d_o = unit(kDescaleDO);
  const cg::Descriptor& descale_s = unit(kDescaleS);
  const cg::Descriptor& descale_d_p = unit(kDescaleDP);
  const cg::Descriptor& scale_s = unit(kScaleS);
  const cg::Descriptor& scale_d_p = unit(kScaleDP);

  // Delta = rowsum(dO o O), descaled (virtual: no buffer in the fp8 graph); the
  // product laid out as dO (cudnn-frontend lets it inherit dO's strides here).
  const cg::TensorSpec d_o_layout = s.bshd(kDO, s.h, s.sq);
  const cg::Descriptor& d_o_o = g.intermediate(d_o_layout.dims, d_o_layout.strides);
  g.pointwise(CUDNN_POINTWISE_MUL, d_o, &o, nullptr, d_o_o);
  const cg::Descriptor& delta_sum = g.intermediate(s.rows(), s.row_strides());
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, d_o_o, delta_sum);
  const cg::Descriptor& delta_d_o = times(g, delta_sum, descale_d_o, s.rows(), s.row_strides());
  const cg::Descriptor& delta = times(g, delta_d_o, descale_o, s.rows(), s.row_strides());

  // P recomputed from the statistics, then x scale_S into e4m3 and transposed: dV.
  const ScoreDescales descales{&descale_q, &descale_k};
  const cg::Descriptor& scores = scaled_scores(g, s, spec, q, k, &descales, lengths);
  const cg::Descriptor& shifted = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_SUB, scores, &stats, nullptr, shifted);
  const cg::Descriptor& p = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, nullptr, p);
  const cg::Descriptor& p_fp8 = times(g, p, scale_s, s.scores(), s.score_strides(), s.io);
  const Dims transposed_scores = {s.b, s.h, s.skv, s.sq};
  const Dims transposed_strides = {s.h * s.sq * s.skv, s.sq * s.skv, 1, s.skv};
  const cg::Descriptor& p_t = g.intermediate(transposed_scores, transposed_strides, s.io);
  g.reshape(p_fp8, p_t);
  const MatmulOverrides keys_over_queries{.m = lengths.kv, .k = lengths.q};
  fp8_product(g, s, p_t, d_o, s.h, s.skv, d_v, s.hk,
              {descale_s, descale_d_o, unit(kScaleDV), unit(kAmaxDV)}, keys_over_queries);

  // dS = P o (dO V^T x descale_dO x descale_V - Delta) x scale, its amax, into e4m3.
  const cg::Descriptor& d_p = g.intermediate(s.scores(), s.score_strides());
  g.matmul(d_o, v, d_p, {.m = lengths.q, .n = lengths.kv});
  const cg::Descriptor& d_p_d_o = times(g, d_p, descale_d_o, s.scores(), s.score_strides());
  const cg::Descriptor& d_p_v = times(g, d_p_d_o, descale_v, s.scores(), s.score_strides());
  const cg::Descriptor& centred = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_SUB, d_p_v, &delta, nullptr, centred);
  const cg::Descriptor& weighted = times(g, centred, p, s.scores(), s.score_strides());
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  const cg::Descriptor& d_s = times(g, weighted, g.scalar(scale), s.scores(), s.score_strides());
  g.reduction(CUDNN_REDUCE_TENSOR_AMAX, d_s, unit(kAmaxDP));
  const cg::Descriptor& d_s_fp8 = times(g, d_s, scale_d_p, s.scores(), s.score_strides(), s.io);

  // dQ = dS K.
  const cg::Descriptor& k_rows = t.key_rows(g, s);
  fp8_product(g, s, d_s_fp8, k_rows, s.h, s.sq, d_q, s.h,
              {descale_d_p, descale_k, unit(kScaleDQ), unit(kAmaxDQ)},
              {.m = lengths.q, .k = lengths.kv});

  // dK = dS^T Q.
  const cg::Descriptor& d_s_t = g.intermediate(transposed_scores, transposed_strides, s.io);
  g.reshape(d_s_fp8, d_s_t);
  fp8_product(g, s, d_s_t, q, s.h, s.skv, d_k, s.hk,
              {descale_d_p, descale_q, unit(kScaleDK), unit(kAmaxDK)}, keys_over_queries);
}

}  // namespace

std::unique_ptr<Graph> make_backward(cudnnHandle_t handle, const AttentionSpec& spec) {
  auto graph = std::make_unique<Graph>();
  Graph& g = *graph;
  const Shapes s(spec);
  const BackwardTensors t(g, s, spec);
  if (spec.precision == Precision::fp8) {
    add_backward_fp8(g, s, spec, t);
    g.finish(handle);
    return graph;
  }
  const cg::Descriptor &q = *t.q, &k = *t.k, &v = *t.v, &o = *t.o, &d_o = *t.d_o;
  const cg::Descriptor &stats = *t.stats, &d_q = *t.d_q, &d_k = *t.d_k, &d_v = *t.d_v;
  const Lengths& lengths = t.lengths;
  // The products' actual sizes: rows of queries (M of dO V^T, dS K), of keys
  // (M of P^T dO, dS^T Q), and the reductions over them.
  const MatmulOverrides queries_by_keys{.m = lengths.q, .n = lengths.kv};
  const MatmulOverrides keys_over_queries{.m = lengths.kv, .k = lengths.q};
  const MatmulOverrides queries_over_keys{.m = lengths.q, .k = lengths.kv};

  // Delta = rowsum(dO o O), into the fp32 buffer the engine expects.
  const cg::Descriptor& d_o_o =
      g.intermediate({s.b, s.h, s.sq, s.d}, {s.h * s.sq * s.d, s.sq * s.d, s.h * s.d, 1});
  g.pointwise(CUDNN_POINTWISE_MUL, d_o, &o, nullptr, d_o_o);
  const cg::Descriptor& delta_sum = g.intermediate(s.rows(), s.row_strides());
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, d_o_o, delta_sum);
  const cg::Descriptor& delta = g.tensor(s.row_buffer(kSoftmaxSum));
  g.pointwise(CUDNN_POINTWISE_MUL, delta_sum, &g.scalar(1.0f), nullptr, delta);

  // P recomputed from the statistics.
  const cg::Descriptor& scores = scaled_scores(g, s, spec, q, k, nullptr, lengths);
  const cg::Descriptor& shifted = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_SUB, scores, &stats, nullptr, shifted);
  const cg::Descriptor& p = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, nullptr, p);

  const Dims transposed_scores = {s.b, s.h, s.skv, s.sq};
  const Dims transposed_strides = {s.h * s.sq * s.skv, s.sq * s.skv, 1, s.skv};
  // K- or V-shaped gradients: straight into the output for MHA; for GQA one per
  // query head, summed over each group of heads / kv_heads.
  auto key_gradient = [&](const cg::Descriptor& transposed, const cg::Descriptor& operand,
                          const cg::Descriptor& gradient) {
    if (s.h == s.hk) {
      g.matmul(transposed, operand, gradient, keys_over_queries);
      return;
    }
    const cg::Descriptor& full =
        g.intermediate({s.b, s.h, s.skv, s.d}, {s.h * s.skv * s.d, s.skv * s.d, s.d, 1}, s.io);
    g.matmul(transposed, operand, full, keys_over_queries);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, gradient);
  };

  // dV = P^T dO.
  const cg::Descriptor& p_t = g.intermediate(transposed_scores, transposed_strides, s.io);
  g.reshape(p, p_t);
  key_gradient(p_t, d_o, d_v);

  // dS = P o (dO V^T - Delta) x scale.
  const cg::Descriptor& d_p = g.intermediate(s.scores(), s.score_strides());
  g.matmul(d_o, v, d_p, queries_by_keys);
  const cg::Descriptor& centred = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_SUB, d_p, &delta, nullptr, centred);
  const cg::Descriptor& weighted = g.intermediate(s.scores(), s.score_strides());
  g.pointwise(CUDNN_POINTWISE_MUL, centred, &p, nullptr, weighted);
  const cg::Descriptor& d_s = g.intermediate(s.scores(), s.score_strides());
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  g.pointwise(CUDNN_POINTWISE_MUL, weighted, &g.scalar(scale), nullptr, d_s);

  // dK = dS^T Q.
  const cg::Descriptor& d_s_t = g.intermediate(transposed_scores, transposed_strides, s.io);
  g.reshape(d_s, d_s_t);
  key_gradient(d_s_t, q, d_k);

  // dQ = dS K through the fp32 accumulator.
  const cg::Descriptor& k_rows = t.key_rows(g, s);
  const cg::Descriptor& accumulator = g.tensor({.uid = kDQAccum,
                                                .data_type = CUDNN_DATA_FLOAT,
                                                .dims = {s.b, s.h, s.sq, s.d},
                                                .strides = {s.h * s.sq * s.d, s.sq * s.d, s.d, 1}});
  g.matmul(d_s, k_rows, accumulator, queries_over_keys);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, accumulator, nullptr, nullptr, d_q);
  g.finish(handle);
  return graph;
}

}  // namespace timeroof::attention_graph
