// GPU tier, cuDNN Conv2D: every direction x precision x layout matches the double
// reference within its precision's tolerance; groups and dilation; heuristic,
// exhaustive and fixed algorithms (the one used is recorded); an impossible
// configuration is `unsupported` with cuDNN's reason and a huge one is
// `out_of_memory`, fast; run() is idempotent; the second-algorithm check on the
// paper's baseline shape.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "sweeps/conv2d.hpp"
#include "sweeps/cudnn_handles.hpp"
#include "sweeps/operator.hpp"
#include "tests/gpu/gpu_test_support.hpp"

namespace timeroof {
namespace {

// One cuDNN handle for the whole binary, as a sweep shares one.
std::shared_ptr<CudnnHandle> shared_handle() {
  static std::shared_ptr<CudnnHandle> handle = std::make_shared<CudnnHandle>();
  return handle;
}

Conv2dSpec small(Layout layout, ConvDirection direction, Precision precision) {
  Conv2dSpec spec;
  spec.layout = layout;
  spec.direction = direction;
  spec.precision = precision;
  spec.n = 2;
  spec.c = 16;
  spec.h = spec.w = 10;
  spec.k = 32;
  spec.r = spec.s = 3;
  spec.pad_h = spec.pad_w = 1;
  return spec;
}

std::string label(const Conv2dSpec& spec) {
  return std::string(to_string(spec.layout)) + " " + to_string(spec.direction) + " " +
         to_string(spec.precision) + " g" + std::to_string(spec.groups) + " d" +
         std::to_string(spec.dilation_h) + " st" + std::to_string(spec.stride_h) + " " +
         spec.algorithm;
}

// Prepares and checks one spec; the check must pass. Returns the operator.
std::unique_ptr<Conv2d> prepare_and_check(const Conv2dSpec& spec, const Stream& stream,
                                          CheckMethod method = CheckMethod::cpu_reference) {
  auto op = std::make_unique<Conv2d>(spec, shared_handle());
  const Outcome outcome = guarded([&] { op->prepare(stream.get()); });
  EXPECT_EQ(outcome.status, PointStatus::ok) << label(spec) << ": " << outcome.reason;
  if (outcome.status != PointStatus::ok) return nullptr;
  const CheckResult result = op->check(method);
  std::printf("%-44s %-50s ws %8zu B  %s\n", label(spec).c_str(), op->algorithm().c_str(),
              op->workspace_bytes(), result.detail.c_str());
  EXPECT_TRUE(result.passed()) << label(spec) << ": " << result.detail;
  EXPECT_EQ(op->algorithm().rfind("CUDNN_CONVOLUTION_", 0), 0u) << op->algorithm();
  return op;
}

TEST(GpuConv2d, EveryDirectionPrecisionAndLayoutMatchesTheReference) {
  TR_REQUIRE_GPU();
  const GpuInfo gpu = query_gpu(0);
  std::printf("GPU %s, cuDNN %zu at run time (built with %d)\n", gpu.name.c_str(),
              cudnnGetVersion(), CUDNN_VERSION);
  const Stream stream;
  for (Layout layout : {Layout::nhwc, Layout::nchw})
    for (ConvDirection direction :
         {ConvDirection::fwd, ConvDirection::bwd_data, ConvDirection::bwd_filter})
      for (Precision precision :
           {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
        prepare_and_check(small(layout, direction, precision), stream);
}

// tf32 really reaches TF32 Tensor Cores (its error shows 10-bit mantissas) and
// fp32 (CUDNN_FMA_MATH) really does not, on a shape where Tensor Cores pay.
TEST(GpuConv2d, Tf32UsesTensorCoresAndFp32DoesNot) {
  TR_REQUIRE_GPU();
  const Stream stream;
  int tf32_seen = 0;
  for (ConvDirection direction :
       {ConvDirection::fwd, ConvDirection::bwd_data, ConvDirection::bwd_filter}) {
    Conv2dSpec spec = small(Layout::nhwc, direction, Precision::fp32);
    spec.c = spec.k = 64;
    spec.h = spec.w = 28;
    const auto fp32 = prepare_and_check(spec, stream);
    spec.precision = Precision::tf32;
    const auto tf32 = prepare_and_check(spec, stream);
    ASSERT_TRUE(fp32 && tf32);
    const double fp32_error = fp32->check().relative_error;
    const double tf32_error = tf32->check().relative_error;
    std::printf("  %s: fp32 %s error %.3g, tf32 %s error %.3g\n", to_string(direction),
                fp32->details()["cudnn_math_type"].get<std::string>().c_str(), fp32_error,
                tf32->details()["cudnn_math_type"].get<std::string>().c_str(), tf32_error);
    EXPECT_EQ(fp32->details()["cudnn_math_type"], "CUDNN_FMA_MATH");
    EXPECT_LT(fp32_error, 1e-5);
    if (tf32_error > 1e-5) ++tf32_seen;
  }
  EXPECT_GT(tf32_seen, 0) << "no direction ran TF32 under precision tf32";
}

TEST(GpuConv2d, StridedGroupedAndDilatedConvolutionsMatchTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (Layout layout : {Layout::nhwc, Layout::nchw})
    for (ConvDirection direction :
         {ConvDirection::fwd, ConvDirection::bwd_data, ConvDirection::bwd_filter})
      for (Precision precision : {Precision::fp32, Precision::fp16}) {
        Conv2dSpec grouped = small(layout, direction, precision);
        grouped.groups = 2;
        prepare_and_check(grouped, stream);
        Conv2dSpec dilated = small(layout, direction, precision);
        dilated.dilation_h = dilated.dilation_w = 2;
        dilated.pad_h = dilated.pad_w = 2;
        prepare_and_check(dilated, stream);
        Conv2dSpec strided = small(layout, direction, precision);
        strided.h = strided.w = 14;
        strided.stride_h = strided.stride_w = 2;
        prepare_and_check(strided, stream);
      }
}

TEST(GpuConv2d, HeuristicExhaustiveAndFixedAlgorithmsAreRecorded) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (ConvDirection direction :
       {ConvDirection::fwd, ConvDirection::bwd_data, ConvDirection::bwd_filter}) {
    for (Precision precision : {Precision::fp16, Precision::fp32}) {
      Conv2dSpec spec = small(Layout::nhwc, direction, precision);
      spec.algorithm = "heuristic";
      const auto heuristic = prepare_and_check(spec, stream);
      spec.algorithm = "exhaustive";
      const auto exhaustive = prepare_and_check(spec, stream);
      ASSERT_TRUE(heuristic && exhaustive);
      EXPECT_EQ(heuristic->details()["algorithm_selection"], "heuristic");
      EXPECT_EQ(exhaustive->details()["algorithm_selection"], "exhaustive");
      EXPECT_TRUE(exhaustive->details().contains("search_time_ms"));
      EXPECT_EQ(describe(*exhaustive).algorithm, exhaustive->algorithm());
      std::printf("  details: heuristic %s / exhaustive %s\n", heuristic->details().dump().c_str(),
                  exhaustive->details().dump().c_str());
    }
  }
  Conv2dSpec fixed = small(Layout::nchw, ConvDirection::fwd, Precision::fp32);
  fixed.algorithm = "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM";
  const auto op = prepare_and_check(fixed, stream);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->algorithm(), fixed.algorithm);
  EXPECT_EQ(op->details()["cudnn_math_type"], "CUDNN_FMA_MATH");
}

TEST(GpuConv2d, ImpossibleConfigurationIsUnsupportedWithCudnnsReason) {
  TR_REQUIRE_GPU();
  const Stream stream;
  // FFT needs stride 1; backward-filter Winograd is not implemented at all.
  Conv2dSpec fft = small(Layout::nchw, ConvDirection::fwd, Precision::fp32);
  fft.h = fft.w = 14;
  fft.stride_h = fft.stride_w = 2;
  fft.algorithm = "CUDNN_CONVOLUTION_FWD_ALGO_FFT";
  Conv2dSpec winograd = small(Layout::nchw, ConvDirection::bwd_filter, Precision::fp32);
  winograd.algorithm = "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD";
  for (const Conv2dSpec& spec : {fft, winograd}) {
    Conv2d op(spec, shared_handle());
    const Outcome outcome = guarded([&] {
      op.prepare(stream.get());
      op.run(stream.get());
      stream.synchronize();
    });
    std::printf("%s -> %s: %s\n", label(spec).c_str(), to_string(outcome.status),
                outcome.reason.c_str());
    EXPECT_EQ(outcome.status, PointStatus::unsupported) << outcome.reason;
    EXPECT_NE(outcome.reason.find("CUDNN_STATUS_NOT_SUPPORTED"), std::string::npos)
        << outcome.reason;
  }
}

TEST(GpuConv2d, HugeShapeIsOutOfMemoryFast) {
  TR_REQUIRE_GPU();
  const Stream stream;
  Conv2dSpec huge = small(Layout::nhwc, ConvDirection::fwd, Precision::fp16);
  huge.n = 1024;
  huge.c = 1024;
  huge.h = huge.w = 1024;  // x alone: 2^40 elements, 2 TiB
  huge.k = 1024;
  Conv2d op(huge, shared_handle());
  const auto start = std::chrono::steady_clock::now();
  const Outcome outcome = guarded([&] { op.prepare(stream.get()); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("huge -> %s in %.3f s: %s\n", to_string(outcome.status), seconds,
              outcome.reason.c_str());
  EXPECT_EQ(outcome.status, PointStatus::out_of_memory) << outcome.reason;
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(op.algorithm(), "");
  // A failing cudaMalloc itself maps the same way.
  const Outcome malloc_outcome =
      guarded([] { DeviceBuffer<std::byte> buffer(std::size_t{1} << 50); });
  EXPECT_EQ(malloc_outcome.status, PointStatus::out_of_memory) << malloc_outcome.reason;
  std::printf("cudaMalloc(1 PiB) -> %s: %s\n", to_string(malloc_outcome.status),
              malloc_outcome.reason.c_str());
  // The device still works afterwards.
  prepare_and_check(small(Layout::nhwc, ConvDirection::fwd, Precision::fp16), stream);
}

TEST(GpuConv2d, RunIsIdempotent) {
  TR_REQUIRE_GPU();
  const Stream stream;
  std::vector<Conv2dSpec> specs = {small(Layout::nhwc, ConvDirection::fwd, Precision::fp16),
                                   small(Layout::nchw, ConvDirection::fwd, Precision::fp32)};
  Conv2dSpec data = small(Layout::nhwc, ConvDirection::bwd_data, Precision::fp32);
  data.algorithm = "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1";
  Conv2dSpec filter = small(Layout::nhwc, ConvDirection::bwd_filter, Precision::fp16);
  filter.algorithm = "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1";
  specs.push_back(data);
  specs.push_back(filter);
  for (const Conv2dSpec& spec : specs) {
    Conv2d op(spec, shared_handle());
    op.prepare(stream.get());
    ASSERT_TRUE(op.deterministic()) << op.algorithm();
    const ConvTensor out = conv2d_output_tensor(spec.direction);
    op.run(stream.get());
    const std::vector<std::byte> first = op.download_bytes(out);
    op.run(stream.get());
    op.run(stream.get());
    const std::vector<std::byte> third = op.download_bytes(out);
    EXPECT_TRUE(first == third) << label(spec) << " " << op.algorithm();
    // And the inputs were not touched.
    EXPECT_TRUE(op.check().passed()) << label(spec);
  }
}

TEST(GpuConv2d, SecondAlgorithmCheckOnThePapersBaseline) {
  TR_REQUIRE_GPU();
  const Stream stream;
  Conv2dSpec spec;
  spec.layout = Layout::nhwc;
  spec.n = 16;
  spec.c = 64;
  spec.h = spec.w = 112;
  spec.k = 64;
  spec.r = spec.s = 3;
  spec.stride_h = spec.stride_w = 2;
  spec.pad_h = spec.pad_w = 1;
  for (ConvDirection direction :
       {ConvDirection::fwd, ConvDirection::bwd_data, ConvDirection::bwd_filter})
    for (Precision precision : {Precision::fp16, Precision::fp32}) {
      spec.direction = direction;
      spec.precision = precision;
      // 1.85e9 multiply-adds: above the CPU reference's limit, so automatic picks
      // agreement with a second algorithm.
      auto op = prepare_and_check(spec, stream, CheckMethod::automatic);
      if (op) {
        EXPECT_EQ(op->check().method.rfind("agreement with CUDNN_", 0), 0u);
      }
    }
}

}  // namespace
}  // namespace timeroof
