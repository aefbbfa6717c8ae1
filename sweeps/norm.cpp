#include "sweeps/norm.hpp"

#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/device_fill.hpp"
#include "sweeps/cudnn_graph.hpp"
#include "sweeps/cudnn_support.hpp"

namespace timeroof {

namespace cg = cudnn_graph;

// How one normalization call lays out its tensors in the graph.
struct NormLayout {
  cudnnBackendNormMode_t mode = CUDNN_LAYER_NORM;
  NormPhase phase = NormPhase::training;
  NormDirection direction = NormDirection::fwd;
  DataType data_type = DataType::fp16;
  // x, y, dy, dx; scale, bias and their gradients (and batchnorm's statistics);
  // layernorm's per-row statistics.
  std::vector<std::int64_t> data_dims, data_strides;
  std::vector<std::int64_t> param_dims, param_strides;
  std::vector<std::int64_t> stats_dims, stats_strides;
  std::vector<NormTensor> tensors;          // the call's
  std::vector<NormTensor> forward_tensors;  // bwd: the training forward run in prepare()
};

namespace {

constexpr std::int64_t kUidEpsilon = 100;
constexpr std::int64_t kUidMomentum = 101;

cudnnDataType_t cudnn_type(DataType type) {
  switch (type) {
    case DataType::fp16:
      return CUDNN_DATA_HALF;
    case DataType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

bool is_data_role(const std::string& role) {
  return role == "x" || role == "y" || role == "dy" || role == "dx";
}

const char* mode_name(cudnnBackendNormMode_t mode) {
  switch (mode) {
    case CUDNN_LAYER_NORM:
      return "CUDNN_LAYER_NORM";
    case CUDNN_RMS_NORM:
      return "CUDNN_RMS_NORM";
    case CUDNN_BATCH_NORM:
      return "CUDNN_BATCH_NORM";
    default:
      return "norm mode ?";
  }
}

// The attribute of the norm operation that takes `role` (forward or backward).
cudnnBackendAttributeName_t forward_attribute(const std::string& role, NormPhase phase) {
  static const std::map<std::string, cudnnBackendAttributeName_t> kForward = {
      {"x", CUDNN_ATTR_OPERATION_NORM_FWD_XDESC},
      {"y", CUDNN_ATTR_OPERATION_NORM_FWD_YDESC},
      {"scale", CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC},
      {"bias", CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC},
      {"mean", CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC},
      {"inv_variance", CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC},
      {"running_mean", CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC},
      {"running_variance", CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC},
      {"next_running_mean", CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC},
      {"next_running_variance", CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC},
      {"running_inv_variance", CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC}};
  // Batchnorm inference reads the running mean where training writes the saved one.
  if (role == "running_mean" && phase == NormPhase::inference)
    return CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC;
  return kForward.at(role);
}

cudnnBackendAttributeName_t backward_attribute(const std::string& role) {
  static const std::map<std::string, cudnnBackendAttributeName_t> kBackward = {
      {"x", CUDNN_ATTR_OPERATION_NORM_BWD_XDESC},
      {"dy", CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC},
      {"scale", CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC},
      {"mean", CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC},
      {"inv_variance", CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC},
      {"dx", CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC},
      {"dscale", CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC},
      {"dbias", CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC}};
  return kBackward.at(role);
}

// A small deterministic generator for the fp32 parameters (filled on the host:
// they are [hidden] or [C] long).
class HostValues {
 public:
  explicit HostValues(std::uint32_t seed) : state_(seed) {}
  // Uniform in [low, high).
  float next(float low, float high) {
    state_ = state_ * 1664525u + 1013904223u;
    return low + (high - low) * static_cast<float>(state_ >> 8) / static_cast<float>(1u << 24);
  }

 private:
  std::uint32_t state_;
};

// The range of an fp32 input by role: scales near 1, positive variances.
std::pair<float, float> parameter_range(const std::string& role) {
  if (role == "scale" || role == "running_variance" || role == "running_inv_variance")
    return {0.5f, 1.5f};
  return {-0.5f, 0.5f};
}

// An engine configuration that finalized into a plan, and where the heuristic put it.
struct ChosenPlan {
  std::unique_ptr<cg::ExecutionPlan> plan;
  std::string heuristic_mode;
  int rank = 0;
};

}  // namespace

// One norm operation's graph, plan, workspace and variant pack.
class NormGraph {
 public:
  NormGraph(cudnnHandle_t handle, const NormLayout& layout, NormDirection direction,
            NormPhase phase, const std::vector<NormTensor>& tensors,
            const std::map<std::string, DeviceBuffer<std::byte>>& buffers, const float* epsilon,
            const float* momentum)
      : handle_(handle) {
    const bool forward = direction == NormDirection::fwd;
    const bool batchnorm_inference =
        layout.mode == CUDNN_BATCH_NORM && phase == NormPhase::inference;
    op_.emplace(forward ? CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR
                        : CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
    const cudnnBackendNormFwdPhase_t fwd_phase =
        phase == NormPhase::training ? CUDNN_NORM_FWD_TRAINING : CUDNN_NORM_FWD_INFERENCE;
    if (forward)
      op_->set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, layout.mode)
          .set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, fwd_phase);
    else
      op_->set(CUDNN_ATTR_OPERATION_NORM_BWD_MODE, layout.mode);
    std::vector<cg::TensorPointer> pointers;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const NormTensor& t = tensors[i];
      cg::TensorSpec spec;
      spec.uid = static_cast<std::int64_t>(i) + 1;
      spec.data_type = cudnn_type(t.type);
      const bool data = is_data_role(t.role);
      const bool stats = !data && layout.mode != CUDNN_BATCH_NORM &&
                         (t.role == "mean" || t.role == "inv_variance");
      spec.dims = data ? layout.data_dims : stats ? layout.stats_dims : layout.param_dims;
      spec.strides = data    ? layout.data_strides
                     : stats ? layout.stats_strides
                             : layout.param_strides;
      auto tensor = std::make_shared<const cg::Descriptor>(cg::make_tensor(spec));
      op_->set(forward ? forward_attribute(t.role, phase) : backward_attribute(t.role), *tensor);
      op_->keep_alive(tensor);
      pointers.push_back({spec.uid, buffers.at(t.role).get()});
    }
    if (forward && !batchnorm_inference) {
      add_scalar(kUidEpsilon, CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, layout);
      pointers.push_back({kUidEpsilon, const_cast<float*>(epsilon)});
    }
    if (forward && layout.mode == CUDNN_BATCH_NORM && phase == NormPhase::training &&
        momentum != nullptr) {
      add_scalar(kUidMomentum, CUDNN_ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC, layout);
      pointers.push_back({kUidMomentum, const_cast<float*>(momentum)});
    }
    op_->finalize();
    graph_.emplace(cg::make_operation_graph(handle, {&*op_}));
    chosen_ = choose_plan(layout, direction, phase);
    workspace_ = DeviceBuffer<std::byte>(static_cast<std::size_t>(chosen_.plan->workspace_bytes()));
    pack_.emplace(pointers, workspace_.get());
  }

