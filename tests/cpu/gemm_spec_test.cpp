// CPU tier, GEMM without a GPU: the family's axes and default sweep, analytic
// FLOPs and bytes worked by hand, the types and precision each input takes,
// validation that names the field and the fix (transposes and leading dimensions
// of fp8 and int8, sizes, unknown values), flag and TOML sweeps, the dry run, and
// the counter plan's Tensor-Core quantities for fp8 and int8.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "counters/metric_catalog.hpp"
#include "sweeps/family.hpp"
#include "sweeps/gemm_problem.hpp"
#include "sweeps/spec.hpp"
#include "tests/support/family_checks.hpp"
#include "tests/support/gemm_shape.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using nlohmann::json;
using test::usage_message;

using test::gemm_shape;

std::string problem_error(const json& point) {
  return test::problem_error("gemm", point);
}

TEST(GemmFamily, AxesHaveHelpAndTheDefaultSweepIsBoundedAndValid) {
  const OperatorFamily& family = find_family("gemm");
  EXPECT_EQ(test::checked_axis_keys(family),
            (std::vector<std::string>{"m", "n", "k", "batch", "trans_a", "trans_b", "precision",
                                      "epilogue", "algo"}));
  const std::vector<json> points = family.default_points();
  EXPECT_EQ(points.size(), 45u);
  std::set<std::string> distinct, precisions, epilogues;
  bool batched = false;
  for (const json& point : points) {
    EXPECT_NO_THROW((void)family.problem(point)) << point.dump();
    distinct.insert(point.dump());
    precisions.insert(point.at("precision").get<std::string>());
    epilogues.insert(point.at("epilogue").get<std::string>());
    batched = batched || point.at("batch").get<int>() > 1;
  }
  EXPECT_EQ(distinct.size(), points.size());
  EXPECT_EQ(precisions, (std::set<std::string>{"fp32", "tf32", "fp16", "bf16", "fp8_e4m3",
                                               "fp8_e5m2", "int8"}));
  EXPECT_EQ(epilogues.size(), 6u);
  EXPECT_TRUE(batched);
  EXPECT_NO_THROW((void)default_spec("gemm"));
}

TEST(GemmFamily, TheDefaultSweepsDryRunStaysUnderTwoMinutes) {
  const OperatorFamily& family = find_family("gemm");
  double total_s = 0;
  for (const json& point : family.default_points())
    total_s += estimate_point(point, family, DryRunRoofs{}).point_s;
  EXPECT_GT(total_s, 10.0);
  EXPECT_LT(total_s, 120.0);
  const std::string listing = describe_points(default_spec("gemm"));
  EXPECT_MENTIONS(listing, "fp8_e4m3");
  EXPECT_MENTIONS(listing, "11008");
}

