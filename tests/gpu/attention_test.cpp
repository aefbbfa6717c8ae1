// GPU tier, attention through cuDNN's graph API: forward and backward in fp16
// and bf16, without and with the causal mask (square and bottom-right), GQA and
// a decode step pass their checks against the host reference in double, as do
// the fp8 forward (e4m3, per-tensor scales) and backwards whose seq_kv is no
// multiple of 128 (the padding mask); fp8 is refused where cuDNN cannot run it;
// run()
// captures into a CUDA graph and replays bitwise; through the sweep runner the
// counted Tensor-Core FLOPs are compared with the analytic count (exact without
// a mask, above it by the diagonal tiles with one), with T_stream and T_graph
// measured; and `sweep attention` through the CLI stores its points.
#include <cudnn.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "counters/counter_access.hpp"
#include "gpu/check.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/attention.hpp"
#include "sweeps/family.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/runner.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/gpu/operator_capture.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

std::shared_ptr<LibraryHandles> shared_handles() {
  static std::shared_ptr<LibraryHandles> handles = std::make_shared<LibraryHandles>();
  return handles;
}

AttentionSpec spec_of(const nlohmann::json& point) {
  return attention_spec_from_params(point);
}

// Prepares and checks one point; the check must pass.
std::unique_ptr<Attention> prepare_and_check(const nlohmann::json& point, const Stream& stream) {
  auto op = std::make_unique<Attention>(spec_of(point), shared_handles());
  const Outcome outcome = guarded([&] { op->prepare(stream.get()); });
  EXPECT_EQ(outcome.status, PointStatus::ok) << point.dump() << ": " << outcome.reason;
  if (outcome.status != PointStatus::ok) return nullptr;
  const CheckResult result = op->check();
  std::printf("%-110s %s\n", point.dump().c_str(), result.detail.c_str());
  EXPECT_TRUE(result.passed()) << point.dump() << ": " << result.detail;
  EXPECT_EQ(op->algorithm().rfind("eng", 0), 0u) << op->algorithm();
  return op;
}

// GQA (H 8 over 2 K/V heads), D 128, causal over `seq` tokens, forward.
nlohmann::json gqa_causal(std::int64_t seq, const char* precision) {
  return {{"batch", 1},      {"heads", 8},       {"kv_heads", 2},         {"seq_q", seq},
          {"head_dim", 128}, {"mask", "causal"}, {"precision", precision}};
}

// A LLaMA-7B attention point (B 1, H 32, D 128) of `seq` tokens.
nlohmann::json llama(std::int64_t seq, const char* mask, const char* direction,
                     const char* precision) {
  return {{"batch", 1},
          {"heads", 32},
          {"seq_q", seq},
          {"head_dim", 128},
          {"mask", mask},
          {"direction", direction},
          {"precision", precision}};
}

// Why fp8 attention cannot run here, or "" where it can: below sm_90, and on
// sm_90 with a cuDNN older than kAttentionFp8HopperMinCudnn (refused there:
// Fp8IsRefusedWhereCudnnCannotRunIt checks that).
std::string fp8_unavailable(const GpuInfo& gpu) {
  if (gpu.cc_major < 9) return "fp8 attention needs sm_90+";
  if (gpu.cc_major == 9 && cudnnGetVersion() < kAttentionFp8HopperMinCudnn)
    return "cuDNN " + cudnn_version_text(cudnnGetVersion()) +
           " refuses fp8 attention on sm_90 (its fp8 forward is defective); run with cuDNN " +
           cudnn_version_text(kAttentionFp8HopperMinCudnn) + "+ first on LD_LIBRARY_PATH";
  return "";
}
#define TR_REQUIRE_FP8_ATTENTION()                               \
  do {                                                           \
    const std::string why_not = fp8_unavailable(inspect_gpu(0)); \
    if (!why_not.empty()) GTEST_SKIP() << why_not;               \
  } while (0)