  void execute() const { cg::execute(handle_, *chosen_.plan, *pack_); }
  const cg::ExecutionPlan& plan() const { return *chosen_.plan; }
  const ChosenPlan& chosen() const { return chosen_; }
  std::size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  void add_scalar(std::int64_t uid, cudnnBackendAttributeName_t attribute,
                  const NormLayout& layout) {
    cg::TensorSpec scalar;
    scalar.uid = uid;
    scalar.data_type = CUDNN_DATA_FLOAT;
    scalar.dims.assign(layout.data_dims.size(), 1);
    scalar.strides.assign(layout.data_dims.size(), 1);
    scalar.is_by_value = true;
    auto tensor = std::make_shared<const cg::Descriptor>(cg::make_tensor(scalar));
    op_->set(attribute, *tensor);
    op_->keep_alive(tensor);
  }

  // Heuristic mode A's list, then FALLBACK's: the first configuration that
  // finalizes. None: NOT_SUPPORTED with what each said.
  ChosenPlan choose_plan(const NormLayout& layout, NormDirection direction, NormPhase phase) {
    std::string reasons;
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      std::vector<cg::Descriptor> configs;
      const Outcome listed = guarded([&] { configs = cg::heuristic_configs(*graph_, mode); });
      if (listed.status != PointStatus::ok) {
        reasons += (reasons.empty() ? "" : "; ") + cg::to_string(mode) + ": " + listed.reason;
        continue;
      }
      if (configs.empty())
        reasons += (reasons.empty() ? "" : "; ") + cg::to_string(mode) + ": no configuration";
      for (std::size_t rank = 0; rank < configs.size(); ++rank) {
        ChosenPlan chosen;
        auto config = std::make_shared<const cg::Descriptor>(std::move(configs[rank]));
        const Outcome built =
            guarded([&] { chosen.plan = std::make_unique<cg::ExecutionPlan>(config); });
        if (built.status == PointStatus::ok) {
          chosen.heuristic_mode = cg::to_string(mode);
          chosen.rank = static_cast<int>(rank);
          return chosen;
        }
        if (rank < 4)
          reasons += (reasons.empty() ? "" : "; ") + cg::to_string(mode) + " #" +
                     std::to_string(rank) + ": " + built.reason;
      }
    }
    throw GpuError(
        "cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
        std::string("CUDNN_STATUS_NOT_SUPPORTED: cuDNN has no engine for ") +
            mode_name(layout.mode) + " " + to_string(direction) +
            (direction == NormDirection::fwd ? std::string(" ") + to_string(phase) : "") +
            " with these shapes on this GPU (" + reasons + ")");
  }

