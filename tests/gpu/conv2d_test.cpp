// GPU tier, cuDNN Conv2D through both APIs (graph: execution plans built once;
// legacy: cudnnConvolution*): every direction x precision x layout matches the
// double reference within its precision's tolerance; groups, dilation, strides;
// graph and legacy outputs agree on the same inputs; fma_only never takes a
// Tensor Core engine; heuristic, exhaustive and fixed choices are recorded
// (engine, knobs, workspace, notes) and a printed plan name pins the same plan
// again; exhaustive is no slower than heuristic; run() is idempotent, allocates
// nothing and replays bitwise from a CUDA graph; an impossible configuration is
// `unsupported` with cuDNN's reason and a huge one `out_of_memory`, fast; the
// second-algorithm check on the paper's layer, and one whose reference is not
// finite; the device comparison counts values that are not finite.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gpu/check_cudnn.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/device_fill.hpp"
#include "sweeps/conv2d.hpp"
#include "sweeps/cudnn_graph.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/device_compare.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/operator.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/gpu/operator_capture.hpp"
#include "tests/support/paper_layer.hpp"

namespace timeroof {
namespace {

constexpr ConvDirection kDirections[] = {ConvDirection::fwd, ConvDirection::bwd_data,
                                         ConvDirection::bwd_filter};
constexpr Precision kPrecisions[] = {Precision::fp32, Precision::tf32, Precision::fp16,
                                     Precision::bf16};
constexpr CudnnApi kApis[] = {CudnnApi::graph, CudnnApi::legacy};

// One cuDNN handle for the whole binary, as a sweep shares one.
std::shared_ptr<LibraryHandles> shared_handle() {
  static std::shared_ptr<LibraryHandles> handle = std::make_shared<LibraryHandles>();
  return handle;
}

Conv2dSpec small(Layout layout, ConvDirection direction, Precision precision,
                 CudnnApi api = CudnnApi::graph) {
  Conv2dSpec spec;
  spec.layout = layout;
  spec.direction = direction;
  spec.precision = precision;
  spec.api = api;
  spec.n = 2;
  spec.c = 16;
  spec.h = spec.w = 10;
  spec.k = 32;
  spec.r = spec.s = 3;
  spec.pad_h = spec.pad_w = 1;
  return spec;
}

// The paper's layer: N16 C64 112x112 K64 3x3 stride 2 pad 1, NHWC fp16.
Conv2dSpec paper_layer(ConvDirection direction, CudnnApi api = CudnnApi::graph) {
  Conv2dSpec spec = paper_conv2d_spec();
  spec.direction = direction;
  spec.api = api;
  return spec;
}

std::string label(const Conv2dSpec& spec) {
  return std::string(to_string(spec.api)) + " " + to_string(spec.layout) + " " +
         to_string(spec.direction) + " " + to_string(spec.precision) + " g" +
         std::to_string(spec.groups) + " d" + std::to_string(spec.dilation_h) + " st" +
         std::to_string(spec.stride_h) + " " + spec.algorithm;
}

bool has_note(const nlohmann::json& details, const char* note) {
  if (!details.contains("numerical_notes")) return false;
  for (const nlohmann::json& n : details["numerical_notes"])
    if (n == note) return true;
  return false;
}

// Prepares and checks one spec; the check must pass. Returns the operator.
std::unique_ptr<Conv2d> prepare_and_check(const Conv2dSpec& spec, const Stream& stream,
                                          CheckMethod method = CheckMethod::cpu_reference) {
  auto op = std::make_unique<Conv2d>(spec, shared_handle());
  const Outcome outcome = guarded([&] { op->prepare(stream.get()); });
  EXPECT_EQ(outcome.status, PointStatus::ok) << label(spec) << ": " << outcome.reason;
  if (outcome.status != PointStatus::ok) return nullptr;
  const CheckResult result = op->check(method);
  std::printf("%-50s %-44s ws %9zu B  %s\n", label(spec).c_str(), op->algorithm().c_str(),
              op->workspace_bytes(), result.detail.c_str());
  EXPECT_TRUE(result.passed()) << label(spec) << ": " << result.detail;
  const nlohmann::json details = op->details();
  EXPECT_EQ(details["cudnn_api"], to_string(spec.api));
  if (spec.api == CudnnApi::graph) {
    EXPECT_EQ(op->algorithm().rfind("eng", 0), 0u) << op->algorithm();
    // The math mode's exclusions, on the engine actually chosen.
    EXPECT_FALSE(has_note(details, "CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS")) << details;
    if (resolved_math(spec) == MathMode::fma_only) {
      EXPECT_FALSE(has_note(details, "CUDNN_NUMERICAL_NOTE_TENSOR_CORE")) << details;
    }
  } else {
    EXPECT_EQ(op->algorithm().rfind("CUDNN_CONVOLUTION_", 0), 0u) << op->algorithm();
  }
  return op;
}

TEST(GpuConv2d, EveryDirectionPrecisionAndLayoutMatchesTheReference) {
  TR_REQUIRE_GPU();
  const GpuInfo gpu = query_gpu(0);
  std::printf("GPU %s, cuDNN %zu at run time (built with %d)\n", gpu.name.c_str(),
              cudnnGetVersion(), CUDNN_VERSION);
  const Stream stream;
  for (CudnnApi api : kApis)
    for (Layout layout : {Layout::nhwc, Layout::nchw})
      for (ConvDirection direction : kDirections)
        for (Precision precision : kPrecisions)
          prepare_and_check(small(layout, direction, precision, api), stream);
}

// The graph path on the paper's layer: 1.85e9 multiply-adds, above the CPU
// reference's limit, so the check is agreement with a second engine config.
TEST(GpuConv2d, PapersLayerPassesItsCheckOnBothApis) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (CudnnApi api : kApis)
    for (ConvDirection direction : kDirections)
      for (Precision precision : {Precision::fp16, Precision::fp32}) {
        Conv2dSpec spec = paper_layer(direction, api);
        spec.precision = precision;
        auto op = prepare_and_check(spec, stream, CheckMethod::automatic);
        if (op) {
          const std::string method = op->check().method;
          EXPECT_EQ(method.rfind(
                        api == CudnnApi::graph ? "agreement with eng" : "agreement with CUDNN_", 0),
                    0u)
              << method;
        }
      }
}

// Graph and legacy compute the same convolution from the same inputs (both fill
// them with the same seeds): their outputs agree within both tolerances.
TEST(GpuConv2d, GraphAndLegacyOutputsAgree) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (Layout layout : {Layout::nhwc, Layout::nchw})
    for (ConvDirection direction : kDirections)
      for (Precision precision : kPrecisions) {
        Conv2dSpec spec = small(layout, direction, precision);
        Conv2d graph(spec, shared_handle());
        const std::string name = label(spec);
        spec.api = CudnnApi::legacy;
        Conv2d legacy(spec, shared_handle());
        graph.prepare(stream.get());
        legacy.prepare(stream.get());
        for (ConvTensor input : {ConvTensor::x, ConvTensor::w, ConvTensor::y})
          if (input != conv2d_output_tensor(direction)) {
            ASSERT_TRUE(graph.download_bytes(input) == legacy.download_bytes(input))
                << label(spec) << ": the inputs differ";
          }
        const ConvTensor out = conv2d_output_tensor(direction);
        graph.run(stream.get());
        legacy.run(stream.get());
        const double error = relative_error(graph.download(out), legacy.download(out));
        const double tolerance = graph.check().tolerance + legacy.check().tolerance;
        std::printf("%-50s %s vs legacy %s: %.3g (<= %.3g)\n", name.c_str(),
                    graph.algorithm().c_str(), legacy.algorithm().c_str(), error, tolerance);
        EXPECT_LE(error, tolerance)
            << name << " " << graph.algorithm() << " vs " << legacy.algorithm();
      }
}

