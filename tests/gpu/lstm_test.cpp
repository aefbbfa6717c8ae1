// GPU tier, cuDNN LSTM: every pass x precision matches the double reference
// within its precision's tolerance (or, for a configuration cuDNN cannot run, is
// `unsupported` with cuDNN's reason); bidirectional and two-layer networks;
// run() is idempotent (bitwise) in every pass, the backward ones included; the
// math type asked of cuDNN (fp32 = CUDNN_FMA_MATH); the fp32-run check of large
// shapes; a huge shape is `out_of_memory` fast; the paper's baseline timed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "sweeps/family.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/lstm.hpp"
#include "sweeps/operator.hpp"
#include "tests/gpu/gpu_test_support.hpp"

namespace timeroof {
namespace {

std::shared_ptr<LibraryHandles> shared_handle() {
  static std::shared_ptr<LibraryHandles> handle = std::make_shared<LibraryHandles>();
  return handle;
}

constexpr LstmPass kPasses[] = {LstmPass::inference, LstmPass::training_forward,
                                LstmPass::backward_data, LstmPass::backward_weights};
constexpr Precision kPrecisions[] = {Precision::fp32, Precision::tf32, Precision::fp16,
                                     Precision::bf16};

LstmSpec small(LstmPass pass, Precision precision) {
  LstmSpec spec;
  spec.batch = 4;
  spec.seq_length = 5;
  spec.input_size = 24;
  spec.hidden_size = 16;
  spec.pass = pass;
  spec.precision = precision;
  return spec;
}

std::string label(const LstmSpec& spec) {
  return std::string(to_string(spec.pass)) + " " + to_string(spec.precision) + " " +
         to_string(resolved_math(spec)) + " B" + std::to_string(spec.batch) + " T" +
         std::to_string(spec.seq_length) + " I" + std::to_string(spec.input_size) + " H" +
         std::to_string(spec.hidden_size) + " L" + std::to_string(spec.layers) +
         (spec.bidirectional ? " bi" : "") + " " + to_string(spec.algorithm);
}

// Prepares one spec. bf16 may be unsupported by the cuDNN at hand: then the
// outcome must carry cuDNN's status, and null is returned. Anything else must
// prepare and pass check(method).
std::unique_ptr<Lstm> prepare_and_check(const LstmSpec& spec, const Stream& stream,
                                        LstmCheckMethod method = LstmCheckMethod::cpu_reference) {
  auto op = std::make_unique<Lstm>(spec, shared_handle());
  const Outcome outcome = guarded([&] { op->prepare(stream.get()); });
  if (spec.precision == Precision::bf16 && outcome.status == PointStatus::unsupported) {
    std::printf("%-58s unsupported: %s\n", label(spec).c_str(), outcome.reason.c_str());
    EXPECT_NE(outcome.reason.find("CUDNN_STATUS_"), std::string::npos) << outcome.reason;
    return nullptr;
  }
  EXPECT_EQ(outcome.status, PointStatus::ok) << label(spec) << ": " << outcome.reason;
  if (outcome.status != PointStatus::ok) return nullptr;
  const CheckResult result = op->check(method);
  std::printf("%-58s %-20s %s\n", label(spec).c_str(),
              op->details()["cudnn_math_type"].get<std::string>().c_str(), result.detail.c_str());
  EXPECT_TRUE(result.passed()) << label(spec) << ": " << result.detail;
  EXPECT_EQ(op->algorithm(), "CUDNN_RNN_ALGO_STANDARD");
  return op;
}

bool is_fp32_backward(LstmPass pass, Precision precision) {
  return precision == Precision::fp32 &&
         (pass == LstmPass::backward_data || pass == LstmPass::backward_weights);
}

TEST(GpuLstm, EveryPassAndPrecisionMatchesTheReference) {
  TR_REQUIRE_GPU();
  const GpuInfo gpu = query_gpu(0);
  std::printf("GPU %s, cuDNN %zu at run time (built with %d)\n", gpu.name.c_str(),
              cudnnGetVersion(), CUDNN_VERSION);
  const Stream stream;
  for (LstmPass pass : kPasses)
    for (Precision precision : kPrecisions) {
      const auto op = prepare_and_check(small(pass, precision), stream);
      if (op && is_fp32_backward(pass, precision))
        std::printf("  details: %s\n", op->details().dump().c_str());
    }
}

TEST(GpuLstm, BidirectionalAndTwoLayersMatchTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (LstmPass pass : kPasses)
    for (Precision precision : {Precision::fp32, Precision::fp16}) {
      LstmSpec spec = small(pass, precision);
      spec.batch = 3;
      spec.seq_length = 4;
      spec.input_size = 10;
      spec.hidden_size = 8;
      spec.layers = 2;
      spec.bidirectional = true;
      prepare_and_check(spec, stream);
      spec.bidirectional = false;
      prepare_and_check(spec, stream);
      spec.layers = 1;
      spec.bidirectional = true;
      prepare_and_check(spec, stream);
    }
}

TEST(GpuLstm, RunIsIdempotentInEveryPass) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (LstmPass pass : kPasses)
    for (Precision precision : {Precision::fp32, Precision::fp16}) {
      LstmSpec spec = small(pass, precision);
      spec.layers = 2;
      Lstm op(spec, shared_handle());
      op.prepare(stream.get());
      ASSERT_TRUE(op.details()["deterministic"].get<bool>());
      op.run(stream.get());
      const std::vector<std::byte> first = op.download_outputs_bytes();
      op.run(stream.get());
      op.run(stream.get());
      const std::vector<std::byte> third = op.download_outputs_bytes();
      EXPECT_FALSE(first.empty());
      EXPECT_TRUE(first == third) << label(spec) << ": outputs differ between runs";
      std::printf("%-58s %zu output bytes bitwise equal across runs: %s%s\n", label(spec).c_str(),
                  first.size(), first == third ? "yes" : "NO",
                  pass == LstmPass::backward_weights
                      ? (" (" + op.details()["wgrad_mode"].get<std::string>() + ")").c_str()
                      : "");
      // The inputs (and the reserve space the backward passes read) were not disturbed.
      const CheckResult after = op.check();
      EXPECT_TRUE(after.passed()) << label(spec) << " after reruns: " << after.detail;
    }
}

// fp32 asks for CUDNN_FMA_MATH (no TF32) and stays within 1e-5; tf32 asks for
// CUDNN_DEFAULT_MATH; fp16 for CUDNN_TENSOR_OP_MATH. Shapes where Tensor Cores pay.
TEST(GpuLstm, MathTypesPerPrecision) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (LstmPass pass : {LstmPass::inference, LstmPass::backward_data, LstmPass::backward_weights}) {
    LstmSpec spec = small(pass, Precision::fp32);
    spec.batch = 64;
    spec.seq_length = 8;
    spec.input_size = 64;
    spec.hidden_size = 64;
    const auto fp32 = prepare_and_check(spec, stream);
    spec.precision = Precision::tf32;
    const auto tf32 = prepare_and_check(spec, stream);
    spec.precision = Precision::fp16;
    const auto fp16 = prepare_and_check(spec, stream);
    ASSERT_TRUE(fp32 && tf32 && fp16);
    EXPECT_EQ(fp32->details()["cudnn_math_type"], "CUDNN_FMA_MATH");
    EXPECT_EQ(tf32->details()["cudnn_math_type"], "CUDNN_DEFAULT_MATH");
    EXPECT_EQ(fp16->details()["cudnn_math_type"], "CUDNN_TENSOR_OP_MATH");
    std::printf("  %s: fp32 error %.3g, tf32 error %.3g (%s), fp16 error %.3g, math precision %s\n",
                to_string(pass), fp32->check().relative_error, tf32->check().relative_error,
                tf32->check().relative_error > 1e-5 ? "TF32 visible" : "no TF32 visible",
                fp16->check().relative_error,
                fp16->details()["cudnn_math_precision"].get<std::string>().c_str());
    EXPECT_LT(fp32->check().relative_error, 1e-5);
  }
}