TEST(GemmSpec, FlopsByHand) {
  // 2 m n k: 2 x 2 x 3 x 4 = 48; the batch multiplies it.
  EXPECT_EQ(gemm_flops(gemm_shape(2, 3, 4, GemmInputs::fp16)), 48.0);
  EXPECT_EQ(gemm_flops(gemm_shape(2, 3, 4, GemmInputs::fp16, 5)), 240.0);
  // LLaMA-7B's MLP up-projection over 4096 tokens: 2 x 4096 x 11008 x 4096.
  EXPECT_EQ(gemm_flops(gemm_shape(4096, 11008, 4096, GemmInputs::bf16)), 369'367'187'456.0);
  // Epilogues add per output (6 outputs): bias 1, relu 1, gelu 9, bias_gelu 10.
  GemmSpec spec = gemm_shape(2, 3, 4, GemmInputs::fp16);
  spec.epilogue = GemmEpilogue::bias;
  EXPECT_EQ(gemm_flops(spec), 54.0);
  spec.epilogue = GemmEpilogue::relu;
  EXPECT_EQ(gemm_flops(spec), 54.0);
  spec.epilogue = GemmEpilogue::gelu;
  EXPECT_EQ(gemm_flops(spec), 102.0);
  spec.epilogue = GemmEpilogue::bias_relu;
  EXPECT_EQ(gemm_flops(spec), 60.0);
  spec.epilogue = GemmEpilogue::bias_gelu;
  EXPECT_EQ(gemm_flops(spec), 108.0);
  // The product alone stays visible for the counters.
  EXPECT_EQ(gemm_product_flops(spec), 48.0);
}

TEST(GemmSpec, MinimumBytesByHand) {
  // fp16 with a bias: A 2x4, B 4x3, D 2x3, bias 2, 2 bytes each: (8 + 12 + 6 + 2) x 2.
  GemmSpec fp16 = gemm_shape(2, 3, 4, GemmInputs::fp16);
  fp16.epilogue = GemmEpilogue::bias_relu;
  EXPECT_EQ(gemm_min_bytes(fp16), 56.0);
  // fp8 e4m3 with a bias: A 16x32 and B 32x8 at 1 byte, D 16x8 and the bias 16 in bf16:
  // 512 + 256 + 256 + 32.
  GemmSpec fp8 = gemm_shape(16, 8, 32, GemmInputs::fp8_e4m3);
  fp8.epilogue = GemmEpilogue::bias;
  EXPECT_EQ(gemm_min_bytes(fp8), 1056.0);
  // int8 batch 3: A 4x8x3 and B 8x2x3 at 1 byte, D 4x2x3 int32: 96 + 48 + 96.
  EXPECT_EQ(gemm_min_bytes(gemm_shape(4, 2, 8, GemmInputs::int8, 3)), 240.0);
  // tf32 stores fp32: (8 + 12 + 6) x 4.
  EXPECT_EQ(gemm_min_bytes(gemm_shape(2, 3, 4, GemmInputs::tf32)), 104.0);
}

TEST(GemmSpec, TypesPrecisionAndIdentity) {
  const GemmProblem e5m2(gemm_shape(16, 16, 16, GemmInputs::fp8_e5m2));
  EXPECT_EQ(e5m2.precision(), Precision::fp8);
  EXPECT_EQ(e5m2.math_mode(), MathMode::tensor);
  EXPECT_EQ(e5m2.op(), "gemm");
  const json params = e5m2.params();
  EXPECT_EQ(params["a_type"], "fp8_e5m2");
  EXPECT_EQ(params["b_type"], "fp8_e4m3");  // cuBLASLt has no e5m2 x e5m2
  EXPECT_EQ(params["d_type"], "bf16");
  EXPECT_EQ(params["inputs"], "fp8_e5m2");
  EXPECT_EQ(params["algo"], "heuristic");
  EXPECT_FALSE(params.contains("bias_type"));

  const GemmProblem int8(gemm_shape(4, 4, 4, GemmInputs::int8, 2));
  EXPECT_EQ(int8.precision(), Precision::int8);
  EXPECT_EQ(int8.op(), "gemm_batched");
  EXPECT_EQ(int8.params()["d_type"], "int32");
  EXPECT_EQ(GemmProblem(gemm_shape(4, 4, 4, GemmInputs::fp32)).math_mode(), MathMode::fma_only);
  EXPECT_EQ(GemmProblem(gemm_shape(4, 4, 4, GemmInputs::tf32)).math_mode(), MathMode::tensor);
  EXPECT_EQ(GemmProblem(gemm_shape(4, 4, 4, GemmInputs::tf32)).precision(), Precision::tf32);

  // A in, D out; B and the bias stay resident.
  const std::vector<TensorArgument> in = int8.inputs(), out = int8.outputs();
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].role, "a");
  EXPECT_EQ(in[0].bytes, 32u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes, 128u);
}

TEST(GemmSpec, AFixedAlgorithmIsRecordedInTheParams) {
  const std::unique_ptr<Problem> fixed =
      find_family("gemm").problem({{"m", 64}, {"n", 64}, {"k", 64}, {"algo", 3}});
  EXPECT_EQ(fixed->params()["algo"], 3);
  EXPECT_EQ(fixed->params()["algorithm_selection"], "fixed");
  EXPECT_EQ(gemm_spec_from_params({{"algo", "heuristic"}}).algo, std::nullopt);
}

TEST(GemmSpec, Fp8AndInt8TakeOnlyTnAndSayHow) {
  std::string m = problem_error({{"precision", "int8"}, {"trans_a", "n"}});
  EXPECT_MENTIONS(m, "int8");
  EXPECT_MENTIONS(m, "allowed: trans_a = t, trans_b = n");
  m = problem_error({{"precision", "fp8_e4m3"}, {"trans_b", "t"}});
  EXPECT_MENTIONS(m, "TN");
  EXPECT_MENTIONS(m, "allowed: trans_a = t, trans_b = n");
  m = problem_error({{"precision", "fp8_e5m2"}, {"m", 24}});
  EXPECT_MENTIONS(m, "multiples of 16");
  EXPECT_MENTIONS(m, "m = 32");
  m = problem_error({{"precision", "int8"}, {"k", 1022}});
  EXPECT_MENTIONS(m, "multiples of 4");
  m = problem_error({{"precision", "int8"}, {"epilogue", "bias"}});
  EXPECT_MENTIONS(m, "allowed: epilogue = none");
  m = problem_error({{"precision", "int8"}, {"k", kGemmInt8MaxK + 4}});
  EXPECT_MENTIONS(m, "int32 accumulator");
  // Every other type takes every transpose.
  for (const char* precision : {"fp32", "tf32", "fp16", "bf16"})
    for (const char* a : {"n", "t"})
      for (const char* b : {"n", "t"})
        EXPECT_NO_THROW((void)find_family("gemm").problem(
            {{"precision", precision}, {"trans_a", a}, {"trans_b", b}, {"m", 3}}));
}