// fma_only (fp32's default) never takes an engine with the TENSOR_CORE note,
// whichever way the plan is picked; tf32 reaches Tensor Cores (its error shows
// 10-bit mantissas) on a shape where they pay.
TEST(GpuConv2d, FmaOnlyNeverTakesTensorCoresAndTf32Does) {
  TR_REQUIRE_GPU();
  const Stream stream;
  int tf32_tensor_core = 0;
  int tf32_error_seen = 0;
  for (ConvDirection direction : kDirections)
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      Conv2dSpec spec = small(layout, direction, Precision::fp32);
      spec.c = spec.k = 64;
      spec.h = spec.w = 28;
      for (const char* selection : {"heuristic", "exhaustive"}) {
        spec.algorithm = selection;
        const auto fp32 = prepare_and_check(spec, stream);
        ASSERT_TRUE(fp32);
        EXPECT_FALSE(has_note(fp32->details(), "CUDNN_NUMERICAL_NOTE_TENSOR_CORE"))
            << label(spec) << " " << fp32->details();
        EXPECT_LT(fp32->check().relative_error, 1e-5) << label(spec);
      }
      spec.algorithm = "heuristic";
      spec.precision = Precision::tf32;
      const auto tf32 = prepare_and_check(spec, stream);
      ASSERT_TRUE(tf32);
      const double tf32_error = tf32->check().relative_error;
      const bool tensor_core = has_note(tf32->details(), "CUDNN_NUMERICAL_NOTE_TENSOR_CORE");
      std::printf("  %s %s: tf32 %s%s, error %.3g\n", to_string(layout), to_string(direction),
                  tf32->algorithm().c_str(), tensor_core ? " (TENSOR_CORE)" : "", tf32_error);
      tf32_tensor_core += tensor_core;
      tf32_error_seen += tf32_error > 1e-5;
    }
  EXPECT_GT(tf32_tensor_core, 0) << "no tf32 plan has the TENSOR_CORE note";
  EXPECT_GT(tf32_error_seen, 0) << "no direction ran TF32 under precision tf32";
}