// Above the CPU limit the reference is the same pass in fp32 / fma_only on the
// same stored inputs; fp32 / fma_only itself is then skipped, with the reason.
TEST(GpuLstm, LargeShapesCheckAgainstAnFp32Run) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (LstmPass pass : kPasses) {
    LstmSpec spec = small(pass, Precision::fp16);
    spec.batch = 256;
    spec.seq_length = 16;
    spec.input_size = 128;
    spec.hidden_size = 128;
    prepare_and_check(spec, stream, LstmCheckMethod::fp32_reference);
    if (pass == LstmPass::inference || pass == LstmPass::training_forward) {
      spec.precision = Precision::tf32;
      prepare_and_check(spec, stream, LstmCheckMethod::fp32_reference);
    }
  }
  LstmSpec big = small(LstmPass::inference, Precision::fp16);
  big.batch = 1024;
  big.seq_length = 128;
  big.input_size = 128;
  big.hidden_size = 128;
  ASSERT_GT(lstm_gemm_flops(big), kLstmCpuReferenceMaxFlops);
  const auto op = prepare_and_check(big, stream, LstmCheckMethod::automatic);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->check().method, "agreement with cuDNN fp32 / fma_only");
  big.precision = Precision::fp32;
  Lstm fp32(big, shared_handle());
  fp32.prepare(stream.get());
  const CheckResult skipped = fp32.check();
  std::printf("%-58s %s\n", label(big).c_str(), skipped.detail.c_str());
  EXPECT_EQ(skipped.status, CheckStatus::skipped);
}