TEST(GemmSpec, BadValuesAreOneLineErrorsNamingTheKey) {
  std::string m = problem_error({{"m", 0}});
  EXPECT_MENTIONS(m, "m = 0 is out of range; allowed: 1 .. ");
  m = problem_error({{"k", -5}});
  EXPECT_MENTIONS(m, "k = -5");
  m = problem_error({{"precision", "fp4"}});
  EXPECT_MENTIONS(m, "precision");
  EXPECT_MENTIONS(m, "fp8_e5m2");
  m = problem_error({{"epilogue", "swish"}});
  EXPECT_MENTIONS(m, "bias_gelu");
  m = problem_error({{"trans_a", "x"}});
  EXPECT_MENTIONS(m, "trans_a");
  m = problem_error({{"algo", 32}});
  EXPECT_MENTIONS(m, "algo = 32");
  EXPECT_MENTIONS(m, "0 .. 31");
  m = problem_error({{"algo", "best"}});
  EXPECT_MENTIONS(m, "heuristic");
  m = problem_error({{"mm", 4}});
  EXPECT_MENTIONS(m, "unknown key 'mm'");
  m = problem_error({{"m", INT_MAX}, {"n", INT_MAX}, {"k", INT_MAX}, {"batch", INT_MAX}});
  EXPECT_MENTIONS(m, "larger than");
  EXPECT_MENTIONS(m, "smaller m, n, k or batch");
  for (const std::string& message :
       {problem_error({{"m", 0}}), problem_error({{"precision", "int8"}, {"trans_a", "n"}})})
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(GemmSweeps, FlagsAndTomlBuildTheirPoints) {
  const SweepSpec flags = spec_from_flags(
      "gemm", {{"--m", "128,256"}, {"--n", "512"}, {"--precision", "int8,fp16"}, {"--batch", "4"}});
  ASSERT_EQ(flags.points.size(), 4u);
  for (const json& point : flags.points) {
    EXPECT_EQ(point["n"], 512);
    EXPECT_EQ(point["batch"], 4);
    EXPECT_EQ(point["trans_a"], "t");
  }
  const std::string bad = usage_message([] {
    (void)spec_from_flags("gemm", {{"--precision", "int8"}, {"--trans-a", "n"}});
  });
  EXPECT_MENTIONS(bad, "trans_a = t, trans_b = n");

  const SweepSpec toml = spec_from_toml_text(
      "[sweep]\nfamily = \"gemm\"\n[axes]\nm = \"1024..4096:x2\"\nprecision = "
      "[\"bf16\", \"fp8_e4m3\"]\nepilogue = \"bias_gelu\"\n[[point]]\nm = 64\nalgo = 2\n",
      "gemm.toml",
      [](const std::string& name) -> const OperatorFamily& { return find_family(name); });
  ASSERT_EQ(toml.points.size(), 7u);
  EXPECT_EQ(toml.points.back()["algo"], 2);
  EXPECT_EQ(toml.points.front()["epilogue"], "bias_gelu");
}

TEST(GemmCounters, TheCatalogPlansEachPrecisionsTensorCoreQuantity) {
  const auto planned = [](GemmInputs inputs) {
    const GemmProblem problem(gemm_shape(16, 16, 16, inputs));
    OperatorNeeds needs;
    needs.precision = problem.precision();
    needs.math = problem.math_mode();
    return quantities_for(needs);
  };
  const auto has = [](const std::vector<Quantity>& q, Quantity x) {
    return std::find(q.begin(), q.end(), x) != q.end();
  };
  EXPECT_TRUE(has(planned(GemmInputs::fp8_e4m3), Quantity::tensor_fp8_flops));
  EXPECT_TRUE(has(planned(GemmInputs::fp8_e5m2), Quantity::tensor_fp8_flops));
  EXPECT_TRUE(has(planned(GemmInputs::int8), Quantity::tensor_int8_ops));
  EXPECT_TRUE(has(planned(GemmInputs::fp16), Quantity::tensor_fp16_flops));
  EXPECT_TRUE(has(planned(GemmInputs::bf16), Quantity::tensor_bf16_flops));
  EXPECT_TRUE(has(planned(GemmInputs::tf32), Quantity::tensor_tf32_flops));
  EXPECT_FALSE(has(planned(GemmInputs::fp32), Quantity::tensor_tf32_flops));
  EXPECT_TRUE(has(planned(GemmInputs::fp32), Quantity::fp32_flops));
  // Hopper counts both; the plan keeps them.
  const MetricCatalog hopper = MetricCatalog::for_chip("GH100");
  EXPECT_TRUE(hopper.has(Quantity::tensor_fp8_flops));
  EXPECT_TRUE(hopper.has(Quantity::tensor_int8_ops));
}

}  // namespace
}  // namespace timeroof