TEST(GpuConv2d, LegacyTf32UsesTensorCoresAndFp32DoesNot) {
  TR_REQUIRE_GPU();
  const Stream stream;
  int tf32_seen = 0;
  for (ConvDirection direction : kDirections) {
    Conv2dSpec spec = small(Layout::nhwc, direction, Precision::fp32, CudnnApi::legacy);
    spec.c = spec.k = 64;
    spec.h = spec.w = 28;
    const auto fp32 = prepare_and_check(spec, stream);
    spec.precision = Precision::tf32;
    const auto tf32 = prepare_and_check(spec, stream);
    ASSERT_TRUE(fp32 && tf32);
    EXPECT_EQ(fp32->details()["cudnn_math_type"], "CUDNN_FMA_MATH");
    EXPECT_LT(fp32->check().relative_error, 1e-5);
    if (tf32->check().relative_error > 1e-5) ++tf32_seen;
  }
  EXPECT_GT(tf32_seen, 0) << "no direction ran TF32 under precision tf32";
}

TEST(GpuConv2d, StridedGroupedAndDilatedConvolutionsMatchTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (CudnnApi api : kApis)
    for (Layout layout : {Layout::nhwc, Layout::nchw})
      for (ConvDirection direction : kDirections)
        for (Precision precision : {Precision::fp32, Precision::fp16}) {
          Conv2dSpec grouped = small(layout, direction, precision, api);
          grouped.groups = 2;
          prepare_and_check(grouped, stream);
          Conv2dSpec dilated = small(layout, direction, precision, api);
          dilated.dilation_h = dilated.dilation_w = 2;
          dilated.pad_h = dilated.pad_w = 2;
          prepare_and_check(dilated, stream);
          Conv2dSpec strided = small(layout, direction, precision, api);
          strided.h = strided.w = 14;
          strided.stride_h = strided.stride_w = 2;
          prepare_and_check(strided, stream);
        }
}

// Details carry the engine, its knobs, the workspace and where the plan came
// from; the printed plan name, given back as the algorithm, pins the same plan.
TEST(GpuConv2d, GraphDetailsRecordThePlanAndItsNamePinsItAgain) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (ConvDirection direction : kDirections)
    for (Precision precision : {Precision::fp16, Precision::fp32}) {
      Conv2dSpec spec = small(Layout::nhwc, direction, precision);
      const auto heuristic = prepare_and_check(spec, stream);
      ASSERT_TRUE(heuristic);
      const nlohmann::json d = heuristic->details();
      std::printf("  details: %s\n", d.dump().c_str());
      EXPECT_EQ(d["algorithm_selection"], "heuristic");
      ASSERT_TRUE(d["engine"].is_number_integer()) << d;
      EXPECT_GE(d["engine"].get<std::int64_t>(), 0);
      EXPECT_TRUE(d["knobs"].is_object()) << d;
      for (const auto& knob : d["knobs"].items()) EXPECT_TRUE(knob.value().is_number_integer());
      EXPECT_TRUE(d["workspace_bytes"].is_number_unsigned()) << d;
      EXPECT_EQ(d["workspace_bytes"].get<std::size_t>(), heuristic->workspace_bytes());
      EXPECT_TRUE(d["numerical_notes"].is_array() && d["behavior_notes"].is_array()) << d;
      EXPECT_TRUE(d["deterministic"].is_boolean());
      EXPECT_TRUE(d["heuristic_mode"] == "CUDNN_HEUR_MODE_A" ||
                  d["heuristic_mode"] == "CUDNN_HEUR_MODE_FALLBACK")
          << d;
      EXPECT_GE(d["heuristic_rank"].get<int>(), 0);
      // The algorithm name: "eng<N>" and the knobs of details, in print order.
      std::string expected_prefix = "eng" + std::to_string(d["engine"].get<std::int64_t>());
      EXPECT_EQ(heuristic->algorithm().rfind(expected_prefix, 0), 0u);
      EXPECT_EQ(describe(*heuristic).algorithm, heuristic->algorithm());

      // Pinned by its printed name: the same plan, found at the same rank.
      spec.algorithm = heuristic->algorithm();
      const auto pinned = prepare_and_check(spec, stream);
      ASSERT_TRUE(pinned);
      EXPECT_EQ(pinned->algorithm(), heuristic->algorithm());
      EXPECT_EQ(pinned->details()["algorithm_selection"], "fixed");
      EXPECT_EQ(pinned->details()["heuristic_rank"], d["heuristic_rank"]);
      EXPECT_EQ(pinned->details()["knobs"], d["knobs"]);
      // By engine alone: a configuration of that engine.
      spec.algorithm = expected_prefix;
      const auto engine_only = prepare_and_check(spec, stream);
      ASSERT_TRUE(engine_only);
      EXPECT_EQ(engine_only->details()["engine"], d["engine"]);

      spec.algorithm = "exhaustive";
      const auto exhaustive = prepare_and_check(spec, stream);
      ASSERT_TRUE(exhaustive);
      const nlohmann::json e = exhaustive->details();
      EXPECT_EQ(e["algorithm_selection"], "exhaustive");
      EXPECT_GT(e["search_time_ms"].get<double>(), 0) << e;
      EXPECT_GE(e["search_duration_ms"].get<double>(), e["search_time_ms"].get<double>()) << e;
      EXPECT_GE(e["plans_timed"].get<int>(), 1) << e;
    }
}