// Configurations cuDNN cannot run are `unsupported` with its status, never a crash.
TEST(GpuLstm, UnsupportedConfigurationsCarryCudnnsReason) {
  TR_REQUIRE_GPU();
  const Stream stream;
  std::vector<LstmSpec> candidates;
  candidates.push_back(small(LstmPass::inference, Precision::bf16));
  candidates.push_back(small(LstmPass::backward_weights, Precision::bf16));
  LstmSpec small_h = small(LstmPass::inference, Precision::fp32);
  small_h.algorithm = LstmAlgorithm::persist_static_small_h;
  small_h.hidden_size = 1024;
  candidates.push_back(small_h);
  LstmSpec persistent = small(LstmPass::backward_data, Precision::fp32);
  persistent.algorithm = LstmAlgorithm::persist_static;
  persistent.hidden_size = 4096;
  candidates.push_back(persistent);
  LstmSpec persistent_fp16 = small(LstmPass::inference, Precision::fp16);
  persistent_fp16.algorithm = LstmAlgorithm::persist_static;
  candidates.push_back(persistent_fp16);
  int unsupported = 0;
  for (const LstmSpec& spec : candidates) {
    Lstm op(spec, shared_handle());
    const Outcome outcome = guarded([&] {
      op.prepare(stream.get());
      op.run(stream.get());
      stream.synchronize();
    });
    std::printf("%-58s -> %s%s%s\n", label(spec).c_str(), to_string(outcome.status),
                outcome.reason.empty() ? "" : ": ", outcome.reason.c_str());
    EXPECT_TRUE(outcome.status == PointStatus::ok || outcome.status == PointStatus::unsupported)
        << label(spec) << ": " << outcome.reason;
    if (outcome.status == PointStatus::unsupported) {
      ++unsupported;
      EXPECT_NE(outcome.reason.find("CUDNN_STATUS_"), std::string::npos) << outcome.reason;
      EXPECT_EQ(op.algorithm(), "");
    } else {
      const CheckResult result = op.check();
      std::printf("%-58s    check: %s\n", "", result.detail.c_str());
      EXPECT_NE(result.status, CheckStatus::failed) << label(spec) << ": " << result.detail;
    }
  }
  EXPECT_GT(unsupported, 0) << "no candidate configuration was refused by cuDNN";
  // The device still works afterwards.
  prepare_and_check(small(LstmPass::inference, Precision::fp16), stream);
}

