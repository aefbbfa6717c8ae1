// CPU tier, the pointwise, softmax and pool families without a GPU: the axes
// issue 18's contract fixes, bounded and valid default sweeps, analytic FLOPs,
// bytes and the own kernels' FADD / FMUL / FFMA counts worked by hand, and
// usage errors that name the key and the fix.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/family.hpp"
#include "sweeps/pointwise_problem.hpp"
#include "sweeps/pool_problem.hpp"
#include "sweeps/softmax_problem.hpp"
#include "sweeps/spec.hpp"
#include "tests/support/family_checks.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using nlohmann::json;

using test::checked_axis_keys;
using test::problem_error;

void expect_valid_defaults(const char* name, std::size_t count) {
  const OperatorFamily& family = find_family(name);
  const std::vector<json> points = family.default_points();
  EXPECT_EQ(points.size(), count) << name;
  std::set<std::string> distinct;
  for (const json& point : points) {
    EXPECT_NO_THROW((void)family.problem(point)) << point.dump();
    distinct.insert(point.dump());
  }
  EXPECT_EQ(distinct.size(), points.size()) << name;
}

TEST(MemoryBoundFamilies, AxesFollowTheContractAndDefaultsAreValid) {
  EXPECT_EQ(checked_axis_keys(find_family("pointwise")),
            (std::vector<std::string>{"op", "batch", "elements", "precision", "implementation"}));
  EXPECT_EQ(checked_axis_keys(find_family("softmax")),
            (std::vector<std::string>{"batch", "rows", "columns", "precision", "implementation"}));
  EXPECT_EQ(checked_axis_keys(find_family("pool")),
            (std::vector<std::string>{"batch", "channels", "height", "width", "window", "stride",
                                      "pad", "mode", "precision", "implementation"}));
  expect_valid_defaults("pointwise", 11);
  expect_valid_defaults("softmax", 8);
  expect_valid_defaults("pool", 8);
  for (const char* op : {"add", "mul", "relu", "gelu", "silu", "silu_mul"})
    for (const char* precision : {"fp32", "fp16", "bf16"})
      for (const char* implementation : {"own", "cudnn"})
        EXPECT_NO_THROW(
            (void)find_family("pointwise")
                .problem(
                    {{"op", op}, {"precision", precision}, {"implementation", implementation}}));
  for (const char* mode : {"max", "avg"})
    EXPECT_NO_THROW((void)find_family("pool").problem({{"mode", mode}}));
}

TEST(PointwiseProblem, CountsWorkedByHand) {
  // gelu bf16, 4096 x 4096: 9 FLOPs an element; a and y at 2 bytes.
  PointwiseProblem gelu(pointwise_spec_from_params(
      {{"op", "gelu"}, {"batch", 4096}, {"elements", 4096}, {"precision", "bf16"}}));
  EXPECT_DOUBLE_EQ(gelu.flops(), 9.0 * 16'777'216);
  EXPECT_DOUBLE_EQ(gelu.min_bytes(), 2.0 * 2 * 16'777'216);
  EXPECT_EQ(gelu.op(), "pointwise_gelu");
  EXPECT_EQ(gelu.inputs().size(), 1u);
  // add fp32, 3 x 10: a, b and y at 4 bytes.
  PointwiseProblem add(pointwise_spec_from_params(
      {{"op", "add"}, {"batch", 3}, {"elements", 10}, {"precision", "fp32"}}));
  EXPECT_DOUBLE_EQ(add.flops(), 30);
  EXPECT_DOUBLE_EQ(add.min_bytes(), 3 * 30 * 4);
  ASSERT_EQ(add.inputs().size(), 2u);
  EXPECT_EQ(add.inputs()[1].role, "b");
  EXPECT_EQ(add.outputs().at(0).bytes, 120u);
  // silu_mul: two inputs, 6 FLOPs (silu 5 and the product), 4 of them on the FMA pipe.
  EXPECT_EQ(pointwise_input_count(PointwiseOp::silu_mul), 2);
  EXPECT_EQ(pointwise_flops_per_element(PointwiseOp::silu_mul), 6);
  EXPECT_EQ(pointwise_fma_pipe_flops_per_element(PointwiseOp::silu_mul), 4);
  EXPECT_EQ(pointwise_fma_pipe_flops_per_element(PointwiseOp::relu), 0);
  EXPECT_EQ(pointwise_fma_pipe_flops_per_element(PointwiseOp::gelu), 7);
  EXPECT_EQ(add.math_mode(), MathMode::fma_only);
}