TEST(GpuConv2d, LegacyHeuristicExhaustiveAndFixedAlgorithmsAreRecorded) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (ConvDirection direction : kDirections)
    for (Precision precision : {Precision::fp16, Precision::fp32}) {
      Conv2dSpec spec = small(Layout::nhwc, direction, precision, CudnnApi::legacy);
      const auto heuristic = prepare_and_check(spec, stream);
      spec.algorithm = "exhaustive";
      const auto exhaustive = prepare_and_check(spec, stream);
      ASSERT_TRUE(heuristic && exhaustive);
      EXPECT_EQ(heuristic->details()["algorithm_selection"], "heuristic");
      EXPECT_EQ(exhaustive->details()["algorithm_selection"], "exhaustive");
      EXPECT_TRUE(exhaustive->details().contains("search_time_ms"));
    }
  Conv2dSpec fixed = small(Layout::nchw, ConvDirection::fwd, Precision::fp32, CudnnApi::legacy);
  fixed.algorithm = "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM";
  const auto op = prepare_and_check(fixed, stream);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->algorithm(), fixed.algorithm);
  EXPECT_EQ(op->details()["cudnn_math_type"], "CUDNN_FMA_MATH");
}

// Time per call of back-to-back run()s between events: the fastest of a few rounds.
double seconds_per_call(Conv2d& op, const Stream& stream) {
  for (int i = 0; i < 20; ++i) op.run(stream.get());
  const Event start;
  const Event stop;
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    start.record(stream.get());
    for (int i = 0; i < 100; ++i) op.run(stream.get());
    stop.record(stream.get());
    stop.synchronize();
    best = std::min(best, stop.seconds_since(start) / 100);
  }
  return best;
}

// Host time of one run() (steady clock around the call; a synchronize every 50
// calls keeps the queue short): the median of 200.
double host_seconds_per_run(Conv2d& op, const Stream& stream) {
  std::vector<double> seconds;
  for (int i = 0; i < 200; ++i) {
    const auto start = std::chrono::steady_clock::now();
    op.run(stream.get());
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (i % 50 == 49) stream.synchronize();
  }
  stream.synchronize();
  std::nth_element(seconds.begin(), seconds.begin() + 100, seconds.end());
  return seconds[100];
}

// Exhaustive search times every plan, the heuristic's pick included: its plan
// runs no slower than the heuristic's (10% for noise). The legacy API's figures
// on the same layer are printed beside them for the record.
TEST(GpuConv2d, ExhaustiveIsNoSlowerThanHeuristic) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (ConvDirection direction : kDirections) {
    Conv2dSpec spec = paper_layer(direction);
    Conv2d heuristic(spec, shared_handle());
    heuristic.prepare(stream.get());
    spec.algorithm = "exhaustive";
    Conv2d exhaustive(spec, shared_handle());
    exhaustive.prepare(stream.get());
    Conv2d legacy(paper_layer(direction, CudnnApi::legacy), shared_handle());
    legacy.prepare(stream.get());
    const double h = seconds_per_call(heuristic, stream);
    const double e = seconds_per_call(exhaustive, stream);
    std::printf(
        "%s: heuristic %s %.2f us, exhaustive %s %.2f us (%d plans, %d finalists, search %.0f "
        "ms)\n",
        to_string(direction), heuristic.algorithm().c_str(), h * 1e6,
        exhaustive.algorithm().c_str(), e * 1e6, exhaustive.details()["plans_timed"].get<int>(),
        exhaustive.details()["finalists_timed"].get<int>(),
        exhaustive.details()["search_duration_ms"].get<double>());
    const double legacy_call = seconds_per_call(legacy, stream);
    std::printf(
        "  back to back: graph %.2f us, legacy %s %.2f us; host per run(): graph "
        "%.2f us, legacy %.2f us\n",
        h * 1e6, legacy.algorithm().c_str(), legacy_call * 1e6,
        host_seconds_per_run(heuristic, stream) * 1e6, host_seconds_per_run(legacy, stream) * 1e6);
    EXPECT_LE(e, 1.10 * h) << to_string(direction);
  }
}

