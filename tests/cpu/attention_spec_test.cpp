// CPU tier, attention without a GPU: the family's axes and default sweep, the
// analytic FLOPs (score pairs with and without the causal mask) and minimum
// bytes worked by hand, the tensors a transfer sweep moves, validation that
// names the field and the fix, and the host reference: forward rows worked by
// hand, backward rows against central differences of the forward.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sweeps/attention_problem.hpp"
#include "sweeps/attention_reference.hpp"
#include "sweeps/family.hpp"
#include "sweeps/spec.hpp"
#include "tests/support/family_checks.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using nlohmann::json;
namespace ref = attention_reference;

std::string problem_error(const json& point) {
  return test::problem_error("attention", point);
}

AttentionSpec shape(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads,
                    std::int64_t seq_q, std::int64_t seq_kv, std::int64_t head_dim,
                    AttentionMask mask = AttentionMask::none,
                    AttentionDirection direction = AttentionDirection::fwd) {
  AttentionSpec spec;
  spec.batch = batch;
  spec.heads = heads;
  spec.kv_heads = kv_heads;
  spec.seq_q = seq_q;
  spec.seq_kv = seq_kv;
  spec.head_dim = head_dim;
  spec.mask = mask;
  spec.direction = direction;
  return spec;
}

TEST(AttentionFamily, AxesFollowTheContractAndTheDefaultSweepIsValid) {
  const OperatorFamily& family = find_family("attention");
  EXPECT_EQ(test::checked_axis_keys(family),
            (std::vector<std::string>{"batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim",
                                      "mask", "direction", "precision"}));
  const std::vector<json> points = family.default_points();
  EXPECT_EQ(points.size(), 14u);
  std::set<std::string> distinct, masks, directions, precisions;
  bool gqa = false, decode = false;
  for (const json& point : points) {
    EXPECT_NO_THROW((void)family.problem(point)) << point.dump();
    distinct.insert(point.dump());
    masks.insert(point.at("mask").get<std::string>());
    directions.insert(point.at("direction").get<std::string>());
    precisions.insert(point.at("precision").get<std::string>());
    gqa = gqa || point.at("kv_heads").get<int>() != 0;
    decode = decode || point.at("seq_q").get<int>() == 1;
  }
  EXPECT_EQ(distinct.size(), points.size());
  EXPECT_EQ(masks, (std::set<std::string>{"none", "causal"}));
  EXPECT_EQ(directions, (std::set<std::string>{"fwd", "bwd"}));
  EXPECT_EQ(precisions, (std::set<std::string>{"fp16", "bf16"}));
  EXPECT_TRUE(gqa);
  EXPECT_TRUE(decode);
  EXPECT_NO_THROW((void)default_spec("attention"));
  double total_s = 0;
  for (const json& point : points) total_s += estimate_point(point, family, DryRunRoofs{}).point_s;
  EXPECT_LT(total_s, 60.0);
}

TEST(AttentionSpec, ScorePairsByHand) {
  // No mask: every pair, 4 x 4.
  EXPECT_EQ(attention_score_pairs(shape(1, 1, 0, 4, 0, 8)), 16.0);
  // Causal, square: the triangle with its diagonal, 1 + 2 + 3 + 4.
  EXPECT_EQ(attention_score_pairs(shape(1, 1, 0, 4, 0, 8, AttentionMask::causal)), 10.0);
  // Bottom right, 2 queries over 5 keys: row 0 sees keys 0..3, row 1 all 5.
  EXPECT_EQ(attention_score_pairs(shape(1, 1, 0, 2, 5, 8, AttentionMask::causal)), 9.0);
  // A decode step sees the whole cache.
  EXPECT_EQ(attention_score_pairs(shape(1, 1, 0, 1, 4096, 8, AttentionMask::causal)), 4096.0);
}