TEST(SoftmaxProblem, CountsAndTheOwnKernelsLaunchWorkedByHand) {
  SoftmaxProblem small(
      softmax_spec_from_params({{"batch", 2}, {"rows", 3}, {"columns", 5}, {"precision", "fp16"}}));
  EXPECT_DOUBLE_EQ(small.flops(), 5.0 * 30);
  EXPECT_DOUBLE_EQ(small.min_bytes(), 2.0 * 30 * 2);
  // 5 columns of fp16 are no whole 8-value vector: single values, a warp per row;
  // per row 4 x 5 + 32 (max x log2 e) + 160 (the warp's sum).
  SoftmaxLaunch launch = softmax_launch(small.spec());
  EXPECT_EQ(launch.vector_width, 1);
  EXPECT_TRUE(launch.warp_per_row);
  EXPECT_DOUBLE_EQ(softmax_own_fma_pipe_flops(small.spec()), 6 * (20 + 32 + 160));
  // A 32000 vocabulary row in fp32: 4-value vectors, ceil(32000 / 32) = 1000 -> 1024 threads.
  SoftmaxSpec vocabulary = softmax_spec_from_params(
      {{"batch", 1}, {"rows", 4}, {"columns", 32000}, {"precision", "fp32"}});
  launch = softmax_launch(vocabulary);
  EXPECT_EQ(launch.vector_width, 4);
  EXPECT_FALSE(launch.warp_per_row);
  EXPECT_EQ(launch.threads_per_row, 1024);
  EXPECT_DOUBLE_EQ(softmax_own_fma_pipe_flops(vocabulary),
                   4 * (4.0 * 32000 + 1024 + 5 * 1024 + 160));
  // 1024 columns of bf16 fit a warp (32 values a lane), 1056 do not (64 threads).
  EXPECT_TRUE(softmax_launch(softmax_spec_from_params({{"columns", 1024}})).warp_per_row);
  launch = softmax_launch(softmax_spec_from_params({{"columns", 1056}, {"precision", "bf16"}}));
  EXPECT_FALSE(launch.warp_per_row);
  EXPECT_EQ(launch.threads_per_row, 64);
  EXPECT_EQ(launch.vector_width, 8);
}

TEST(PoolProblem, CountsWorkedByHand) {
  // ResNet-50's max pool: 3x3, stride 2, pad 1 on 112 -> 56. Along 112 the first
  // window holds 2 rows, the other 55 hold 3: 167 taps; 167^2 per image and channel.
  PoolProblem max(pool_spec_from_params(
      {{"batch", 1}, {"channels", 64}, {"height", 112}, {"width", 112}, {"precision", "fp16"}}));
  EXPECT_EQ(pool_output_height(max.spec()), 56);
  EXPECT_DOUBLE_EQ(pool_window_taps(max.spec()), 167.0 * 167);
  EXPECT_DOUBLE_EQ(max.flops(), 64.0 * 167 * 167);
  EXPECT_DOUBLE_EQ(max.min_bytes(), (64.0 * 112 * 112 + 64.0 * 56 * 56) * 2);
  EXPECT_EQ(max.op(), "pool_max");
  // Its global average pool: 7x7 on 7x7 -> 1x1, 49 adds and a multiply per output.
  PoolProblem avg(pool_spec_from_params({{"batch", 32},
                                         {"channels", 2048},
                                         {"height", 7},
                                         {"width", 7},
                                         {"window", 7},
                                         {"stride", 1},
                                         {"pad", 0},
                                         {"mode", "avg"},
                                         {"precision", "fp32"}}));
  EXPECT_DOUBLE_EQ(avg.flops(), 32.0 * 2048 * 50);
  EXPECT_DOUBLE_EQ(avg.min_bytes(), 32.0 * 2048 * (49 + 1) * 4);
  EXPECT_EQ(avg.params()["output_height"], 1);
}

TEST(MemoryBoundSpecs, BadValuesAreOneLineErrorsNamingTheFix) {
  std::string m = problem_error("pool", {{"height", 7}, {"width", 7}, {"window", 9}, {"pad", 0}});
  EXPECT_MENTIONS(m, "window = 9 is larger than height + 2 pad = 7");
  EXPECT_MENTIONS(m, "allowed: window <= 7");
  m = problem_error("pool", {{"window", 3}, {"pad", 2}});
  EXPECT_MENTIONS(m, "allowed: 0 <= pad <= window / 2");
  m = problem_error("pool", {{"mode", "min"}});
  EXPECT_MENTIONS(m, "max, avg");
  m = problem_error("pointwise", {{"op", "tanh"}});
  EXPECT_MENTIONS(m, "add, mul, relu, gelu, silu, silu_mul");
  m = problem_error("pointwise", {{"precision", "tf32"}});
  EXPECT_MENTIONS(m, "fp32, fp16, bf16");
  m = problem_error("softmax", {{"implementation", "torch"}});
  EXPECT_MENTIONS(m, "own, cudnn");
  m = problem_error("softmax", {{"columns", 40000}});
  EXPECT_MENTIONS(m, "allowed: columns <= 32768, or implementation = cudnn");
  EXPECT_NO_THROW(
      (void)find_family("softmax").problem({{"columns", 40000}, {"implementation", "cudnn"}}));
  m = problem_error("pointwise", {{"elements", 0}});
  EXPECT_MENTIONS(m, "elements = 0");
  m = problem_error("pointwise",
                    {{"batch", INT_MAX}, {"elements", INT_MAX}, {"precision", "fp32"}});
  EXPECT_MENTIONS(m, "smaller batch or elements");
  m = problem_error("pool", {{"kernel", 3}});
  EXPECT_MENTIONS(m, "unknown key 'kernel'");
}

TEST(MemoryBoundSpecs, FlagsBuildTheirPoints) {
  const SweepSpec flags =
      spec_from_flags("pointwise", {{"--op", "gelu,silu"}, {"--precision", "fp16,bf16"}});
  ASSERT_EQ(flags.points.size(), 4u);
  for (const json& point : flags.points) EXPECT_EQ(point["implementation"], "own");
  const SweepSpec pool = spec_from_flags("pool", {{"--mode", "avg"}, {"--window", "2,3"}});
  EXPECT_EQ(pool.points.size(), 2u);
}

}  // namespace
}  // namespace timeroof
