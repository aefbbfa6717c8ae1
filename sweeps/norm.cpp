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

#include "core/finalists.hpp"
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
  NormSelection selection = NormSelection::heuristic;
  // batchnorm: N, C, H, W for the legacy inference call
  std::int64_t n = 0, c = 0, h = 0, w = 0;
};

namespace {

constexpr std::int64_t kUidEpsilon = 100;
constexpr std::int64_t kUidMomentum = 101;

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
cudnnBackendAttributeName_t forward_attribute(const std::string& role) {
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
      {"next_running_variance", CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC}};
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
  if (role == "scale" || role == "running_variance") return {0.5f, 1.5f};
  return {-0.5f, 0.5f};
}

// An engine configuration that finalized into a plan, and where the heuristic put it.
struct ChosenPlan {
  std::shared_ptr<const cg::ExecutionPlan> plan;
  std::string heuristic_mode;
  int rank = 0;
};

// A configuration of a heuristic list, with its place there.
struct Listed {
  std::shared_ptr<const cg::Descriptor> config;
  std::string heuristic_mode;
  int rank = 0;
};

// Each candidate plan, when the point asks for the fastest configuration: three
// rounds of about 0.2 ms, the fastest counts; then the finalists
// (core/finalists.hpp) in interleaved rounds.
constexpr cg::SearchTiming kSearchTiming{.round_seconds = 2e-4, .rounds = 3, .max_calls = 1000};

}  // namespace

// One call of a normalization: a graph's plan, or cuDNN's legacy call.
class NormCall {
 public:
  virtual ~NormCall() = default;
  virtual void execute() const = 0;
  virtual std::string name() const = 0;
  virtual nlohmann::json details() const = 0;
};