TEST(GpuAttention, ForwardAndBackwardMatchTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  using nlohmann::json;
  for (const char* direction : {"fwd", "bwd"})
    for (const char* precision : {"fp16", "bf16"})
      for (const char* mask : {"none", "causal"}) {
        prepare_and_check({{"batch", 2},
                           {"heads", 4},
                           {"seq_q", 256},
                           {"head_dim", 64},
                           {"mask", mask},
                           {"direction", direction},
                           {"precision", precision}},
                          stream);
      }
  // GQA, D 128, bottom-right causal (seq_q < seq_kv), a decode step.
  prepare_and_check(gqa_causal(384, "bf16"), stream);
  prepare_and_check({{"batch", 1},
                     {"heads", 8},
                     {"kv_heads", 2},
                     {"seq_q", 256},
                     {"head_dim", 128},
                     {"mask", "causal"},
                     {"direction", "bwd"},
                     {"precision", "bf16"}},
                    stream);
  prepare_and_check({{"batch", 2},
                     {"heads", 4},
                     {"seq_q", 128},
                     {"seq_kv", 512},
                     {"head_dim", 64},
                     {"mask", "causal"},
                     {"precision", "fp16"}},
                    stream);
  prepare_and_check({{"batch", 2},
                     {"heads", 4},
                     {"seq_q", 128},
                     {"seq_kv", 512},
                     {"head_dim", 64},
                     {"mask", "causal"},
                     {"direction", "bwd"},
                     {"precision", "fp16"}},
                    stream);
  prepare_and_check({{"batch", 4},
                     {"heads", 8},
                     {"kv_heads", 1},
                     {"seq_q", 1},
                     {"seq_kv", 1024},
                     {"head_dim", 128},
                     {"mask", "causal"},
                     {"precision", "bf16"}},
                    stream);
  // Odd lengths forward (no multiple of any tile).
  prepare_and_check({{"batch", 3},
                     {"heads", 2},
                     {"seq_q", 77},
                     {"seq_kv", 131},
                     {"head_dim", 64},
                     {"precision", "fp16"}},
                    stream);
}

TEST(GpuAttention, Fp8ForwardMatchesTheReferenceOnTheDequantisedInputs) {
  TR_REQUIRE_GPU();
  TR_REQUIRE_FP8_ATTENTION();
  const Stream stream;
  for (const char* mask : {"none", "causal"})
    for (std::int64_t head_dim : {64, 128}) {
      const auto op = prepare_and_check({{"batch", 2},
                                         {"heads", 4},
                                         {"seq_q", 512},
                                         {"head_dim", head_dim},
                                         {"mask", mask},
                                         {"precision", "fp8"}},
                                        stream);
      if (!op) continue;
      // P is a probability and |O| <= max |V| < 1: both amax in (0, 1], up to the
      // softmax's fp32 rounding (a causal row of one key: P = 1.0000004 on an H100).
      const nlohmann::json fp8 = op->details()["fp8"];
      constexpr double kOne = 1 + 1e-6;
      EXPECT_GT(fp8["amax_s"].get<double>(), 0.0) << fp8;
      EXPECT_LE(fp8["amax_s"].get<double>(), kOne) << fp8;
      EXPECT_GT(fp8["amax_o"].get<double>(), 0.0) << fp8;
      EXPECT_LE(fp8["amax_o"].get<double>(), kOne) << fp8;
      EXPECT_EQ(fp8["scale_o"], kAttentionFp8Scale);
    }
  // GQA, seq_q = seq_kv causal (the top-left and bottom-right masks coincide).
  prepare_and_check(gqa_causal(384, "fp8"), stream);
}

// prepare()'s refusal of `point`: a one-line usage error (unsupported) naming `why`.
void expect_refused(const nlohmann::json& point, const std::string& why, const Stream& stream) {
  Attention op(spec_of(point), shared_handles());
  const Outcome outcome = guarded([&] { op.prepare(stream.get()); });
  EXPECT_EQ(outcome.status, PointStatus::unsupported) << point.dump() << ": " << outcome.reason;
  EXPECT_NE(outcome.reason.find(why), std::string::npos) << outcome.reason;
  EXPECT_EQ(outcome.reason.find('\n'), std::string::npos) << outcome.reason;
}

