// CPU tier, host<->device transfers of a sweep without a GPU: the tensors each
// operator lists for a call (roles and analytic bytes, known from construction),
// the refusal of a transfer mode for an operator with nothing to move, the dry-run
// estimate with copies, and the CLI accepting --transfer.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/conv2d.hpp"
#include "sweeps/family.hpp"
#include "sweeps/lstm.hpp"
#include "sweeps/spec.hpp"
#include "tests/support/run_tool.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using nlohmann::json;
using test::usage_message;

// "role:bytes" of each tensor, in order; every data pointer is null before prepare().
std::vector<std::string> listed(const std::vector<DeviceTensor>& tensors) {
  std::vector<std::string> out;
  for (const DeviceTensor& t : tensors) {
    EXPECT_EQ(t.data, nullptr) << t.role;
    out.push_back(t.role + ":" + std::to_string(t.bytes));
  }
  return out;
}

using Names = std::vector<std::string>;

TEST(TransferTensors, Conv2dMovesActivationsNotFilters) {
  Conv2dSpec spec;  // N2 C3 8x8, K4 3x3, stride 1, no padding: P = Q = 6; fp16
  spec.n = 2, spec.c = 3, spec.h = 8, spec.w = 8, spec.k = 4, spec.r = 3, spec.s = 3;
  spec.precision = Precision::fp16;
  const std::string x = std::to_string(2 * 3 * 8 * 8 * 2), y = std::to_string(2 * 4 * 6 * 6 * 2),
                    w = std::to_string(4 * 3 * 3 * 3 * 2);
  spec.direction = ConvDirection::fwd;
  EXPECT_EQ(listed(Conv2d(spec).inputs()), Names({"x:" + x}));
  EXPECT_EQ(listed(Conv2d(spec).outputs()), Names({"y:" + y}));
  spec.direction = ConvDirection::bwd_data;
  EXPECT_EQ(listed(Conv2d(spec).inputs()), Names({"dy:" + y}));
  EXPECT_EQ(listed(Conv2d(spec).outputs()), Names({"dx:" + x}));
  spec.direction = ConvDirection::bwd_filter;
  EXPECT_EQ(listed(Conv2d(spec).inputs()), Names({"x:" + x, "dy:" + y}));
  EXPECT_EQ(listed(Conv2d(spec).outputs()), Names({"dw:" + w}));
}

TEST(TransferTensors, LstmMovesDataAndStateNotWeights) {
  LstmSpec spec;  // T16 B16 I32 H16, one layer, unidirectional, fp32
  const std::string x = std::to_string(16 * 16 * 32 * 4), y = std::to_string(16 * 16 * 16 * 4),
                    s = std::to_string(16 * 16 * 4);
  spec.pass = LstmPass::inference;
  EXPECT_EQ(listed(Lstm(spec).inputs()), Names({"x:" + x, "hx:" + s, "cx:" + s}));
  EXPECT_EQ(listed(Lstm(spec).outputs()), Names({"y:" + y, "hy:" + s, "cy:" + s}));
  spec.pass = LstmPass::training_forward;
  EXPECT_EQ(listed(Lstm(spec).inputs()), Names({"x:" + x, "hx:" + s, "cx:" + s}));
  EXPECT_EQ(listed(Lstm(spec).outputs()), Names({"y:" + y, "hy:" + s, "cy:" + s}));
  spec.pass = LstmPass::backward_data;
  EXPECT_EQ(listed(Lstm(spec).inputs()),
            Names({"y:" + y, "dy:" + y, "hx:" + s, "dhy:" + s, "cx:" + s, "dcy:" + s}));
  EXPECT_EQ(listed(Lstm(spec).outputs()), Names({"dx:" + x, "dhx:" + s, "dcx:" + s}));
  spec.pass = LstmPass::backward_weights;
  EXPECT_EQ(listed(Lstm(spec).inputs()), Names({"x:" + x, "hx:" + s, "y:" + y}));
  EXPECT_EQ(
      listed(Lstm(spec).outputs()),
      Names({"dw:" + std::to_string(static_cast<std::size_t>(lstm_weight_elements(spec)) * 4)}));
  // Bidirectional, two layers: the state is L D B H, y is T B 2H.
  spec.pass = LstmPass::inference;
  spec.bidirectional = true;
  spec.layers = 2;
  spec.precision = Precision::fp16;
  EXPECT_EQ(listed(Lstm(spec).outputs()),
            Names({"y:" + std::to_string(16 * 16 * 32 * 2), "hy:" + std::to_string(4 * 16 * 16 * 2),
                   "cy:" + std::to_string(4 * 16 * 16 * 2)}));
}