// One norm operation's graph, plan, workspace and variant pack.
class NormGraph final : public NormCall {
 public:
  NormGraph(cudnnHandle_t handle, cudaStream_t stream, const NormLayout& layout,
            NormDirection direction, NormPhase phase, const std::vector<NormTensor>& tensors,
            const std::map<std::string, DeviceBuffer<std::byte>>& buffers, const float* epsilon,
            const float* momentum)
      : handle_(handle), stream_(stream), direction_(direction), phase_(phase) {
    const bool forward = direction == NormDirection::fwd;
    op_.emplace(forward ? CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR
                        : CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
    const cudnnBackendNormFwdPhase_t fwd_phase =
        phase == NormPhase::training ? CUDNN_NORM_FWD_TRAINING : CUDNN_NORM_FWD_INFERENCE;
    if (forward)
      op_->set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, layout.mode)
          .set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, fwd_phase);
    else
      op_->set(CUDNN_ATTR_OPERATION_NORM_BWD_MODE, layout.mode);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const NormTensor& t = tensors[i];
      cg::TensorSpec spec;
      spec.uid = static_cast<std::int64_t>(i) + 1;
      spec.data_type = cudnn_data_type(t.type);
      const bool data = is_data_role(t.role);
      const bool stats = !data && layout.mode != CUDNN_BATCH_NORM &&
                         (t.role == "mean" || t.role == "inv_variance");
      spec.dims = data ? layout.data_dims : stats ? layout.stats_dims : layout.param_dims;
      spec.strides = data    ? layout.data_strides
                     : stats ? layout.stats_strides
                             : layout.param_strides;
      auto tensor = std::make_shared<const cg::Descriptor>(cg::make_tensor(spec));
      op_->set(forward ? forward_attribute(t.role) : backward_attribute(t.role), *tensor);
      op_->keep_alive(tensor);
      pointers_.push_back({spec.uid, buffers.at(t.role).get()});
    }
    if (forward) {
      add_scalar(kUidEpsilon, CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, layout);
      pointers_.push_back({kUidEpsilon, const_cast<float*>(epsilon)});
    }
    if (forward && layout.mode == CUDNN_BATCH_NORM && phase == NormPhase::training) {
      add_scalar(kUidMomentum, CUDNN_ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC, layout);
      pointers_.push_back({kUidMomentum, const_cast<float*>(momentum)});
    }
    op_->finalize();
    mode_ = layout.mode;
    graph_.emplace(cg::make_operation_graph(handle, {&*op_}));
    const std::vector<Listed> listed = list_configs();
    choose(listed, layout.selection);
  }

  void execute() const override { cg::execute(handle_, *chosen_.plan, *pack_); }
  std::string name() const override { return chosen_.plan->name(); }

  nlohmann::json details() const override {
    const bool forward = direction_ == NormDirection::fwd;
    nlohmann::json details = cg::config_json(chosen_.plan->info());
    details.update(
        {{"cudnn_api", "graph"},
         {"cudnn_operation", forward ? "CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR"
                                     : "CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR"},
         {"norm_mode", mode_name(mode_)},
         {"heuristic_mode", chosen_.heuristic_mode},
         {"heuristic_rank", chosen_.rank},
         {"workspace_bytes", workspace_.bytes()}});
    if (forward)
      details["fwd_phase"] =
          phase_ == NormPhase::training ? "CUDNN_NORM_FWD_TRAINING" : "CUDNN_NORM_FWD_INFERENCE";
    if (!searched_.is_null()) details["search"] = searched_;
    return details;
  }

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

  // Heuristic mode A's list, then FALLBACK's; `reasons_` says why a list is empty.
  std::vector<Listed> list_configs() {
    std::vector<Listed> listed;
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      std::vector<cg::Descriptor> configs;
      const Outcome got = guarded([&] { configs = cg::heuristic_configs(*graph_, mode); });
      if (got.status != PointStatus::ok)
        add_reason(cg::to_string(mode) + ": " + got.reason);
      else if (configs.empty())
        add_reason(cg::to_string(mode) + ": no configuration");
      for (std::size_t rank = 0; rank < configs.size(); ++rank)
        listed.push_back({std::make_shared<const cg::Descriptor>(std::move(configs[rank])),
                          cg::to_string(mode), static_cast<int>(rank)});
    }
    return listed;
  }

  // The first configuration that finalizes (heuristic), or the fastest of all
  // that do, each timed on the point's own buffers, the finalists again. None:
  // NOT_SUPPORTED with what each said.
  void choose(const std::vector<Listed>& listed, NormSelection selection) {
    struct Candidate {
      ChosenPlan plan;
      DeviceBuffer<std::byte> workspace;
      std::unique_ptr<cg::VariantPack> pack;
    };
    Finalists<Candidate> finalists;
    nlohmann::json timed = nlohmann::json::array();
    std::vector<std::string> seen;
    for (const Listed& listed_plan : listed) {
      Candidate candidate{{nullptr, listed_plan.heuristic_mode, listed_plan.rank}, {}, nullptr};
      const Outcome built = guarded([&] {
        candidate.plan.plan = std::make_shared<const cg::ExecutionPlan>(listed_plan.config);
      });
      if (built.status != PointStatus::ok) {
        if (listed_plan.rank < 4)
          add_reason(listed_plan.heuristic_mode + " #" + std::to_string(listed_plan.rank) + ": " +
                     built.reason);
        continue;
      }
      const std::string name = candidate.plan.plan->name();
      if (std::ranges::find(seen, name) != seen.end()) continue;
      seen.push_back(name);
      candidate.workspace =
          DeviceBuffer<std::byte>(static_cast<std::size_t>(candidate.plan.plan->workspace_bytes()));
      candidate.pack = std::make_unique<cg::VariantPack>(pointers_, candidate.workspace.get());
      if (selection == NormSelection::heuristic) {
        adopt(std::move(candidate.plan), std::move(candidate.workspace), std::move(candidate.pack));
        return;
      }
      double seconds = 0;
      const Outcome ran =
          guarded([&] { seconds = time_plan(*candidate.plan.plan, *candidate.pack); });
      if (ran.status != PointStatus::ok) {
        (void)cudaGetLastError();
        timed.push_back({{"plan", name}, {"error", ran.reason}});
        continue;
      }
      timed.push_back({{"plan", name}, {"seconds", seconds}});
      finalists.admit(seconds, std::move(candidate));
    }
    if (!finalists.empty()) {
      const std::size_t again = finalists.decide([&](const Candidate& candidate) {
        return time_plan(*candidate.plan.plan, *candidate.pack);
      });
      searched_ = {{"selection", "fastest"}, {"timed", timed}};
      if (again > 0)
        for (const auto& entry : finalists.entries())
          searched_["finalists"].push_back(
              {{"plan", entry.candidate.plan.plan->name()}, {"median_seconds", entry.seconds}});
      auto& best = finalists.entries().front().candidate;
      adopt(std::move(best.plan), std::move(best.workspace), std::move(best.pack));
      return;
    }
    throw GpuError(
        "cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
        std::string("CUDNN_STATUS_NOT_SUPPORTED: cuDNN has no engine for ") + mode_name(mode_) +
            " " + to_string(direction_) +
            (direction_ == NormDirection::fwd ? std::string(" ") + to_string(phase_) : "") +
            " with these shapes on this GPU (" + reasons_ + ")");
  }

  void adopt(ChosenPlan plan, DeviceBuffer<std::byte> workspace,
             std::unique_ptr<cg::VariantPack> pack) {
    chosen_ = std::move(plan);
    workspace_ = std::move(workspace);
    pack_ = std::move(pack);
  }

  double time_plan(const cg::ExecutionPlan& plan, const cg::VariantPack& pack) const {
    return cg::seconds_per_execute(handle_, stream_, plan, pack, kSearchTiming);
  }

  void add_reason(const std::string& reason) {
    reasons_ += (reasons_.empty() ? "" : "; ") + reason;
  }

  cudnnHandle_t handle_;
  cudaStream_t stream_;
  NormDirection direction_;
  NormPhase phase_;
  cudnnBackendNormMode_t mode_ = CUDNN_LAYER_NORM;
  std::optional<cg::Descriptor> op_;
  std::optional<cg::Descriptor> graph_;
  std::vector<cg::TensorPointer> pointers_;
  std::string reasons_;
  ChosenPlan chosen_;
  DeviceBuffer<std::byte> workspace_;
  std::unique_ptr<cg::VariantPack> pack_;
  nlohmann::json searched_;
};