// run() of a prepared operator captured into a CUDA graph (thread-local mode:
// a cudaMalloc or a synchronizing call inside run() would fail the capture)
// replays the call: the output is bitwise the eager run's where deterministic.
TEST(GpuConv2d, RunCapturesIntoACudaGraphAndReplaysBitwise) {
  TR_REQUIRE_GPU();
  const Stream stream;
  std::vector<Conv2dSpec> specs = {small(Layout::nhwc, ConvDirection::fwd, Precision::fp16),
                                   small(Layout::nchw, ConvDirection::bwd_data, Precision::fp32),
                                   small(Layout::nchw, ConvDirection::bwd_filter, Precision::bf16),
                                   small(Layout::nhwc, ConvDirection::fwd, Precision::tf32),
                                   paper_layer(ConvDirection::fwd),
                                   paper_layer(ConvDirection::bwd_filter)};
  for (const Conv2dSpec& spec : specs) {
    Conv2d op(spec, shared_handle());
    op.prepare(stream.get());
    const ConvTensor out = conv2d_output_tensor(spec.direction);
    op.run(stream.get());  // the handle now points at this stream
    const std::vector<std::byte> eager = op.download_bytes(out);
    const DeviceTensor output = op.outputs().at(0);
    TR_CUDA_CHECK(cudaMemsetAsync(output.data, 0x7f, output.bytes, stream.get()));

    const test::CapturedRun capture = test::capture_run(op, stream.get());
    ASSERT_TRUE(test::captured_ok(capture)) << label(spec);
    std::size_t nodes = 0;
    TR_CUDA_CHECK(cudaGraphGetNodes(capture.graph.get(), nullptr, &nodes));
    EXPECT_GT(nodes, 0u) << label(spec);
    test::replay(capture, stream.get(), 3);
    const std::vector<std::byte> replayed = op.download_bytes(out);
    std::printf("%-50s %-44s %zu graph nodes, deterministic %d\n", label(spec).c_str(),
                op.algorithm().c_str(), nodes, op.deterministic());
    if (op.deterministic()) {
      EXPECT_TRUE(replayed == eager) << label(spec) << " " << op.algorithm();
    } else {
      EXPECT_TRUE(op.check().passed()) << label(spec);
    }
  }
}

// 100 calls change no device memory: run() allocates nothing (the workspace and
// the variant pack were built by prepare()).
TEST(GpuConv2d, RunAllocatesNoDeviceMemory) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (const Conv2dSpec& spec :
       {paper_layer(ConvDirection::fwd), paper_layer(ConvDirection::bwd_data),
        small(Layout::nchw, ConvDirection::bwd_filter, Precision::fp32)}) {
    Conv2d op(spec, shared_handle());
    op.prepare(stream.get());
    op.run(stream.get());
    stream.synchronize();
    std::size_t free_before = 0, free_after = 0, total = 0;
    TR_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
    for (int i = 0; i < 100; ++i) op.run(stream.get());
    stream.synchronize();
    TR_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
    EXPECT_EQ(free_after, free_before) << label(spec) << " " << op.algorithm();
  }
}

