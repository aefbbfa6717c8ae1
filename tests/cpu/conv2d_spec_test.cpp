// CPU tier, Conv2D without a GPU: output shape, analytic FLOPs and bytes worked by
// hand (the paper's baseline), spec validation that names the field, the cuDNN
// API choice (cudnn_api graph | legacy, graph engine names, their parsing and the
// usage errors of names of the other API), the operator's identity and params,
// the failure-to-status mapping, and the double-precision reference convolution
// against hand-computed values and its own adjoints.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <new>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cudnn.hpp"
#include "sweeps/conv2d.hpp"
#include "sweeps/cudnn_graph.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/family.hpp"
#include "sweeps/operator.hpp"
#include "sweeps/spec.hpp"
#include "tests/support/paper_layer.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using test::usage_message;

TEST(Conv2dSpec, BaselineOutputShapeByHand) {
  // P = floor((112 + 2*1 - 1*(3-1) - 1) / 2) + 1 = floor(111 / 2) + 1 = 56.
  const Conv2dOutputShape out = conv2d_output_shape(paper_conv2d_spec());
  EXPECT_EQ(out.p, 56);
  EXPECT_EQ(out.q, 56);
  Conv2dSpec no_pad = paper_conv2d_spec();
  no_pad.pad_h = no_pad.pad_w = 0;  // floor(109 / 2) + 1 = 55
  EXPECT_EQ(conv2d_output_shape(no_pad).p, 55);
}

TEST(Conv2dSpec, OutputShapeWithStrideDilationAndAsymmetry) {
  Conv2dSpec spec;
  spec.h = 10;
  spec.w = 7;
  spec.r = 3;
  spec.s = 3;
  spec.stride_h = 3;    // floor((10 - 2 - 1) / 3) + 1 = 3
  spec.dilation_w = 2;  // filter spans 5 columns: 7 - 5 + 1 = 3
  spec.pad_w = 2;       // 7 + 4 - 5 + 1 = 7
  const Conv2dOutputShape out = conv2d_output_shape(spec);
  EXPECT_EQ(out.p, 3);
  EXPECT_EQ(out.q, 7);
  spec.h = 1;  // (1 - 2 - 1) / 3 -> floor(-2/3) = -1, + 1 = 0: no output row
  EXPECT_EQ(conv2d_output_shape(spec).p, 0);
}