  cudnnHandle_t handle_;
  std::optional<cg::Descriptor> op_;
  std::optional<cg::Descriptor> graph_;
  ChosenPlan chosen_;
  DeviceBuffer<std::byte> workspace_;
  std::optional<cg::VariantPack> pack_;
};

// Everything prepare() creates; destroyed with the operator.
class NormState {
 public:
  NormLayout layout;
  cudaStream_t stream = nullptr;
  std::map<std::string, DeviceBuffer<std::byte>> buffers;
  std::map<std::string, DataType> types;
  float epsilon = static_cast<float>(kNormEpsilon);
  float momentum = static_cast<float>(kBatchnormMomentum);
  std::optional<NormGraph> statistics;  // bwd: the training forward
  std::optional<NormGraph> call;
};

NormOperator::NormOperator(std::shared_ptr<LibraryHandles> libraries)
    : libraries_(std::move(libraries)) {}
NormOperator::~NormOperator() = default;

std::string NormOperator::algorithm() const {
  return state_ ? state_->call->plan().name() : std::string();
}

nlohmann::json NormOperator::details() const {
  if (!state_) return nlohmann::json::object();
  const NormState& st = *state_;
  const cg::ConfigInfo& info = st.call->plan().info();
  nlohmann::json knobs = nlohmann::json::object();
  for (const cg::KnobChoice& knob : info.knobs) knobs[cg::knob_name(knob.type)] = knob.value;
  nlohmann::json numerical = nlohmann::json::array();
  for (cudnnBackendNumericalNote_t note : info.numerical_notes)
    numerical.push_back(cg::to_string(note));
  nlohmann::json behavior = nlohmann::json::array();
  for (cudnnBackendBehaviorNote_t note : info.behavior_notes)
    behavior.push_back(cg::to_string(note));
  const bool forward = st.layout.direction == NormDirection::fwd;
  nlohmann::json details = {
      {"cudnn_operation", forward ? "CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR"
                                  : "CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR"},
      {"norm_mode", mode_name(st.layout.mode)},
      {"engine", info.engine},
      {"knobs", knobs},
      {"numerical_notes", numerical},
      {"behavior_notes", behavior},
      {"heuristic_mode", st.call->chosen().heuristic_mode},
      {"heuristic_rank", st.call->chosen().rank},
      {"workspace_bytes", st.call->workspace_bytes()}};
  if (forward)
    details["fwd_phase"] = st.layout.phase == NormPhase::training ? "CUDNN_NORM_FWD_TRAINING"
                                                                  : "CUDNN_NORM_FWD_INFERENCE";
  if (st.statistics) details["statistics_from"] = st.statistics->plan().name();
  return details;
}

std::vector<DeviceTensor> NormOperator::inputs() const {
  return with_buffers(problem().inputs(), [this](const std::string& role) -> void* {
    return state_ ? state_->buffers.at(role).get() : nullptr;
  });
}

std::vector<DeviceTensor> NormOperator::outputs() const {
  return with_buffers(problem().outputs(), [this](const std::string& role) -> void* {
    return state_ ? state_->buffers.at(role).get() : nullptr;
  });
}

