// The attention family's own reference (Attention::check()), in double, on the
// host, for single rows: one query row's output (forward), one row of dQ or of
// dK / dV (backward). Independent of cuDNN: plain loops over the stored
// operands, read through accessors `double t(std::size_t index)` of the BSHD
// tensors (element (b, s, h, d) at ((b S + s) H + h) D + d) and of the fp32
// statistics ([B, H, seq_q]: (b H + h) seq_q + i); and the scan of a whole
// output the check makes beside them. Host only: the CPU tier tests it on
// hand-worked cases.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "sweeps/attention_problem.hpp"

namespace timeroof::attention_reference {

struct Geometry : AttentionShape {
  bool causal;
  double scale;
  explicit Geometry(const AttentionSpec& spec)
      : AttentionShape(spec),
        causal(spec.mask == AttentionMask::causal),
        scale(1.0 / std::sqrt(static_cast<double>(spec.head_dim))) {}
  std::size_t q_index(std::int64_t batch, std::int64_t row, std::int64_t head,
                      std::int64_t dim) const {
    return static_cast<std::size_t>(((batch * sq + row) * h + head) * d + dim);
  }
  std::size_t kv_index(std::int64_t batch, std::int64_t row, std::int64_t head,
                       std::int64_t dim) const {
    return static_cast<std::size_t>(((batch * skv + row) * hk + head) * d + dim);
  }
  std::size_t stats_index(std::int64_t batch, std::int64_t head, std::int64_t row) const {
    return static_cast<std::size_t>((batch * h + head) * sq + row);
  }
  // The K/V head query head `head` reads.
  std::int64_t kv_head(std::int64_t head) const { return head / (h / hk); }
  // Bottom-right causal: row i sees columns j <= i + seq_kv - seq_q.
  bool visible(std::int64_t row, std::int64_t column) const {
    return !causal || column <= row + skv - sq;
  }
};

// Scaled score q_row . k_column x scale.
template <typename Tensor>
double score(const Geometry& g, const Tensor& q, const Tensor& k, std::int64_t batch,
             std::int64_t head, std::int64_t row, std::int64_t column) {
  const std::int64_t kv_head = g.kv_head(head);
  double sum = 0;
  for (std::int64_t x = 0; x < g.d; ++x)
    sum += q(g.q_index(batch, row, head, x)) * k(g.kv_index(batch, column, kv_head, x));
  return sum * g.scale;
}

// One row of O = softmax(S) V, and its log-sum-exp (the statistics' value).
struct OutputRow {
  std::vector<double> o;
  double log_sum_exp = 0;
};
template <typename Tensor>
OutputRow output_row(const Geometry& g, const Tensor& q, const Tensor& k, const Tensor& v,
                     std::int64_t batch, std::int64_t head, std::int64_t row) {
  std::vector<double> scores(static_cast<std::size_t>(g.skv),
                             -std::numeric_limits<double>::infinity());
  double max = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < g.skv; ++j)
    if (g.visible(row, j)) {
      scores[static_cast<std::size_t>(j)] = score(g, q, k, batch, head, row, j);
      max = std::max(max, scores[static_cast<std::size_t>(j)]);
    }
  double sum = 0;
  OutputRow out;
  out.o.assign(static_cast<std::size_t>(g.d), 0.0);
  const std::int64_t kv_head = g.kv_head(head);
  for (std::int64_t j = 0; j < g.skv; ++j) {
    if (!g.visible(row, j)) continue;
    const double weight = std::exp(scores[static_cast<std::size_t>(j)] - max);
    sum += weight;
    for (std::int64_t x = 0; x < g.d; ++x)
      out.o[static_cast<std::size_t>(x)] += weight * v(g.kv_index(batch, j, kv_head, x));
  }
  for (double& value : out.o) value /= sum;
  out.log_sum_exp = max + std::log(sum);
  return out;
}

// The backward's inputs: the forward's operands, its output O, the incoming
// gradient dO and the statistics (log-sum-exp per query row), which define
// P = exp(S - stats) as the backward computes it.
template <typename Tensor, typename Stats>
struct BackwardInputs {
  const Tensor& q;
  const Tensor& k;
  const Tensor& v;
  const Tensor& o;
  const Tensor& d_o;
  const Stats& stats;
};

