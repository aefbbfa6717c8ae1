// The conv2d problem (sweeps/conv2d_problem.hpp): names, shapes, validation and
// analytic counts, host only: no GPU, no CUDA or cuDNN header.
#include "sweeps/conv2d_problem.hpp"

#include <cctype>
#include <climits>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "sweeps/cudnn_plan_name.hpp"

namespace timeroof {

const char* to_string(CudnnApi api) {
  return api == CudnnApi::legacy ? "legacy" : "graph";
}

CudnnApi parse_cudnn_api(std::string_view text) {
  for (CudnnApi api : {CudnnApi::graph, CudnnApi::legacy})
    if (text == to_string(api)) return api;
  throw usage_error("cudnn_api: unknown value '" + std::string(text) + "'; allowed: graph, legacy");
}

// ---------------------------------------------------------------------------
// Names, shapes and analytic counts (host only, no GPU).

const char* to_string(Layout layout) {
  return layout == Layout::nchw ? "NCHW" : "NHWC";
}

const char* to_string(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::fwd:
      return "fwd";
    case ConvDirection::bwd_data:
      return "bwd_data";
    case ConvDirection::bwd_filter:
      return "bwd_filter";
  }
  return "?";
}

Layout parse_layout(std::string_view text) {
  for (Layout l : {Layout::nchw, Layout::nhwc})
    if (text == to_string(l)) return l;
  throw usage_error("layout: unknown value '" + std::string(text) + "'; allowed: NCHW, NHWC");
}

ConvDirection parse_direction(std::string_view text) {
  for (ConvDirection d : {ConvDirection::fwd, ConvDirection::bwd_data, ConvDirection::bwd_filter})
    if (text == to_string(d)) return d;
  throw usage_error("direction: unknown value '" + std::string(text) +
                    "'; allowed: fwd, bwd_data, bwd_filter");
}

namespace {

// floor(a / b) for b > 0, also for negative a (C++ division truncates toward zero).
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t quotient = a / b;
  return (a % b != 0 && a < 0) ? quotient - 1 : quotient;
}

std::int64_t output_extent(std::int64_t in, std::int64_t pad, std::int64_t filter,
                           std::int64_t dilation, std::int64_t stride) {
  return floor_div(in + 2 * pad - dilation * (filter - 1) - 1, stride) + 1;
}

constexpr const char* kFwdAlgorithms[] = {
    "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
    "WINOGRAD",      "WINOGRAD_NONFUSED"};