// The RAII layer on its own, as later operators will use it: a listed engine
// configuration rebuilt from its engine index and knobs describes itself by the
// same name and computes bitwise the same output; knob choices lie within the
// engine's knob ranges; a descriptor that cannot finalize throws with cuDNN's
// reason, the descriptor type and the caller's line.
TEST(GpuCudnnGraph, ListedConfigurationRebuildsFromItsIndexAndKnobs) {
  TR_REQUIRE_GPU();
  namespace cg = cudnn_graph;
  const Stream stream;
  const cudnnHandle_t handle = shared_handle()->cudnn();
  TR_CUDNN_CHECK(cudnnSetStream(handle, stream.get()));
  // y = conv(x, w): x 2x8x6x6, w 4x8x3x3, y 2x4x4x4, fp32, NCHW packed.
  auto packed = [](std::int64_t uid, std::vector<std::int64_t> dims) {
    cg::TensorSpec t;
    t.uid = uid;
    t.dims = dims;
    t.strides = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    return cg::make_tensor(t);
  };
  const cg::Descriptor x = packed(1, {2, 8, 6, 6});
  const cg::Descriptor w = packed(2, {4, 8, 3, 3});
  const cg::Descriptor y = packed(3, {2, 4, 4, 4});
  const std::int64_t spatial_dims = 2;
  const std::array<std::int64_t, 2> zero = {0, 0};
  const std::array<std::int64_t, 2> one = {1, 1};
  cg::Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_CROSS_CORRELATION)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, spatial_dims)
      .set_array<std::int64_t>(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, zero)
      .set_array<std::int64_t>(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, zero)
      .set_array<std::int64_t>(CUDNN_ATTR_CONVOLUTION_DILATIONS, one)
      .set_array<std::int64_t>(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, one)
      .finalize();
  const float alpha = 1;
  const float beta = 0;
  cg::Descriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, alpha)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, beta)
      .finalize();
  const cg::Descriptor graph = cg::make_operation_graph(handle, {&op});
  EXPECT_TRUE(graph.finalized());
  const std::int64_t engines = cg::engine_count(graph);
  EXPECT_GT(engines, 0);

  std::vector<cg::Descriptor> listed = cg::heuristic_configs(graph, CUDNN_HEUR_MODE_A);
  ASSERT_FALSE(listed.empty());
  std::unique_ptr<cg::ExecutionPlan> original;
  for (cg::Descriptor& config : listed) {
    auto shared = std::make_shared<const cg::Descriptor>(std::move(config));
    const Outcome built = guarded([&] { original = std::make_unique<cg::ExecutionPlan>(shared); });
    if (built.status == PointStatus::ok) break;
    std::printf("  %s does not finalize: %s\n", cg::describe_config(*shared).name().c_str(),
                built.reason.c_str());
  }
  ASSERT_TRUE(original) << "no listed configuration finalizes";
  const cg::ConfigInfo& info = original->info();
  EXPECT_GE(info.engine, 0);
  EXPECT_LT(info.engine, engines);

  auto engine = std::make_shared<const cg::Descriptor>(cg::make_engine(graph, info.engine));
  const std::vector<cg::KnobRange> ranges = cg::engine_knobs(*engine);
  for (const cg::KnobChoice& knob : info.knobs) {
    const auto range = std::find_if(ranges.begin(), ranges.end(),
                                    [&](const cg::KnobRange& r) { return r.type == knob.type; });
    ASSERT_NE(range, ranges.end()) << cg::knob_name(knob.type) << " is no knob of the engine";
    EXPECT_GE(knob.value, range->min) << cg::knob_name(knob.type);
    EXPECT_LE(knob.value, range->max) << cg::knob_name(knob.type);
  }
  const cg::ExecutionPlan rebuilt(
      std::make_shared<const cg::Descriptor>(cg::make_engine_config(engine, info.knobs)));
  EXPECT_EQ(rebuilt.name(), original->name());
  EXPECT_EQ(rebuilt.workspace_bytes(), original->workspace_bytes());
  std::string json;
  const Outcome serialized = guarded([&] { json = original->json(); });
  const std::string json_text = serialized.status == PointStatus::ok
                                    ? std::to_string(json.size()) + " chars"
                                    : "not offered: " + serialized.reason;
  std::printf("  %s: %lld engines, %zu knob ranges, workspace %lld B, JSON %s\n",
              original->name().c_str(), static_cast<long long>(engines), ranges.size(),
              static_cast<long long>(original->workspace_bytes()), json_text.c_str());
  if (serialized.status == PointStatus::ok) {
    EXPECT_FALSE(json.empty());
  }

  // Both plans on the same inputs: bitwise the same output.
  const std::size_t x_count = 2 * 8 * 6 * 6, w_count = 4 * 8 * 3 * 3, y_count = 2 * 4 * 4 * 4;
  const DeviceBuffer<float> xd(x_count), wd(w_count), y1(y_count), y2(y_count);
  fill_random(xd.get(), x_count, DataType::fp32, 11, stream.get());
  fill_random(wd.get(), w_count, DataType::fp32, 12, stream.get());
  const DeviceBuffer<std::byte> work1(static_cast<std::size_t>(original->workspace_bytes()));
  const DeviceBuffer<std::byte> work2(static_cast<std::size_t>(rebuilt.workspace_bytes()));
  const std::array<cg::TensorPointer, 3> bind1 = {{{1, xd.get()}, {2, wd.get()}, {3, y1.get()}}};
  const std::array<cg::TensorPointer, 3> bind2 = {{{1, xd.get()}, {2, wd.get()}, {3, y2.get()}}};
  const cg::VariantPack pack1(bind1, work1.get());
  const cg::VariantPack pack2(bind2, work2.get());
  cg::execute(handle, *original, pack1);
  cg::execute(handle, rebuilt, pack2);
  std::vector<float> host1(y_count), host2(y_count);
  TR_CUDA_CHECK(
      cudaMemcpyAsync(host1.data(), y1.get(), y1.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  TR_CUDA_CHECK(
      cudaMemcpyAsync(host2.data(), y2.get(), y2.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_TRUE(host1 == host2);
  EXPECT_TRUE(std::any_of(host1.begin(), host1.end(), [](float v) { return v != 0; }));

  // A tensor without dimensions does not finalize: cuDNN says why, we say where.
  cg::Descriptor incomplete(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  incomplete.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_DATA_FLOAT);
  try {
    incomplete.finalize();
    ADD_FAILURE() << "a tensor without dimensions finalized";
  } catch (const GpuError& error) {
    const std::string what = error.what();
    std::printf("  incomplete tensor: %s\n", what.c_str());
    EXPECT_NE(what.find("cudnnBackendFinalize(CUDNN_BACKEND_TENSOR_DESCRIPTOR)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("conv2d_test.cpp:"), std::string::npos) << what;
    EXPECT_FALSE(incomplete.finalized());
  }
}

TEST(GpuConv2d, ImpossibleConfigurationIsUnsupportedWithCudnnsReason) {
  TR_REQUIRE_GPU();
  const Stream stream;
  auto expect_unsupported = [&](const Conv2dSpec& spec, const std::string& part) {
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
    EXPECT_NE(outcome.reason.find(part), std::string::npos) << outcome.reason;
  };
  // Legacy: FFT needs stride 1; backward-filter Winograd is not implemented at all.
  Conv2dSpec fft = small(Layout::nchw, ConvDirection::fwd, Precision::fp32, CudnnApi::legacy);
  fft.h = fft.w = 14;
  fft.stride_h = fft.stride_w = 2;
  fft.algorithm = "CUDNN_CONVOLUTION_FWD_ALGO_FFT";
  expect_unsupported(fft, "");
  Conv2dSpec winograd =
      small(Layout::nchw, ConvDirection::bwd_filter, Precision::fp32, CudnnApi::legacy);
  winograd.algorithm = "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD";
  expect_unsupported(winograd, "");
  // Graph: an engine the graph does not have.
  Conv2dSpec missing = small(Layout::nhwc, ConvDirection::fwd, Precision::fp16);
  missing.algorithm = "eng100000";
  expect_unsupported(missing, "engine 100000 does not exist");
  // Graph: a Tensor Core engine named under fma_only (tf32 and fp32 share the graph).
  Conv2dSpec tf32 = small(Layout::nhwc, ConvDirection::fwd, Precision::tf32);
  tf32.c = tf32.k = 64;
  tf32.h = tf32.w = 28;
  Conv2d tensor_core(tf32, shared_handle());
  tensor_core.prepare(stream.get());
  ASSERT_TRUE(has_note(tensor_core.details(), "CUDNN_NUMERICAL_NOTE_TENSOR_CORE"))
      << "tf32's heuristic plan has no TENSOR_CORE note: " << tensor_core.details();
  Conv2dSpec fp32 = tf32;
  fp32.precision = Precision::fp32;
  fp32.algorithm = tensor_core.algorithm();
  expect_unsupported(fp32, "excluded by math = fma_only");
}

TEST(GpuConv2d, HugeShapeIsOutOfMemoryFast) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (CudnnApi api : kApis) {
    Conv2dSpec huge = small(Layout::nhwc, ConvDirection::fwd, Precision::fp16, api);
    huge.n = 1024;
    huge.c = 1024;
    huge.h = huge.w = 1024;  // x alone: 2^40 elements, 2 TiB
    huge.k = 1024;
    Conv2d op(huge, shared_handle());
    const auto start = std::chrono::steady_clock::now();
    const Outcome outcome = guarded([&] { op.prepare(stream.get()); });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("huge %s -> %s in %.3f s: %s\n", to_string(api), to_string(outcome.status), seconds,
                outcome.reason.c_str());
    EXPECT_EQ(outcome.status, PointStatus::out_of_memory) << outcome.reason;
    EXPECT_LT(seconds, 2.0);
    EXPECT_EQ(op.algorithm(), "");
  }
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
  std::vector<Conv2dSpec> specs = {
      small(Layout::nhwc, ConvDirection::fwd, Precision::fp16),
      small(Layout::nchw, ConvDirection::fwd, Precision::fp32),
      small(Layout::nhwc, ConvDirection::bwd_data, Precision::bf16),
      small(Layout::nchw, ConvDirection::bwd_filter, Precision::fp16),
      small(Layout::nhwc, ConvDirection::fwd, Precision::fp16, CudnnApi::legacy)};
  Conv2dSpec data = small(Layout::nhwc, ConvDirection::bwd_data, Precision::fp32, CudnnApi::legacy);
  data.algorithm = "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1";
  Conv2dSpec filter =
      small(Layout::nhwc, ConvDirection::bwd_filter, Precision::fp16, CudnnApi::legacy);
  filter.algorithm = "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1";
  specs.push_back(data);
  specs.push_back(filter);
  for (const Conv2dSpec& spec : specs) {
    Conv2d op(spec, shared_handle());
    op.prepare(stream.get());
    const ConvTensor out = conv2d_output_tensor(spec.direction);
    op.run(stream.get());
    const std::vector<std::byte> first = op.download_bytes(out);
    op.run(stream.get());
    op.run(stream.get());
    const std::vector<std::byte> third = op.download_bytes(out);
    if (op.deterministic()) {
      EXPECT_TRUE(first == third) << label(spec) << " " << op.algorithm();
    } else {
      std::printf("%s %s is not deterministic: bitwise comparison skipped\n", label(spec).c_str(),
                  op.algorithm().c_str());
    }
    // And the inputs were not touched.
    EXPECT_TRUE(op.check().passed()) << label(spec);
  }
}

// The default sweep's fp16 bwd_filter at batch 16 (C64 112x112 K64 3x3, stride 1,
// pad 1, NHWC, graph) failed its check on an H100 and an H200 with "relative
// error -nan". cuDNN 9.19's eng65 configurations below wrote 64 NaN or infinite
// values of 36,864 in this test process on an H100 at batch >= 16 (none at 8 or
// 15), although a sweep process measured the same layer with finite outputs. The
// check must say so by the output itself: an infinite error and the count where
// the output holds such values (counted here on the host), a pass where it holds
// none. Both branches assert, so the test holds whatever cuDNN computes.
TEST(GpuConv2d, AnOutputThatIsNotFiniteFailsItsCheckWithTheCount) {
  TR_REQUIRE_GPU();
  const Stream stream;
  Conv2dSpec spec = paper_layer(ConvDirection::bwd_filter);
  spec.stride_h = spec.stride_w = 1;
  const std::string knobs = "eng65 tile_size=5 tilek=1 idx_mode=1 workspace=0 tile_cga_m=1 ";
  int judged = 0;
  for (const std::int64_t batch : {8, 16})
    for (const char* cluster : {"tile_cga_n=3", "tile_cga_n=5"}) {
      spec.n = batch;
      spec.algorithm = knobs + cluster;
      Conv2d op(spec, shared_handle());
      const Outcome prepared = guarded([&] { op.prepare(stream.get()); });
      if (prepared.status != PointStatus::ok) {
        std::printf("%s at batch %lld: not on this GPU or cuDNN (%s)\n", spec.algorithm.c_str(),
                    static_cast<long long>(batch), prepared.reason.c_str());
        continue;
      }
      const std::vector<double> output = op.download(ConvTensor::w);
      const auto non_finite = static_cast<std::size_t>(
          std::ranges::count_if(output, [](double v) { return !std::isfinite(v); }));
      const CheckResult result = op.check(CheckMethod::second_algorithm);
      std::printf("batch %lld %s: %zu of %zu outputs NaN or infinite; %s\n",
                  static_cast<long long>(batch), cluster, non_finite, output.size(),
                  result.detail.c_str());
      ++judged;
      if (result.status == CheckStatus::skipped) continue;  // no reference gave finite outputs
      if (non_finite == 0) {
        EXPECT_TRUE(result.passed()) << result.detail;
        EXPECT_TRUE(std::isfinite(result.relative_error)) << result.detail;
        continue;
      }
      EXPECT_FALSE(result.passed()) << result.detail;
      EXPECT_TRUE(std::isinf(result.relative_error)) << result.detail;
      EXPECT_NE(result.detail.find("(" + std::to_string(non_finite) + " outputs NaN or infinite)"),
                std::string::npos)
          << result.detail;
    }
  if (judged == 0) GTEST_SKIP() << "no configuration of " << knobs << "on this GPU or cuDNN";
}

// Values that are not finite are counted on each side: in the checked output they
// make the error infinite (a failure), in the reference they leave nothing judged.
TEST(DeviceCompare, CountsValuesThatAreNotFiniteOnEachSide) {
  TR_REQUIRE_GPU();
  const Stream stream;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> a = {1, 2, 3, nan, 5, 6, 7, 8};
  const std::vector<double> b = {1, 2, 3, 4, inf, -inf, 7, 8.5};
  const auto upload = [&](const std::vector<double>& values) {
    DeviceBuffer<double> staged(values.size());
    TR_CUDA_CHECK(cudaMemcpy(staged.get(), values.data(), values.size() * sizeof(double),
                             cudaMemcpyHostToDevice));
    DeviceBuffer<std::byte> half(values.size() * 2);
    convert_from_double(staged.get(), half.get(), values.size(), DataType::fp16, stream.get());
    TR_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    return half;
  };
  const DeviceBuffer<std::byte> da = upload(a);
  const DeviceBuffer<std::byte> db = upload(b);
  const DeviceDifference ab =
      compare_on_device(da.get(), db.get(), a.size(), DataType::fp16, stream.get());
  EXPECT_EQ(ab.non_finite_a, 1u);
  EXPECT_EQ(ab.non_finite_b, 2u);
  EXPECT_TRUE(std::isinf(ab.relative_error()));
  EXPECT_EQ(ab.max_abs_reference, 8.5);  // the finite elements only
  const DeviceDifference ba =
      compare_on_device(db.get(), da.get(), a.size(), DataType::fp16, stream.get());
  EXPECT_TRUE(std::isinf(ba.relative_error()));  // the checked side is not finite
  const DeviceDifference bb =
      compare_on_device(da.get(), da.get(), a.size(), DataType::fp16, stream.get());
  EXPECT_EQ(bb.non_finite_a, 1u);
  EXPECT_TRUE(std::isinf(bb.relative_error()));
  std::vector<double> finite = a;
  finite[3] = 4;
  const DeviceBuffer<std::byte> df = upload(finite);
  const DeviceDifference fb =
      compare_on_device(df.get(), db.get(), a.size(), DataType::fp16, stream.get());
  EXPECT_EQ(fb.non_finite_a, 0u);
  EXPECT_EQ(fb.non_finite_b, 2u);
  EXPECT_TRUE(std::isnan(fb.relative_error()));  // a reference that is not finite
}

}  // namespace
}  // namespace timeroof