// P_ij and dS_ij = P_ij (dO_i . v_j - dO_i . O_i) x scale of one (query head, i, j).
template <typename Tensor, typename Stats>
void probability_and_gradient(const Geometry& g, const BackwardInputs<Tensor, Stats>& in,
                              std::int64_t batch, std::int64_t head, std::int64_t i, std::int64_t j,
                              double& p, double& d_s) {
  p = 0;
  d_s = 0;
  if (!g.visible(i, j)) return;
  p = std::exp(score(g, in.q, in.k, batch, head, i, j) - in.stats(g.stats_index(batch, head, i)));
  const std::int64_t kv_head = g.kv_head(head);
  double d_p = 0, delta = 0;
  for (std::int64_t x = 0; x < g.d; ++x) {
    const double grad = in.d_o(g.q_index(batch, i, head, x));
    d_p += grad * in.v(g.kv_index(batch, j, kv_head, x));
    delta += grad * in.o(g.q_index(batch, i, head, x));
  }
  d_s = p * (d_p - delta) * g.scale;
}

// dQ_i = sum_j dS_ij k_j.
template <typename Tensor, typename Stats>
std::vector<double> d_q_row(const Geometry& g, const BackwardInputs<Tensor, Stats>& in,
                            std::int64_t batch, std::int64_t head, std::int64_t i) {
  std::vector<double> out(static_cast<std::size_t>(g.d), 0.0);
  const std::int64_t kv_head = g.kv_head(head);
  for (std::int64_t j = 0; j < g.skv; ++j) {
    double p = 0, d_s = 0;
    probability_and_gradient(g, in, batch, head, i, j, p, d_s);
    if (d_s == 0) continue;
    for (std::int64_t x = 0; x < g.d; ++x)
      out[static_cast<std::size_t>(x)] += d_s * in.k(g.kv_index(batch, j, kv_head, x));
  }
  return out;
}

// dK_j = sum over the query heads of the group and i of dS_ij q_i;
// dV_j = the same of P_ij dO_i.
struct KeyRows {
  std::vector<double> d_k, d_v;
};
template <typename Tensor, typename Stats>
KeyRows key_rows(const Geometry& g, const BackwardInputs<Tensor, Stats>& in, std::int64_t batch,
                 std::int64_t kv_head, std::int64_t j) {
  KeyRows out;
  out.d_k.assign(static_cast<std::size_t>(g.d), 0.0);
  out.d_v.assign(static_cast<std::size_t>(g.d), 0.0);
  const std::int64_t group = g.h / g.hk;
  for (std::int64_t head = kv_head * group; head < (kv_head + 1) * group; ++head)
    for (std::int64_t i = 0; i < g.sq; ++i) {
      double p = 0, d_s = 0;
      probability_and_gradient(g, in, batch, head, i, j, p, d_s);
      if (p == 0) continue;
      for (std::int64_t x = 0; x < g.d; ++x) {
        out.d_k[static_cast<std::size_t>(x)] += d_s * in.q(g.q_index(batch, i, head, x));
        out.d_v[static_cast<std::size_t>(x)] += p * in.d_o(g.q_index(batch, i, head, x));
      }
    }
  return out;
}

// One pass over a whole BSHD output of `rows` rows x `heads` heads a batch item
// (query-shaped: seq_q, H; key-shaped: seq_kv, KV heads), filled with NaN before
// the call: the elements the call left NaN, the rows (of g.d elements, as
// (batch x rows + row) x heads + head) with an |element| above `bound` (0: none
// judged), and where the largest |element| is.
struct WholeOutput {
  std::size_t unwritten = 0;
  std::set<std::size_t> rows_beyond;
  std::int64_t batch = 0, row = 0, head = 0;  // of the largest |element|
};
template <class Tensor>
WholeOutput scan_whole_output(const Tensor& out, std::size_t count, const Geometry& g,
                              std::int64_t rows, std::int64_t heads, double bound) {
  WholeOutput scan;
  std::size_t largest = 0;
  double largest_value = -1;
  for (std::size_t i = 0; i < count; ++i) {
    const double value = std::abs(out(i));
    if (std::isnan(value)) {
      ++scan.unwritten;
      continue;
    }
    if (bound > 0 && value > bound) scan.rows_beyond.insert(i / static_cast<std::size_t>(g.d));
    if (value > largest_value) largest_value = value, largest = i;
  }
  const auto position = static_cast<std::int64_t>(largest / static_cast<std::size_t>(g.d));
  scan.head = position % heads;
  scan.row = position / heads % rows;
  scan.batch = position / heads / rows;
  return scan;
}

}  // namespace timeroof::attention_reference
