// The conv2d problem, host only: the spec of a 2-D convolution, its shapes,
// validation, analytic FLOPs and minimum bytes, the names of cuDNN's choices a
// spec may fix, the CPU reference, and Conv2dProblem (sweeps/problem.hpp). The
// cuDNN implementation that measures it is Conv2d (sweeps/conv2d.hpp).
//
// Forward, backward-data and backward-filter, NCHW or NHWC, groups, dilation,
// fp32 / tf32 / fp16 / bf16, Tensor Cores allowed or FMA only, and the
// implementation picked by cuDNN's heuristic, by exhaustive search, or fixed by
// name, through cuDNN's graph or legacy API (Conv2dSpec::api).
//
// Convolution here is cross-correlation (CUDNN_CROSS_CORRELATION), as in every
// DL framework. Shapes: input x N x C x H x W, filter w K x (C/groups) x R x S,
// output y N x K x P x Q with
//   P = floor((H + 2 pad_h - dilation_h (R - 1) - 1) / stride_h) + 1, Q likewise.
// Memory order: NCHW stores x NCHW, w KCRS, y NKPQ; NHWC stores x NHWC, w KRSC,
// y NPQK. Backward-data reads dy (y's shape) and w and writes dx (x's shape);
// backward-filter reads x and dy and writes dw (w's shape).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/problem.hpp"

