#include "sweeps/memory_bound_ops.hpp"

#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/device.hpp"
#include "kernels/device_fill.hpp"
#include "sweeps/cudnn_graph.hpp"
#include "sweeps/cudnn_handles.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/memory_bound_kernels.hpp"

namespace timeroof {

namespace cudnn_graph {
// The resample operation's NaN rule (not among the layer's attribute types).
template <>
struct AttributeType<cudnnNanPropagation_t> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_NAN_PROPOGATION;
};
}  // namespace cudnn_graph

namespace cg = cudnn_graph;

namespace {

// `count` values of `type` from element `first` of a device buffer, as doubles.
std::vector<double> read_doubles(const void* data, std::size_t first, std::size_t count,
                                 DataType type, cudaStream_t stream) {
  std::vector<double> host(count);
  if (count == 0) return host;
  DeviceBuffer<double> converted(count);
  convert_to_double(static_cast<const std::byte*>(data) + first * element_bytes(type),
                    converted.get(), count, type, stream);
  TR_CUDA_CHECK(cudaMemcpyAsync(host.data(), converted.get(), converted.bytes(),
                                cudaMemcpyDeviceToHost, stream));
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// `count` starts of windows of `width` spread evenly over [0, extent), the
// first and last included; one window [0, extent) when it fits.
std::vector<std::int64_t> window_starts(std::int64_t extent, std::int64_t width,
                                        std::int64_t count) {
  if (extent <= width * count) {
    std::vector<std::int64_t> all;
    for (std::int64_t s = 0; s < extent; s += width) all.push_back(s);
    return all;
  }
  std::vector<std::int64_t> starts;
  for (std::int64_t i = 0; i < count; ++i) starts.push_back(i * (extent - width) / (count - 1));
  return starts;
}

CheckResult judged(std::string method, const std::vector<double>& library,
                   const std::vector<double>& reference, double tolerance, const std::string& ran) {
  CheckResult result;
  result.method = std::move(method);
  result.elements = reference.size();
  result.relative_error = relative_error(library, reference);
  result.tolerance = tolerance;
  judge(result);
  result.detail += " of " + ran;
  return result;
}

// --- cuDNN graphs -----------------------------------------------------------

// Dense strides of `dims` in the order `order` lists (innermost last).
std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims,
                                         const std::vector<int>& order) {
  std::vector<std::int64_t> strides(dims.size());
  std::int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[static_cast<std::size_t>(*it)] = stride;
    stride *= dims[static_cast<std::size_t>(*it)];
  }
  return strides;
}

// The graph of `operations` with the first engine configuration (heuristic mode
// A's list, then the fallback list) that finalizes into a plan.
CudnnCall graph_call(cudnnHandle_t handle, std::vector<std::shared_ptr<cg::Descriptor>> parts,
                     const std::vector<const cg::Descriptor*>& operations,
                     std::vector<cg::TensorPointer> bindings) {
  struct Built {
    std::vector<std::shared_ptr<cg::Descriptor>> parts;
    std::optional<cg::Descriptor> graph;
    std::unique_ptr<cg::ExecutionPlan> plan;
    DeviceBuffer<std::byte> workspace;
    std::unique_ptr<cg::VariantPack> pack;
  };
  auto built = std::make_shared<Built>();
  built->parts = std::move(parts);
  built->graph.emplace(cg::make_operation_graph(handle, operations));
  std::string notes;
  std::string mode_used;
  int listed = 0, rank = -1;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<cg::Descriptor> configs;
    const Outcome got = guarded([&] { configs = cg::heuristic_configs(*built->graph, mode); });
    if (got.status != PointStatus::ok) {
      notes += " " + cg::to_string(mode) + ": " + got.reason + ";";
      continue;
    }
    listed += static_cast<int>(configs.size());
    for (std::size_t i = 0; i < configs.size() && !built->plan; ++i) {
      auto config = std::make_shared<const cg::Descriptor>(std::move(configs[i]));
      const Outcome made =
          guarded([&] { built->plan = std::make_unique<cg::ExecutionPlan>(config); });
      if (made.status != PointStatus::ok)
        notes += " " + cg::to_string(mode) + " #" + std::to_string(i) + ": " + made.reason + ";";
      else {
        mode_used = cg::to_string(mode);
        rank = static_cast<int>(i);
      }
    }
    if (built->plan) break;
  }
  if (!built->plan)
    throw GpuError("cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
                   "CUDNN_STATUS_NOT_SUPPORTED: no engine configuration of cuDNN " +
                       std::to_string(cudnnGetVersion()) + " runs this graph (" +
                       std::to_string(listed) + " listed)" + (notes.empty() ? "" : ":" + notes));
  built->workspace =
      DeviceBuffer<std::byte>(static_cast<std::size_t>(built->plan->workspace_bytes()));
  built->pack = std::make_unique<cg::VariantPack>(bindings, built->workspace.get());
  CudnnCall call;
  call.name = "cuDNN graph " + built->plan->name();
  call.details = {{"cudnn_version", cudnnGetVersion()},
                  {"heuristic_mode", mode_used},
                  {"heuristic_rank", rank},
                  {"configurations_listed", listed},
                  {"workspace_bytes", built->plan->workspace_bytes()}};
  call.execute = [handle, raw = built.get()](cudaStream_t stream) {
    TR_CUDNN_CHECK(cudnnSetStream(handle, stream));
    cg::execute(handle, *raw->plan, *raw->pack);
  };
  call.keep_alive = built;
  return call;
}