constexpr const char* kBwdDataAlgorithms[] = {"0",          "1",        "FFT",
                                              "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
constexpr const char* kBwdFilterAlgorithms[] = {
    "0", "1", "FFT", "3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};

std::string algorithm_prefix(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::fwd:
      return "CUDNN_CONVOLUTION_FWD_ALGO_";
    case ConvDirection::bwd_data:
      return "CUDNN_CONVOLUTION_BWD_DATA_ALGO_";
    case ConvDirection::bwd_filter:
      return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_";
  }
  return "";
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// The algorithm names the spec's API allows, for usage errors.
std::string allowed_algorithms(CudnnApi api, ConvDirection direction) {
  if (api == CudnnApi::graph)
    return std::string("heuristic, exhaustive, ") + kConv2dEngineNamePattern;
  return "heuristic, exhaustive, " + join(conv2d_algorithm_names(direction));
}

// Legacy names only with cudnn_api = legacy, engine names only with graph.
void validate_algorithm(const Conv2dSpec& spec) {
  if (spec.algorithm == "heuristic" || spec.algorithm == "exhaustive") return;
  const std::string head = "conv2d: algorithm = '" + spec.algorithm + "'";
  if (is_engine_name(spec.algorithm)) {
    if (spec.api != CudnnApi::graph)
      throw usage_error(head +
                        " is a cuDNN graph engine, which needs cudnn_api = graph, not legacy; "
                        "allowed with cudnn_api = legacy: " +
                        allowed_algorithms(CudnnApi::legacy, spec.direction));
    try {
      (void)cudnn_graph::parse_plan_name_text(spec.algorithm);
    } catch (const Error& error) {
      throw usage_error(std::string("conv2d: algorithm = ") + error.what());
    }
    return;
  }
  if (conv2d_algorithm_index(spec.direction, spec.algorithm) >= 0) {
    if (spec.api != CudnnApi::legacy)
      throw usage_error(head +
                        " is a legacy cuDNN algorithm, which needs cudnn_api = legacy, not "
                        "graph; allowed with cudnn_api = graph: " +
                        allowed_algorithms(CudnnApi::graph, spec.direction));
    return;
  }
  throw usage_error(
      head + " is not a " + to_string(spec.direction) + " algorithm; allowed: " +
      allowed_algorithms(spec.api, spec.direction) + " (cudnn_api = " + to_string(spec.api) +
      "), or with cudnn_api = " + (spec.api == CudnnApi::graph ? "legacy: " : "graph: ") +
      allowed_algorithms(spec.api == CudnnApi::graph ? CudnnApi::legacy : CudnnApi::graph,
                         spec.direction));
}

void require_range(const char* field, std::int64_t value, std::int64_t low) {
  if (value < low || value > INT_MAX)
    throw usage_error(std::string("conv2d: ") + field + " = " + std::to_string(value) +
                      " is out of range; allowed: " + std::to_string(low) + " .. " +
                      std::to_string(INT_MAX));
}

// How the message of an output extent names it: "height" p of input h and filter r.
struct ExtentNames {
  const char* extent;
  char out, in, filter;
};

// An output extent of at least 1, or the usage error that shows its formula
// with the input, padding, filter and dilation it came from.
void require_output_extent(const ExtentNames& names, std::int64_t out, std::int64_t in,
                           std::int64_t pad, std::int64_t filter, std::int64_t dilation) {
  if (out >= 1) return;
  const std::string o(1, names.out), i(1, names.in), f(1, names.filter);
  const std::string pad_i = "pad_" + i, dilation_i = "dilation_" + i;
  throw usage_error("conv2d: output " + std::string(names.extent) + " " + o + " = (" + i + " + 2 " +
                    pad_i + " - " + dilation_i + " (" + f + " - 1) - 1) / stride_" + i +
                    " + 1 = " + std::to_string(out) + " for " + i + " = " + std::to_string(in) +
                    ", " + pad_i + " = " + std::to_string(pad) + ", " + f + " = " +
                    std::to_string(filter) + ", " + dilation_i + " = " + std::to_string(dilation) +
                    "; allowed: " + o + " >= 1, i.e. " + i + " + 2 " + pad_i + " >= " + dilation_i +
                    " (" + f + " - 1) + 1");
}

}  // namespace

Conv2dOutputShape conv2d_output_shape(const Conv2dSpec& spec) {
  if (spec.stride_h < 1 || spec.stride_w < 1) return {};
  return {output_extent(spec.h, spec.pad_h, spec.r, spec.dilation_h, spec.stride_h),
          output_extent(spec.w, spec.pad_w, spec.s, spec.dilation_w, spec.stride_w)};
}

MathMode resolved_math(const Conv2dSpec& spec) {
  if (spec.math) return *spec.math;
  return spec.precision == Precision::fp32 ? MathMode::fma_only : MathMode::tensor;
}

void validate(const Conv2dSpec& spec) {
  if (spec.layout != Layout::nchw && spec.layout != Layout::nhwc)
    throw usage_error("conv2d: layout is not a known value; allowed: NCHW, NHWC");
  const std::pair<const char*, std::int64_t> at_least_one[] = {{"n", spec.n},
                                                               {"c", spec.c},
                                                               {"h", spec.h},
                                                               {"w", spec.w},
                                                               {"k", spec.k},
                                                               {"r", spec.r},
                                                               {"s", spec.s},
                                                               {"stride_h", spec.stride_h},
                                                               {"stride_w", spec.stride_w},
                                                               {"dilation_h", spec.dilation_h},
                                                               {"dilation_w", spec.dilation_w},
                                                               {"groups", spec.groups}};
  for (const auto& [field, value] : at_least_one) require_range(field, value, 1);
  require_range("pad_h", spec.pad_h, 0);
  require_range("pad_w", spec.pad_w, 0);
  if (spec.c % spec.groups != 0 || spec.k % spec.groups != 0)
    throw usage_error("conv2d: groups = " + std::to_string(spec.groups) + " must divide both c = " +
                      std::to_string(spec.c) + " and k = " + std::to_string(spec.k) +
                      "; allowed: a common divisor of c and k");
  const Conv2dOutputShape out = conv2d_output_shape(spec);
  require_output_extent({"height", 'p', 'h', 'r'}, out.p, spec.h, spec.pad_h, spec.r,
                        spec.dilation_h);
  require_output_extent({"width", 'q', 'w', 's'}, out.q, spec.w, spec.pad_w, spec.s,
                        spec.dilation_w);
  switch (spec.direction) {
    case ConvDirection::fwd:
    case ConvDirection::bwd_data:
    case ConvDirection::bwd_filter:
      break;
    default:
      throw usage_error(
          "conv2d: direction is not a known value; allowed: fwd, bwd_data, "
          "bwd_filter");
  }
  switch (spec.precision) {
    case Precision::fp32:
    case Precision::tf32:
    case Precision::fp16:
    case Precision::bf16:
      break;
    default:
      throw usage_error("conv2d: precision is not a known value; allowed: fp32, tf32, fp16, bf16");
  }
  for (ConvTensor tensor : {ConvTensor::x, ConvTensor::w, ConvTensor::y})
    (void)conv2d_tensor_bytes(spec, tensor);
  if (spec.precision == Precision::fp32 && resolved_math(spec) == MathMode::tensor)
    throw usage_error(
        "conv2d: math = tensor with precision = fp32: fp32 tensors on Tensor Cores are "
        "precision tf32; allowed with fp32: fma_only");
  if (spec.precision == Precision::tf32 && resolved_math(spec) == MathMode::fma_only)
    throw usage_error(
        "conv2d: math = fma_only with precision = tf32: TF32 exists only on Tensor Cores "
        "(fp32 on FMA units is precision fp32); allowed with tf32: tensor");
  if (spec.api != CudnnApi::graph && spec.api != CudnnApi::legacy)
    throw usage_error("conv2d: cudnn_api is not a known value; allowed: graph, legacy");
  validate_algorithm(spec);
}

bool is_engine_name(std::string_view algorithm) {
  if (algorithm.size() < 3) return false;
  for (std::size_t i = 0; i < 3; ++i)
    if (std::tolower(static_cast<unsigned char>(algorithm[i])) != "eng"[i]) return false;
  return true;
}

double conv2d_input_elements(const Conv2dSpec& spec) {
  return static_cast<double>(spec.n) * static_cast<double>(spec.c) * static_cast<double>(spec.h) *
         static_cast<double>(spec.w);
}

double conv2d_filter_elements(const Conv2dSpec& spec) {
  const double cg = static_cast<double>(spec.c) / static_cast<double>(spec.groups);
  return static_cast<double>(spec.k) * cg * static_cast<double>(spec.r) *
         static_cast<double>(spec.s);
}

double conv2d_output_elements(const Conv2dSpec& spec) {
  const Conv2dOutputShape out = conv2d_output_shape(spec);
  return static_cast<double>(spec.n) * static_cast<double>(spec.k) * static_cast<double>(out.p) *
         static_cast<double>(out.q);
}

double conv2d_flops(const Conv2dSpec& spec) {
  const double cg = static_cast<double>(spec.c) / static_cast<double>(spec.groups);
  return 2.0 * conv2d_output_elements(spec) * cg * static_cast<double>(spec.r) *
         static_cast<double>(spec.s);
}

double conv2d_min_bytes(const Conv2dSpec& spec) {
  return static_cast<double>(element_bytes(spec.precision)) *
         (conv2d_input_elements(spec) + conv2d_filter_elements(spec) +
          conv2d_output_elements(spec));
}

std::string conv2d_op_name(ConvDirection direction) {
  return std::string("conv2d_") + to_string(direction);
}

std::vector<std::string> conv2d_algorithm_names(ConvDirection direction) {
  std::vector<std::string> names;
  const std::string prefix = algorithm_prefix(direction);
  auto add = [&](const auto& suffixes) {
    for (const char* suffix : suffixes) names.push_back(prefix + suffix);
  };
  switch (direction) {
    case ConvDirection::fwd:
      add(kFwdAlgorithms);
      break;
    case ConvDirection::bwd_data:
      add(kBwdDataAlgorithms);
      break;
    case ConvDirection::bwd_filter:
      add(kBwdFilterAlgorithms);
      break;
  }
  return names;
}

int conv2d_algorithm_index(ConvDirection direction, const std::string& name) {
  const std::vector<std::string> names = conv2d_algorithm_names(direction);
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

ConvTensor conv2d_output_tensor(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::fwd:
      return ConvTensor::y;
    case ConvDirection::bwd_data:
      return ConvTensor::x;
    case ConvDirection::bwd_filter:
      return ConvTensor::w;
  }
  return ConvTensor::y;
}

std::int64_t conv2d_tensor_bytes(const Conv2dSpec& spec, ConvTensor tensor) {
  const std::size_t element = element_bytes(spec.precision);
  switch (tensor) {
    case ConvTensor::x:
      return tensor_bytes("conv2d", "x",
                          {{"n", spec.n}, {"c", spec.c}, {"h", spec.h}, {"w", spec.w}}, element,
                          "smaller batch, channels, height or width");
    case ConvTensor::w:
      return tensor_bytes(
          "conv2d", "w",
          {{"k", spec.k}, {"c/groups", spec.c / spec.groups}, {"r", spec.r}, {"s", spec.s}},
          element, "fewer filters or channels, or a smaller filter");
    case ConvTensor::y: {
      const Conv2dOutputShape out = conv2d_output_shape(spec);
      return tensor_bytes("conv2d", "y", {{"n", spec.n}, {"k", spec.k}, {"p", out.p}, {"q", out.q}},
                          element, "smaller batch, filters, height or width, or a larger stride");
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------
// The problem: its members read as LstmProblem's on purpose (one template;
// `duplicates` pairs the two files' names, switches and tensor lists).

Conv2dProblem::Conv2dProblem(Conv2dSpec spec) : spec_(std::move(spec)) {
  validate(spec_);
}

std::string Conv2dProblem::op() const {
  return conv2d_op_name(spec_.direction);
}

nlohmann::json Conv2dProblem::params() const {
  const Conv2dOutputShape out = conv2d_output_shape(spec_);
  const bool searched = spec_.algorithm == "heuristic" || spec_.algorithm == "exhaustive";
  return {{"layout", to_string(spec_.layout)},
          {"n", spec_.n},
          {"c", spec_.c},
          {"h", spec_.h},
          {"w", spec_.w},
          {"k", spec_.k},
          {"r", spec_.r},
          {"s", spec_.s},
          {"stride_h", spec_.stride_h},
          {"stride_w", spec_.stride_w},
          {"pad_h", spec_.pad_h},
          {"pad_w", spec_.pad_w},
          {"dilation_h", spec_.dilation_h},
          {"dilation_w", spec_.dilation_w},
          {"groups", spec_.groups},
          {"p", out.p},
          {"q", out.q},
          {"algorithm_selection", searched ? spec_.algorithm : std::string("fixed")},
          {"cudnn_api", to_string(spec_.api)}};
}

MathMode Conv2dProblem::math_mode() const {
  return resolved_math(spec_);
}
double Conv2dProblem::flops() const {
  return conv2d_flops(spec_);
}
double Conv2dProblem::min_bytes() const {
  return conv2d_min_bytes(spec_);
}

namespace {

// A call's tensor by its role and the tensor (named by the forward pass) it has the shape of.
std::vector<TensorArgument> conv2d_tensors(
    const Conv2dSpec& spec, std::initializer_list<std::pair<const char*, ConvTensor>> arguments) {
  std::vector<TensorArgument> tensors;
  for (const auto& [role, shape] : arguments) {
    tensors.push_back({role, static_cast<std::size_t>(conv2d_tensor_bytes(spec, shape))});
  }
  return tensors;
}

}  // namespace

std::vector<TensorArgument> Conv2dProblem::inputs() const {
  switch (spec_.direction) {
    case ConvDirection::fwd:
      return conv2d_tensors(spec_, {{"x", ConvTensor::x}});
    case ConvDirection::bwd_data:
      return conv2d_tensors(spec_, {{"dy", ConvTensor::y}});
    case ConvDirection::bwd_filter:
      return conv2d_tensors(spec_, {{"x", ConvTensor::x}, {"dy", ConvTensor::y}});
  }
  return {};
}

std::vector<TensorArgument> Conv2dProblem::outputs() const {
  switch (spec_.direction) {
    case ConvDirection::fwd:
      return conv2d_tensors(spec_, {{"y", ConvTensor::y}});
    case ConvDirection::bwd_data:
      return conv2d_tensors(spec_, {{"dx", ConvTensor::x}});
    case ConvDirection::bwd_filter:
      return conv2d_tensors(spec_, {{"dw", ConvTensor::w}});
  }
  return {};
}

}  // namespace timeroof