// BatchNorm inference through cuDNN's legacy call: cuDNN 9.14's graph has no
// engine for a standalone CUDNN_BATCH_NORM inference node (heuristic mode A's
// configuration fails to finalize, "matcher_casted == nullptr", FALLBACK lists
// none; H100), so the point runs cudnnBatchNormalizationForwardInference, which
// PyTorch's cuDNN batch norm also calls. Deprecated in cuDNN 9, still shipped.
class LegacyBatchnormInference final : public NormCall {
 public:
  LegacyBatchnormInference(cudnnHandle_t handle, const NormLayout& shape,
                           const std::map<std::string, DeviceBuffer<std::byte>>& buffers)
      : handle_(handle),
        x_(buffers.at("x").get()),
        y_(buffers.at("y").get()),
        scale_(buffers.at("scale").get()),
        bias_(buffers.at("bias").get()),
        mean_(buffers.at("running_mean").get()),
        variance_(buffers.at("running_variance").get()) {
    TR_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
        data_.get(), CUDNN_TENSOR_NHWC, cudnn_data_type(shape.data_type), static_cast<int>(shape.n),
        static_cast<int>(shape.c), static_cast<int>(shape.h), static_cast<int>(shape.w)));
    TR_CUDNN_CHECK(cudnnSetTensor4dDescriptor(parameters_.get(), CUDNN_TENSOR_NCHW,
                                              CUDNN_DATA_FLOAT, 1, static_cast<int>(shape.c), 1,
                                              1));
  }

  void execute() const override {
    const float alpha = 1.0f, beta = 0.0f;  // y = 1 * bn(x) + 0 * y: overwrite
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    TR_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
        handle_, CUDNN_BATCHNORM_SPATIAL, &alpha, &beta, data_.get(), x_, data_.get(), y_,
        parameters_.get(), scale_, bias_, mean_, variance_, kNormEpsilon));