TEST(GpuAttention, Fp8IsRefusedWhereCudnnCannotRunIt) {
  TR_REQUIRE_GPU();
  const GpuInfo gpu = inspect_gpu(0);
  const Stream stream;
  // Hopper: no bottom-right causal mask in fp8 (seq_q < seq_kv), the backward at
  // D 128 only; below sm_90 no fp8 at all.
  if (gpu.cc_major >= 10) GTEST_SKIP() << "Blackwell runs these points";
  expect_refused({{"batch", 1},
                  {"heads", 4},
                  {"seq_q", 128},
                  {"seq_kv", 512},
                  {"head_dim", 64},
                  {"mask", "causal"},
                  {"precision", "fp8"}},
                 gpu.cc_major < 9 ? "compute capability 9.0+" : "Blackwell only", stream);
  if (gpu.cc_major < 9) return;
  expect_refused({{"batch", 1},
                  {"heads", 4},
                  {"seq_q", 256},
                  {"head_dim", 64},
                  {"direction", "bwd"},
                  {"precision", "fp8"}},
                 "head_dim = 128 only", stream);
  // Hopper with a cuDNN whose fp8 forward writes wrong rows: refused, both
  // directions (the backward's O comes from that forward).
  if (gpu.cc_major == 9 && cudnnGetVersion() < kAttentionFp8HopperMinCudnn) {
    const std::string needs = "needs cuDNN " + cudnn_version_text(kAttentionFp8HopperMinCudnn);
    expect_refused(llama(2048, "causal", "fwd", "fp8"), needs, stream);
    expect_refused(llama(1024, "none", "bwd", "fp8"), needs, stream);
  }
}

TEST(GpuAttention, BackwardWithAnyKeyLengthRunsThePaddingMask) {
  TR_REQUIRE_GPU();
  const Stream stream;
  struct Case {
    std::int64_t batch, heads, kv_heads, seq_q, seq_kv, head_dim;
    const char *mask, *precision;
  };
  for (const Case& c :
       {Case{2, 4, 0, 1000, 0, 64, "none", "fp16"}, Case{2, 4, 0, 77, 0, 64, "causal", "bf16"},
        Case{2, 4, 0, 64, 200, 64, "causal", "fp16"}, Case{1, 8, 2, 300, 0, 128, "causal", "bf16"},
        Case{3, 2, 0, 77, 131, 64, "none", "fp16"}}) {
    const auto op = prepare_and_check({{"batch", c.batch},
                                       {"heads", c.heads},
                                       {"kv_heads", c.kv_heads},
                                       {"seq_q", c.seq_q},
                                       {"seq_kv", c.seq_kv},
                                       {"head_dim", c.head_dim},
                                       {"mask", c.mask},
                                       {"direction", "bwd"},
                                       {"precision", c.precision}},
                                      stream);
    if (!op) continue;
    const nlohmann::json padding = op->details()["padding_mask"];
    EXPECT_EQ(padding["seq_len_kv"], c.seq_kv == 0 ? c.seq_q : c.seq_kv) << padding;
    EXPECT_EQ(padding["seq_len_q"], c.seq_q) << padding;
  }
}

TEST(GpuAttention, RunCapturesIntoACudaGraphAndReplaysBitwise) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (const nlohmann::json& point :
       {nlohmann::json{{"batch", 2}, {"heads", 4}, {"seq_q", 512}, {"head_dim", 64}},
        nlohmann::json{{"batch", 1},
                       {"heads", 4},
                       {"seq_q", 256},
                       {"head_dim", 128},
                       {"mask", "causal"},
                       {"direction", "bwd"},
                       {"precision", "bf16"}}}) {
    Attention op(spec_of(point), shared_handles());
    op.prepare(stream.get());
    const DeviceTensor output = op.outputs().at(0);
    std::vector<std::byte> eager(output.bytes), replayed(output.bytes);
    op.run(stream.get());
    TR_CUDA_CHECK(cudaMemcpyAsync(eager.data(), output.data, output.bytes, cudaMemcpyDeviceToHost,
                                  stream.get()));
    TR_CUDA_CHECK(cudaMemsetAsync(output.data, 0x7f, output.bytes, stream.get()));
    const test::CapturedRun capture = test::capture_run(op, stream.get());
    ASSERT_TRUE(test::captured_ok(capture)) << point.dump();
    test::replay(capture, stream.get(), 3);
    TR_CUDA_CHECK(cudaMemcpyAsync(replayed.data(), output.data, output.bytes,
                                  cudaMemcpyDeviceToHost, stream.get()));
    TR_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    const bool deterministic =
        op.details()["numerical_notes"].dump().find("NONDETERMINISTIC") == std::string::npos;
    std::printf("%-100s %s deterministic %d\n", point.dump().c_str(), op.algorithm().c_str(),
                deterministic);
    if (deterministic) EXPECT_TRUE(replayed == eager) << point.dump() << " " << op.algorithm();
  }
}