TEST(AttentionSpec, FlopsByHand) {
  // fwd 4 B H D pairs: 4 x 2 x 3 x 8 x 16 = 3072; causal 10 pairs: 1920.
  EXPECT_EQ(attention_flops(shape(2, 3, 0, 4, 0, 8)), 3072.0);
  EXPECT_EQ(attention_flops(shape(2, 3, 0, 4, 0, 8, AttentionMask::causal)), 1920.0);
  // bwd: five products, 10 B H D pairs = 2.5 x fwd.
  EXPECT_EQ(attention_flops(shape(2, 3, 0, 4, 0, 8, AttentionMask::none, AttentionDirection::bwd)),
            7680.0);
  EXPECT_EQ(
      attention_flops(shape(2, 3, 0, 4, 0, 8, AttentionMask::causal, AttentionDirection::bwd)),
      4800.0);
  // GQA shares K and V but every query head does its own products.
  EXPECT_EQ(attention_flops(shape(2, 3, 1, 4, 0, 8)), 3072.0);
  // LLaMA-7B prefill, S 4096, causal: 4 x 32 x 128 x 4096 x 4097 / 2.
  EXPECT_EQ(attention_flops(shape(1, 32, 0, 4096, 0, 128, AttentionMask::causal)),
            137'472'507'904.0);
}

TEST(AttentionSpec, MinimumBytesAndTransferTensorsByHand) {
  // B 1, H 2, kv_heads 1, seq_q 3, seq_kv 5, D 8, fp16: Q and O 48 elements, K and V 40.
  const AttentionSpec fwd = shape(1, 2, 1, 3, 5, 8);
  EXPECT_EQ(attention_min_bytes(fwd), 2 * 96.0 + 2 * 80.0);
  // bwd adds dO, dQ (Q-shaped), dK, dV (K-shaped) and the fp32 statistics (2 x 3).
  const AttentionSpec bwd = shape(1, 2, 1, 3, 5, 8, AttentionMask::none, AttentionDirection::bwd);
  EXPECT_EQ(attention_min_bytes(bwd), 4 * 96.0 + 4 * 80.0 + 24.0);

  const AttentionProblem forward(shape(1, 2, 1, 3, 5, 8));
  const std::vector<TensorArgument> in = forward.inputs(), out = forward.outputs();
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].role, "q");
  EXPECT_EQ(in[0].bytes, 96u);
  EXPECT_EQ(in[2].role, "v");
  EXPECT_EQ(in[2].bytes, 80u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].role, "o");
  EXPECT_EQ(forward.op(), "attention_fwd");
  EXPECT_EQ(forward.math_mode(), MathMode::tensor);
  EXPECT_EQ(forward.params()["seq_kv"], 5);
  EXPECT_EQ(forward.params()["layout"], "bshd");

  AttentionSpec backward_spec = shape(1, 2, 1, 3, 128, 8);
  backward_spec.direction = AttentionDirection::bwd;
  backward_spec.precision = Precision::bf16;
  const AttentionProblem backward(backward_spec);
  std::vector<std::string> roles;
  for (const TensorArgument& t : backward.inputs()) roles.push_back(t.role);
  EXPECT_EQ(roles, (std::vector<std::string>{"q", "k", "v", "o", "do", "stats"}));
  EXPECT_EQ(backward.inputs().back().bytes, 24u);
  roles.clear();
  for (const TensorArgument& t : backward.outputs()) roles.push_back(t.role);
  EXPECT_EQ(roles, (std::vector<std::string>{"dq", "dk", "dv"}));
  EXPECT_EQ(backward.op(), "attention_bwd");
  EXPECT_EQ(backward.precision(), Precision::bf16);
}