std::shared_ptr<cg::Descriptor> tensor(const cg::TensorSpec& spec) {
  return std::make_shared<cg::Descriptor>(cg::make_tensor(spec));
}

}  // namespace

// --- the shared operator ----------------------------------------------------

MemoryBoundOperator::MemoryBoundOperator(KernelSource source,
                                         std::shared_ptr<LibraryHandles> libraries)
    : source_(source), libraries_(std::move(libraries)) {}

MemoryBoundOperator::~MemoryBoundOperator() = default;

std::string MemoryBoundOperator::algorithm() const {
  if (!prepared_) return {};
  return source_ == KernelSource::own ? own_kernel_name() : cudnn_->name;
}

nlohmann::json MemoryBoundOperator::details() const {
  if (!prepared_) return nlohmann::json::object();
  nlohmann::json details = {{"implementation", to_string(source_)}};
  if (source_ == KernelSource::own)
    details["launch"] = own_launch();
  else
    details["cudnn"] = cudnn_->details;
  return details;
}

std::vector<DeviceTensor> MemoryBoundOperator::inputs() const {
  const std::vector<TensorArgument> roles = problem().inputs();
  std::vector<DeviceTensor> tensors;
  for (std::size_t i = 0; i < roles.size(); ++i)
    tensors.push_back(
        {roles[i].role, i < inputs_.size() ? inputs_[i].get() : nullptr, roles[i].bytes});
  return tensors;
}

std::vector<DeviceTensor> MemoryBoundOperator::outputs() const {
  const TensorArgument y = problem().outputs().at(0);
  return {{y.role, output_.get(), y.bytes}};
}

void MemoryBoundOperator::require_prepared(const char* family) const {
  if (!prepared_)
    throw std::logic_error(std::string(family) + ": used before a successful prepare()");
}