// Counted Tensor-Core FLOPs against 4 (fwd) or 10 (bwd) B H D pairs. Without a
// mask, at lengths that are multiples of the engines' tiles, the count is exact.
// With the causal mask the engines skip whole tiles above the diagonal and
// compute the tiles that straddle it in full (H100, cuDNN 9.14, n = S / 128):
//   fwd: 64-query x key_tile tiles, query tile b computing its keys up to the
//        diagonal in whole key tiles (tiled_causal_forward_pairs); key_tile 128
//        for 16-bit D 128 (sdpa_sm90_flash_fprop_wgmma_f16 ..._64x128x128), 256
//        for fp8 D 128 (..._wgmma_f8_knob_32_64x256x128: x1.1245 at S 2048,
//        x1.0622 at 4096 on an H100) and 16-bit D 64 (S = 128 counts x2);
//   bwd (sdpa_sm90_flash_bprop ..._64x64x128, 16-bit and fp8 alike): cuDNN
//        9.14's engine (eng2) pairs = 8192 (n^2 + 2n - 1), a fit exact at S = 1024
//        and 2048 (64-query steps from one step before each 128-key tile's
//        diagonal); cuDNN 9.19's (eng6, 16-bit and fp8) the forward's count on
//        128-key tiles (x1.1239 at S 1024, x1.0620 at 2048; H100), untested in
//        between;
//   decode: one query row fills a 64-row tile (..._sm80_flash_fprop_..._64x64x128): x64.
double tiled_causal_forward_pairs(std::int64_t seq, std::int64_t key_tile) {
  double pairs = 0;
  for (std::int64_t first_row = 0; first_row < seq; first_row += 64) {
    const std::int64_t keys = (first_row + 64 + key_tile - 1) / key_tile * key_tile;
    pairs += 64.0 * static_cast<double>(std::min(seq, keys));
  }
  return pairs;
}

double tiled_causal_ratio(std::int64_t seq, bool bwd, std::int64_t key_tile = 128) {
  const double n = static_cast<double>(seq) / 128, s = static_cast<double>(seq);
  const bool bwd_as_914 = bwd && cudnnGetVersion() < 91900;
  const double counted =
      bwd_as_914 ? 8192 * (n * n + 2 * n - 1) : tiled_causal_forward_pairs(seq, key_tile);
  return counted / (s * (s + 1) / 2);
}

// Measures `point` through the sweep runner: ok, its check passed, all three
// times, and the counted Tensor-Core FLOPs of its precision over the analytic
// count in [low, high] (0.1% slack).
void expect_counted_ratio(SweepRunner& runner, const nlohmann::json& point, double low,
                          double high) {
  const Point p = runner.measure_point(attention_family(), point, "test", 0);
  const std::string name = point.dump();
  ASSERT_EQ(p.status, PointStatus::ok) << name << ": " << p.reason;
  EXPECT_EQ(p.details["check"]["status"], "passed") << name << p.details["check"];
  ASSERT_TRUE(p.timing.stream && p.timing.graph) << name << p.details["timing"];
  EXPECT_TRUE(p.timing.graph_unavailable.empty()) << name << ": " << p.timing.graph_unavailable;
  const AttentionSpec spec = spec_of(point);
  const char* counter = spec.precision == Precision::bf16  ? "tensor_bf16_flops"
                        : spec.precision == Precision::fp8 ? "tensor_fp8_flops"
                                                           : "tensor_fp16_flops";
  ASSERT_TRUE(p.counters.count(counter)) << name << nlohmann::json(p.counters).dump();
  const double ratio = p.counters.at(counter) / attention_flops(spec);
  std::printf(
      "RATIO %-100s %s: counted %.6g, analytic %.6g (x%.4f, expected x%.4f .. x%.4f), T_stream "
      "%.1f us, T_graph %.1f us, kernels %zu\n",
      name.c_str(), p.algorithm.c_str(), p.counters.at(counter), attention_flops(spec), ratio, low,
      high, *p.timing.stream_s() * 1e6, *p.timing.graph_s() * 1e6, p.kernels.size());
  EXPECT_GE(ratio, low * (1 - 1e-3)) << name;
  EXPECT_LE(ratio, high * (1 + 1e-3)) << name;
}