void NormOperator::prepare(cudaStream_t stream) {
  state_.reset();
  require_device_memory(min_bytes());
  if (!libraries_) libraries_ = std::make_shared<LibraryHandles>();
  auto state = std::make_unique<NormState>();
  NormState& st = *state;
  st.layout = layout();
  st.stream = stream;
  std::uint32_t seed = 0x6e6f726du;
  HostValues host(seed);
  auto allocate = [&](const std::vector<NormTensor>& tensors) {
    for (const NormTensor& t : tensors) {
      if (st.buffers.contains(t.role)) continue;
      const auto count = static_cast<std::size_t>(t.elements);
      DeviceBuffer<std::byte> buffer(count * element_bytes(t.type));
      st.types[t.role] = t.type;
      if (t.written) {
        TR_CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0, buffer.bytes(), stream));
      } else if (is_data_role(t.role)) {
        fill_random(buffer.get(), count, t.type, seed++, stream);
      } else {
        const auto [low, high] = parameter_range(t.role);
        std::vector<float> values(count);
        for (float& v : values) v = host.next(low, high);
        TR_CUDA_CHECK(cudaMemcpyAsync(buffer.get(), values.data(), buffer.bytes(),
                                      cudaMemcpyHostToDevice, stream));
        TR_CUDA_CHECK(cudaStreamSynchronize(stream));  // `values` dies here
      }
      st.buffers.emplace(t.role, std::move(buffer));
    }
  };
  // Statistics the backward reads are the forward's outputs: allocate the
  // forward's tensors first, so they are written (zeroed), not filled.
  allocate(st.layout.forward_tensors);
  allocate(st.layout.tensors);
  const cudnnHandle_t handle = libraries_->cudnn();
  TR_CUDNN_CHECK(cudnnSetStream(handle, stream));
  if (st.layout.direction == NormDirection::bwd) {
    st.statistics.emplace(handle, st.layout, NormDirection::fwd, NormPhase::training,
                          st.layout.forward_tensors, st.buffers, &st.epsilon, &st.momentum);
    st.statistics->execute();
  }
  st.call.emplace(handle, st.layout, st.layout.direction, st.layout.phase, st.layout.tensors,
                  st.buffers, &st.epsilon, &st.momentum);
  // One call now: an execution failure surfaces here, and lazily loaded kernels
  // exist before run() is timed or captured into a CUDA graph.
  st.call->execute();
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  state_ = std::move(state);
}

void NormOperator::run(cudaStream_t stream) {
  if (!state_) throw std::logic_error(op() + ": run() before a successful prepare()");
  TR_CUDNN_CHECK(cudnnSetStream(libraries_->cudnn(), stream));
  state_->call->execute();
}

std::vector<double> NormOperator::download(const std::string& role) const {
  if (!state_) throw std::logic_error(op() + ": download() before a successful prepare()");
  const DataType type = state_->types.at(role);
  const std::size_t count = state_->buffers.at(role).bytes() / element_bytes(type);
  DeviceBuffer<double> converted(count);
  convert_to_double(state_->buffers.at(role).get(), converted.get(), count, type, state_->stream);
  std::vector<double> host(count);
  TR_CUDA_CHECK(cudaMemcpyAsync(host.data(), converted.get(), count * sizeof(double),
                                cudaMemcpyDeviceToHost, state_->stream));
  TR_CUDA_CHECK(cudaStreamSynchronize(state_->stream));
  return host;
}

cudaStream_t NormOperator::prepared_stream() const {
  return state_ ? state_->stream : nullptr;
}

namespace {

// The reference's outputs by role, compared one by one with the library's.
struct NormComparison {
  std::vector<std::pair<std::string, std::vector<double>>> references;
  double mean_scale = 1;  // the mean's error is relative to max |x|
};

double max_abs(const std::vector<double>& values) {
  double largest = 0;
  for (double v : values) largest = std::max(largest, std::abs(v));
  return largest;
}

CheckResult compare(const NormComparison& comparison, Precision precision, double longest_sum,
                    const std::string& method,
                    const std::function<std::vector<double>(const std::string&)>& download,
                    const std::string& algorithm) {
  CheckResult result;
  result.method = method;
  result.tolerance = std::max(relative_tolerance(precision), long_sum_tolerance(longest_sum));
  std::string outputs;
  for (const auto& [role, reference] : comparison.references) {
    const std::vector<double> library = download(role);
    double error = relative_error(library, reference);
    if (role == "mean" && library.size() == reference.size() && std::isfinite(error)) {
      double difference = 0;
      for (std::size_t i = 0; i < library.size(); ++i)
        difference = std::max(difference, std::abs(library[i] - reference[i]));
      error = difference / comparison.mean_scale;
    }
    result.relative_error = std::max(
        result.relative_error, std::isnan(error) ? std::numeric_limits<double>::infinity() : error);
    result.elements += reference.size();
    char text[64];
    std::snprintf(text, sizeof text, "%s %.2g", role.c_str(), error);
    outputs += (outputs.empty() ? "" : ", ") + std::string(text);
  }
  judge(result);
  result.detail += " (" + outputs + ") of " + algorithm;
  return result;
}

}  // namespace

