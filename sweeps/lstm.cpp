#include "sweeps/lstm.hpp"

#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cudnn.hpp"
#include "gpu/handles.hpp"
#include "kernels/device_fill.hpp"
#include "sweeps/cudnn_handles.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/device_compare.hpp"

// The cuDNN side of the LSTM operator (sweeps/lstm.hpp); its names and counts are
// in lstm_spec.cpp, its CPU reference in lstm_reference.cpp.
namespace timeroof {

namespace {

double d(std::int64_t value) {
  return static_cast<double>(value);
}

using Size = std::size_t;

Size z(std::int64_t v) {
  return static_cast<Size>(v);
}

}  // namespace

// ---------------------------------------------------------------------------
// The cuDNN side.

namespace {

struct RnnRelease {
  void operator()(cudnnRNNDescriptor_t desc) const noexcept {
    TR_CUDNN_WARN(cudnnDestroyRNNDescriptor(desc));
  }
};
struct RnnDataRelease {
  void operator()(cudnnRNNDataDescriptor_t desc) const noexcept {
    TR_CUDNN_WARN(cudnnDestroyRNNDataDescriptor(desc));
  }
};
struct DropoutRelease {
  void operator()(cudnnDropoutDescriptor_t desc) const noexcept {
    TR_CUDNN_WARN(cudnnDestroyDropoutDescriptor(desc));
  }
};

}  // namespace

using RnnDescriptor =
    cudnn_detail::Owned<cudnnRNNDescriptor_t, RnnRelease, cudnnCreateRNNDescriptor>;
using RnnDataDescriptor =
    cudnn_detail::Owned<cudnnRNNDataDescriptor_t, RnnDataRelease, cudnnCreateRNNDataDescriptor>;
using DropoutDescriptor =
    cudnn_detail::Owned<cudnnDropoutDescriptor_t, DropoutRelease, cudnnCreateDropoutDescriptor>;

namespace {

const char* data_type_name(cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_FLOAT:
      return "CUDNN_DATA_FLOAT";
    case CUDNN_DATA_HALF:
      return "CUDNN_DATA_HALF";
    case CUDNN_DATA_BFLOAT16:
      return "CUDNN_DATA_BFLOAT16";
    default:
      return "?";
  }
}

// As Conv2d: fma_only -> CUDNN_FMA_MATH ("restricted to kernels that use FMA
// instructions", no TF32); tf32 -> CUDNN_DEFAULT_MATH (TF32 Tensor Cores
// permitted for fp32 data on Ampere and later); fp16 / bf16 -> CUDNN_TENSOR_OP_MATH.
cudnnRNNAlgo_t cudnn_algo(LstmAlgorithm algorithm) {
  switch (algorithm) {
    case LstmAlgorithm::standard:
      return CUDNN_RNN_ALGO_STANDARD;
    case LstmAlgorithm::persist_static:
      return CUDNN_RNN_ALGO_PERSIST_STATIC;
    case LstmAlgorithm::persist_dynamic:
      return CUDNN_RNN_ALGO_PERSIST_DYNAMIC;
    case LstmAlgorithm::persist_static_small_h:
      return CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H;
  }
  return CUDNN_RNN_ALGO_STANDARD;
}

// cuDNN statuses that describe a configuration it cannot run.
bool is_unsupported(cudnnStatus_t status) {
  const int category = static_cast<int>(status) / 1000 * 1000;
  return category == CUDNN_STATUS_NOT_SUPPORTED || category == CUDNN_STATUS_BAD_PARAM;
}

// Longest reduction an output sums (fp32 accumulation error grows with its root).
double reduction_length(const LstmSpec& spec) {
  const double h = d(spec.hidden_size);
  switch (spec.pass) {
    case LstmPass::inference:
    case LstmPass::training_forward:
      return d(std::max(spec.input_size, lstm_directions(spec) * spec.hidden_size)) + h;
    case LstmPass::backward_data:
      return 4 * h * d(lstm_directions(spec));
    case LstmPass::backward_weights:
      return d(spec.batch) * d(spec.seq_length);
  }
  return 1;
}

double tolerance_for(const LstmSpec& spec) {
  double tolerance = relative_tolerance(spec.precision);
  // Backward outputs below fp32 get twice the precision's tolerance: their
  // GEMMs take TF32 operands truncated toward zero (a product is on average
  // 2^-10 too small, and a sum of them biased alike: 1.15e-3 seen on an H200 for
  // dw), and fp16 / bf16 gate gradients multiply about five activations that the
  // reserve space holds at the data precision (bf16 dw: 8.3e-3 seen).
  if (is_backward(spec.pass) && spec.precision != Precision::fp32) tolerance *= 2;
  return std::max(tolerance, long_sum_tolerance(reduction_length(spec)));
}

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// Where one weight matrix or bias vector lies in a weight space (in elements).
struct Region {
  Size offset = 0;
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_stride = 0, col_stride = 0;
};
// Per pseudo layer: [0..3] W_i W_f W_g W_o, [4..7] R_*, and their biases.
struct LayerRegions {
  Region matrix[8];
  Region bias[8];
};

}  // namespace