void MemoryBoundOperator::prepare(cudaStream_t stream) {
  prepared_ = false;
  cudnn_.reset();
  inputs_.clear();
  require_device_memory(problem().min_bytes());
  stream_ = stream;
  const DataType type = data_type();
  std::uint32_t seed = 0x70773801u;
  for (const TensorArgument& argument : problem().inputs()) {
    DeviceBuffer<std::byte> buffer(argument.bytes);
    fill_random(buffer.get(), argument.bytes / element_bytes(type), type, seed++, stream);
    inputs_.push_back(std::move(buffer));
  }
  const TensorArgument y = problem().outputs().at(0);
  output_ = DeviceBuffer<std::byte>(y.bytes);
  fill_random(output_.get(), y.bytes / element_bytes(type), type, seed++, stream);
  if (source_ == KernelSource::cudnn) {
    if (!libraries_) libraries_ = std::make_shared<LibraryHandles>();
    cudnn_ = std::make_unique<CudnnCall>(make_cudnn_call(libraries_->cudnn()));
  }
  prepared_ = true;
  // One call now: a failure surfaces here, and lazily loaded kernels exist
  // before run() is timed or captured.
  try {
    run(stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  } catch (...) {
    prepared_ = false;
    throw;
  }
}

void MemoryBoundOperator::run(cudaStream_t stream) {
  if (!prepared_) throw std::logic_error("run() before a successful prepare()");
  if (source_ == KernelSource::own)
    launch_own(stream);
  else
    cudnn_->execute(stream);
}

void MemoryBoundOperator::run_for_check() {
  run(stream_);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// --- pointwise --------------------------------------------------------------

namespace {

double pointwise_reference(PointwiseOp op, double a, double b) {
  switch (op) {
    case PointwiseOp::add:
      return a + b;
    case PointwiseOp::mul:
      return a * b;
    case PointwiseOp::relu:
      return a > 0 ? a : 0;
    case PointwiseOp::gelu:
      return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
    case PointwiseOp::silu:
      return a / (1 + std::exp(-a));
    case PointwiseOp::silu_mul:
      return a / (1 + std::exp(-a)) * b;
  }
  return 0;
}

bool transcendental(PointwiseOp op) {
  return op == PointwiseOp::gelu || op == PointwiseOp::silu || op == PointwiseOp::silu_mul;
}

}  // namespace

Pointwise::Pointwise(PointwiseSpec spec, std::shared_ptr<LibraryHandles> libraries)
    : MemoryBoundOperator(spec.implementation, std::move(libraries)), problem_(std::move(spec)) {}

std::string Pointwise::own_kernel_name() const {
  return std::string("own pointwise_") + to_string(problem_.spec().op) +
         " (16-byte vectors, tile grid)";
}

nlohmann::json Pointwise::own_launch() const {
  return {{"kernel", "pointwise_kernel"},
          {"vector_bytes", 16},
          {"threads_per_block", 1024},
          {"vectors_per_thread", 2},
          {"fma_pipe_flops_per_element", pointwise_fma_pipe_flops_per_element(problem_.spec().op)}};
}

void Pointwise::launch_own(cudaStream_t stream) const {
  const PointwiseSpec& s = problem_.spec();
  launch_pointwise(s.op, data_type(), input(0),
                   pointwise_input_count(s.op) == 2 ? input(1) : nullptr, output(),
                   static_cast<std::size_t>(pointwise_total_elements(s)), stream);
}

CudnnCall Pointwise::make_cudnn_call(cudnnHandle_t handle) {
  const PointwiseSpec& s = problem_.spec();
  const cudnnDataType_t type = cudnn_data_type(s.precision);
  const std::vector<std::int64_t> dims = {1, s.batch, s.elements, 1};
  const std::vector<std::int64_t> strides = packed_strides(dims, {0, 1, 2, 3});
  auto a = tensor({.uid = 1, .data_type = type, .dims = dims, .strides = strides});
  auto y = tensor({.uid = 3, .data_type = type, .dims = dims, .strides = strides});
  std::vector<std::shared_ptr<cg::Descriptor>> parts = {a, y};
  std::vector<cg::TensorPointer> bindings = {{1, const_cast<void*>(input(0))}, {3, output()}};
  std::shared_ptr<cg::Descriptor> b;
  if (pointwise_input_count(s.op) == 2) {
    b = tensor({.uid = 2, .data_type = type, .dims = dims, .strides = strides});
    parts.push_back(b);
    bindings.push_back({2, const_cast<void*>(input(1))});
  }
  auto pointwise = [&](cudnnPointwiseMode_t mode, const cg::Descriptor& x,
                       const cg::Descriptor* second, const cg::Descriptor& out) {
    auto description = std::make_shared<cg::Descriptor>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    description->set(CUDNN_ATTR_POINTWISE_MODE, mode)
        .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
    if (mode == CUDNN_POINTWISE_SWISH_FWD) description->set(CUDNN_ATTR_POINTWISE_SWISH_BETA, 1.0);
    description->finalize();
    auto operation = std::make_shared<cg::Descriptor>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    operation->set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *description)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (second) operation->set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *second);
    operation->set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out).finalize();
    parts.push_back(description);
    parts.push_back(operation);
    return operation;
  };
  std::vector<const cg::Descriptor*> operations;
  switch (s.op) {
    case PointwiseOp::add:
      operations.push_back(pointwise(CUDNN_POINTWISE_ADD, *a, b.get(), *y).get());
      break;
    case PointwiseOp::mul:
      operations.push_back(pointwise(CUDNN_POINTWISE_MUL, *a, b.get(), *y).get());
      break;
    case PointwiseOp::relu:
      operations.push_back(pointwise(CUDNN_POINTWISE_RELU_FWD, *a, nullptr, *y).get());
      break;
    case PointwiseOp::gelu:
      operations.push_back(pointwise(CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, *a, nullptr, *y).get());
      break;
    case PointwiseOp::silu:
      operations.push_back(pointwise(CUDNN_POINTWISE_SWISH_FWD, *a, nullptr, *y).get());
      break;
    case PointwiseOp::silu_mul: {
      auto t = tensor({.uid = 4,
                       .data_type = CUDNN_DATA_FLOAT,
                       .dims = dims,
                       .strides = strides,
                       .is_virtual = true});
      parts.push_back(t);
      operations.push_back(pointwise(CUDNN_POINTWISE_SWISH_FWD, *a, nullptr, *t).get());
      operations.push_back(pointwise(CUDNN_POINTWISE_MUL, *t, b.get(), *y).get());
      break;
    }
  }
  return graph_call(handle, std::move(parts), operations, std::move(bindings));
}

