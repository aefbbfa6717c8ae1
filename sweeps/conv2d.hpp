// 2-D convolution through cuDNN: forward, backward-data and backward-filter,
// NCHW or NHWC, groups, dilation, fp32 / tf32 / fp16 / bf16, Tensor Cores
// allowed or FMA only, and the implementation picked by cuDNN's heuristic, by
// exhaustive search, or fixed by name. Two ways to call cuDNN (Conv2dSpec::api):
//   graph   the graph (backend) API, as PyTorch calls cuDNN: an operation graph,
//           an execution plan built once in prepare(), cudnnBackendExecute per
//           call (sweeps/conv2d_graph.cpp, on sweeps/cudnn_graph.hpp);
//   legacy  the deprecated convolution API (cudnn_cnn_v9.h), which cuDNN 9 maps
//           onto its graph engines inside every call.
//
// Convolution here is cross-correlation (CUDNN_CROSS_CORRELATION), as in every
// DL framework. Shapes: input x N x C x H x W, filter w K x (C/groups) x R x S,
// output y N x K x P x Q with
//   P = floor((H + 2 pad_h - dilation_h (R - 1) - 1) / stride_h) + 1, Q likewise.
// Memory order: NCHW stores x NCHW, w KCRS, y NKPQ; NHWC stores x NHWC, w KRSC,
// y NPQK. Backward-data reads dy (y's shape) and w and writes dx (x's shape);
// backward-filter reads x and dy and writes dw (w's shape).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/cudnn_handles.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/operator.hpp"

namespace timeroof {

enum class Layout { nchw, nhwc };
enum class ConvDirection { fwd, bwd_data, bwd_filter };

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

// The three tensors by their forward names; which one is the output depends on
// the direction (fwd: y, bwd_data: x, bwd_filter: w).
enum class ConvTensor { x, w, y };
ConvTensor conv2d_output_tensor(ConvDirection direction);

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

// check() compares against the CPU reference up to this many multiply-adds
// (about a second of host time), and against a second cuDNN algorithm above it
// (the next usable one of the heuristic's list, or engine configuration of the
// heuristic lists on the graph path, into a scratch output; the tolerance is
// then the sum of both algorithms'). The tolerance is the precision's
// (relative_tolerance()), x10 for fp32 through FFT / Winograd, and at least
// 4 * 2^-24 * sqrt(L) for dot products of length L (fp32 accumulation).
inline constexpr double kConv2dCpuReferenceMaxMacs = 1e8;
enum class CheckMethod { automatic, cpu_reference, second_algorithm };

class Conv2dState;

class Conv2d final : public Operator {
 public:
  // Validates `spec` (throws a usage error) and does no GPU work. `handle` is a
  // cuDNN handle shared between the operators of a sweep (cudnnCreate is slow);
  // null: prepare() creates one.
  explicit Conv2d(Conv2dSpec spec, std::shared_ptr<CudnnHandle> handle = nullptr);
  ~Conv2d() override;

  std::string op() const override;
  nlohmann::json params() const override;
  Precision precision() const override;
  MathMode math_mode() const override;
  std::string algorithm() const override;
  double flops() const override;
  double min_bytes() const override;
  // cuDNN 9.14 on an H200 launched 1-5 kernels per call (fp32 FMA-only: 4-5).
  double expected_launches() const override { return 2; }
  // Both APIs: "cudnn_api" ("graph" / "legacy"), "workspace_bytes",
  // "deterministic", "algorithm_selection" (heuristic / exhaustive / fixed), and
  // "nvidia_tf32_override" when that variable is set.
  // graph:  "engine" (global index), "knobs" ({knob name: choice}),
  //         "numerical_notes" / "behavior_notes" (cuDNN's enum names),
  //         "heuristic_mode" (CUDNN_HEUR_MODE_A / CUDNN_HEUR_MODE_FALLBACK, or
  //         "none" for a named engine in neither list) and "heuristic_rank" (the
  //         plan's 0-based place in that list, -1 for none); exhaustive search adds
  //         "search_time_ms" (the chosen plan's time per call while searching),
  //         "search_duration_ms" (the whole search) and "plans_timed".
  // legacy: "cudnn_math_type", and "search_time_ms" for exhaustive search.
  nlohmann::json details() const override;
  // The call's activations; the filter stays resident (Operator::inputs()):
  //   fwd: x -> y;  bwd_data: dy -> dx;  bwd_filter: x, dy -> dw.
  std::vector<DeviceTensor> inputs() const override;
  std::vector<DeviceTensor> outputs() const override;