namespace timeroof {

enum class Layout { nchw, nhwc };
enum class ConvDirection { fwd, bwd_data, bwd_filter };

// graph: the graph (backend) API with an execution plan built once, as frameworks
// call cuDNN (sweeps/cudnn_graph.hpp); legacy: the deprecated per-operator API.
enum class CudnnApi { graph, legacy };
const char* to_string(CudnnApi api);  // "graph", "legacy"
// Throws a usage error naming cudnn_api and the allowed values.
CudnnApi parse_cudnn_api(std::string_view text);

const char* to_string(Layout layout);            // "NCHW", "NHWC"
const char* to_string(ConvDirection direction);  // "fwd", "bwd_data", "bwd_filter"
// Throw a usage error naming the field and the allowed values.
Layout parse_layout(std::string_view text);
ConvDirection parse_direction(std::string_view text);

struct Conv2dSpec {
  Layout layout = Layout::nhwc;
  std::int64_t n = 1, c = 1, h = 1, w = 1;  // input: batch, channels, height, width
  std::int64_t k = 1, r = 1, s = 1;         // output channels, filter height and width
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;  // C and K are split into `groups` independent convolutions
  ConvDirection direction = ConvDirection::fwd;
  Precision precision = Precision::fp32;
  // Unset: fp32 -> fma_only, tf32 / fp16 / bf16 -> tensor. fp32 with tensor is
  // rejected (that is tf32), and so is tf32 with fma_only (that is fp32).
  std::optional<MathMode> math;
  CudnnApi api = CudnnApi::graph;
  // "heuristic", "exhaustive", or a fixed choice of the API:
  //   graph:  the first engine configuration of cuDNN's heuristic list
  //           (CUDNN_HEUR_MODE_A, then the fallback list) that finalizes into a
  //           plan and respects the math mode; the fastest plan that finalizes,
  //           each timed on the operator's buffers; or an engine by plan name
  //           (see kConv2dEngineNamePattern);
  //   legacy: cudnnGet*Algorithm_v7's first usable choice; cudnnFind*AlgorithmEx's
  //           fastest that succeeded; or an algorithm of the direction by name,
  //           e.g. "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM".
  // Math mode on the graph path: fma_only never takes an engine with
  // CUDNN_NUMERICAL_NOTE_TENSOR_CORE; no mode takes one with
  // CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS (inputs quietly converted to a
  // lower precision).
  std::string algorithm = "heuristic";
};

// A graph engine by name, as Conv2d::algorithm() prints plans: "eng<N>" alone
// takes the first of the engine's configurations in the heuristic lists that
// finalizes into a plan (its default knobs when none is listed), "eng<N>
// <knob>=<value> ..." exactly those knobs (cudnn_graph::parse_plan_name). The text before '<' is
// what the sweep spec matches (sweeps/spec.hpp: a pattern value).
inline constexpr const char kConv2dEngineNamePattern[] = "eng<N>[ <knob>=<value>...]";
// Whether `algorithm` names a graph engine (starts with "eng", any case); the
// name itself is checked by validate().
bool is_engine_name(std::string_view algorithm);

// Output height P and width Q by the formula above (may be <= 0 for a bad spec).
struct Conv2dOutputShape {
  std::int64_t p = 0;
  std::int64_t q = 0;
};
Conv2dOutputShape conv2d_output_shape(const Conv2dSpec& spec);

// Throws a usage error before any GPU work when the spec cannot describe a
// convolution; the message names the field and the allowed values.
void validate(const Conv2dSpec& spec);

// The math mode the spec resolves to (its `math`, or the precision's default).
MathMode resolved_math(const Conv2dSpec& spec);

// Element counts (doubles: huge specs must not overflow before validation fails them).
double conv2d_input_elements(const Conv2dSpec& spec);   // N C H W
double conv2d_filter_elements(const Conv2dSpec& spec);  // K (C/groups) R S
double conv2d_output_elements(const Conv2dSpec& spec);  // N K P Q

// FLOPs of one call, the same for all three directions: every output element of
// the forward pass is a dot product of length (C/groups) R S, and backward-data /
// backward-filter compute the same multiply-adds in another order:
//   flops = 2 N K (C/groups) R S P Q.
// Padding taps that multiply zeros are counted, as cuDNN computes them.
double conv2d_flops(const Conv2dSpec& spec);
// Minimum bytes of one call, each of the three tensors read or written once at the
// stored precision (fp32 accumulators and workspaces not counted), the same for
// every direction (fwd reads x, w and writes y; bwd_data reads dy, w, writes dx;
// bwd_filter reads x, dy, writes dw):
//   min_bytes = sizeof(element) (N C H W + K (C/groups) R S + N K P Q).
double conv2d_min_bytes(const Conv2dSpec& spec);

// "conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_filter".
std::string conv2d_op_name(ConvDirection direction);
// Every legacy cuDNN algorithm name of a direction, in enum order.
std::vector<std::string> conv2d_algorithm_names(ConvDirection direction);
// The enum value of a legacy algorithm's name; -1 when it is none of the direction's.
int conv2d_algorithm_index(ConvDirection direction, const std::string& name);

// The three tensors by their forward names; which one is the output depends on
// the direction (fwd: y, bwd_data: x, bwd_filter: w).
enum class ConvTensor { x, w, y };
ConvTensor conv2d_output_tensor(ConvDirection direction);
// Bytes of one tensor at the stored precision, counted in integers: x N C H W, w K
// (C/groups) R S, y N K P Q. validate() refuses a spec where one would pass
// kMaxTensorBytes (sweeps/problem.hpp), naming the sizes; this throws that error.
std::int64_t conv2d_tensor_bytes(const Conv2dSpec& spec, ConvTensor tensor);

// Direct convolution in double on the host, tensors in the spec's memory order
// (see the top of this file). Used by Conv2d::check() for small shapes and by tests.
std::vector<double> conv2d_reference_forward(const Conv2dSpec& spec, std::span<const double> x,
                                             std::span<const double> w);
std::vector<double> conv2d_reference_backward_data(const Conv2dSpec& spec,
                                                   std::span<const double> dy,
                                                   std::span<const double> w);
std::vector<double> conv2d_reference_backward_filter(const Conv2dSpec& spec,
                                                     std::span<const double> x,
                                                     std::span<const double> dy);
// Offsets of one element in the spec's memory order.
std::size_t conv2d_x_offset(const Conv2dSpec& spec, std::int64_t n, std::int64_t c, std::int64_t h,
                            std::int64_t w);
std::size_t conv2d_w_offset(const Conv2dSpec& spec, std::int64_t k, std::int64_t c, std::int64_t r,
                            std::int64_t s);  // c within the group, 0 .. C/groups - 1
std::size_t conv2d_y_offset(const Conv2dSpec& spec, std::int64_t n, std::int64_t k, std::int64_t p,
                            std::int64_t q);

// A point's params (the conv2d family's keys, sweeps/conv2d_family.cpp) as a
// Conv2dSpec; throws a usage error naming the key and the allowed values. The
// spec as a whole is validated where it is used, by Conv2dProblem.
Conv2dSpec conv2d_spec_from_params(const nlohmann::json& point);

// The problem of one validated spec (the constructor validates: usage error).
// Declared as LstmProblem is on purpose: every operator follows one template
// (docs/design.md, "Adding an operator"), so `duplicates` pairs the two.
class Conv2dProblem final : public Problem {
 public:
  explicit Conv2dProblem(Conv2dSpec spec);

  std::string op() const override;
  // cuDNN's letters (n c h w k r s, strides, pads, dilations, groups, p q), the
  // layout, "algorithm_selection" (heuristic / exhaustive / fixed) and "cudnn_api".
  nlohmann::json params() const override;
  Precision precision() const override { return spec_.precision; }
  MathMode math_mode() const override;
  double flops() const override;
  double min_bytes() const override;
  // cuDNN 9.14 on an H200 launched 1-5 kernels per call (fp32 FMA-only: 4-5).
  double expected_launches() const override { return 2; }
  // The call's activations; the filter stays resident (Operator::inputs()):
  //   fwd: x -> y;  bwd_data: dy -> dx;  bwd_filter: x, dy -> dw.
  std::vector<TensorArgument> inputs() const override;
  std::vector<TensorArgument> outputs() const override;

  const Conv2dSpec& spec() const noexcept { return spec_; }

 private:
  Conv2dSpec spec_;
};

}  // namespace timeroof