TEST(GpuLstm, HugeShapeIsOutOfMemoryFast) {
  TR_REQUIRE_GPU();
  const Stream stream;
  LstmSpec huge = small(LstmPass::backward_data, Precision::fp16);
  huge.batch = 1 << 20;
  huge.seq_length = 1 << 12;
  huge.input_size = 1 << 10;  // x alone: 2^42 elements, 8 TiB
  Lstm op(huge, shared_handle());
  const auto start = std::chrono::steady_clock::now();
  const Outcome outcome = guarded([&] { op.prepare(stream.get()); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("huge -> %s in %.3f s: %s\n", to_string(outcome.status), seconds,
              outcome.reason.c_str());
  EXPECT_EQ(outcome.status, PointStatus::out_of_memory) << outcome.reason;
  EXPECT_LT(seconds, 2.0);
  prepare_and_check(small(LstmPass::inference, Precision::fp32), stream);
}

// The paper's baseline in every pass, fp32 and fp16: checked, then a short timed
// loop (CUDA events) to show the call is cheap and repeatable.
TEST(GpuLstm, PapersBaselineEveryPass) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (Precision precision : {Precision::fp32, Precision::fp16})
    for (LstmPass pass : kPasses) {
      LstmSpec spec;  // batch 16, 16 steps, 32 features, hidden 16
      spec.pass = pass;
      spec.precision = precision;
      const auto op = prepare_and_check(spec, stream, LstmCheckMethod::automatic);
      ASSERT_TRUE(op);
      constexpr int kRepeats = 50;
      for (int i = 0; i < 5; ++i) op->run(stream.get());
      const Event start, stop;
      start.record(stream.get());
      for (int i = 0; i < kRepeats; ++i) op->run(stream.get());
      stop.record(stream.get());
      stop.synchronize();
      const double seconds = stop.seconds_since(start) / kRepeats;
      std::printf(
          "  baseline %-16s %-5s %8.1f us/call  %7.2f GFLOP/s  %6.2f GB/s  ws %zu B, "
          "reserve %zu B\n",
          to_string(pass), to_string(precision), seconds * 1e6, op->flops() / seconds / 1e9,
          op->min_bytes() / seconds / 1e9, op->details()["workspace_bytes"].get<std::size_t>(),
          op->details()["reserve_bytes"].get<std::size_t>());
    }
}

// Every point of the family's default sweep prepares, passes its check, and runs.
TEST(GpuLstm, DefaultSweepPointsAllPrepareCheckAndRun) {
  TR_REQUIRE_GPU();
  const Stream stream;
  const OperatorFamily family = lstm_family();
  int ok = 0, checked = 0;
  double total_seconds = 0;
  for (const nlohmann::json& point : family.default_points()) {
    const std::unique_ptr<Operator> op = make_operator(family, point, shared_handle());
    CheckResult result;
    double seconds = 0;
    const Outcome outcome = guarded([&] {
      op->prepare(stream.get());
      result = op->check();
      const Event start, stop;
      start.record(stream.get());
      for (int i = 0; i < 10; ++i) op->run(stream.get());
      stop.record(stream.get());
      stop.synchronize();
      seconds = stop.seconds_since(start) / 10;
    });
    EXPECT_EQ(outcome.status, PointStatus::ok) << point.dump() << ": " << outcome.reason;
    EXPECT_TRUE(result.passed()) << point.dump() << ": " << result.detail;
    ok += outcome.status == PointStatus::ok;
    checked += result.passed();
    total_seconds += seconds;
    std::printf("%-22s %-5s B%-4d T%-3d I%-3d H%-3d %8.1f us %8.3g GFLOP/s  err %.2g/%.2g\n",
                op->op().c_str(), to_string(op->precision()), point["batch"].get<int>(),
                point["seq_length"].get<int>(), point["input_size"].get<int>(),
                point["hidden_size"].get<int>(), seconds * 1e6, op->flops() / seconds / 1e9,
                result.relative_error, result.tolerance);
  }
  std::printf("default sweep: %d points ok, %d checks passed, %.1f ms of run() per 1 call each\n",
              ok, checked, total_seconds * 1e3);
}

}  // namespace
}  // namespace timeroof
