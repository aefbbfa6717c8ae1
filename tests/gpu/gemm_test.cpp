// GPU tier, cuBLASLt GEMM: every precision (fp8 on sm_89+) and transpose passes
// its check against the device reference in double (int8 exactly), small and odd
// shapes, strided batches and every epilogue; large shapes are checked on
// sampled rows and columns; a fixed heuristic index is honoured and recorded and
// one past the list is `unsupported` with the reason; run() captures into a CUDA
// graph and replays bitwise; and through the sweep runner, the Tensor-Core
// counters equal 2 m n k batch exactly on tile-aligned shapes (no padding) with
// T_stream and T_graph measured.
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
#include "sweeps/device_compare.hpp"
#include "sweeps/family.hpp"
#include "sweeps/gemm.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/runner.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/gpu/operator_capture.hpp"
#include "tests/support/gemm_shape.hpp"

namespace timeroof {
namespace {

std::shared_ptr<LibraryHandles> shared_handles() {
  static std::shared_ptr<LibraryHandles> handles = std::make_shared<LibraryHandles>();
  return handles;
}

bool has_fp8() {
  const GpuInfo gpu = query_gpu(0);
  return gpu.cc_major * 10 + gpu.cc_minor >= 89;
}

using test::gemm_shape;

std::string label(const GemmSpec& spec) {
  return std::string(to_string(spec.inputs)) + " " + (spec.trans_a ? "T" : "N") +
         (spec.trans_b ? "T" : "N") + " " + std::to_string(spec.m) + "x" + std::to_string(spec.n) +
         "x" + std::to_string(spec.k) + " b" + std::to_string(spec.batch) + " " +
         to_string(spec.epilogue) + (spec.algo ? " algo " + std::to_string(*spec.algo) : "");
}

// Prepares and checks one spec; the check must pass. Returns the operator (null on failure).
std::unique_ptr<Gemm> prepare_and_check(const GemmSpec& spec, const Stream& stream) {
  auto op = std::make_unique<Gemm>(spec, shared_handles());
  const Outcome outcome = guarded([&] { op->prepare(stream.get()); });
  EXPECT_EQ(outcome.status, PointStatus::ok) << label(spec) << ": " << outcome.reason;
  if (outcome.status != PointStatus::ok) return nullptr;
  const CheckResult result = op->check();
  std::printf("%-36s %s\n", label(spec).c_str(), result.detail.c_str());
  EXPECT_TRUE(result.passed()) << label(spec) << ": " << result.detail;
  if (spec.inputs == GemmInputs::int8) EXPECT_EQ(result.relative_error, 0) << label(spec);
  EXPECT_EQ(op->algorithm().rfind("cublasLt algo=", 0), 0u) << op->algorithm();
  return op;
}

std::vector<GemmInputs> testable_inputs() {
  std::vector<GemmInputs> inputs = {GemmInputs::fp32, GemmInputs::tf32, GemmInputs::fp16,
                                    GemmInputs::bf16, GemmInputs::int8};
  if (has_fp8()) {
    inputs.push_back(GemmInputs::fp8_e4m3);
    inputs.push_back(GemmInputs::fp8_e5m2);
  } else {
    // Below Ada, fp8 points are refused in one line naming the capability.
    Gemm fp8(gemm_shape(64, 64, 64, GemmInputs::fp8_e4m3), shared_handles());
    const Stream stream;
    const Outcome outcome = guarded([&] { fp8.prepare(stream.get()); });
    EXPECT_EQ(outcome.status, PointStatus::unsupported);
    EXPECT_NE(outcome.reason.find("compute capability 8.9+"), std::string::npos) << outcome.reason;
    std::printf("fp8 refused below compute capability 8.9: %s\n", outcome.reason.c_str());
  }
  return inputs;
}

bool tn_only(GemmInputs inputs) {
  return inputs == GemmInputs::int8 || inputs == GemmInputs::fp8_e4m3 ||
         inputs == GemmInputs::fp8_e5m2;
}

TEST(GpuGemm, EveryPrecisionAndTransposeMatchesTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (GemmInputs inputs : testable_inputs()) {
    // Leading dimensions fp8 and int8 accept (multiples of 16), one batch of three.
    prepare_and_check(gemm_shape(64, 48, 96, inputs), stream);
    prepare_and_check(gemm_shape(128, 48, 64, inputs, 3), stream);
    if (tn_only(inputs)) continue;
    for (bool trans_a : {false, true})
      for (bool trans_b : {false, true}) {
        GemmSpec odd = gemm_shape(33, 17, 9, inputs, 2);
        odd.trans_a = trans_a;
        odd.trans_b = trans_b;
        prepare_and_check(odd, stream);
      }
  }
}

TEST(GpuGemm, LargeShapesAreCheckedOnSampledOutputs) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (GemmInputs inputs : {GemmInputs::fp16, GemmInputs::bf16, GemmInputs::tf32}) {
    auto op = prepare_and_check(gemm_shape(2048, 1024, 4096, inputs), stream);
    if (op) EXPECT_NE(op->check().method.find("128 rows x 128 columns"), std::string::npos);
  }
}

TEST(GpuGemm, EveryEpilogueMatchesTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  std::vector<GemmInputs> inputs = {GemmInputs::fp16, GemmInputs::bf16, GemmInputs::fp32,
                                    GemmInputs::tf32};
  if (has_fp8()) inputs.push_back(GemmInputs::fp8_e4m3);
  for (GemmInputs type : inputs)
    for (GemmEpilogue epilogue : kAllGemmEpilogues)
      prepare_and_check(gemm_shape(256, 192, 128, type, type == GemmInputs::fp16 ? 2 : 1, epilogue),
                        stream);
}

TEST(GpuGemm, AFixedAlgorithmIsHonouredAndRecorded) {
  TR_REQUIRE_GPU();
  const Stream stream;
  const auto heuristic = prepare_and_check(gemm_shape(1024, 1024, 1024, GemmInputs::fp16), stream);
  ASSERT_TRUE(heuristic);
  const nlohmann::json first = heuristic->details();
  EXPECT_EQ(first["heuristic_index"], 0);
  EXPECT_EQ(first["algorithm_selection"], "heuristic");
  const int listed = first["heuristic_results"].get<int>();
  std::printf("heuristic lists %d algorithms; #0 %s\n", listed, heuristic->algorithm().c_str());
  ASSERT_GE(listed, 1);
  if (listed >= 2) {
    GemmSpec second = gemm_shape(1024, 1024, 1024, GemmInputs::fp16);
    second.algo = 1;
    const auto fixed = prepare_and_check(second, stream);
    ASSERT_TRUE(fixed);
    EXPECT_EQ(fixed->details()["heuristic_index"], 1);
    EXPECT_EQ(fixed->details()["algorithm_selection"], "fixed");
    EXPECT_EQ(fixed->details()["heuristic_results"], listed);
    // Heuristic entries are distinct configurations: the recorded one differs.
    EXPECT_NE(fixed->algorithm(), heuristic->algorithm());
    std::printf("#1 %s\n", fixed->algorithm().c_str());
  }
  if (listed < kGemmHeuristicResults) {
    GemmSpec past = gemm_shape(1024, 1024, 1024, GemmInputs::fp16);
    past.algo = listed;
    Gemm op(past, shared_handles());
    const Outcome outcome = guarded([&] { op.prepare(stream.get()); });
    EXPECT_EQ(outcome.status, PointStatus::unsupported);
    EXPECT_NE(outcome.reason.find("lists " + std::to_string(listed) + " algorithms"),
              std::string::npos)
        << outcome.reason;
  }
}

TEST(GpuGemm, RunCapturesIntoACudaGraphAndReplaysBitwise) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (const GemmSpec& spec :
       {gemm_shape(512, 256, 1024, GemmInputs::bf16),
        gemm_shape(256, 256, 256, GemmInputs::int8, 4),
        gemm_shape(384, 128, 256, GemmInputs::fp16, 1, GemmEpilogue::bias_gelu)}) {
    Gemm op(spec, shared_handles());
    op.prepare(stream.get());
    const DeviceTensor output = op.outputs().at(0);
    std::vector<std::byte> eager(output.bytes), replayed(output.bytes);
    op.run(stream.get());
    TR_CUDA_CHECK(cudaMemcpyAsync(eager.data(), output.data, output.bytes, cudaMemcpyDeviceToHost,
                                  stream.get()));
    TR_CUDA_CHECK(cudaMemsetAsync(output.data, 0x7f, output.bytes, stream.get()));
    const test::CapturedRun capture = test::capture_run(op, stream.get());
    ASSERT_TRUE(test::captured_ok(capture)) << label(spec);
    test::replay(capture, stream.get(), 3);
    TR_CUDA_CHECK(cudaMemcpyAsync(replayed.data(), output.data, output.bytes,
                                  cudaMemcpyDeviceToHost, stream.get()));
    TR_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    // A split-k reduction (CUBLASLT_REDUCTION_SCHEME_*, not NONE) may sum in
    // another order from call to call: then the replay must still pass the check.
    const bool split = op.details()["algo_config"]["reduction"] != 0;
    std::printf("%-36s %s\n", label(spec).c_str(), op.algorithm().c_str());
    if (split) {
      const DataType type = gemm_types(spec.inputs).d;
      DeviceBuffer<std::byte> eager_device(output.bytes);
      TR_CUDA_CHECK(
          cudaMemcpy(eager_device.get(), eager.data(), output.bytes, cudaMemcpyHostToDevice));
      const DeviceDifference difference = compare_on_device(
          output.data, eager_device.get(), output.bytes / element_bytes(type), type, stream.get());
      EXPECT_LE(difference.relative_error(), relative_tolerance(op.precision()))
          << label(spec) << " " << op.algorithm();
    } else {
      EXPECT_TRUE(replayed == eager) << label(spec) << " " << op.algorithm();
    }
  }
}