// A problem that lists no tensors (the Problem default), in a family of its own.
class Opaque : public Problem {
 public:
  std::string op() const override { return "opaque"; }
  json params() const override { return json::object(); }
  Precision precision() const override { return Precision::fp32; }
  MathMode math_mode() const override { return MathMode::fma_only; }
  double flops() const override { return 1e6; }
  double min_bytes() const override { return 1e6; }
};

// Lists inputs but no outputs.
class InputOnly final : public Opaque {
 public:
  std::string op() const override { return "input_only"; }
  std::vector<TensorArgument> inputs() const override { return {{"x", 4096}}; }
};

template <typename Op>
OperatorFamily family_of(const std::string& name) {
  OperatorFamily family;
  family.name = name;
  ParamAxis size;
  size.key = "size";
  size.defaults = json::array({1});
  family.axes = {size};
  family.default_points = [] { return std::vector<json>{{{"size", 1}}}; };
  family.problem = [](const json&) -> std::unique_ptr<Problem> { return std::make_unique<Op>(); };
  return family;
}

TEST(TransferRefusal, AnOperatorWithNothingToMoveIsAUsageError) {
  const Opaque opaque;
  EXPECT_EQ(transfer_unavailable(opaque, TransferMode::none), "");
  EXPECT_EQ(transfer_unavailable(opaque, TransferMode::h2d_input),
            "transfer h2d_input: opaque has no input tensors to copy to the device; allowed: "
            "transfer none");
  const InputOnly input_only;
  EXPECT_EQ(transfer_unavailable(input_only, TransferMode::h2d_input), "");
  EXPECT_EQ(transfer_unavailable(input_only, TransferMode::h2d_input_d2h_output),
            "transfer h2d_input_d2h_output: input_only has no output tensors to copy back; "
            "allowed: transfer none, h2d_input");
  EXPECT_EQ(transfer_unavailable(Conv2dProblem(Conv2dSpec{}), TransferMode::h2d_input_d2h_output),
            "");

  // Before any GPU work, from flags and from a resumed spec alike.
  const OperatorFamily family = family_of<Opaque>("opaque");
  EXPECT_NO_THROW(spec_from_flags(family, {{"size", "1,2"}}));
  std::string m = usage_message([&] {
    spec_from_flags(family, {{"size", "1,2"}, {"transfer", "h2d_input"}});
  });
  EXPECT_MENTIONS(m, "point 0 (the baseline): transfer h2d_input: opaque has no input tensors");
  SweepSpec spec = spec_from_flags(family, {{"size", "3"}});
  spec.transfer = TransferMode::h2d_input;
  m = usage_message([&] { validate_points(spec, family); });
  EXPECT_MENTIONS(m, "size=3): transfer h2d_input: opaque has no input tensors");
  const OperatorFamily inputs = family_of<InputOnly>("input_only");
  EXPECT_NO_THROW(spec_from_flags(inputs, {{"transfer", "h2d_input"}}));
  m = usage_message([&] {
    spec_from_flags(inputs, {{"transfer", "h2d_input_d2h_output"}, {"host", "pageable"}});
  });
  EXPECT_MENTIONS(m, "input_only has no output tensors to copy back");
}

TEST(TransferDryRun, EstimateAddsTheCopies) {
  const OperatorFamily conv = conv2d_family();
  const json point = baseline_point(conv);  // the paper's layer: batch 16, 112x112x64, fp16
  const double x = 16.0 * 64 * 112 * 112 * 2, y = 16.0 * 64 * 56 * 56 * 2;
  DryRunRoofs roofs;
  roofs.h2d_pinned_bytes_per_s = 40e9;
  roofs.d2h_pinned_bytes_per_s = 50e9;
  roofs.h2d_pageable_bytes_per_s = 8e9;
  roofs.d2h_pageable_bytes_per_s = 10e9;
  const PointEstimate none = estimate_point(point, conv, roofs);
  EXPECT_EQ(none.h2d_bytes, 0);
  EXPECT_EQ(none.transfer_s, 0);
  const PointEstimate in = estimate_point(point, conv, roofs, TransferMode::h2d_input, true);
  EXPECT_EQ(in.h2d_bytes, x);
  EXPECT_EQ(in.d2h_bytes, 0);
  EXPECT_DOUBLE_EQ(in.transfer_s, x / 40e9);
  EXPECT_DOUBLE_EQ(in.call_s, none.call_s + x / 40e9);
  const PointEstimate both =
      estimate_point(point, conv, roofs, TransferMode::h2d_input_d2h_output, false);
  EXPECT_EQ(both.d2h_bytes, y);
  EXPECT_DOUBLE_EQ(both.transfer_s, x / 8e9 + y / 10e9);
  EXPECT_GT(both.point_s, in.point_s);

  const SweepSpec spec =
      spec_from_flags(conv, {{"batch", "1,2"}, {"transfer", "h2d_input_d2h_output"}});
  const std::string text = describe_points(spec, conv, roofs);
  EXPECT_MENTIONS(text, "transfer h2d_input_d2h_output, pinned host memory");
  EXPECT_MENTIONS(text, "xfer MB");
  EXPECT_MENTIONS(text, "transfers (h2d_input_d2h_output, pinned) serial with each call: H2D 40");
  EXPECT_MENTIONS(text, "D2H 50");
  EXPECT_EQ(describe_points(spec_from_flags(conv, {}), conv).find("xfer"), std::string::npos);
}

