// GPU tier: host<->device transfers timed with each call of a sweep point (the
// runner's transfer modes): the traced bytes equal the operator's analytic input
// and output bytes exactly, the copies cost wall time, the host memory kind is
// what was asked for, and the counters still see only the operator's kernels.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "counters/counter_access.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/runner.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/paper_layer.hpp"

namespace timeroof {
namespace {

Point measure(const OperatorFamily& family, const nlohmann::json& params, TransferMode mode,
              bool pinned, bool counters = false) {
  RunnerOptions options;
  options.counters = counters;
  options.transfer = mode;
  options.pinned_host = pinned;
  SweepRunner runner(inspect_gpu(0), options);
  return runner.measure_point(family, params, "transfer", 0);
}

double bytes_of(const std::vector<DeviceTensor>& tensors) {
  double sum = 0;
  for (const DeviceTensor& t : tensors) sum += static_cast<double>(t.bytes);
  return sum;
}

void print(const char* what, const Point& p) {
  std::printf("%s: %.1f us wall, h2d %.0f B in %.1f us, d2h %.0f B in %.1f us\n", what,
              *p.timing.call_s() * 1e6, p.timing.h2d_bytes.value_or(-1),
              p.timing.h2d_time_s.value_or(0) * 1e6, p.timing.d2h_bytes.value_or(-1),
              p.timing.d2h_time_s.value_or(0) * 1e6);
}

TEST(SweepTransfers, Conv2dInputCopiedFromPinnedMemory) {
  TR_REQUIRE_GPU();
  const OperatorFamily family = conv2d_family();
  const double x_bytes = 16.0 * 112 * 112 * 64 * 2;  // N H W C fp16
  const Point resident = measure(family, paper_point(16), TransferMode::none, true);
  ASSERT_EQ(resident.status, PointStatus::ok) << resident.reason;
  EXPECT_EQ(resident.timing.h2d_bytes.value_or(-1), 0);
  EXPECT_EQ(resident.details["transfer"]["mode"], "none");

  const Point p = measure(family, paper_point(16), TransferMode::h2d_input, true, true);
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
  EXPECT_EQ(p.details["check"]["status"], "passed");
  ASSERT_TRUE(p.timing.h2d_bytes && p.timing.d2h_bytes && p.timing.h2d_time_s);
  EXPECT_EQ(*p.timing.h2d_bytes, x_bytes);  // exactly the input, once per call
  EXPECT_EQ(*p.timing.d2h_bytes, 0);
  EXPECT_GT(*p.timing.h2d_time_s, 0);
  const nlohmann::json& t = p.details["transfer"];
  EXPECT_EQ(t["mode"], "h2d_input");
  EXPECT_EQ(t["host"], "pinned");
  EXPECT_EQ(t["h2d_bytes"].get<double>(), x_bytes);
  EXPECT_EQ(t["d2h_bytes"].get<double>(), 0);
  EXPECT_EQ(t["inputs"][0]["role"], "x");
  // 25.7 MB at tens of GB/s: hundreds of microseconds on top of the kernels.
  ASSERT_TRUE(p.timing.call && resident.timing.call);
  EXPECT_GT(*p.timing.call_s(), *resident.timing.call_s() + *p.timing.h2d_time_s * 0.5);
  // The counters profile the operator's kernels only: the copies are not kernels.
  ASSERT_TRUE(p.counters.count("tensor_fp16_flops")) << p.details["counters"];
  EXPECT_DOUBLE_EQ(p.counters.at("tensor_fp16_flops"), p.flops);
  EXPECT_EQ(p.timing.launches.value_or(-1), resident.timing.launches.value_or(-2));
  print("conv fp16 n16, resident", resident);
  print("conv fp16 n16, h2d_input pinned", p);
}

TEST(SweepTransfers, Conv2dInputAndOutputThroughPageableMemory) {
  TR_REQUIRE_GPU();
  const OperatorFamily family = conv2d_family();
  const auto op = make_operator(family, paper_point(8));
  const double x_bytes = 8.0 * 112 * 112 * 64 * 2;
  const double y_bytes = 8.0 * 56 * 56 * 64 * 2;  // stride 2, same padding
  ASSERT_EQ(bytes_of(op->inputs()), x_bytes);
  ASSERT_EQ(bytes_of(op->outputs()), y_bytes);

  const Point resident = measure(family, paper_point(8), TransferMode::none, false);
  const Point p = measure(family, paper_point(8), TransferMode::h2d_input_d2h_output, false);
  ASSERT_EQ(resident.status, PointStatus::ok) << resident.reason;
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
  EXPECT_EQ(p.timing.h2d_bytes.value_or(-1), x_bytes);
  EXPECT_EQ(p.timing.d2h_bytes.value_or(-1), y_bytes);
  EXPECT_GT(p.timing.d2h_time_s.value_or(0), 0);
  EXPECT_EQ(p.details["transfer"]["host"], "pageable");
  EXPECT_EQ(p.details["transfer"]["d2h_bytes"].get<double>(), y_bytes);
  EXPECT_EQ(p.details["transfer"]["outputs"][0]["role"], "y");
  EXPECT_GT(*p.timing.call_s(), *resident.timing.call_s());
  print("conv fp16 n8, h2d+d2h pageable", p);

  // Pinned copies of the same bytes are faster than pageable ones (docs/design.md: 55
  // vs 11-18 GB/s on an H200).
  const Point pinned = measure(family, paper_point(8), TransferMode::h2d_input_d2h_output, true);
  ASSERT_EQ(pinned.status, PointStatus::ok) << pinned.reason;
  EXPECT_EQ(pinned.timing.h2d_bytes.value_or(-1), x_bytes);
  EXPECT_LT(*pinned.timing.call_s(), *p.timing.call_s());
  print("conv fp16 n8, h2d+d2h pinned", pinned);
}

TEST(SweepTransfers, BackwardFilterMovesBothActivationsAndTheFilterGradient) {
  TR_REQUIRE_GPU();
  const OperatorFamily family = conv2d_family();
  nlohmann::json params = paper_point(4);
  params["direction"] = "bwd_filter";
  const Point p = measure(family, params, TransferMode::h2d_input_d2h_output, true);
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
  EXPECT_EQ(p.details["check"]["status"], "passed") << p.details["check"];
  EXPECT_EQ(p.timing.h2d_bytes.value_or(-1), 4.0 * (112 * 112 + 56 * 56) * 64 * 2);  // x, dy
  EXPECT_EQ(p.timing.d2h_bytes.value_or(-1), 64.0 * 3 * 3 * 64 * 2);                 // dw
}

TEST(SweepTransfers, LstmDataAndStateCopiedWeightsStay) {
  TR_REQUIRE_GPU();
  const OperatorFamily family = lstm_family();
  // T32 B64 I1024 H256, fp16: x 4 MiB, y 1 MiB, each state 32 KiB.
  const nlohmann::json params = {{"batch", 64},         {"seq_length", 32},
                                 {"input_size", 1024},  {"hidden_size", 256},
                                 {"precision", "fp16"}, {"pass", "inference"}};
  const double x = 32.0 * 64 * 1024 * 2, y = 32.0 * 64 * 256 * 2, s = 64.0 * 256 * 2;
  // Pageable: the host waits in each copy. (This call is launch-bound: pinned copies
  // run while the host still enqueues the kernels, and add ~25 of their ~110 us on
  // an H200, too little to assert on.)
  const Point resident = measure(family, params, TransferMode::none, true);
  const Point p = measure(family, params, TransferMode::h2d_input_d2h_output, false);
  const Point pinned = measure(family, params, TransferMode::h2d_input_d2h_output, true);
  ASSERT_EQ(resident.status, PointStatus::ok) << resident.reason;
  ASSERT_EQ(pinned.status, PointStatus::ok) << pinned.reason;
  EXPECT_EQ(pinned.timing.h2d_bytes.value_or(-1), x + 2 * s);
  ASSERT_EQ(p.status, PointStatus::ok) << p.reason;
  EXPECT_NE(p.details["check"]["status"], "failed") << p.details["check"];
  EXPECT_EQ(p.timing.h2d_bytes.value_or(-1), x + 2 * s);  // x, hx, cx
  EXPECT_EQ(p.timing.d2h_bytes.value_or(-1), y + 2 * s);  // y, hy, cy
  EXPECT_EQ(p.details["transfer"]["h2d_bytes"].get<double>(), x + 2 * s);
  EXPECT_EQ(p.details["transfer"]["inputs"].size(), 3u);
  EXPECT_GT(*p.timing.call_s(), *resident.timing.call_s());
  EXPECT_EQ(p.timing.launches.value_or(-1), resident.timing.launches.value_or(-2));
  print("lstm fp16 inference, resident", resident);
  print("lstm fp16 inference, h2d+d2h pageable", p);
  print("lstm fp16 inference, h2d+d2h pinned", pinned);
}

}  // namespace
}  // namespace timeroof