TEST(GpuAttention, TheRunnerCountsTensorFlopsAndTakesAllThreeTimes) {
  TR_REQUIRE_GPU();
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  struct Case {
    nlohmann::json point;
    double ratio;      // counted / analytic, to 0.1%
    double upper = 0;  // > 0: counted / analytic anywhere in [ratio, upper]
  };
  const std::vector<Case> cases = {
      {{{"batch", 8}, {"heads", 12}, {"seq_q", 512}, {"head_dim", 64}, {"precision", "fp16"}}, 1.0},
      {llama(2048, "none", "fwd", "bf16"), 1.0},
      {llama(2048, "causal", "fwd", "bf16"), tiled_causal_ratio(2048, false)},
      {llama(4096, "causal", "fwd", "bf16"), tiled_causal_ratio(4096, false)},
      {{{"batch", 8},
        {"heads", 12},
        {"seq_q", 512},
        {"head_dim", 64},
        {"direction", "bwd"},
        {"precision", "fp16"}},
       1.0},
      {llama(1024, "causal", "bwd", "bf16"), tiled_causal_ratio(1024, true)},
      {llama(2048, "causal", "bwd", "bf16"), tiled_causal_ratio(2048, true)},
      {{{"batch", 8},
        {"heads", 32},
        {"seq_q", 1},
        {"seq_kv", 4096},
        {"head_dim", 128},
        {"mask", "causal"},
        {"precision", "bf16"}},
       64.0},
      // The padding mask: the analytic count on the real lengths, the engines'
      // work on whole 128-row tiles at most (1024 x 1024 for 1000 x 1000).
      {llama(1000, "none", "bwd", "bf16"), 1.0, 1024.0 * 1024.0 / (1000.0 * 1000.0)},
  };
  for (const Case& c : cases)
    expect_counted_ratio(runner, c.point, c.ratio, c.upper > 0 ? c.upper : c.ratio);
}

// fp8 forward through the runner (with counters): exact without a mask; causal
// on the fp8 engine's 64 x 256 tiles.
TEST(GpuAttention, Fp8ForwardUnderTheRunnerCountsItsFlopsAndChecks) {
  TR_REQUIRE_GPU();
  TR_REQUIRE_FP8_ATTENTION();
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  expect_counted_ratio(runner, llama(2048, "none", "fwd", "fp8"), 1.0, 1.0);
  for (std::int64_t seq : {2048, 4096}) {
    const double tiled = tiled_causal_ratio(seq, false, 256);
    expect_counted_ratio(runner, llama(seq, "causal", "fwd", "fp8"), tiled, tiled);
  }
}

// The fp8 forward at LLaMA prefill shapes (H 32, D 128, S 2048 and 4096, with
// and without the causal mask), 24 checks over 12 fresh operators: every call
// right. cuDNN 9.14's engine failed 30-40% of such checks at random on an H100
// (wrong rows of O; design.md), so one check per shape would let it pass.
TEST(GpuAttention, Fp8ForwardIsRightAtEveryCall) {
  TR_REQUIRE_GPU();
  TR_REQUIRE_FP8_ATTENTION();
  const Stream stream;
  int calls = 0, wrong = 0;
  for (int round = 0; round < 3; ++round)
    for (std::int64_t seq : {2048, 4096})
      for (const char* mask : {"none", "causal"}) {
        const nlohmann::json point = llama(seq, mask, "fwd", "fp8");
        Attention op(spec_of(point), shared_handles());
        const Outcome outcome = guarded([&] { op.prepare(stream.get()); });
        ASSERT_EQ(outcome.status, PointStatus::ok) << point.dump() << ": " << outcome.reason;
        for (int call = 0; call < 2; ++call) {
          const CheckResult result = op.check();
          ++calls;
          if (!result.passed()) ++wrong;
          EXPECT_TRUE(result.passed())
              << point.dump() << " round " << round << " call " << call << ": " << result.detail;
        }
      }
  std::printf("FP8REPEAT %d of %d checked calls wrong (cuDNN %s)\n", wrong, calls,
              cudnn_version_text(cudnnGetVersion()).c_str());
}