TEST(AttentionSpec, BadPointsAreOneLineErrorsNamingTheFix) {
  std::string m = problem_error({{"heads", 12}, {"kv_heads", 5}});
  EXPECT_MENTIONS(m, "kv_heads = 5 does not divide heads = 12");
  EXPECT_MENTIONS(m, "allowed: a divisor of heads");
  m = problem_error({{"head_dim", 60}});
  EXPECT_MENTIONS(m, "head_dim = 60");
  EXPECT_MENTIONS(m, "multiple of 8 up to 256");
  m = problem_error({{"head_dim", 256}, {"direction", "bwd"}});
  EXPECT_MENTIONS(m, "up to 128");
  m = problem_error({{"mask", "causal"}, {"seq_q", 512}, {"seq_kv", 128}});
  EXPECT_MENTIONS(m, "seq_q <= seq_kv");
  m = problem_error({{"precision", "fp32"}});
  EXPECT_MENTIONS(m, "precision");
  EXPECT_MENTIONS(m, "fp16, bf16, fp8");
  m = problem_error({{"precision", "fp8"}, {"direction", "bwd"}, {"head_dim", 256}});
  EXPECT_MENTIONS(m, "fused bwd attention in fp8; allowed: a multiple of 16 up to 128");
  m = problem_error({{"precision", "fp8"}, {"head_dim", 72}});
  EXPECT_MENTIONS(m, "head_dim = 72");
  EXPECT_MENTIONS(m, "in fp8; allowed: a multiple of 16 up to 256");
  m = problem_error({{"precision", "fp8"}, {"head_dim", 272}});
  EXPECT_MENTIONS(m, "up to 256");
  m = problem_error({{"mask", "sliding"}});
  EXPECT_MENTIONS(m, "causal");
  m = problem_error({{"seq", 4}});
  EXPECT_MENTIONS(m, "unknown key 'seq'");
  m = problem_error({{"batch", 0}});
  EXPECT_MENTIONS(m, "batch = 0 is out of range");
  m = problem_error({{"kv_heads", -1}});
  EXPECT_MENTIONS(m, "kv_heads");
  m = problem_error(
      {{"batch", INT_MAX}, {"seq_q", INT_MAX}, {"heads", INT_MAX}, {"head_dim", 128}});
  EXPECT_MENTIONS(m, "smaller batch, heads, seq_q, seq_kv or head_dim");
  for (const std::string& message :
       {problem_error({{"head_dim", 60}}), problem_error({{"heads", 12}, {"kv_heads", 5}})})
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(AttentionSpec, Fp8StoresOneByteElementsAndKeepsTheFlops) {
  // B 1, H 2, kv_heads 1, seq_q 3, seq_kv 5, D 16, fp8: Q and O 96 elements, K and V 80,
  // one byte each.
  AttentionSpec fp8 = shape(1, 2, 1, 3, 5, 16);
  fp8.precision = Precision::fp8;
  EXPECT_EQ(attention_data_type(fp8), DataType::fp8_e4m3);
  EXPECT_EQ(attention_min_bytes(fp8), 2 * 96.0 + 2 * 80.0);
  AttentionSpec fp16 = fp8;
  fp16.precision = Precision::fp16;
  EXPECT_EQ(attention_min_bytes(fp16), 2 * attention_min_bytes(fp8));
  EXPECT_EQ(attention_flops(fp8), attention_flops(fp16));
  EXPECT_EQ(attention_flops(fp8), 4.0 * 1 * 2 * 16 * 15);
  const AttentionProblem problem(fp8);
  EXPECT_EQ(problem.precision(), Precision::fp8);
  EXPECT_EQ(problem.math_mode(), MathMode::tensor);
  ASSERT_EQ(problem.inputs().size(), 3u);
  EXPECT_EQ(problem.inputs()[0].bytes, 96u);
  EXPECT_EQ(problem.inputs()[1].bytes, 80u);
  EXPECT_EQ(problem.outputs()[0].bytes, 96u);
  // The family parses it; the largest fp8 head dimension is accepted.
  const AttentionSpec parsed = attention_spec_from_params(
      {{"precision", "fp8"}, {"head_dim", 256}, {"seq_q", 2048}, {"mask", "causal"}});
  EXPECT_EQ(parsed.precision, Precision::fp8);
  EXPECT_NO_THROW(validate(parsed));
  // The backward in fp8 at D 128, bytes one per element beside the fp32 statistics.
  AttentionSpec backward = shape(1, 2, 1, 3, 5, 128, AttentionMask::none, AttentionDirection::bwd);
  backward.precision = Precision::fp8;
  EXPECT_NO_THROW(validate(backward));
  EXPECT_EQ(attention_min_bytes(backward), 4 * 768.0 + 4 * 640.0 + 2 * 3 * 4.0);
  EXPECT_EQ(attention_flops(backward), 10.0 * 2 * 128 * 15);
}

TEST(AttentionSpec, BackwardTakesAnyKeyLengthWithThePaddingMask) {
  // seq_kv not a multiple of 128: accepted, with the padding mask; a multiple, or
  // any forward, without.
  for (std::int64_t keys : {77, 200, 1000}) {
    const AttentionSpec spec =
        shape(2, 4, 0, 64, keys, 64, AttentionMask::causal, AttentionDirection::bwd);
    EXPECT_NO_THROW(validate(spec)) << keys;
    EXPECT_TRUE(attention_needs_padding_mask(spec)) << keys;
    // FLOPs and bytes on the real lengths.
    EXPECT_EQ(attention_flops(spec), 10.0 * 2 * 4 * 64 * attention_score_pairs(spec));
    EXPECT_EQ(attention_min_bytes(spec),
              4 * (2 * 64 * 4 * 64) * 2.0 + 4 * (2.0 * keys * 4 * 64) * 2 + 2 * 4 * 64 * 4.0);
  }
  EXPECT_NO_THROW(validate(shape(1, 2, 0, 77, 0, 64, AttentionMask::none,
                                 AttentionDirection::bwd)));  // seq_kv = seq_q = 77
  EXPECT_TRUE(attention_needs_padding_mask(
      shape(1, 2, 0, 77, 0, 64, AttentionMask::none, AttentionDirection::bwd)));
  EXPECT_FALSE(attention_needs_padding_mask(
      shape(1, 2, 0, 77, 256, 64, AttentionMask::none, AttentionDirection::bwd)));
  EXPECT_FALSE(attention_needs_padding_mask(shape(1, 2, 0, 77, 1000, 64)));
}

TEST(AttentionSweeps, FlagsBuildTheirPoints) {
  const SweepSpec flags = spec_from_flags(
      "attention", {{"--seq-q", "128,256"}, {"--mask", "causal"}, {"--kv-heads", "4"}});
  ASSERT_EQ(flags.points.size(), 2u);
  for (const json& point : flags.points) {
    EXPECT_EQ(point["mask"], "causal");
    EXPECT_EQ(point["kv_heads"], 4);
  }
}

// Tensors of the reference test: values by index.
struct Values {
  std::vector<double> data;
  double operator()(std::size_t i) const { return data[i]; }
};

Values pattern(std::size_t count, double step, double offset) {
  Values v;
  for (std::size_t i = 0; i < count; ++i) v.data.push_back(std::sin(step * double(i) + offset));
  return v;
}

TEST(AttentionReference, ForwardRowsByHand) {
  // Q = 0: every visible score is 0, P uniform, O the mean of the visible V rows,
  // log-sum-exp = log(visible keys).
  const AttentionSpec spec = shape(1, 1, 0, 2, 3, 2, AttentionMask::causal);
  const ref::Geometry g(spec);
  const Values q{{0, 0, 0, 0}};
  const Values k{{1, 2, 3, 4, 5, 6}};
  const Values v{{1, 10, 2, 20, 6, 60}};
  // Row 0 sees keys 0, 1 (bottom right: j <= 0 + 3 - 2); row 1 all three.
  const ref::OutputRow row0 = ref::output_row(g, q, k, v, 0, 0, 0);
  EXPECT_DOUBLE_EQ(row0.o[0], 1.5);
  EXPECT_DOUBLE_EQ(row0.o[1], 15.0);
  EXPECT_DOUBLE_EQ(row0.log_sum_exp, std::log(2.0));
  const ref::OutputRow row1 = ref::output_row(g, q, k, v, 0, 0, 1);
  EXPECT_DOUBLE_EQ(row1.o[0], 3.0);
  EXPECT_DOUBLE_EQ(row1.log_sum_exp, std::log(3.0));
  // One key far ahead: softmax picks it (scale 1/sqrt(2)).
  const Values q1{{0, 0, 100, 0}};
  EXPECT_NEAR(ref::output_row(g, q1, k, v, 0, 0, 1).o[0], 6.0, 1e-9);
}

TEST(AttentionReference, BackwardRowsMatchCentralDifferencesOfTheForward) {
  // GQA (4 query heads over 2 K/V heads), bottom-right causal, 3 queries over 5 keys.
  const AttentionSpec spec = shape(1, 4, 2, 3, 5, 4, AttentionMask::causal);
  const ref::Geometry g(spec);
  Values q = pattern(1 * 3 * 4 * 4, 0.37, 0.1), k = pattern(1 * 5 * 2 * 4, 0.53, 0.7),
         v = pattern(1 * 5 * 2 * 4, 0.29, 1.3), d_o = pattern(1 * 3 * 4 * 4, 0.61, 2.1);
  // The loss L = sum(dO o O) and its inputs O and the statistics.
  auto forward = [&](const Values& qq, const Values& kk, const Values& vv, Values* o,
                     Values* stats) {
    double loss = 0;
    if (o) o->data.assign(q.data.size(), 0.0);
    if (stats) stats->data.assign(static_cast<std::size_t>(g.h * g.sq), 0.0);
    for (std::int64_t head = 0; head < g.h; ++head)
      for (std::int64_t i = 0; i < g.sq; ++i) {
        const ref::OutputRow row = ref::output_row(g, qq, kk, vv, 0, head, i);
        for (std::int64_t x = 0; x < g.d; ++x) {
          loss += d_o(g.q_index(0, i, head, x)) * row.o[static_cast<std::size_t>(x)];
          if (o) o->data[g.q_index(0, i, head, x)] = row.o[static_cast<std::size_t>(x)];
        }
        if (stats) stats->data[g.stats_index(0, head, i)] = row.log_sum_exp;
      }
    return loss;
  };
  Values o, stats;
  (void)forward(q, k, v, &o, &stats);
  const ref::BackwardInputs<Values, Values> in{q, k, v, o, d_o, stats};
  constexpr double kStep = 1e-6;
  auto derivative = [&](Values& tensor, std::size_t index) {
    const double saved = tensor.data[index];
    tensor.data[index] = saved + kStep;
    const double up = forward(q, k, v, nullptr, nullptr);
    tensor.data[index] = saved - kStep;
    const double down = forward(q, k, v, nullptr, nullptr);
    tensor.data[index] = saved;
    return (up - down) / (2 * kStep);
  };
  for (std::int64_t head = 0; head < g.h; ++head)
    for (std::int64_t i = 0; i < g.sq; ++i) {
      const std::vector<double> d_q = ref::d_q_row(g, in, 0, head, i);
      for (std::int64_t x = 0; x < g.d; ++x)
        EXPECT_NEAR(d_q[static_cast<std::size_t>(x)], derivative(q, g.q_index(0, i, head, x)), 1e-7)
            << "dQ head " << head << " row " << i;
    }
  for (std::int64_t kv_head = 0; kv_head < g.hk; ++kv_head)
    for (std::int64_t j = 0; j < g.skv; ++j) {
      const ref::KeyRows rows = ref::key_rows(g, in, 0, kv_head, j);
      for (std::int64_t x = 0; x < g.d; ++x) {
        EXPECT_NEAR(rows.d_k[static_cast<std::size_t>(x)],
                    derivative(k, g.kv_index(0, j, kv_head, x)), 1e-7)
            << "dK head " << kv_head << " row " << j;
        EXPECT_NEAR(rows.d_v[static_cast<std::size_t>(x)],
                    derivative(v, g.kv_index(0, j, kv_head, x)), 1e-7)
            << "dV head " << kv_head << " row " << j;
      }
    }
}

TEST(AttentionReference, TheWholeOutputScanCountsNaNsAndFindsTheLargestElement) {
  // Key-shaped (GQA: 2 K/V heads of 4), 2 batch items x 5 keys x 2 heads x D 4.
  const AttentionSpec spec = shape(2, 4, 2, 3, 5, 4, AttentionMask::none);
  const ref::Geometry g(spec);
  const std::size_t count = 2 * 5 * 2 * 4;
  Values out = pattern(count, 0.41, 0.3);  // |sin| < 1 everywhere
  const double nan = std::numeric_limits<double>::quiet_NaN();
  out.data[g.kv_index(0, 0, 0, 0)] = nan;
  out.data[g.kv_index(1, 4, 1, 3)] = nan;
  out.data[g.kv_index(1, 3, 0, 2)] = -7.5;  // the largest |element|
  out.data[g.kv_index(0, 2, 1, 1)] = 3.0;   // beyond the bound too
  const ref::WholeOutput scan = ref::scan_whole_output(out, count, g, g.skv, g.hk, 2.0);
  EXPECT_EQ(scan.unwritten, 2u);
  EXPECT_EQ(scan.batch, 1);
  EXPECT_EQ(scan.row, 3);
  EXPECT_EQ(scan.head, 0);
  // Rows as (batch x rows + row) x heads + head.
  EXPECT_EQ(scan.rows_beyond, (std::set<std::size_t>{(0 * 5 + 2) * 2 + 1, (1 * 5 + 3) * 2 + 0}));
  // Bound 0 judges no row; query-shaped decoding (H 4 over seq_q 3) of the same
  // buffer's first 2 x 3 x 4 x 4 elements.
  const std::size_t q_count = 2 * 3 * 4 * 4;
  Values q_out = pattern(q_count, 0.41, 0.3);
  q_out.data[g.q_index(1, 2, 3, 1)] = 9.0;
  const ref::WholeOutput q_scan = ref::scan_whole_output(q_out, q_count, g, g.sq, g.h, 0);
  EXPECT_TRUE(q_scan.rows_beyond.empty());
  EXPECT_EQ(q_scan.unwritten, 0u);
  EXPECT_EQ(std::tuple(q_scan.batch, q_scan.row, q_scan.head), std::tuple(1, 2, 3));
}

}  // namespace
}  // namespace timeroof