  // Builds everything a call needs once (the graph path: operation graph,
  // execution plan, workspace and variant pack) and runs the call once, so lazy
  // library and module loading are done before anyone captures run().
  void prepare(cudaStream_t stream) override;
  // Points the (possibly shared) handle at `stream` when it is elsewhere and
  // enqueues the call: no allocation, no descriptor work, so it can be captured
  // into a CUDA graph (cudaStreamCaptureModeThreadLocal).
  void run(cudaStream_t stream) override;
  CheckResult check() override { return check(CheckMethod::automatic); }
  CheckResult check(CheckMethod method);

  const Conv2dSpec& spec() const noexcept { return spec_; }
  std::size_t workspace_bytes() const noexcept;
  bool deterministic() const noexcept;
  // Copies a tensor to the host (synchronizes the prepare() stream): as doubles,
  // or as the raw stored bytes.
  std::vector<double> download(ConvTensor which) const;
  std::vector<std::byte> download_bytes(ConvTensor which) const;

 private:
  Conv2dSpec spec_;
  std::shared_ptr<CudnnHandle> handle_;
  std::unique_ptr<Conv2dState> state_;  // created by prepare()
};

// Internal: how a prepared Conv2d reaches cuDNN, one implementation per API
// (legacy in conv2d.cpp, graph in conv2d_graph.cpp). Not for use elsewhere.
namespace conv2d_detail {

// The operator's device tensors by their forward names (bwd_data writes dx into
// x and reads dy from y; bwd_filter writes dw into w).
struct ConvBuffers {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
};

// A second algorithm's output, for check().
struct SecondRun {
  std::string name;        // empty when none could run
  bool transform = false;  // computed through FFT or Winograd
  std::string why_none;    // what was tried, when none could run
};

class Conv2dPath {
 public:
  Conv2dPath() = default;
  virtual ~Conv2dPath() = default;
  Conv2dPath(const Conv2dPath&) = delete;
  Conv2dPath& operator=(const Conv2dPath&) = delete;

  // Enqueues one call on the handle's current stream, overwriting the output.
  virtual void execute() = 0;
  virtual std::string name() const = 0;        // Operator::algorithm()
  virtual nlohmann::json details() const = 0;  // the API's own keys (see Conv2d::details)
  virtual std::size_t workspace_bytes() const = 0;
  virtual bool deterministic() const = 0;
  virtual bool transform() const = 0;  // FFT or Winograd: fp32 loses a digit
  // Runs the next usable algorithm after the chosen one into `output` (sized as
  // the direction's output) on the handle's stream, and synchronizes it.
  virtual SecondRun run_second(void* output) = 0;
};

// Pick the implementation as Conv2dSpec::algorithm says and build what a call
// needs; the handle already points at `stream`, the buffers hold random data.
std::unique_ptr<Conv2dPath> prepare_legacy(const Conv2dSpec& spec, cudnnHandle_t handle,
                                           cudaStream_t stream, const ConvBuffers& buffers);
std::unique_ptr<Conv2dPath> prepare_graph(const Conv2dSpec& spec, cudnnHandle_t handle,
                                          cudaStream_t stream, const ConvBuffers& buffers);

}  // namespace conv2d_detail

}  // namespace timeroof
