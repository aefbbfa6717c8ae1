// GPU tier, the pointwise, softmax and pool families: every op, mode and
// precision of the own kernels passes its check against the double reference
// (odd sizes with scalar tails, warp- and block-per-row softmax, single-channel
// pooling), and so does the cuDNN path wherever cuDNN has an engine: where it
// has none the point is `unsupported` with cuDNN's reason (printed: this test is
// the probe of what cuDNN 9.14's graph API runs). Through the sweep runner the
// fp32 FLOP counters equal the own kernels' FADD / FMUL / FFMA counts exactly,
// and the large points print their DRAM bytes and achieved bandwidth.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "counters/counter_access.hpp"
#include "gpu/check.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "sweeps/family.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/memory_bound_ops.hpp"
#include "sweeps/runner.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/gpu/operator_capture.hpp"

namespace timeroof {
namespace {

using nlohmann::json;

std::shared_ptr<LibraryHandles> shared_handles() {
  static std::shared_ptr<LibraryHandles> handles = std::make_shared<LibraryHandles>();
  return handles;
}

// Prepares and checks one point of `family`; the own path must pass, the cuDNN
// path must pass or be `unsupported` with a reason. Returns whether it ran.
bool prepare_and_check(const char* family, json point, const Stream& stream) {
  const std::string name = std::string(family) + " " + point.dump();
  std::unique_ptr<Operator> op = make_operator(find_family(family), point, shared_handles());
  const Outcome outcome = guarded([&] { op->prepare(stream.get()); });
  const bool cudnn = point.value("implementation", "own") == "cudnn";
  if (outcome.status != PointStatus::ok) {
    std::printf("%-110s %s: %s\n", name.c_str(), to_string(outcome.status), outcome.reason.c_str());
    EXPECT_TRUE(cudnn) << name << ": " << outcome.reason;
    EXPECT_EQ(outcome.status, PointStatus::unsupported) << name << ": " << outcome.reason;
    EXPECT_NE(outcome.reason.find("cuDNN"), std::string::npos) << outcome.reason;
    return false;
  }
  const CheckResult result = op->check();
  std::printf("%-110s %s\n", name.c_str(), result.detail.c_str());
  EXPECT_TRUE(result.passed()) << name << ": " << result.detail;
  EXPECT_FALSE(op->algorithm().empty());
  EXPECT_EQ(op->details()["implementation"], cudnn ? "cudnn" : "own");
  return true;
}

TEST(GpuMemoryBound, RunCapturesIntoACudaGraphAndReplaysBitwise) {
  TR_REQUIRE_GPU();
  const Stream stream;
  const std::pair<const char*, json> points[] = {
      {"pointwise", {{"op", "silu_mul"}, {"batch", 64}, {"elements", 1000}}},
      {"softmax", {{"batch", 4}, {"rows", 16}, {"columns", 2048}}},
      {"pool", {{"batch", 2}}}};
  for (const auto& [family, point] : points) {
    std::unique_ptr<Operator> op = make_operator(find_family(family), point, shared_handles());
    op->prepare(stream.get());
    const DeviceTensor output = op->outputs().at(0);
    std::vector<std::byte> eager(output.bytes), replayed(output.bytes);
    TR_CUDA_CHECK(cudaMemcpyAsync(eager.data(), output.data, output.bytes, cudaMemcpyDeviceToHost,
                                  stream.get()));
    TR_CUDA_CHECK(cudaMemsetAsync(output.data, 0x7f, output.bytes, stream.get()));
    const test::CapturedRun capture = test::capture_run(*op, stream.get());
    ASSERT_TRUE(test::captured_ok(capture)) << family;
    test::replay(capture, stream.get(), 2);
    TR_CUDA_CHECK(cudaMemcpyAsync(replayed.data(), output.data, output.bytes,
                                  cudaMemcpyDeviceToHost, stream.get()));
    TR_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    EXPECT_TRUE(replayed == eager) << family;
  }
}

// First: a cuDNN probe below that faults would end the process's context.
// The runner: fp32 FLOPs counted = the own kernels' FADD / FMUL / FFMA exactly;
// DRAM bytes and bandwidth of the large points printed against min_bytes.
TEST(GpuMemoryBound, TheRunnerCountsTheOwnKernelsFlopsExactly) {
  TR_REQUIRE_GPU();
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  struct Case {
    const char* family;
    json point;
    double expected_fp32_flops;
  };
  std::vector<Case> cases;
  for (PointwiseOp op : kAllPointwiseOps)
    for (auto [batch, elements] : {std::pair{4096, 4096}, std::pair{3, 100'001}}) {
      const json point = {
          {"op", to_string(op)}, {"batch", batch}, {"elements", elements}, {"precision", "bf16"}};
      cases.push_back(
          {"pointwise", point, pointwise_fma_pipe_flops_per_element(op) * batch * elements});
    }
  cases.push_back({"pointwise",
                   {{"op", "add"}, {"batch", 16384}, {"elements", 4096}, {"precision", "fp32"}},
                   16384.0 * 4096});
  cases.push_back(
      {"pointwise",
       {{"op", "silu_mul"}, {"batch", 4096}, {"elements", 11008}, {"precision", "bf16"}},
       4.0 * 4096 * 11008});
  for (auto [rows, columns, precision] :
       {std::tuple{4096, 128, "fp16"}, std::tuple{4096, 1000, "fp32"},
        std::tuple{2048, 4096, "bf16"}, std::tuple{4096, 32000, "bf16"},
        std::tuple{4096, 4096, "fp32"}}) {
    const json point = {
        {"batch", 1}, {"rows", rows}, {"columns", columns}, {"precision", precision}};
    cases.push_back(
        {"softmax", point, softmax_own_fma_pipe_flops(softmax_spec_from_params(point))});
  }
  for (int batch : {1, 128}) {
    json max = {{"batch", batch}, {"precision", "fp16"}};
    cases.push_back({"pool", max, 0});
    json avg3 = {{"batch", batch}, {"mode", "avg"}, {"precision", "bf16"}};  // 3x3 / 2, pad 1
    cases.push_back({"pool", avg3, pool_flops(pool_spec_from_params(avg3))});
    json avg = {{"batch", batch}, {"channels", 2048}, {"height", 7},
                {"width", 7},     {"window", 7},      {"stride", 1},
                {"pad", 0},       {"mode", "avg"},    {"precision", "fp16"}};
    cases.push_back({"pool", avg, pool_flops(pool_spec_from_params(avg))});
  }
  for (const Case& c : cases) {
    const Point p = runner.measure_point(find_family(c.family), c.point, "test", 0);
    const std::string name = std::string(c.family) + " " + c.point.dump();
    ASSERT_EQ(p.status, PointStatus::ok) << name << ": " << p.reason;
    EXPECT_EQ(p.details["check"]["status"], "passed") << name << p.details["check"];
    ASSERT_TRUE(p.timing.stream) << name;
    const double counted = p.counters.count("fp32_flops") ? p.counters.at("fp32_flops") : 0;
    const double dram =
        (p.counters.count("dram_read_bytes") ? p.counters.at("dram_read_bytes") : 0) +
        (p.counters.count("dram_write_bytes") ? p.counters.at("dram_write_bytes") : 0);
    const double seconds = *p.timing.stream_s();
    std::printf(
        "%-100s fp32 counted %.6g expected %.6g (x%.6f) analytic %.6g | DRAM %.4g B = x%.4f "
        "min_bytes | T_stream %.2f us, %.3f TB/s of min_bytes | %s\n",
        name.c_str(), counted, c.expected_fp32_flops,
        c.expected_fp32_flops > 0 ? counted / c.expected_fp32_flops : 0.0, p.flops, dram,
        dram / p.min_bytes, seconds * 1e6, p.min_bytes / seconds / 1e12, p.algorithm.c_str());
    EXPECT_DOUBLE_EQ(counted, c.expected_fp32_flops) << name;
  }
}

TEST(GpuMemoryBound, EveryPointwiseOpAndPrecisionMatchesTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (const char* implementation : {"own", "cudnn"})
    for (const char* op : {"add", "mul", "relu", "gelu", "silu", "silu_mul"})
      for (const char* precision : {"fp32", "fp16", "bf16"}) {
        // 3 x 1001: a tail after the 16-byte vectors; 4096 x 4096: sampled windows.
        for (auto [batch, elements] : {std::pair{3, 1001}, std::pair{4096, 4096}})
          prepare_and_check("pointwise",
                            {{"op", op},
                             {"batch", batch},
                             {"elements", elements},
                             {"precision", precision},
                             {"implementation", implementation}},
                            stream);
      }
}

TEST(GpuMemoryBound, SoftmaxRowsOfEveryShapeMatchTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  struct Shape {
    int batch, rows, columns;
  };
  // Single values (5, 1001), a warp per row (128, 1000), a block per row (4096,
  // 32000, the largest 32768), a few rows and many.
  const Shape shapes[] = {{2, 3, 5},    {4, 7, 128},   {1, 5, 1001},  {3, 33, 1000},
                          {2, 9, 4096}, {1, 3, 32000}, {1, 2, 32768}, {48, 512, 512}};
  for (const char* implementation : {"own", "cudnn"})
    for (const char* precision : {"fp32", "fp16", "bf16"})
      for (const Shape& s : shapes)
        prepare_and_check("softmax",
                          {{"batch", s.batch},
                           {"rows", s.rows},
                           {"columns", s.columns},
                           {"precision", precision},
                           {"implementation", implementation}},
                          stream);
}

TEST(GpuMemoryBound, PoolingOfEveryModeMatchesTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  const json shapes[] = {
      {{"batch", 2},
       {"channels", 64},
       {"height", 112},
       {"width", 112},
       {"window", 3},
       {"stride", 2},
       {"pad", 1}},
      {{"batch", 3},
       {"channels", 2048},
       {"height", 7},
       {"width", 7},
       {"window", 7},
       {"stride", 1},
       {"pad", 0}},
      {{"batch", 2},
       {"channels", 3},
       {"height", 9},
       {"width", 11},
       {"window", 2},
       {"stride", 2},
       {"pad", 1}},
  };
  for (const char* implementation : {"own", "cudnn"})
    for (const char* mode : {"max", "avg"})
      for (const char* precision : {"fp32", "fp16", "bf16"})
        for (json point : shapes) {
          point["mode"] = mode;
          point["precision"] = precision;
          point["implementation"] = implementation;
          prepare_and_check("pool", point, stream);
        }
}

}  // namespace
}  // namespace timeroof