// Everything prepare() creates; destroyed with the operator. check() builds a
// second one (fp32 / fma_only) as the reference for large shapes.
class LstmState {
 public:
  LstmState(const LstmSpec& lstm, std::shared_ptr<LibraryHandles> shared, cudaStream_t prepared_on)
      : spec(lstm), libraries(std::move(shared)), stream(prepared_on) {}

  LstmSpec spec;
  std::shared_ptr<LibraryHandles> libraries;
  cudaStream_t stream;  // the prepare() stream: check() and download() use it
  RnnDescriptor rnn;
  DropoutDescriptor dropout;
  RnnDataDescriptor x_desc, y_desc;
  TensorDescriptor h_desc;  // L D x B x H: hx cx hy cy and their gradients
  std::vector<std::int32_t> host_lengths;
  DeviceBuffer<std::int32_t> lengths;  // devSeqLengths: every sequence T long
  DeviceBuffer<std::byte> x, hx, cx, y, hy, cy, weights, work, reserve;
  DeviceBuffer<std::byte> dy, dhy, dcy, dx, dhx, dcx, dweights;  // backward passes
  // backward_data: the reserve space as the training forward left it. cuDNN's
  // backward data overwrites the saved gate activations with their gradients in
  // place (the reserve holds T B (4H + H) elements per layer and direction: the
  // gates and c, nothing more), so a second call would read gradients as
  // activations; every run() restores this copy first.
  DeviceBuffer<std::byte> reserve_snapshot;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnDataType_t math_precision = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;
  bool wgrad_set = true;  // CUDNN_WGRAD_MODE_SET accepted (else ADD after zeroing dw)
  std::vector<std::string> prepare_calls;

  cudnnHandle_t handle() const { return libraries->cudnn(); }
  std::size_t element() const { return element_bytes(spec.precision); }
  DataType etype() const { return storage_type(spec.precision); }
  bool training() const { return spec.pass != LstmPass::inference; }