// ---- layernorm ----------------------------------------------------------------

Layernorm::Layernorm(LayernormSpec spec, std::shared_ptr<LibraryHandles> libraries)
    : NormOperator(std::move(libraries)), problem_(std::move(spec)) {}

NormLayout Layernorm::layout() const {
  const LayernormSpec& s = spec();
  NormLayout layout;
  layout.mode = s.kind == NormKind::layer ? CUDNN_LAYER_NORM : CUDNN_RMS_NORM;
  layout.phase = s.phase;
  layout.direction = s.direction;
  layout.data_type = storage_type(s.precision);
  const std::int64_t r = s.rows(), h = s.hidden;
  layout.data_dims = {r, h, 1, 1};
  layout.data_strides = {h, 1, h, h};
  layout.param_dims = {1, h, 1, 1};
  layout.param_strides = {h, 1, h, h};
  layout.stats_dims = {r, 1, 1, 1};
  layout.stats_strides = {1, 1, 1, 1};
  layout.tensors = norm_tensors(s);
  if (s.direction == NormDirection::bwd) {
    LayernormSpec forward = s;
    forward.direction = NormDirection::fwd;
    forward.phase = NormPhase::training;
    layout.forward_tensors = norm_tensors(forward);
  }
  return layout;
}

CheckResult Layernorm::check() {
  const LayernormSpec& s = spec();
  run(prepared_stream());
  const std::vector<double> x = download("x");
  const std::vector<double> scale = download("scale");
  const bool layer = s.kind == NormKind::layer;
  const std::vector<double> bias = layer ? download("bias") : std::vector<double>{};
  const bool bwd = s.direction == NormDirection::bwd;
  const std::vector<double> dy = bwd ? download("dy") : std::vector<double>{};
  const auto h = static_cast<std::size_t>(s.hidden);
  const auto rows = static_cast<std::size_t>(s.rows());
  std::vector<double> out(bwd ? 0 : rows * h), dx(bwd ? rows * h : 0), mean(rows), inv(rows);
  std::vector<double> dscale(h, 0.0), dbias(h, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::span<const double> row(x.data() + r * h, h);
    const NormGroupStats stats = norm_group_stats(row, s.kind, kNormEpsilon);
    mean[r] = stats.mean;
    inv[r] = stats.inv_variance;
    if (!bwd) {
      const std::vector<double> y = norm_forward(row, stats, scale, bias);
      std::copy(y.begin(), y.end(), out.begin() + static_cast<std::ptrdiff_t>(r * h));
      continue;
    }
    const NormGroupGradients g =
        norm_backward(row, std::span<const double>(dy.data() + r * h, h), stats, scale, s.kind);
    std::copy(g.dx.begin(), g.dx.end(), dx.begin() + static_cast<std::ptrdiff_t>(r * h));
    for (std::size_t i = 0; i < h; ++i) {
      dscale[i] += g.dscale[i];
      dbias[i] += g.dbias[i];
    }
  }
  NormComparison comparison;
  comparison.mean_scale = std::max(max_abs(x), 1e-30);
  if (bwd) {
    comparison.references = {{"dx", dx}, {"dscale", dscale}};
    if (layer) comparison.references.emplace_back("dbias", dbias);
  } else {
    comparison.references = {{"y", out}};
    if (s.phase == NormPhase::training) {
      if (layer) comparison.references.emplace_back("mean", mean);
      comparison.references.emplace_back("inv_variance", inv);
    }
  }
  return compare(
      comparison, s.precision, static_cast<double>(std::max(rows, h)),
      "host reference (double), every output",
      [this](const std::string& role) { return download(role); }, algorithm());
}

// ---- batchnorm ----------------------------------------------------------------