// The runner on one point per Tensor-Core type: sizes that are multiples of every
// cuBLASLt tile (no padding), so the counted Tensor-Core work is exactly 2 m n k batch.
TEST(GpuGemm, TheRunnerCountsExactTensorFlopsAndTakesAllThreeTimes) {
  TR_REQUIRE_GPU();
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  const OperatorFamily family = gemm_family();
  struct Case {
    nlohmann::json point;
    const char* counter;  // the Tensor-Core quantity of its precision
  };
  std::vector<Case> cases = {
      {{{"m", 1024}, {"n", 1024}, {"k", 1024}, {"precision", "fp16"}}, "tensor_fp16_flops"},
      {{{"m", 512}, {"n", 512}, {"k", 256}, {"batch", 4}, {"precision", "bf16"}},
       "tensor_bf16_flops"},
      {{{"m", 1024}, {"n", 1024}, {"k", 1024}, {"precision", "tf32"}}, "tensor_tf32_flops"},
      {{{"m", 2048}, {"n", 2048}, {"k", 2048}, {"precision", "int8"}}, "tensor_int8_ops"},
      {{{"m", 1024}, {"n", 1024}, {"k", 1024}, {"precision", "fp16"}, {"epilogue", "bias_relu"}},
       "tensor_fp16_flops"},
      {{{"m", 1024}, {"n", 1024}, {"k", 1024}, {"precision", "fp32"}}, "fp32_flops"},
  };
  if (has_fp8()) {
    cases.push_back(
        {{{"m", 2048}, {"n", 2048}, {"k", 2048}, {"precision", "fp8_e4m3"}}, "tensor_fp8_flops"});
    cases.push_back(
        {{{"m", 2048}, {"n", 2048}, {"k", 2048}, {"precision", "fp8_e5m2"}}, "tensor_fp8_flops"});
  }
  for (const Case& c : cases) {
    const Point p = runner.measure_point(family, c.point, "test", 0);
    const std::string name = c.point.dump();
    ASSERT_EQ(p.status, PointStatus::ok) << name << ": " << p.reason;
    EXPECT_EQ(p.details["check"]["status"], "passed") << name << p.details["check"];
    ASSERT_TRUE(p.timing.stream && p.timing.graph) << name << p.details["timing"];
    EXPECT_GT(*p.timing.stream_s(), 0) << name;
    EXPECT_TRUE(p.timing.graph_unavailable.empty()) << name << ": " << p.timing.graph_unavailable;
    EXPECT_GT(*p.timing.graph_s(), 0) << name;
    const double product = gemm_product_flops(gemm_spec_from_params(c.point));
    ASSERT_TRUE(p.counters.count(c.counter)) << name << nlohmann::json(p.counters).dump();
    const double counted = p.counters.at(c.counter);
    std::printf(
        "%-80s %s %s: counted %.6g, 2mnk*batch %.6g (x%.4f), T_stream %.1f us, T_graph "
        "%.1f us\n",
        name.c_str(), p.algorithm.c_str(), c.counter, counted, product, counted / product,
        *p.timing.stream_s() * 1e6, *p.timing.graph_s() * 1e6);
    if (std::string(c.counter) == "fp32_flops") {
      // FFMA counts 2; alpha, beta and the epilogue add a few per output at most.
      EXPECT_GE(counted, product) << name;
      EXPECT_LE(counted, product * 1.01) << name;
      EXPECT_FALSE(p.counters.count("tensor_tf32_flops")) << name;
    } else {
      EXPECT_DOUBLE_EQ(counted, product) << name;
    }
  }
}

}  // namespace
}  // namespace timeroof