TEST(GpuAttention, TheCliSweepsIntoTheStore) {
  TR_REQUIRE_GPU();
  const test::TempDir dir;
  const std::string db = dir.file("a.db");
  const test::ToolResult r = test::run_tool({"sweep", "attention", "--batch", "4", "--heads", "8",
                                             "--seq-q", "256,512", "--head-dim", "64", "--mask",
                                             "none,causal", "--precision", "bf16", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ResultsStore store = ResultsStore::open(db, ResultsStore::Access::read_only);
  const std::vector<RunRecord> runs = store.load_all();
  ASSERT_EQ(runs.size(), 1u) << r.err;
  ASSERT_EQ(runs[0].points.size(), 4u) << r.err;
  for (const Point& p : runs[0].points) {
    EXPECT_EQ(p.status, PointStatus::ok) << p.reason;
    EXPECT_EQ(p.op, "attention_fwd");
    EXPECT_EQ(p.precision, "bf16");
    EXPECT_EQ(p.details["check"]["status"], "passed") << p.details["check"];
    EXPECT_EQ(p.algorithm.rfind("eng", 0), 0u) << p.algorithm;
  }
}

// Last in the file (a crash here loses no other result; the device check runs it
// apart): the fp8 backward (all e4m3, cudnn-frontend's sample configuration) at
// Hopper's one head dimension, against the reference on the dequantised inputs,
// its calibrated scales and amax, and its counted Tensor-Core fp8 FLOPs.
TEST(GpuAttention, Fp8BackwardMatchesTheReferenceAndCountsItsFlops) {
  TR_REQUIRE_GPU();
  TR_REQUIRE_FP8_ATTENTION();
  const Stream stream;
  for (const nlohmann::json& point :
       {nlohmann::json{{"batch", 2}, {"heads", 4}, {"seq_q", 512}, {"mask", "none"}},
        nlohmann::json{{"batch", 2}, {"heads", 4}, {"seq_q", 512}, {"mask", "causal"}},
        nlohmann::json{
            {"batch", 1}, {"heads", 8}, {"kv_heads", 2}, {"seq_q", 256}, {"mask", "causal"}}}) {
    nlohmann::json full = point;
    full.update({{"head_dim", 128}, {"direction", "bwd"}, {"precision", "fp8"}});
    const auto op = prepare_and_check(full, stream);
    if (!op) continue;
    const nlohmann::json fp8 = op->details()["fp8"];
    std::printf("FP8BWD %s %s\n", full.dump().c_str(), fp8.dump().c_str());
    // Each calibrated scale puts its tensor's amax into (128, 256].
    for (const auto& [scale, amax] :
         {std::pair{"scale_dp", "amax_dp"}, std::pair{"scale_dq", "amax_dq"},
          std::pair{"scale_dk", "amax_dk"}, std::pair{"scale_dv", "amax_dv"}}) {
      const double scaled = fp8[scale].get<double>() * fp8[amax].get<double>();
      EXPECT_GT(scaled, 128.0 * (1 - 1e-6)) << scale << " " << fp8;
      EXPECT_LE(scaled, 256.0 * (1 + 1e-6)) << scale << " " << fp8;
    }
  }
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  expect_counted_ratio(runner, llama(1024, "none", "bwd", "fp8"), 1.0, 1.0);
  const double tiled = tiled_causal_ratio(1024, true);
  expect_counted_ratio(runner, llama(1024, "causal", "bwd", "fp8"), tiled, tiled);
}

}  // namespace
}  // namespace timeroof