CheckResult Pointwise::check() {
  require_prepared("pointwise");
  run_for_check();
  const PointwiseSpec& s = problem_.spec();
  const auto total = static_cast<std::int64_t>(pointwise_total_elements(s));
  constexpr std::int64_t kWindow = 65536, kWindows = 8;
  std::vector<double> library, reference;
  for (std::int64_t start : window_starts(total, kWindow, kWindows)) {
    const auto first = static_cast<std::size_t>(start);
    const auto count = static_cast<std::size_t>(std::min(kWindow, total - start));
    const std::vector<double> a =
        read_doubles(input(0), first, count, data_type(), prepared_stream());
    const std::vector<double> b =
        pointwise_input_count(s.op) == 2
            ? read_doubles(input(1), first, count, data_type(), prepared_stream())
            : std::vector<double>(count, 0.0);
    const std::vector<double> y =
        read_doubles(output(), first, count, data_type(), prepared_stream());
    for (std::size_t i = 0; i < count; ++i) {
      reference.push_back(pointwise_reference(s.op, a[i], b[i]));
      library.push_back(y[i]);
    }
  }
  double tolerance = relative_tolerance(s.precision);
  if (source() == KernelSource::cudnn && transcendental(s.op))
    tolerance = std::max(tolerance, 1e-3);
  const bool every = static_cast<std::int64_t>(reference.size()) == total;
  return judged(every ? "cpu reference (double), every output"
                      : "cpu reference (double), " + std::to_string(reference.size()) +
                            " outputs in windows of 65536",
                library, reference, tolerance, algorithm());
}

// --- softmax ----------------------------------------------------------------

Softmax::Softmax(SoftmaxSpec spec, std::shared_ptr<LibraryHandles> libraries)
    : MemoryBoundOperator(spec.implementation, std::move(libraries)), problem_(std::move(spec)) {}

std::string Softmax::own_kernel_name() const {
  const SoftmaxLaunch launch = softmax_launch(problem_.spec());
  return std::string("own softmax, ") +
         (launch.warp_per_row
              ? "a warp per row"
              : "a block of " + std::to_string(launch.threads_per_row) + " threads per row") +
         ", " + std::to_string(launch.vector_width) + "-value vectors";
}

nlohmann::json Softmax::own_launch() const {
  const SoftmaxLaunch launch = softmax_launch(problem_.spec());
  return {{"kernel", "softmax_kernel"},
          {"warp_per_row", launch.warp_per_row},
          {"threads_per_row", launch.threads_per_row},
          {"vector_width", launch.vector_width},
          {"fma_pipe_flops", softmax_own_fma_pipe_flops(problem_.spec())}};
}

void Softmax::launch_own(cudaStream_t stream) const {
  launch_softmax(problem_.spec(), input(0), output(), stream);
}