Batchnorm::Batchnorm(BatchnormSpec spec, std::shared_ptr<LibraryHandles> libraries)
    : NormOperator(std::move(libraries)), problem_(std::move(spec)) {}

NormLayout Batchnorm::layout() const {
  const BatchnormSpec& s = spec();
  NormLayout layout;
  layout.mode = CUDNN_BATCH_NORM;
  layout.phase = s.phase;
  layout.direction = s.direction;
  layout.data_type = storage_type(s.precision);
  const std::int64_t n = s.batch, c = s.channels, h = s.height, w = s.width;
  layout.data_dims = {n, c, h, w};
  layout.data_strides = {h * w * c, 1, w * c, c};
  layout.param_dims = {1, c, 1, 1};
  layout.param_strides = {c, 1, c, c};
  layout.stats_dims = layout.param_dims;
  layout.stats_strides = layout.param_strides;
  layout.tensors = norm_tensors(s);
  if (s.direction == NormDirection::bwd) {
    BatchnormSpec forward = s;
    forward.direction = NormDirection::fwd;
    forward.phase = NormPhase::training;
    layout.forward_tensors = norm_tensors(forward);
  }
  return layout;
}

CheckResult Batchnorm::check() {
  const BatchnormSpec& s = spec();
  run(prepared_stream());
  const std::vector<double> x = download("x");
  const std::vector<double> scale = download("scale");
  const bool bwd = s.direction == NormDirection::bwd;
  const bool training = s.phase == NormPhase::training;
  const std::vector<double> bias = bwd ? std::vector<double>{} : download("bias");
  const std::vector<double> dy = bwd ? download("dy") : std::vector<double>{};
  const auto c = static_cast<std::size_t>(s.channels);
  const auto m = static_cast<std::size_t>(s.per_channel());
  std::vector<double> out(x.size()), mean(c), inv(c), next_mean(c), next_variance(c);
  std::vector<double> dscale(c, 0.0), dbias(c, 0.0);
  std::vector<double> running_mean, running;  // running variance (training) or inverse deviation
  if (!bwd) {
    running_mean = download("running_mean");
    running = download(training ? "running_variance" : "running_inv_variance");
  }
  std::vector<double> group(m), dy_group(bwd ? m : 0);
  for (std::size_t k = 0; k < c; ++k) {
    for (std::size_t i = 0; i < m; ++i) {
      group[i] = x[i * c + k];
      if (bwd) dy_group[i] = dy[i * c + k];
    }
    NormGroupStats stats = norm_group_stats(group, NormKind::layer, kNormEpsilon);
    mean[k] = stats.mean;
    inv[k] = stats.inv_variance;
    const std::span<const double> gamma(&scale[k], 1);
    if (bwd) {
      const NormGroupGradients g = norm_backward(group, dy_group, stats, gamma, NormKind::layer);
      for (std::size_t i = 0; i < m; ++i) {
        out[i * c + k] = g.dx[i];
        dscale[k] += g.dscale[i];
        dbias[k] += g.dbias[i];
      }
      continue;
    }
    if (training) {
      next_mean[k] = (1 - kBatchnormMomentum) * running_mean[k] + kBatchnormMomentum * stats.mean;
      next_variance[k] =
          (1 - kBatchnormMomentum) * running[k] +
          kBatchnormMomentum * stats.variance * static_cast<double>(m) / static_cast<double>(m - 1);
    } else {
      stats.mean = running_mean[k];
      stats.inv_variance = running[k];
    }
    const std::vector<double> y =
        norm_forward(group, stats, gamma, std::span<const double>(&bias[k], 1));
    for (std::size_t i = 0; i < m; ++i) out[i * c + k] = y[i];
  }
  NormComparison comparison;
  comparison.mean_scale = std::max(max_abs(x), 1e-30);
  if (bwd) {
    comparison.references = {{"dx", out}, {"dscale", dscale}, {"dbias", dbias}};
  } else {
    comparison.references = {{"y", out}};
    if (training) {
      comparison.references.emplace_back("mean", mean);
      comparison.references.emplace_back("inv_variance", inv);
      comparison.references.emplace_back("next_running_mean", next_mean);
      comparison.references.emplace_back("next_running_variance", next_variance);
    }
  }
  return compare(
      comparison, s.precision, static_cast<double>(m), "host reference (double), every output",
      [this](const std::string& role) { return download(role); }, algorithm());
}

}  // namespace timeroof