  // Descriptors and cuDNN's sizes of the weight, work and reserve spaces.
  void configure() {
    type = cudnn_data_type(spec.precision);
    math = requested_math(spec.precision, resolved_math(spec));
    auto i32 = [](std::int64_t v) { return static_cast<int>(v); };  // validate() bounds them
    const int directions = i32(lstm_directions(spec));
    // No dropout (probability 0 needs no random states).
    TR_CUDNN_CHECK(cudnnSetDropoutDescriptor(dropout.get(), handle(), 0.0f, nullptr, 0, 0));
    // fp16 and bf16 data accumulate in fp32 (math precision FLOAT); should cuDNN
    // refuse that pairing, the data type's own precision is the fallback, recorded
    // in details()["cudnn_math_precision"].
    auto set_descriptor = [&](cudnnDataType_t precision) {
      return cudnnSetRNNDescriptor_v8(
          rnn.get(), cudnn_algo(spec.algorithm), CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
          directions == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, type,
          precision, math, i32(spec.input_size), i32(spec.hidden_size),
          i32(spec.hidden_size) /* projection size = hidden: no projection */, i32(spec.layers),
          dropout.get(), CUDNN_RNN_PADDED_IO_DISABLED);
    };
    math_precision = CUDNN_DATA_FLOAT;
    cudnnStatus_t status = set_descriptor(math_precision);
    if (status != CUDNN_STATUS_SUCCESS && type != CUDNN_DATA_FLOAT && is_unsupported(status)) {
      math_precision = type;
      status = set_descriptor(math_precision);
    }
    if (status != CUDNN_STATUS_SUCCESS)
      check_detail::fail_cudnn(status, "cudnnSetRNNDescriptor_v8(...)", __FILE__, __LINE__);
    if (spec.algorithm == LstmAlgorithm::persist_dynamic)
      TR_CUDNN_CHECK(cudnnBuildRNNDynamic(handle(), rnn.get(), i32(spec.batch)));

    // Sequence-major and packed; all sequences are T long, so packed and padded
    // layouts coincide: T x B x width, dense.
    host_lengths.assign(z(spec.batch), i32(spec.seq_length));
    TR_CUDNN_CHECK(cudnnSetRNNDataDescriptor(
        x_desc.get(), type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, i32(spec.seq_length),
        i32(spec.batch), i32(spec.input_size), host_lengths.data(), nullptr));
    TR_CUDNN_CHECK(cudnnSetRNNDataDescriptor(
        y_desc.get(), type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, i32(spec.seq_length),
        i32(spec.batch), directions * i32(spec.hidden_size), host_lengths.data(), nullptr));
    const int dims[3] = {i32(spec.layers) * directions, i32(spec.batch), i32(spec.hidden_size)};
    const int strides[3] = {dims[1] * dims[2], dims[2], 1};
    TR_CUDNN_CHECK(cudnnSetTensorNdDescriptor(h_desc.get(), type, 3, dims, strides));

    TR_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle(), rnn.get(), &weight_bytes));
    TR_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(
        handle(), rnn.get(), training() ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
        x_desc.get(), &work_bytes, &reserve_bytes));
    if (!training()) reserve_bytes = 0;
  }

  // Every buffer, inputs and outputs filled with random non-zero data (so nothing
  // ever reads uninitialised memory); seeds differ per tensor.
  void allocate(std::uint32_t seed) {
    const std::size_t e = element();
    lengths = DeviceBuffer<std::int32_t>(host_lengths.size());
    TR_CUDA_CHECK(cudaMemcpyAsync(lengths.get(), host_lengths.data(), lengths.bytes(),
                                  cudaMemcpyHostToDevice, stream));
    auto make = [&](DeviceBuffer<std::byte>& buffer, double count) {
      const auto n = static_cast<std::size_t>(count);
      buffer = DeviceBuffer<std::byte>(n * e);
      fill_random(buffer.get(), n, etype(), seed++, stream);
    };
    const double xs = lstm_x_elements(spec), ys = lstm_y_elements(spec);
    const double ss = lstm_state_elements(spec), ws = static_cast<double>(weight_bytes / e);
    make(x, xs);
    make(hx, ss);
    make(cx, ss);
    make(y, ys);
    make(hy, ss);
    make(cy, ss);
    make(weights, ws);
    // Weights and biases uniform in [-1/sqrt(H), 1/sqrt(H)) (nn.LSTM's default
    // initialisation): with U(-1, 1) the recurrence is chaotic for H >= 64 and
    // rounding differences grow step by step (a 0.67 relative difference between
    // fp16 and fp32 runs seen at T = 128, H = 128), which would hide real errors.
    scale(weights, 1.0 / std::sqrt(static_cast<double>(spec.hidden_size)));
    if (is_backward(spec.pass)) {
      make(dy, ys);
      make(dhy, ss);
      make(dcy, ss);
      make(dx, xs);
      make(dhx, ss);
      make(dcx, ss);
      make(dweights, ws);
    }
    work = DeviceBuffer<std::byte>(work_bytes);
    reserve = DeviceBuffer<std::byte>(reserve_bytes);
  }

  // Multiplies every element of `buffer` by `factor`, through doubles, in chunks.
  void scale(DeviceBuffer<std::byte>& buffer, double factor) {
    const std::size_t count = buffer.bytes() / element();
    constexpr std::size_t kChunk = std::size_t{1} << 22;
    DeviceBuffer<double> staged(std::min(count, kChunk));
    std::vector<double> host(staged.size());
    for (std::size_t at = 0; at < count; at += kChunk) {
      const std::size_t n = std::min(kChunk, count - at);
      std::byte* part = buffer.get() + at * element();
      convert_to_double(part, staged.get(), n, etype(), stream);
      TR_CUDA_CHECK(cudaMemcpyAsync(host.data(), staged.get(), n * sizeof(double),
                                    cudaMemcpyDeviceToHost, stream));
      TR_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (std::size_t i = 0; i < n; ++i) host[i] *= factor;
      TR_CUDA_CHECK(cudaMemcpyAsync(staged.get(), host.data(), n * sizeof(double),
                                    cudaMemcpyHostToDevice, stream));
      convert_from_double(staged.get(), part, n, etype(), stream);
    }
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void forward(cudnnForwardMode_t mode) const {
    const bool train = mode == CUDNN_FWD_MODE_TRAINING;
    TR_CUDNN_CHECK(cudnnRNNForward(handle(), rnn.get(), mode, lengths.get(), x_desc.get(), x.get(),
                                   y_desc.get(), y.get(), h_desc.get(), hx.get(), hy.get(),
                                   h_desc.get(), cx.get(), cy.get(), weights.bytes(), weights.get(),
                                   work.bytes(), work.get(), train ? reserve.bytes() : 0,
                                   train ? reserve.get() : nullptr));
  }

  void backward_data() const {
    TR_CUDNN_CHECK(cudnnRNNBackwardData_v8(
        handle(), rnn.get(), lengths.get(), y_desc.get(), y.get(), dy.get(), x_desc.get(), dx.get(),
        h_desc.get(), hx.get(), dhy.get(), dhx.get(), h_desc.get(), cx.get(), dcy.get(), dcx.get(),
        weights.bytes(), weights.get(), work.bytes(), work.get(), reserve.bytes(), reserve.get()));
  }

  cudnnStatus_t backward_weights_status(cudnnWgradMode_t mode) const {
    return cudnnRNNBackwardWeights_v8(handle(), rnn.get(), mode, lengths.get(), x_desc.get(),
                                      x.get(), h_desc.get(), hx.get(), y_desc.get(), y.get(),
                                      dweights.bytes(), dweights.get(), work.bytes(), work.get(),
                                      reserve.bytes(), reserve.get());
  }

  // The calls a backward pass depends on (untimed), and for backward_weights the
  // choice between CUDNN_WGRAD_MODE_SET and ADD.
  void prerequisites() {
    if (!is_backward(spec.pass)) return;
    forward(CUDNN_FWD_MODE_TRAINING);
    prepare_calls.emplace_back("cudnnRNNForward(CUDNN_FWD_MODE_TRAINING)");
    if (spec.pass == LstmPass::backward_data) {
      reserve_snapshot = DeviceBuffer<std::byte>(reserve.bytes());
      TR_CUDA_CHECK(cudaMemcpyAsync(reserve_snapshot.get(), reserve.get(), reserve.bytes(),
                                    cudaMemcpyDeviceToDevice, stream));
      prepare_calls.emplace_back("cudaMemcpyAsync(reserve space -> snapshot)");
    }
    if (spec.pass == LstmPass::backward_weights) {
      backward_data();
      prepare_calls.emplace_back("cudnnRNNBackwardData_v8");
      const cudnnStatus_t status = backward_weights_status(CUDNN_WGRAD_MODE_SET);
      if (status == CUDNN_STATUS_SUCCESS) {
        wgrad_set = true;
      } else if (is_unsupported(status)) {
        wgrad_set = false;
      } else {
        check_detail::fail_cudnn(status, "cudnnRNNBackwardWeights_v8(CUDNN_WGRAD_MODE_SET, ...)",
                                 __FILE__, __LINE__);
      }
    }
  }

  // The pass's one call on `on` (the handle's stream): overwrites its outputs.
  void execute(cudaStream_t on) const {
    switch (spec.pass) {
      case LstmPass::inference:
        forward(CUDNN_FWD_MODE_INFERENCE);
        break;
      case LstmPass::training_forward:
        forward(CUDNN_FWD_MODE_TRAINING);
        break;
      case LstmPass::backward_data:
        TR_CUDA_CHECK(cudaMemcpyAsync(reserve.get(), reserve_snapshot.get(), reserve.bytes(),
                                      cudaMemcpyDeviceToDevice, on));
        backward_data();
        break;
      case LstmPass::backward_weights:
        if (wgrad_set) {
          TR_CUDNN_CHECK(backward_weights_status(CUDNN_WGRAD_MODE_SET));
        } else {
          TR_CUDA_CHECK(cudaMemsetAsync(dweights.get(), 0, dweights.bytes(), on));
          TR_CUDNN_CHECK(backward_weights_status(CUDNN_WGRAD_MODE_ADD));
        }
        break;
    }
  }

  const DeviceBuffer<std::byte>& buffer(LstmTensor which) const {
    switch (which) {
      case LstmTensor::x:
        return x;
      case LstmTensor::hx:
        return hx;
      case LstmTensor::cx:
        return cx;
      case LstmTensor::y:
        return y;
      case LstmTensor::hy:
        return hy;
      case LstmTensor::cy:
        return cy;
      case LstmTensor::dy:
        return dy;
      case LstmTensor::dhy:
        return dhy;
      case LstmTensor::dcy:
        return dcy;
      case LstmTensor::dx:
        return dx;
      case LstmTensor::dhx:
        return dhx;
      case LstmTensor::dcx:
        return dcx;
    }
    return x;
  }

  // The tensors the pass writes (the weight gradient is handled apart).
  std::vector<LstmTensor> outputs() const {
    switch (spec.pass) {
      case LstmPass::inference:
      case LstmPass::training_forward:
        return {LstmTensor::y, LstmTensor::hy, LstmTensor::cy};
      case LstmPass::backward_data:
        return {LstmTensor::dx, LstmTensor::dhx, LstmTensor::dcx};
      case LstmPass::backward_weights:
        return {};
    }
    return {};
  }

  std::vector<double> to_host(const void* data, std::size_t count) const {
    DeviceBuffer<double> converted(count);
    convert_to_double(data, converted.get(), count, etype(), stream);
    std::vector<double> host(count);
    TR_CUDA_CHECK(cudaMemcpyAsync(host.data(), converted.get(), count * sizeof(double),
                                  cudaMemcpyDeviceToHost, stream));
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
    return host;
  }

  std::vector<double> download(LstmTensor which) const {
    const DeviceBuffer<std::byte>& b = buffer(which);
    if (!b.get())
      throw std::logic_error(
          "lstm: this pass has no such tensor (a backward tensor of a forward "
          "pass?)");
    return to_host(b.get(), b.bytes() / element());
  }

  void upload(LstmTensor which, const std::vector<double>& values) {
    const DeviceBuffer<std::byte>& b = buffer(which);
    upload_raw(b.get(), values);
  }

  void upload_raw(void* destination, const std::vector<double>& values) {
    DeviceBuffer<double> staged(values.size());
    TR_CUDA_CHECK(cudaMemcpyAsync(staged.get(), values.data(), staged.bytes(),
                                  cudaMemcpyHostToDevice, stream));
    convert_from_double(staged.get(), destination, values.size(), etype(), stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // Where cuDNN keeps every matrix and bias of `space` (weights or dweights).
  std::vector<LayerRegions> regions(const DeviceBuffer<std::byte>& space) const {
    std::vector<LayerRegions> all;
    const std::int64_t pseudo_layers = spec.layers * lstm_directions(spec);
    TensorDescriptor m_desc, b_desc;
    for (std::int64_t pl = 0; pl < pseudo_layers; ++pl) {
      LayerRegions layer;
      const std::int64_t in_width = lstm_layer_input_size(spec, pl / lstm_directions(spec));
      for (int id = 0; id < 8; ++id) {
        void* m_addr = nullptr;
        void* b_addr = nullptr;
        TR_CUDNN_CHECK(cudnnGetRNNWeightParams(handle(), rnn.get(), static_cast<std::int32_t>(pl),
                                               space.bytes(), space.get(), id, m_desc.get(),
                                               &m_addr, b_desc.get(), &b_addr));
        layer.matrix[id] = region_of(space, m_desc, m_addr, spec.hidden_size,
                                     id < 4 ? in_width : spec.hidden_size);
        layer.bias[id] = region_of(space, b_desc, b_addr, spec.hidden_size, 1);
      }
      all.push_back(layer);
    }
    return all;
  }

  Region region_of(const DeviceBuffer<std::byte>& space, const TensorDescriptor& desc,
                   void* address, std::int64_t rows, std::int64_t cols) const {
    cudnnDataType_t dtype{};
    int nb = 0;
    int dims[3] = {0, 0, 0};
    int strides[3] = {0, 0, 0};
    TR_CUDNN_CHECK(cudnnGetTensorNdDescriptor(desc.get(), 3, &dtype, &nb, dims, strides));
    if (address == nullptr || nb != 3 || dims[1] != rows || dims[2] != cols)
      throw std::logic_error("lstm: cuDNN reports a weight of " + std::to_string(dims[1]) + " x " +
                             std::to_string(dims[2]) + " (" + std::to_string(nb) +
                             " dims), expected " + std::to_string(rows) + " x " +
                             std::to_string(cols));
    const auto bytes = static_cast<Size>(static_cast<const std::byte*>(address) - space.get());
    return {bytes / element(), rows, cols, strides[1], strides[2]};
  }

  template <typename Visit>
  void for_each_weight(const std::vector<LayerRegions>& layout, LstmWeights& weights_of,
                       Visit visit) const {
    const Size h = z(spec.hidden_size);
    for (Size pl = 0; pl < layout.size(); ++pl) {
      LstmLayerWeights& layer = weights_of[pl];
      for (Size id = 0; id < 8; ++id) {
        const Region& m = layout[pl].matrix[id];
        std::vector<double>& target = id < 4 ? layer.w : layer.r;
        const Size cols = z(m.cols);
        const Size gate = id % 4;
        for (Size j = 0; j < h; ++j)
          for (Size k = 0; k < cols; ++k)
            visit(target[(gate * h + j) * cols + k],
                  m.offset + j * z(m.row_stride) + k * z(m.col_stride));
        const Region& b = layout[pl].bias[id];
        std::vector<double>& bias = id < 4 ? layer.bw : layer.br;
        for (Size j = 0; j < h; ++j) visit(bias[gate * h + j], b.offset + j * z(b.row_stride));
      }
    }
  }

  LstmWeights download_weights(bool gradient) const {
    const DeviceBuffer<std::byte>& space = gradient ? dweights : weights;
    if (!space.get()) throw std::logic_error("lstm: no weight gradient outside backward passes");
    const std::vector<double> all = to_host(space.get(), space.bytes() / element());
    LstmWeights result = lstm_zero_weights(spec);
    for_each_weight(regions(space), result, [&](double& value, Size at) { value = all.at(at); });
    return result;
  }

  void upload_weights(LstmWeights values) {
    std::vector<double> all = to_host(weights.get(), weights.bytes() / element());
    for_each_weight(regions(weights), values, [&](double& value, Size at) { all.at(at) = value; });
    upload_raw(weights.get(), all);
  }
};

// ---------------------------------------------------------------------------
// The operator.

Lstm::Lstm(LstmSpec spec, std::shared_ptr<LibraryHandles> libraries)
    : problem_(std::move(spec)), libraries_(std::move(libraries)) {}

Lstm::~Lstm() = default;

std::string Lstm::algorithm() const {
  return state_ ? std::string(cudnn_name(spec().algorithm)) : std::string();
}

nlohmann::json Lstm::details() const {
  if (!state_) return nlohmann::json::object();
  const LstmState& st = *state_;
  nlohmann::json details = {
      {"workspace_bytes", st.work_bytes},
      {"reserve_bytes", st.reserve_bytes},
      {"weight_space_bytes", st.weight_bytes},
      {"cudnn_math_type", math_type_name(st.math)},
      {"cudnn_data_type", data_type_name(st.type)},
      {"cudnn_math_precision", data_type_name(st.math_precision)},
      // cuDNN's reproducibility notes list no RNN routine as non-deterministic;
      // the GPU tests check bitwise equality of reruns.
      {"deterministic", true},
      {"prepare_calls", st.prepare_calls},
  };
  // What one run() enqueues, in order.
  std::vector<std::string> run_calls;
  switch (spec().pass) {
    case LstmPass::inference:
      run_calls = {"cudnnRNNForward(CUDNN_FWD_MODE_INFERENCE)"};
      break;
    case LstmPass::training_forward:
      run_calls = {"cudnnRNNForward(CUDNN_FWD_MODE_TRAINING)"};
      break;
    case LstmPass::backward_data:
      run_calls = {"cudaMemcpyAsync(snapshot -> reserve space)", "cudnnRNNBackwardData_v8"};
      details["restored_reserve_bytes"] = st.reserve_bytes;
      break;
    case LstmPass::backward_weights:
      if (!st.wgrad_set) run_calls.emplace_back("cudaMemsetAsync(dw, 0)");
      run_calls.emplace_back(st.wgrad_set ? "cudnnRNNBackwardWeights_v8(CUDNN_WGRAD_MODE_SET)"
                                          : "cudnnRNNBackwardWeights_v8(CUDNN_WGRAD_MODE_ADD)");
      details["wgrad_mode"] = st.wgrad_set ? "CUDNN_WGRAD_MODE_SET" : "CUDNN_WGRAD_MODE_ADD";
      break;
  }
  details["run_calls"] = run_calls;
  if (const char* tf32 = std::getenv("NVIDIA_TF32_OVERRIDE"))
    details["nvidia_tf32_override"] = tf32;
  return details;
}

void* Lstm::buffer(const std::string& role) const {
  if (!state_) return nullptr;
  using T = LstmTensor;
  constexpr std::pair<const char*, LstmTensor> kRoles[] = {
      {"x", T::x},     {"hx", T::hx}, {"cx", T::cx},   {"y", T::y},
      {"hy", T::hy},   {"cy", T::cy}, {"dy", T::dy},   {"dhy", T::dhy},
      {"dcy", T::dcy}, {"dx", T::dx}, {"dhx", T::dhx}, {"dcx", T::dcx}};
  for (const auto& [name, tensor] : kRoles)
    if (role == name) return state_->buffer(tensor).get();
  return nullptr;
}

std::vector<DeviceTensor> Lstm::inputs() const {
  return with_buffers(problem_.inputs(), [this](const std::string& role) { return buffer(role); });
}

std::vector<DeviceTensor> Lstm::outputs() const {
  if (state_ && spec().pass == LstmPass::backward_weights)  // cuDNN's weight space, padding and all
    return {{"dw", state_->dweights.get(), state_->dweights.bytes()}};
  return with_buffers(problem_.outputs(), [this](const std::string& role) { return buffer(role); });
}

void Lstm::prepare(cudaStream_t stream) {
  state_.reset();
  const LstmSpec& spec = problem_.spec();
  double elements = lstm_x_elements(spec) + lstm_y_elements(spec) + 6 * lstm_state_elements(spec) +
                    lstm_weight_elements(spec);
  if (is_backward(spec.pass)) elements *= 2;
  require_device_memory(static_cast<double>(element_bytes(spec.precision)) * elements);

  if (!libraries_) libraries_ = std::make_shared<LibraryHandles>();
  auto state = std::make_unique<LstmState>(spec, libraries_, stream);
  LstmState& st = *state;
  TR_CUDNN_CHECK(cudnnSetStream(st.handle(), stream));
  st.configure();
  st.allocate(0x15700001u);
  st.prerequisites();
  // One call of the pass now, so that a configuration cuDNN cannot run fails in
  // prepare() (as the interface promises) and not in the first timed run.
  st.execute(stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  state_ = std::move(state);
}

void Lstm::run(cudaStream_t stream) {
  if (!state_) throw std::logic_error("lstm: run() before a successful prepare()");
  // The handle may be shared: point it at this stream only when it is elsewhere.
  cudaStream_t current = nullptr;
  TR_CUDNN_CHECK(cudnnGetStream(state_->handle(), &current));
  if (current != stream) TR_CUDNN_CHECK(cudnnSetStream(state_->handle(), stream));
  state_->execute(stream);
}

std::vector<double> Lstm::download(LstmTensor which) const {
  if (!state_) throw std::logic_error("lstm: download() before a successful prepare()");
  return state_->download(which);
}

LstmWeights Lstm::download_weights(bool gradient) const {
  if (!state_) throw std::logic_error("lstm: download_weights() before a successful prepare()");
  return state_->download_weights(gradient);
}

std::vector<std::byte> Lstm::download_outputs_bytes() const {
  if (!state_)
    throw std::logic_error("lstm: download_outputs_bytes() before a successful prepare()");
  const LstmState& st = *state_;
  std::vector<const DeviceBuffer<std::byte>*> parts;
  for (LstmTensor which : st.outputs()) parts.push_back(&st.buffer(which));
  if (spec().pass == LstmPass::backward_weights) parts.push_back(&st.dweights);
  std::vector<std::byte> host;
  for (const DeviceBuffer<std::byte>* part : parts) {
    const std::size_t at = host.size();
    host.resize(at + part->bytes());
    TR_CUDA_CHECK(cudaMemcpyAsync(host.data() + at, part->get(), part->bytes(),
                                  cudaMemcpyDeviceToHost, st.stream));
  }
  TR_CUDA_CHECK(cudaStreamSynchronize(st.stream));
  return host;
}

namespace {

// Converts `count` elements of `from` into fp32 in a new device buffer.
DeviceBuffer<float> as_f32(const void* data, std::size_t count, DataType from,
                           cudaStream_t stream) {
  DeviceBuffer<double> staged(count);
  convert_to_double(data, staged.get(), count, from, stream);
  DeviceBuffer<float> converted(count);
  convert_from_double(staged.get(), converted.get(), count, DataType::fp32, stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  return converted;
}

}  // namespace

CheckResult Lstm::check(LstmCheckMethod method) {
  if (!state_) throw std::logic_error("lstm: check() before a successful prepare()");
  LstmState& st = *state_;
  // Every call below (the reference state's too) runs on the prepare() stream.
  TR_CUDNN_CHECK(cudnnSetStream(st.handle(), st.stream));
  const bool backward = is_backward(spec().pass);
  const double reference_flops = lstm_gemm_flops(spec()) * (backward ? 3 : 1);
  if (method == LstmCheckMethod::automatic)
    method = reference_flops <= kLstmCpuReferenceMaxFlops ? LstmCheckMethod::cpu_reference
                                                          : LstmCheckMethod::fp32_reference;
  CheckResult result;
  result.tolerance = tolerance_for(spec());
  const std::string what =
      backward ? (spec().pass == LstmPass::backward_data ? "dx dhx dcx" : "dw") : "y hy cy";

  if (method == LstmCheckMethod::cpu_reference) {
    run(st.stream);
    const std::vector<double> x = st.download(LstmTensor::x);
    const std::vector<double> hx = st.download(LstmTensor::hx);
    const std::vector<double> cx = st.download(LstmTensor::cx);
    const LstmWeights weights = st.download_weights(false);
    std::vector<double> got, expected;
    auto append = [](std::vector<double>& to, const std::vector<double>& part) {
      to.insert(to.end(), part.begin(), part.end());
    };
    if (!backward) {
      const LstmForwardResult ref = lstm_reference_forward(spec(), x, hx, cx, weights);
      for (const std::vector<double>* part : {&ref.y, &ref.hy, &ref.cy}) append(expected, *part);
      for (LstmTensor which : st.outputs()) append(got, st.download(which));
    } else {
      const LstmBackwardResult ref =
          lstm_reference_backward(spec(), x, hx, cx, weights, st.download(LstmTensor::dy),
                                  st.download(LstmTensor::dhy), st.download(LstmTensor::dcy));
      if (spec().pass == LstmPass::backward_data) {
        for (const std::vector<double>* part : {&ref.dx, &ref.dhx, &ref.dcx})
          append(expected, *part);
        for (LstmTensor which : st.outputs()) append(got, st.download(which));
      } else {
        expected = flatten(ref.dw);
        got = flatten(st.download_weights(true));
      }
    }
    result.method = "cpu reference (double)";
    result.elements = got.size();
    result.relative_error = relative_error(got, expected);
  } else {
    result.method = "agreement with cuDNN fp32 / fma_only";
    if (spec().precision == Precision::fp32 && resolved_math(spec()) == MathMode::fma_only) {
      result.status = CheckStatus::skipped;
      result.detail = "fp32 / fma_only is itself the reference above the CPU reference limit (" +
                      format_number(reference_flops) + " > " +
                      format_number(kLstmCpuReferenceMaxFlops) + " FLOPs)";
      return result;
    }
    LstmSpec ref_spec = spec();
    ref_spec.precision = Precision::fp32;
    ref_spec.math = MathMode::fma_only;
    ref_spec.algorithm = LstmAlgorithm::standard;
    LstmState ref(ref_spec, libraries_, st.stream);
    ref.configure();
    ref.allocate(0x2ef00001u);
    // The same stored inputs, converted to fp32.
    std::vector<LstmTensor> inputs = {LstmTensor::x, LstmTensor::hx, LstmTensor::cx};
    if (backward) inputs.insert(inputs.end(), {LstmTensor::dy, LstmTensor::dhy, LstmTensor::dcy});
    for (LstmTensor which : inputs) ref.upload(which, st.download(which));
    ref.upload_weights(st.download_weights(false));
    ref.prerequisites();
    ref.execute(st.stream);
    run(st.stream);
    if (spec().pass == LstmPass::backward_weights) {
      const std::vector<double> got = flatten(st.download_weights(true));
      result.elements = got.size();
      result.relative_error = relative_error(got, flatten(ref.download_weights(true)));
    } else {
      DeviceDifference total;
      for (LstmTensor which : st.outputs()) {
        const DeviceBuffer<std::byte>& mine = st.buffer(which);
        const std::size_t count = mine.bytes() / st.element();
        const DeviceBuffer<float> converted = as_f32(mine.get(), count, st.etype(), st.stream);
        const DeviceDifference part = compare_on_device(converted.get(), ref.buffer(which).get(),
                                                        count, DataType::fp32, st.stream);
        total.max_abs_difference = std::max(total.max_abs_difference, part.max_abs_difference);
        total.max_abs_reference = std::max(total.max_abs_reference, part.max_abs_reference);
        total.non_finite_a += part.non_finite_a;
        total.non_finite_b += part.non_finite_b;
        result.elements += count;
      }
      result.relative_error = total.relative_error();
    }
    result.tolerance += tolerance_for(ref_spec);
  }
  judge(result);
  result.detail +=
      " (" + what + ") of " + cudnn_name(spec().algorithm) + " " + math_type_name(st.math);
  return result;
}

}  // namespace timeroof