CudnnCall Softmax::make_cudnn_call(cudnnHandle_t handle) {
  const SoftmaxSpec& s = problem_.spec();
  const std::int64_t rows = s.batch * s.rows;
  if (rows > INT_MAX)
    throw usage_error("softmax: batch x rows = " + std::to_string(rows) +
                      " exceed cuDNN's int dimensions; allowed: <= " + std::to_string(INT_MAX));
  struct Legacy {
    TensorDescriptor x;
  };
  auto legacy = std::make_shared<Legacy>();
  TR_CUDNN_CHECK(cudnnSetTensor4dDescriptor(legacy->x.get(), CUDNN_TENSOR_NCHW,
                                            cudnn_data_type(s.precision), static_cast<int>(rows),
                                            static_cast<int>(s.columns), 1, 1));
  CudnnCall call;
  call.name = "cudnnSoftmaxForward CUDNN_SOFTMAX_ACCURATE CUDNN_SOFTMAX_MODE_INSTANCE";
  call.details = {{"cudnn_version", cudnnGetVersion()}, {"api", "legacy"}};
  call.execute = [handle, desc = legacy->x.get(), x = input(0), y = output()](cudaStream_t stream) {
    const float one = 1, zero = 0;
    TR_CUDNN_CHECK(cudnnSetStream(handle, stream));
    TR_CUDNN_CHECK(cudnnSoftmaxForward(handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                       &one, desc, x, &zero, desc, y));
  };
  call.keep_alive = legacy;
  return call;
}

CheckResult Softmax::check() {
  require_prepared("softmax");
  run_for_check();
  const SoftmaxSpec& s = problem_.spec();
  const auto rows = static_cast<std::int64_t>(softmax_rows(s));
  constexpr std::int64_t kRows = 16;
  std::vector<double> library, reference;
  for (std::int64_t row : window_starts(rows, 1, kRows)) {
    const auto first = static_cast<std::size_t>(row * s.columns);
    const auto count = static_cast<std::size_t>(s.columns);
    const std::vector<double> x =
        read_doubles(input(0), first, count, data_type(), prepared_stream());
    const std::vector<double> y =
        read_doubles(output(), first, count, data_type(), prepared_stream());
    const double max = *std::max_element(x.begin(), x.end());
    double sum = 0;
    for (double v : x) sum += std::exp(v - max);
    for (std::size_t i = 0; i < count; ++i) {
      reference.push_back(std::exp(x[i] - max) / sum);
      library.push_back(y[i]);
    }
  }
  const double tolerance =
      std::max(relative_tolerance(s.precision), long_sum_tolerance(static_cast<double>(s.columns)));
  const std::size_t checked_rows = reference.size() / static_cast<std::size_t>(s.columns);
  return judged("cpu reference (double), " + std::to_string(checked_rows) + " of " +
                    std::to_string(rows) + " rows",
                library, reference, tolerance, algorithm());
}

// --- pool -------------------------------------------------------------------

Pool::Pool(PoolSpec spec, std::shared_ptr<LibraryHandles> libraries)
    : MemoryBoundOperator(spec.implementation, std::move(libraries)), problem_(std::move(spec)) {}

std::string Pool::own_kernel_name() const {
  const PoolSpec& s = problem_.spec();
  const std::size_t width = 16 / element_bytes(s.precision);
  return std::string("own pool_") + to_string(s.mode) + " NHWC, " +
         std::to_string(s.channels % static_cast<std::int64_t>(width) == 0 ? width : 1) +
         "-channel vectors";
}

nlohmann::json Pool::own_launch() const {
  return {{"kernel", "pool_kernel"}, {"threads_per_block", 256}};
}

void Pool::launch_own(cudaStream_t stream) const {
  launch_pool(problem_.spec(), input(0), output(), stream);
}