TEST(Conv2dSpec, BaselineFlopsAndBytesByHand) {
  const Conv2dSpec spec = paper_conv2d_spec();
  // 2 N K C R S P Q = 2 * 16 * 64 * 64 * 9 * 56 * 56
  const double flops = 2.0 * 16 * 64 * 64 * 9 * 3136;
  EXPECT_DOUBLE_EQ(flops, 3'699'376'128.0);
  EXPECT_DOUBLE_EQ(conv2d_flops(spec), flops);
  // x 16*112*112*64 = 12,845,056; w 64*3*3*64 = 36,864; y 16*56*56*64 = 3,211,264.
  EXPECT_DOUBLE_EQ(conv2d_input_elements(spec), 12'845'056.0);
  EXPECT_DOUBLE_EQ(conv2d_filter_elements(spec), 36'864.0);
  EXPECT_DOUBLE_EQ(conv2d_output_elements(spec), 3'211'264.0);
  EXPECT_DOUBLE_EQ(conv2d_min_bytes(spec), 2.0 * 16'093'184);  // fp16: 32,186,368 B
  Conv2dSpec fp32 = spec;
  fp32.precision = Precision::fp32;
  EXPECT_DOUBLE_EQ(conv2d_min_bytes(fp32), 4.0 * 16'093'184);
  Conv2dSpec tf32 = spec;
  tf32.precision = Precision::tf32;  // fp32 storage
  EXPECT_DOUBLE_EQ(conv2d_min_bytes(tf32), 4.0 * 16'093'184);
  // The same counts for the backward directions.
  for (ConvDirection d : {ConvDirection::bwd_data, ConvDirection::bwd_filter}) {
    Conv2dSpec backward = spec;
    backward.direction = d;
    EXPECT_DOUBLE_EQ(conv2d_flops(backward), flops);
    EXPECT_DOUBLE_EQ(conv2d_min_bytes(backward), 2.0 * 16'093'184);
  }
}

TEST(Conv2dSpec, GroupedFlopsAndBytesByHand) {
  Conv2dSpec spec;
  spec.n = 2;
  spec.c = 8;
  spec.h = spec.w = 5;
  spec.k = 6;
  spec.r = spec.s = 3;
  spec.groups = 2;  // each filter sees C/groups = 4 channels; P = Q = 3
  EXPECT_DOUBLE_EQ(conv2d_flops(spec), 2.0 * 2 * 6 * 4 * 9 * 3 * 3);
  EXPECT_DOUBLE_EQ(conv2d_filter_elements(spec), 6.0 * 4 * 9);
  EXPECT_DOUBLE_EQ(conv2d_min_bytes(spec), 4.0 * (2 * 8 * 25 + 6 * 4 * 9 + 2 * 6 * 9));
}

TEST(Conv2dSpec, ValidationNamesTheFieldAndTheAllowedValues) {
  auto with = [](auto change) {
    Conv2dSpec spec = paper_conv2d_spec();
    change(spec);
    return usage_message([&] { validate(spec); });
  };
  std::string m = with([](Conv2dSpec& s) { s.groups = 3; });
  EXPECT_MENTIONS(m, "groups = 3");
  EXPECT_MENTIONS(m, "c = 64");
  EXPECT_MENTIONS(m, "allowed: a common divisor of c and k");
  m = with([](Conv2dSpec& s) {
    s.groups = 2;
    s.k = 63;
  });
  EXPECT_MENTIONS(m, "k = 63");
  m = with([](Conv2dSpec& s) { s.n = 0; });
  EXPECT_MENTIONS(m, "n = 0");
  EXPECT_MENTIONS(m, "allowed: 1 .. 2147483647");
  m = with([](Conv2dSpec& s) { s.pad_w = -1; });
  EXPECT_MENTIONS(m, "pad_w = -1");
  EXPECT_MENTIONS(m, "allowed: 0 ..");
  m = with([](Conv2dSpec& s) { s.c = std::int64_t{1} << 32; });
  EXPECT_MENTIONS(m, "c = 4294967296");
  m = with([](Conv2dSpec& s) { s.stride_h = 0; });
  EXPECT_MENTIONS(m, "stride_h = 0");
  Conv2dSpec no_p = paper_conv2d_spec();
  no_p.h = 2;
  no_p.pad_h = 0;
  m = usage_message([&] { validate(no_p); });
  EXPECT_MENTIONS(m,
                  "conv2d: output height p = (h + 2 pad_h - dilation_h (r - 1) - 1) / stride_h + "
                  "1 = " +
                      std::to_string(conv2d_output_shape(no_p).p) + " for h = 2, pad_h = 0, r = " +
                      std::to_string(no_p.r) + ", dilation_h = " + std::to_string(no_p.dilation_h) +
                      "; allowed: p >= 1, i.e. h + 2 pad_h >= dilation_h (r - 1) + 1");
  Conv2dSpec no_q = paper_conv2d_spec();
  no_q.dilation_w = 100;
  m = usage_message([&] { validate(no_q); });
  EXPECT_MENTIONS(
      m,
      "conv2d: output width q = (w + 2 pad_w - dilation_w (s - 1) - 1) / stride_w + "
      "1 = " +
          std::to_string(conv2d_output_shape(no_q).q) + " for w = " + std::to_string(no_q.w) +
          ", pad_w = " + std::to_string(no_q.pad_w) + ", s = " + std::to_string(no_q.s) +
          ", dilation_w = 100; allowed: q >= 1, i.e. w + 2 pad_w >= dilation_w (s - "
          "1) + 1");
  m = with([](Conv2dSpec& s) {
    s.precision = Precision::fp32;
    s.math = MathMode::tensor;
  });
  EXPECT_MENTIONS(m, "math = tensor");
  EXPECT_MENTIONS(m, "tf32");
  m = with([](Conv2dSpec& s) {
    s.precision = Precision::tf32;
    s.math = MathMode::fma_only;
  });
  EXPECT_MENTIONS(m, "math = fma_only");
  m = with([](Conv2dSpec& s) { s.algorithm = "fastest"; });
  EXPECT_MENTIONS(m, "algorithm = 'fastest' is not a fwd algorithm");
  EXPECT_MENTIONS(m,
                  "allowed: heuristic, exhaustive, eng<N>[ <knob>=<value>...] (cudnn_api = graph)");
  EXPECT_MENTIONS(m, "heuristic, exhaustive, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM");
  EXPECT_MENTIONS(m, "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED");
  m = with([](Conv2dSpec& s) { s.algorithm = "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1"; });
  EXPECT_MENTIONS(m, "is not a fwd algorithm");
  m = with([](Conv2dSpec& s) {
    s.api = CudnnApi::legacy;
    s.algorithm = "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1";
  });
  EXPECT_MENTIONS(m, "is not a fwd algorithm");
  // The operator validates on construction, before any GPU work.
  Conv2dSpec bad = paper_conv2d_spec();
  bad.c = 0;
  EXPECT_MENTIONS(usage_message([&] { Conv2d op(bad); }), "c = 0");
  EXPECT_NO_THROW(validate(paper_conv2d_spec()));
}

TEST(Conv2dSpec, CudnnApiDefaultsToGraphAndParses) {
  EXPECT_EQ(Conv2dSpec{}.api, CudnnApi::graph);
  for (CudnnApi api : {CudnnApi::graph, CudnnApi::legacy})
    EXPECT_EQ(parse_cudnn_api(to_string(api)), api);
  EXPECT_STREQ(to_string(CudnnApi::graph), "graph");
  EXPECT_STREQ(to_string(CudnnApi::legacy), "legacy");
  const std::string m = usage_message([] { parse_cudnn_api("backend"); });
  EXPECT_MENTIONS(m, "cudnn_api: unknown value 'backend'; allowed: graph, legacy");
  Conv2dSpec bad = paper_conv2d_spec();
  bad.api = static_cast<CudnnApi>(7);
  EXPECT_MENTIONS(usage_message([&] { validate(bad); }), "cudnn_api is not a known value");
}

// Legacy algorithm names only with cudnn_api = legacy, graph engines only with
// graph; both searches with either.
TEST(Conv2dSpec, AlgorithmNamesBelongToTheirApi) {
  auto with = [](CudnnApi api, const std::string& algorithm) {
    Conv2dSpec spec = paper_conv2d_spec();
    spec.api = api;
    spec.algorithm = algorithm;
    return usage_message([&] { validate(spec); });
  };
  for (CudnnApi api : {CudnnApi::graph, CudnnApi::legacy})
    for (const char* search : {"heuristic", "exhaustive"}) {
      Conv2dSpec spec = paper_conv2d_spec();
      spec.api = api;
      spec.algorithm = search;
      EXPECT_NO_THROW(validate(spec)) << search;
    }
  std::string m = with(CudnnApi::graph, "CUDNN_CONVOLUTION_FWD_ALGO_GEMM");
  EXPECT_MENTIONS(m, "algorithm = 'CUDNN_CONVOLUTION_FWD_ALGO_GEMM' is a legacy cuDNN algorithm");
  EXPECT_MENTIONS(m, "needs cudnn_api = legacy");
  EXPECT_MENTIONS(m, "allowed with cudnn_api = graph: heuristic, exhaustive, eng<N>");
  m = with(CudnnApi::legacy, "eng28 tile_size=3");
  EXPECT_MENTIONS(m, "algorithm = 'eng28 tile_size=3' is a cuDNN graph engine");
  EXPECT_MENTIONS(m, "needs cudnn_api = graph");
  EXPECT_MENTIONS(m,
                  "allowed with cudnn_api = legacy: heuristic, exhaustive, CUDNN_CONVOLUTION_FWD");
  // Engine names, as Conv2d::algorithm() prints them, any case.
  for (const char* name : {"eng0", "eng28 tile_size=3 edge=1", "ENG28 EDGE=1 Tile_Size=3",
                           "eng7  k2=3", "eng12 split_k_slc=-1"}) {
    Conv2dSpec spec = paper_conv2d_spec();
    spec.algorithm = name;
    EXPECT_NO_THROW(validate(spec)) << name;
    EXPECT_TRUE(is_engine_name(name)) << name;
  }
  EXPECT_FALSE(is_engine_name("heuristic"));
  EXPECT_FALSE(is_engine_name("CUDNN_CONVOLUTION_FWD_ALGO_GEMM"));
  const std::pair<const char*, const char*> bad[] = {
      {"eng", "does not start with eng<N>"},
      {"engine7", "does not start with eng<N>"},
      {"eng-1", "does not start with eng<N>"},
      {"eng28 tile_size", "'tile_size' is not <knob>=<integer>"},
      {"eng28 tile_size=x", "'tile_size=x' is not <knob>=<integer>"},
      {"eng28 warp=2", "unknown knob 'warp'"},
      {"eng28 k999=2", "unknown knob 'k999'"},
      {"eng28 tile_size=1 k2=2", "knob tile_size is given twice"},
  };
  for (const auto& [name, why] : bad) {
    m = with(CudnnApi::graph, name);
    EXPECT_MENTIONS(m, std::string("conv2d: algorithm = '") + name + "' is not an engine name");
    EXPECT_MENTIONS(m, why);
    EXPECT_MENTIONS(m, "allowed: eng<N>, optionally followed by <knob>=<value> pairs");
  }
}

// A plan name reads back as the same engine and knobs, whatever the order and
// case it was written in, and prints the same way again.
TEST(CudnnGraphNames, PlanNamesReadBackAsPrinted) {
  using cudnn_graph::KnobChoice;
  const std::vector<KnobChoice> knobs = {
      {CUDNN_KNOB_TYPE_EDGE, 1}, {CUDNN_KNOB_TYPE_TILE_SIZE, 3}, {CUDNN_KNOB_TYPE_SPLIT_K_SLC, -1}};
  const std::string name = cudnn_graph::plan_name(28, knobs);
  EXPECT_EQ(name, "eng28 tile_size=3 edge=1 split_k_slc=-1");  // knob-type order: 2, 4, 17
  const cudnn_graph::PlanName parsed = cudnn_graph::parse_plan_name(name);
  EXPECT_EQ(parsed.engine, 28);
  ASSERT_EQ(parsed.knobs.size(), 3u);
  EXPECT_EQ(parsed.knobs[0], (KnobChoice{CUDNN_KNOB_TYPE_TILE_SIZE, 3}));
  EXPECT_EQ(parsed.knobs[1], (KnobChoice{CUDNN_KNOB_TYPE_EDGE, 1}));
  EXPECT_EQ(parsed.knobs[2], (KnobChoice{CUDNN_KNOB_TYPE_SPLIT_K_SLC, -1}));
  EXPECT_EQ(cudnn_graph::plan_name(parsed.engine, parsed.knobs), name);
  const cudnn_graph::PlanName other =
      cudnn_graph::parse_plan_name(" Eng28  K4=1 k17=-1 TILE_SIZE=3 ");
  EXPECT_EQ(cudnn_graph::plan_name(other.engine, other.knobs), name);
  EXPECT_EQ(cudnn_graph::plan_name(5, {}), "eng5");
  EXPECT_TRUE(cudnn_graph::parse_plan_name("eng5").knobs.empty());
  EXPECT_EQ(cudnn_graph::knob_name(CUDNN_KNOB_TYPE_TILE_SIZE), "tile_size");
  EXPECT_EQ(cudnn_graph::knob_name(CUDNN_KNOB_TYPE_COUNTS),
            "k44");  // a type this build cannot name
  EXPECT_EQ(cudnn_graph::to_string(CUDNN_NUMERICAL_NOTE_TENSOR_CORE),
            "CUDNN_NUMERICAL_NOTE_TENSOR_CORE");
  EXPECT_EQ(cudnn_graph::to_string(CUDNN_HEUR_MODE_FALLBACK), "CUDNN_HEUR_MODE_FALLBACK");
  EXPECT_EQ(cudnn_graph::to_string(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
            "CUDNN_BACKEND_TENSOR_DESCRIPTOR");
  EXPECT_EQ(cudnn_graph::to_string(CUDNN_TYPE_INT64), "CUDNN_TYPE_INT64");
}

const OperatorFamily& conv_family() {
  static const OperatorFamily family = conv2d_family();
  return family;
}

TEST(Conv2dFamily, CudnnApiAxisParsesAndNamesItsValues) {
  const OperatorFamily& family = conv_family();
  const ParamAxis* api_axis = nullptr;
  for (const ParamAxis& axis : family.axes)
    if (axis.key == "cudnn_api") api_axis = &axis;
  ASSERT_NE(api_axis, nullptr);
  EXPECT_EQ(api_axis->kind, ParamAxis::Kind::text);
  EXPECT_EQ(api_axis->allowed, (std::vector<std::string>{"graph", "legacy"}));
  EXPECT_EQ(api_axis->defaults, nlohmann::json::array({"graph"}));
  EXPECT_FALSE(api_axis->help.empty());
  EXPECT_EQ(baseline_point(family)["cudnn_api"], "graph");
  EXPECT_EQ(parse_value_list(*api_axis, "Legacy,graph"),
            (std::vector<nlohmann::json>{"legacy", "graph"}));
  std::string m = usage_message([&] { parse_value_list(*api_axis, "backend"); });
  EXPECT_MENTIONS(m, "cudnn_api: unknown value 'backend'; allowed: graph, legacy");
  m = usage_message([&] { (void)family.problem({{"cudnn_api", 3}}); });
  EXPECT_MENTIONS(m, "conv2d: cudnn_api = 3 is not a known value; allowed: graph, legacy");

  // Flags: the API and the algorithm of that API.
  SweepSpec spec = spec_from_flags(family, {{"cudnn_api", "graph,legacy"}});
  ASSERT_EQ(spec.points.size(), 2u);
  EXPECT_EQ(spec.points[0]["cudnn_api"], "graph");
  EXPECT_EQ(spec.points[1]["cudnn_api"], "legacy");
  spec = spec_from_flags(
      family, {{"cudnn-api", "legacy"}, {"algorithm", "cudnn_convolution_fwd_algo_gemm"}});
  EXPECT_EQ(spec.points.at(0)["algorithm"], "CUDNN_CONVOLUTION_FWD_ALGO_GEMM");
  spec = spec_from_flags(family, {{"algorithm", "eng28 tile_size=3 edge=1,exhaustive"}});
  ASSERT_EQ(spec.points.size(), 2u);
  EXPECT_EQ(spec.points[0]["algorithm"], "eng28 tile_size=3 edge=1");  // kept as written
  EXPECT_EQ(family.problem(spec.points[0])->params()["algorithm_selection"], "fixed");
  m = usage_message([&] { spec_from_flags(family, {{"algorithm", "eng28 bogus"}}); });
  EXPECT_MENTIONS(m, "algorithm = 'eng28 bogus' is not an engine name");
  m = usage_message([&] {
    spec_from_flags(family, {{"algorithm", "eng3"}, {"cudnn_api", "legacy"}});
  });
  EXPECT_MENTIONS(m, "is a cuDNN graph engine, which needs cudnn_api = graph");
  m = usage_message([&] {
    spec_from_flags(family, {{"algorithm", "CUDNN_CONVOLUTION_FWD_ALGO_GEMM"}});
  });
  EXPECT_MENTIONS(m, "is a legacy cuDNN algorithm, which needs cudnn_api = legacy");
  m = usage_message([&] { spec_from_flags(family, {{"algorithm", "fastest"}}); });
  EXPECT_MENTIONS(m, "algorithm: unknown value 'fastest'");
  EXPECT_MENTIONS(m, "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM");
  EXPECT_MENTIONS(m, "eng<N>[ <knob>=<value>...]");
}

// params() keeps its keys (cudnn_api added), and a point rebuilt from an
// operator's params builds an operator with the same params.
TEST(Conv2dFamily, ParamsRoundTripWithTheApi) {
  const OperatorFamily& family = conv_family();
  for (const char* api : {"graph", "legacy"}) {
    const nlohmann::json point = {{"batch", 4},          {"channels", 8},
                                  {"height", 9},         {"width", 7},
                                  {"filters", 6},        {"filter", 3},
                                  {"stride", 2},         {"pad", 1},
                                  {"dilation", 2},       {"groups", 2},
                                  {"layout", "nchw"},    {"cudnn_api", api},
                                  {"precision", "fp16"}, {"direction", "bwd_data"}};
    const nlohmann::json params = family.problem(point)->params();
    std::set<std::string> keys;
    for (const auto& item : params.items()) keys.insert(item.key());
    EXPECT_EQ(keys,
              (std::set<std::string>{"layout", "n", "c", "h", "w", "k", "r", "s", "stride_h",
                                     "stride_w", "pad_h", "pad_w", "dilation_h", "dilation_w",
                                     "groups", "p", "q", "algorithm_selection", "cudnn_api"}));
    EXPECT_EQ(params["cudnn_api"], api);
    EXPECT_TRUE(params["n"].is_number_integer());
    nlohmann::json rebuilt = {{"batch", params["n"]},
                              {"channels", params["c"]},
                              {"height", params["h"]},
                              {"width", params["w"]},
                              {"filters", params["k"]},
                              {"filter", params["r"]},
                              {"stride", params["stride_h"]},
                              {"pad", params["pad_h"]},
                              {"dilation", params["dilation_h"]},
                              {"groups", params["groups"]},
                              {"layout", params["layout"] == "NCHW" ? "nchw" : "nhwc"},
                              {"cudnn_api", params["cudnn_api"]},
                              {"precision", "fp16"},
                              {"direction", "bwd_data"}};
    EXPECT_EQ(family.problem(rebuilt)->params(), params) << api;
  }
}

TEST(Conv2dSpec, ParsersNameTheFieldAndTheAllowedValues) {
  std::string m = usage_message([] { parse_precision("fp64", kOperatorPrecisions); });
  EXPECT_MENTIONS(m, "precision: unknown value 'fp64'");
  EXPECT_MENTIONS(m, "allowed: fp32, tf32, fp16, bf16");
  EXPECT_MENTIONS(usage_message([] { parse_layout("CHWN"); }), "allowed: NCHW, NHWC");
  EXPECT_MENTIONS(usage_message([] { parse_direction("bwd"); }),
                  "allowed: fwd, bwd_data, bwd_filter");
  EXPECT_MENTIONS(usage_message([] { parse_math_mode("tensor_core"); }), "math: unknown value");
  for (Precision p : kOperatorPrecisions) EXPECT_EQ(parse_precision(to_string(p)), p);
  for (ConvDirection d : {ConvDirection::fwd, ConvDirection::bwd_data, ConvDirection::bwd_filter})
    EXPECT_EQ(parse_direction(to_string(d)), d);
  EXPECT_EQ(parse_layout("NCHW"), Layout::nchw);
  EXPECT_EQ(parse_math_mode("fma_only"), MathMode::fma_only);
}

TEST(Conv2dSpec, OperatorIdentityWithoutGpu) {
  Conv2dSpec spec = paper_conv2d_spec();
  spec.direction = ConvDirection::bwd_filter;
  const Conv2d op(spec);
  EXPECT_EQ(op.op(), "conv2d_bwd_filter");
  EXPECT_EQ(op.precision(), Precision::fp16);
  EXPECT_EQ(op.math_mode(), MathMode::tensor);  // fp16's default
  EXPECT_EQ(op.algorithm(), "");                // known after prepare()
  EXPECT_EQ(op.details(), nlohmann::json::object());
  const nlohmann::json params = op.params();
  EXPECT_EQ(params["layout"], "NHWC");
  EXPECT_TRUE(params["n"].is_number_integer());
  EXPECT_EQ(params["n"], 16);
  EXPECT_EQ(params["p"], 56);
  EXPECT_EQ(params["q"], 56);
  EXPECT_EQ(params["stride_h"], 2);
  EXPECT_EQ(params["algorithm_selection"], "heuristic");
  EXPECT_EQ(params["cudnn_api"], "graph");  // the default
  const Point point = describe(op);
  EXPECT_EQ(point.op, "conv2d_bwd_filter");
  EXPECT_EQ(point.params, params);
  EXPECT_EQ(point.math_mode, "tensor");
  EXPECT_DOUBLE_EQ(point.flops, 3'699'376'128.0);
  EXPECT_DOUBLE_EQ(point.min_bytes, 2.0 * 16'093'184);

  Conv2dSpec fp32 = paper_conv2d_spec();
  fp32.precision = Precision::fp32;
  fp32.api = CudnnApi::legacy;
  fp32.algorithm = "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM";
  const Conv2d fixed(fp32);
  EXPECT_EQ(fixed.math_mode(), MathMode::fma_only);  // fp32's default: no TF32
  EXPECT_EQ(fixed.params()["algorithm_selection"], "fixed");
  EXPECT_EQ(fixed.params()["cudnn_api"], "legacy");
  Conv2dSpec engine = paper_conv2d_spec();
  engine.algorithm = "eng28 tile_size=3";
  EXPECT_EQ(Conv2d(engine).params()["algorithm_selection"], "fixed");
  EXPECT_EQ(conv2d_algorithm_names(ConvDirection::bwd_filter).size(), 7u);
  EXPECT_EQ(conv2d_algorithm_names(ConvDirection::bwd_data)[1],
            "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1");
}

TEST(Conv2dSpec, FailuresMapToPointStatusWithTheLibrarysReason) {
  const GpuError not_supported(
      "cuDNN", 3002,
      "cuDNN error 3002 (CUDNN_STATUS_NOT_SUPPORTED_SHAPE: stride (2) too large) in "
      "cudnnGetConvolutionForwardWorkspaceSize(handle(), x_desc.get()) at /src/conv2d.cpp:321");
  Outcome o = outcome_of(not_supported);
  EXPECT_EQ(o.status, PointStatus::unsupported);
  EXPECT_EQ(o.reason,
            "cuDNN cudnnGetConvolutionForwardWorkspaceSize: CUDNN_STATUS_NOT_SUPPORTED_SHAPE: "
            "stride (2) too large");
  EXPECT_EQ(outcome_of(GpuError("cuDNN", 2000, "CUDNN_STATUS_BAD_PARAM")).status,
            PointStatus::unsupported);
  EXPECT_EQ(outcome_of(GpuError("cuDNN", 2002, "null pointer")).status, PointStatus::failed);
  EXPECT_EQ(outcome_of(GpuError("cuDNN", 4003, "alloc")).status, PointStatus::out_of_memory);
  EXPECT_EQ(outcome_of(GpuError("cuDNN", 4004, "alloc")).status, PointStatus::out_of_memory);
  EXPECT_EQ(outcome_of(GpuError("cuDNN", 5000, "execution failed")).status, PointStatus::failed);
  o = outcome_of(GpuError("CUDA runtime", cudaErrorMemoryAllocation, "no memory"));
  EXPECT_EQ(o.status, PointStatus::out_of_memory);
  EXPECT_EQ(o.reason, "no memory");  // not in check.cpp's shape: kept whole
  EXPECT_EQ(outcome_of(GpuError("CUDA runtime", cudaErrorLaunchFailure, "x")).status,
            PointStatus::failed);
  EXPECT_EQ(outcome_of(GpuError("cuBLAS", 15, "x")).status, PointStatus::unsupported);
  EXPECT_EQ(outcome_of(GpuError("cuBLAS", 3, "x")).status, PointStatus::out_of_memory);

  EXPECT_EQ(guarded([] {}).status, PointStatus::ok);
  EXPECT_EQ(guarded([] { throw std::bad_alloc(); }).status, PointStatus::out_of_memory);
  o = guarded([] { throw usage_error("conv2d: c = 0 is out of range"); });
  EXPECT_EQ(o.status, PointStatus::unsupported);
  EXPECT_EQ(o.reason, "conv2d: c = 0 is out of range");
  o = guarded([] { throw std::runtime_error("boom"); });
  EXPECT_EQ(o.status, PointStatus::failed);
  EXPECT_EQ(o.reason, "boom");
  // A real check macro's message, end to end.
  o = guarded([] { TR_CUDNN_CHECK(CUDNN_STATUS_NOT_SUPPORTED); });
  EXPECT_EQ(o.status, PointStatus::unsupported);
  EXPECT_EQ(o.reason.rfind("cuDNN CUDNN_STATUS_NOT_SUPPORTED: CUDNN_STATUS_NOT_SUPPORTED", 0), 0u)
      << o.reason;
}

TEST(Conv2dSpec, RelativeErrorIsNormwise) {
  const std::vector<double> ref = {10, -1, 0, 2};
  EXPECT_DOUBLE_EQ(relative_error(ref, ref), 0);
  EXPECT_DOUBLE_EQ(relative_error(std::vector<double>{10, -1, 0.5, 2}, ref), 0.05);
  EXPECT_EQ(relative_error(std::vector<double>{10, -1, std::nan(""), 2}, ref),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(relative_error(std::vector<double>{1}, ref), std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(relative_tolerance(Precision::fp32), 1e-5);
  EXPECT_DOUBLE_EQ(relative_tolerance(Precision::tf32), 1e-3);
  EXPECT_DOUBLE_EQ(relative_tolerance(Precision::bf16), 1e-2);
}

// x = 1..9 (3x3), w = [1 2; 3 4], one channel, one filter, NCHW.
Conv2dSpec tiny(std::int64_t stride, std::int64_t pad) {
  Conv2dSpec spec;
  spec.layout = Layout::nchw;
  spec.h = spec.w = 3;
  spec.r = spec.s = 2;
  spec.stride_h = spec.stride_w = stride;
  spec.pad_h = spec.pad_w = pad;
  return spec;
}
const std::vector<double> kX = {1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<double> kW = {1, 2, 3, 4};

TEST(Conv2dReference, TinyForwardByHand) {
  // y[p][q] = sum_rs x[p+r][q+s] w[r][s]: 1+4+12+20, 2+6+15+24, 4+10+21+32, 5+12+24+36.
  EXPECT_EQ(conv2d_reference_forward(tiny(1, 0), kX, kW), (std::vector<double>{37, 47, 67, 77}));
  // Stride 2, pad 1: output rows/cols start at -1 and 1; taps outside are zeros.
  // y00 = x00 w11 = 4; y01 = x01 w10 + x02 w11 = 6 + 12; y10 = x10 w01 + x20 w11 = 8 + 28;
  // y11 = 5 + 12 + 24 + 36.
  EXPECT_EQ(conv2d_reference_forward(tiny(2, 1), kX, kW), (std::vector<double>{4, 18, 36, 77}));
}

TEST(Conv2dReference, TinyBackwardByHand) {
  const std::vector<double> ones = {1, 1, 1, 1};
  // dx[i][j] = sum of w[r][s] over the outputs (i - r, j - s) that exist.
  EXPECT_EQ(conv2d_reference_backward_data(tiny(1, 0), ones, kW),
            (std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
  // dw[r][s] = sum over outputs of x[p+r][q+s]: the 2x2 window sums of x.
  EXPECT_EQ(conv2d_reference_backward_filter(tiny(1, 0), kX, ones),
            (std::vector<double>{12, 16, 24, 28}));
}

std::vector<double> random_values(std::size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> value(-1, 1);
  std::vector<double> values(count);
  for (double& v : values) v = value(generator);
  return values;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// The three directions are adjoint: <fwd(x, w), dy> = <x, bwd_data(dy, w)> =
// <w, bwd_filter(x, dy)>, for strides, padding, dilation, groups and both layouts.
TEST(Conv2dReference, DirectionsAreAdjoint) {
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    Conv2dSpec spec;
    spec.layout = layout;
    spec.n = 2;
    spec.c = 4;
    spec.h = 7;
    spec.w = 6;
    spec.k = 6;
    spec.r = 3;
    spec.s = 2;
    spec.stride_h = 2;
    spec.pad_h = 2;
    spec.pad_w = 1;
    spec.dilation_w = 2;
    spec.groups = 2;
    const auto x = random_values(static_cast<std::size_t>(conv2d_input_elements(spec)), 1);
    const auto w = random_values(static_cast<std::size_t>(conv2d_filter_elements(spec)), 2);
    const auto dy = random_values(static_cast<std::size_t>(conv2d_output_elements(spec)), 3);
    const double forward = dot(conv2d_reference_forward(spec, x, w), dy);
    EXPECT_NEAR(dot(x, conv2d_reference_backward_data(spec, dy, w)), forward, 1e-12);
    EXPECT_NEAR(dot(w, conv2d_reference_backward_filter(spec, x, dy)), forward, 1e-12);
  }
}

// NHWC and NCHW are the same convolution in another memory order; groups are
// independent convolutions over their slices of channels.
TEST(Conv2dReference, LayoutsAndGroupsAgree) {
  Conv2dSpec nchw;
  nchw.layout = Layout::nchw;
  nchw.n = 2;
  nchw.c = 4;
  nchw.h = nchw.w = 5;
  nchw.k = 4;
  nchw.r = nchw.s = 3;
  nchw.pad_h = nchw.pad_w = 1;
  nchw.groups = 2;
  Conv2dSpec nhwc = nchw;
  nhwc.layout = Layout::nhwc;
  const auto x = random_values(static_cast<std::size_t>(conv2d_input_elements(nchw)), 4);
  const auto w = random_values(static_cast<std::size_t>(conv2d_filter_elements(nchw)), 5);
  std::vector<double> x_nhwc(x.size()), w_nhwc(w.size());
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 4; ++c)
      for (int h = 0; h < 5; ++h)
        for (int i = 0; i < 5; ++i)
          x_nhwc[conv2d_x_offset(nhwc, n, c, h, i)] = x[conv2d_x_offset(nchw, n, c, h, i)];
  for (int k = 0; k < 4; ++k)
    for (int c = 0; c < 2; ++c)
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s)
          w_nhwc[conv2d_w_offset(nhwc, k, c, r, s)] = w[conv2d_w_offset(nchw, k, c, r, s)];
  const auto y = conv2d_reference_forward(nchw, x, w);
  const auto y_nhwc = conv2d_reference_forward(nhwc, x_nhwc, w_nhwc);
  // Group 1 alone: channels 2..3 of x, filters 2..3, as an ungrouped convolution.
  Conv2dSpec half = nchw;
  half.c = 2;
  half.k = 2;
  half.groups = 1;
  std::vector<double> x1, w1(w.begin() + 2 * 2 * 9, w.end());
  for (int n = 0; n < 2; ++n)
    for (int c = 2; c < 4; ++c)
      for (int h = 0; h < 5; ++h)
        for (int i = 0; i < 5; ++i) x1.push_back(x[conv2d_x_offset(nchw, n, c, h, i)]);
  const auto y1 = conv2d_reference_forward(half, x1, w1);
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 4; ++k)
      for (int p = 0; p < 5; ++p)
        for (int q = 0; q < 5; ++q) {
          const double v = y[conv2d_y_offset(nchw, n, k, p, q)];
          EXPECT_DOUBLE_EQ(y_nhwc[conv2d_y_offset(nhwc, n, k, p, q)], v);
          if (k >= 2) {
            EXPECT_DOUBLE_EQ(y1[conv2d_y_offset(half, n, k - 2, p, q)], v);
          }
        }
  // Wrong tensor sizes are a usage error that names the tensor.
  EXPECT_MENTIONS(usage_message([&] { conv2d_reference_forward(nchw, w, w); }), "tensor x");
}

}  // namespace
}  // namespace timeroof