#pragma GCC diagnostic pop
  }
  std::string name() const override {
    return "cudnnBatchNormalizationForwardInference CUDNN_BATCHNORM_SPATIAL";
  }
  nlohmann::json details() const override {
    return {{"cudnn_api", "legacy"},
            {"cudnn_call", "cudnnBatchNormalizationForwardInference"},
            {"batchnorm_mode", "CUDNN_BATCHNORM_SPATIAL"},
            {"norm_mode", "CUDNN_BATCH_NORM"},
            {"why_legacy",
             "cuDNN's graph has no engine for a standalone CUDNN_BATCH_NORM inference "
             "node (CUDNN_STATUS_NOT_SUPPORTED, cuDNN 9.14 on H100)"}};
  }

 private:
  cudnnHandle_t handle_;
  TensorDescriptor data_, parameters_;
  void *x_, *y_, *scale_, *bias_, *mean_, *variance_;
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
  std::unique_ptr<NormGraph> statistics;  // bwd: the training forward
  std::unique_ptr<NormCall> call;
};

NormOperator::NormOperator(std::shared_ptr<LibraryHandles> libraries)
    : libraries_(std::move(libraries)) {}
NormOperator::~NormOperator() = default;

std::string NormOperator::algorithm() const {
  return state_ ? state_->call->name() : std::string();
}

nlohmann::json NormOperator::details() const {
  if (!state_) return nlohmann::json::object();
  nlohmann::json details = state_->call->details();
  if (state_->statistics) details["statistics_from"] = state_->statistics->name();
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
    st.statistics = std::make_unique<NormGraph>(handle, stream, st.layout, NormDirection::fwd,
                                                NormPhase::training, st.layout.forward_tensors,
                                                st.buffers, &st.epsilon, &st.momentum);
    st.statistics->execute();
  }
  if (st.layout.mode == CUDNN_BATCH_NORM && st.layout.phase == NormPhase::inference &&
      st.layout.direction == NormDirection::fwd)
    st.call = std::make_unique<LegacyBatchnormInference>(handle, st.layout, st.buffers);
  else
    st.call =
        std::make_unique<NormGraph>(handle, stream, st.layout, st.layout.direction, st.layout.phase,
                                    st.layout.tensors, st.buffers, &st.epsilon, &st.momentum);
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

namespace {

// What both families' layouts share: the pass, the types, the tensors of the call
// and, for bwd, those of the training forward that makes its statistics.
template <typename Spec>
NormLayout pass_layout(const Spec& s, cudnnBackendNormMode_t mode) {
  NormLayout layout;
  layout.mode = mode;
  layout.phase = s.phase;
  layout.direction = s.direction;
  layout.data_type = storage_type(s.precision);
  layout.selection = s.selection;
  layout.tensors = norm_tensors(s);
  if (s.direction == NormDirection::bwd) {
    Spec forward = s;
    forward.direction = NormDirection::fwd;
    forward.phase = NormPhase::training;
    layout.forward_tensors = norm_tensors(forward);
  }
  return layout;
}

}  // namespace

NormLayout Layernorm::layout() const {
  const LayernormSpec& s = spec();
  NormLayout layout = pass_layout(s, s.kind == NormKind::layer ? CUDNN_LAYER_NORM : CUDNN_RMS_NORM);
  const std::int64_t r = s.rows(), h = s.hidden;
  layout.data_dims = {r, h, 1, 1};
  layout.data_strides = {h, 1, h, h};
  layout.param_dims = {1, h, 1, 1};
  layout.param_strides = {h, 1, h, h};
  layout.stats_dims = {r, 1, 1, 1};
  layout.stats_strides = {1, 1, 1, 1};
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
  NormLayout layout = pass_layout(s, CUDNN_BATCH_NORM);
  const std::int64_t n = s.batch, c = s.channels, h = s.height, w = s.width;
  layout.data_dims = {n, c, h, w};
  layout.data_strides = {h * w * c, 1, w * c, c};
  layout.param_dims = {1, c, 1, 1};
  layout.param_strides = {c, 1, c, c};
  layout.n = n;
  layout.c = c;
  layout.h = h;
  layout.w = w;
  layout.stats_dims = layout.param_dims;
  layout.stats_strides = layout.param_strides;
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
  std::vector<double> running_mean, running;  // the running mean and variance
  if (!bwd) {
    running_mean = download("running_mean");
    running = download("running_variance");
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
      stats.inv_variance = 1.0 / std::sqrt(running[k] + kNormEpsilon);
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