CudnnCall Pool::make_cudnn_call(cudnnHandle_t handle) {
  const PoolSpec& s = problem_.spec();
  // Found on an H100 (2026-11-27): cuDNN 9.14's resample engine (eng3) listed
  // for bf16 average pooling writes out of bounds (cudaErrorIllegalAddress, which
  // ends the process's context); fp16 and fp32 pass their checks.
  if (s.precision == Precision::bf16 && cudnnGetVersion() <= 91400)
    throw GpuError("cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
                   "CUDNN_STATUS_NOT_SUPPORTED: cuDNN " + cudnn_version_text(cudnnGetVersion()) +
                       "'s resample engine faults (illegal address) on bf16 pooling; refused "
                       "before it runs (fp16 and fp32 run)");
  const cudnnDataType_t type = cudnn_data_type(s.precision);
  // Logical N, C, H, W; NHWC in memory.
  const std::vector<int> nhwc = {0, 2, 3, 1};
  const std::vector<std::int64_t> x_dims = {s.batch, s.channels, s.height, s.width};
  const std::vector<std::int64_t> y_dims = {s.batch, s.channels, pool_output_height(s),
                                            pool_output_width(s)};
  auto x = tensor(
      {.uid = 1, .data_type = type, .dims = x_dims, .strides = packed_strides(x_dims, nhwc)});
  auto y = tensor(
      {.uid = 2, .data_type = type, .dims = y_dims, .strides = packed_strides(y_dims, nhwc)});
  auto resample = std::make_shared<cg::Descriptor>(CUDNN_BACKEND_RESAMPLE_DESCRIPTOR);
  const std::int64_t window[] = {s.window, s.window}, stride[] = {s.stride, s.stride},
                     pad[] = {s.pad, s.pad};
  resample
      ->set(CUDNN_ATTR_RESAMPLE_MODE, s.mode == PoolMode::max
                                          ? CUDNN_RESAMPLE_MAXPOOL
                                          : CUDNN_RESAMPLE_AVGPOOL_INCLUDE_PADDING)
      .set(CUDNN_ATTR_RESAMPLE_COMP_TYPE, CUDNN_DATA_FLOAT)
      .set(CUDNN_ATTR_RESAMPLE_SPATIAL_DIMS, std::int64_t{2})
      .set_array<std::int64_t>(CUDNN_ATTR_RESAMPLE_WINDOW_DIMS, window)
      .set_array<std::int64_t>(CUDNN_ATTR_RESAMPLE_STRIDES, stride)
      .set_array<std::int64_t>(CUDNN_ATTR_RESAMPLE_PRE_PADDINGS, pad)
      .set_array<std::int64_t>(CUDNN_ATTR_RESAMPLE_POST_PADDINGS, pad)
      .set(CUDNN_ATTR_RESAMPLE_PADDING_MODE, CUDNN_ZERO_PAD);
  if (s.mode == PoolMode::max)
    resample->set(CUDNN_ATTR_RESAMPLE_NAN_PROPAGATION, CUDNN_PROPAGATE_NAN);
  resample->finalize();
  auto operation =
      std::make_shared<cg::Descriptor>(CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR);
  operation->set(CUDNN_ATTR_OPERATION_RESAMPLE_FWD_DESC, *resample)
      .set(CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC, *x)
      .set(CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC, *y)
      .finalize();
  return graph_call(handle, {x, y, resample, operation}, {operation.get()},
                    {{1, const_cast<void*>(input(0))}, {2, output()}});
}

CheckResult Pool::check() {
  require_prepared("pool");
  run_for_check();
  const PoolSpec& s = problem_.spec();
  const std::int64_t oh = pool_output_height(s), ow = pool_output_width(s);
  const std::int64_t image = s.height * s.width * s.channels, out_image = oh * ow * s.channels;
  std::vector<double> library, reference;
  for (std::int64_t n : window_starts(s.batch, 1, 2)) {
    const std::vector<double> x =
        read_doubles(input(0), static_cast<std::size_t>(n * image), static_cast<std::size_t>(image),
                     data_type(), prepared_stream());
    const std::vector<double> y =
        read_doubles(output(), static_cast<std::size_t>(n * out_image),
                     static_cast<std::size_t>(out_image), data_type(), prepared_stream());
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j)
        for (std::int64_t c = 0; c < s.channels; ++c) {
          double acc = s.mode == PoolMode::max ? -INFINITY : 0.0;
          for (std::int64_t h = i * s.stride - s.pad; h < i * s.stride - s.pad + s.window; ++h)
            for (std::int64_t w = j * s.stride - s.pad; w < j * s.stride - s.pad + s.window; ++w) {
              if (h < 0 || h >= s.height || w < 0 || w >= s.width) continue;
              const double v = x[static_cast<std::size_t>((h * s.width + w) * s.channels + c)];
              acc = s.mode == PoolMode::max ? std::max(acc, v) : acc + v;
            }
          if (s.mode == PoolMode::avg) acc /= static_cast<double>(s.window * s.window);
          reference.push_back(acc);
          library.push_back(y[static_cast<std::size_t>((i * ow + j) * s.channels + c)]);
        }
  }
  return judged("cpu reference (double), every output of " +
                    std::string(s.batch > 1 ? "the first and last image" : "the image"),
                library, reference, relative_tolerance(s.precision), algorithm());
}

}  // namespace timeroof