// details["transfer"] as the runner writes it, and the traced copies, survive the
// store and the JSON export unchanged (numbers stay numbers).
TEST(TransferStore, DetailsSurviveTheStoreAndJson) {
  Point point;
  point.sweep = "conv2d";
  point.op = "conv2d_fwd";
  point.precision = "fp16";
  point.math_mode = "tensor";
  point.params = {{"batch", 16}};
  point.timing.call = TimeStats{.median_s = 6.1e-4};
  point.timing.h2d_bytes = 25690112;
  point.timing.h2d_time_s = 4.7e-4;
  point.timing.d2h_bytes = 0;
  point.details["transfer"] = {{"mode", "h2d_input"},
                               {"host", "pinned"},
                               {"h2d_bytes", 25690112},
                               {"d2h_bytes", 0},
                               {"inputs", json::array({{{"role", "x"}, {"bytes", 25690112}}})},
                               {"outputs", json::array()}};
  test::TempDir dir;
  ResultsStore store = ResultsStore::open(dir.file("t.db"), ResultsStore::Access::read_write);
  timeroof::Run run;
  run.uuid = "a1b2c3d4-0000-4000-8000-0000000000aa";
  run.tool_version = "0.1.0";
  run.started_at = "2025-01-02T03:04:05.678Z";
  run.status = "running";
  store.begin_run(run);
  store.add_point(run.id, point);
  const RunRecord back = store.load_run(run.id);
  ASSERT_EQ(back.points.size(), 1u);
  EXPECT_EQ(back.points[0].details, point.details);
  EXPECT_TRUE(back.points[0].details["transfer"]["h2d_bytes"].is_number_integer());
  EXPECT_EQ(back.points[0].timing, point.timing);
  const Point exported = json::parse(json(back.points[0]).dump()).get<Point>();
  EXPECT_EQ(exported.details, point.details);
  EXPECT_EQ(exported.timing, point.timing);
}

TEST(TransferCli, DryRunAcceptsTransfers) {
  if (!TIMEROOF_BUILT_WITH_CUDA) GTEST_SKIP() << "analysis-only build: no operators";
  const std::vector<std::pair<std::string, std::string>> no_gpu = {{"CUDA_VISIBLE_DEVICES", ""}};
  const test::ToolResult r =
      test::run_tool({"sweep", "conv2d", "--transfer", "h2d_input", "--dry-run"}, no_gpu);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_MENTIONS(r.out, "transfer h2d_input, pinned host memory");
  EXPECT_MENTIONS(r.out, "xfer MB");
  EXPECT_MENTIONS(r.out, "transfers (h2d_input, pinned)");
  const test::ToolResult pageable =
      test::run_tool({"sweep", "lstm", "--transfer", "h2d-input-d2h-output", "--host", "pageable",
                      "--batch", "16,32", "--dry-run"},
                     no_gpu);
  ASSERT_EQ(pageable.exit_code, 0) << pageable.err;
  EXPECT_MENTIONS(pageable.out, "transfers (h2d_input_d2h_output, pageable)");
  // A valid transfer sweep without a GPU: the environment (exit 2), not the flags.
  const test::ToolResult measure =
      test::run_tool({"sweep", "conv2d", "--batch", "4", "--transfer", "h2d_input"}, no_gpu);
  EXPECT_EQ(measure.exit_code, 2) << measure.err;
  EXPECT_MENTIONS(measure.err, "no GPU");
}

}  // namespace
}  // namespace timeroof
