// The graph path of Conv2d: one convolution node in a cuDNN operation graph,
// run through an execution plan, workspace and variant pack built once in
// prepare() (sweeps/cudnn_graph.hpp), as PyTorch calls cuDNN. execute() is one
// cudnnBackendExecute.
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/finalists.hpp"
#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "sweeps/conv2d.hpp"
#include "sweeps/cudnn_graph.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/operator.hpp"

namespace timeroof::conv2d_detail {
namespace {

namespace cg = cudnn_graph;

// Tensor uids of the graph, by the forward names of the buffers they bind.
constexpr std::int64_t kUidX = 1;
constexpr std::int64_t kUidW = 2;
constexpr std::int64_t kUidY = 3;

// Each plan of an exhaustive search: three rounds of about 0.5 ms, the fastest
// counts; then the finalists (core/finalists.hpp) in interleaved rounds.
constexpr cg::SearchTiming kSearchTiming{.round_seconds = 5e-4, .rounds = 3, .max_calls = 100};
// A NOT_SUPPORTED message lists at most this many of the configurations tried.
constexpr std::size_t kListedReasons = 8;

// A tensor in N, C, H, W order with the strides of the spec's memory order (see
// sweeps/conv2d.hpp: x NCHW / NHWC, w KCRS / KRSC, y NKPQ / NPQK).
cg::TensorSpec tensor_spec(const Conv2dSpec& spec, ConvTensor which) {
  const Conv2dOutputShape out = conv2d_output_shape(spec);
  std::array<std::int64_t, 4> nchw{};
  cg::TensorSpec tensor;
  switch (which) {
    case ConvTensor::x:
      tensor.uid = kUidX;
      nchw = {spec.n, spec.c, spec.h, spec.w};
      break;
    case ConvTensor::w:
      tensor.uid = kUidW;
      nchw = {spec.k, spec.c / spec.groups, spec.r, spec.s};  // groups = C / the filter's C
      break;
    case ConvTensor::y:
      tensor.uid = kUidY;
      nchw = {spec.n, spec.k, out.p, out.q};
      break;
  }
  const auto [n, c, h, w] = nchw;
  tensor.data_type = cudnn_data_type(spec.precision);
  tensor.dims = {n, c, h, w};
  tensor.strides = spec.layout == Layout::nchw ? std::vector<std::int64_t>{c * h * w, h * w, w, 1}
                                               : std::vector<std::int64_t>{h * w * c, 1, w * c, c};
  return tensor;
}

bool transform_notes(const cg::ConfigInfo& info) {
  return info.has(CUDNN_NUMERICAL_NOTE_FFT) || info.has(CUDNN_NUMERICAL_NOTE_WINOGRAD) ||
         info.has(CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4) ||
         info.has(CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6) ||
         info.has(CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13);
}

// An engine configuration of a heuristic list, with its place there.
struct Listed {
  std::shared_ptr<const cg::Descriptor> config;
  cg::ConfigInfo info;
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  int rank = 0;  // 0-based, within its mode's list
};

class GraphPath final : public Conv2dPath {
 public:
  GraphPath(const Conv2dSpec& conv, cudnnHandle_t cudnn, cudaStream_t prepared_on,
            const ConvBuffers& tensors)
      : spec_(conv), handle_(cudnn), stream_(prepared_on), buffers_(tensors) {}

  void prepare() {
    build_graph();
    list_configs();
    if (spec_.algorithm == "heuristic")
      pick_heuristic();
    else if (spec_.algorithm == "exhaustive")
      pick_exhaustive();
    else
      pick_fixed();
  }

  void execute() override { cg::execute(handle_, *plan_, *pack_); }
  std::string name() const override { return plan_->name(); }

  nlohmann::json details() const override {
    nlohmann::json details = cg::config_json(plan_->info());
    details["heuristic_mode"] = heuristic_mode_;
    details["heuristic_rank"] = heuristic_rank_;
    if (plans_timed_ > 0) {
      details["search_time_ms"] = search_time_ms_;
      details["search_duration_ms"] = search_duration_ms_;
      details["plans_timed"] = plans_timed_;
      details["finalists_timed"] = finalists_timed_;
    }
    return details;
  }

  std::size_t workspace_bytes() const override { return workspace_.bytes(); }
  bool deterministic() const override {
    return !plan_->info().has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
  }
  bool transform() const override { return transform_notes(plan_->info()); }

  // The next usable configuration of the lists after the chosen plan, as its
  // own plan with its own workspace, writing `output`.
  SecondRun run_second(void* output, const std::vector<std::string>& tried) override {
    SecondRun second;
    const std::string chosen = plan_->name();
    for (const Listed& listed : listed_) {
      const std::string name = listed.info.name();
      if (name == chosen || !exclusion(listed.info).empty()) continue;
      if (std::ranges::find(tried, name) != tried.end()) continue;
      const Outcome outcome = guarded([&] {
        const cg::ExecutionPlan plan(listed.config);
        const DeviceBuffer<std::byte> work(static_cast<std::size_t>(plan.workspace_bytes()));
        const std::array<cg::TensorPointer, 3> tensors = bindings(output);
        const cg::VariantPack pack(tensors, work.get());
        cg::execute(handle_, plan, pack);
        TR_CUDA_CHECK(cudaStreamSynchronize(stream_));
      });
      if (outcome.status == PointStatus::ok) {
        second.name = name;
        second.transform = transform_notes(listed.info);
        return second;
      }
      (void)cudaGetLastError();  // a failed launch leaves a non-sticky error behind
      second.why_none += (second.why_none.empty() ? "" : "; ") + name + ": " + outcome.reason;
    }
    if (second.why_none.empty()) second.why_none = "no other configuration listed";
    return second;
  }

 private:
  // x, w, y, the convolution and its operation, in one graph on the handle's device.
  void build_graph() {
    for (ConvTensor which : {ConvTensor::x, ConvTensor::w, ConvTensor::y})
      tensors_.push_back(cg::make_tensor(tensor_spec(spec_, which)));
    const std::int64_t spatial_dims = 2;
    const std::array<std::int64_t, 2> padding = {spec_.pad_h, spec_.pad_w};
    const std::array<std::int64_t, 2> dilation = {spec_.dilation_h, spec_.dilation_w};
    const std::array<std::int64_t, 2> stride = {spec_.stride_h, spec_.stride_w};
    convolution_.emplace(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    // Compute type float for every precision: fp16 and bf16 accumulate in fp32,
    // and tf32 is fp32 data that engines with Tensor Cores may multiply in TF32.
    convolution_->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT)
        .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_CROSS_CORRELATION)
        .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, spatial_dims)
        .set_array<std::int64_t>(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, padding)
        .set_array<std::int64_t>(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, padding)
        .set_array<std::int64_t>(CUDNN_ATTR_CONVOLUTION_DILATIONS, dilation)
        .set_array<std::int64_t>(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, stride)
        .finalize();

    const cg::Descriptor& x = tensors_[0];
    const cg::Descriptor& w = tensors_[1];
    const cg::Descriptor& y = tensors_[2];
    const float alpha = 1.0f;  // y = 1 * conv + 0 * y: overwrite, never accumulate
    const float beta = 0.0f;
    // The operation and its attributes per direction, named by the forward tensors.
    struct ConvolutionNode {
      cudnnBackendDescriptorType_t type;
      cudnnBackendAttributeName_t x, w, y, desc, alpha, beta;
    };
    static constexpr ConvolutionNode kNodes[] = {
        {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
        {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
        {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
    };
    const ConvolutionNode& node = kNodes[static_cast<int>(spec_.direction)];
    operation_.emplace(node.type);
    operation_->set(node.x, x)
        .set(node.w, w)
        .set(node.y, y)
        .set(node.desc, *convolution_)
        .set(node.alpha, alpha)
        .set(node.beta, beta);
    operation_->finalize();
    graph_.emplace(cg::make_operation_graph(handle_, {&*operation_}));
  }

  // Mode A's list, then the fallback list, each configuration once (by name).
  // A mode that fails to list, or a configuration that cannot describe itself,
  // is noted for the error message and skipped.
  void list_configs() {
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      std::vector<cg::Descriptor> configs;
      const Outcome got = guarded([&] { configs = cg::heuristic_configs(*graph_, mode); });
      if (got.status != PointStatus::ok) {
        note(cg::to_string(mode) + ": " + got.reason);
        continue;
      }
      int rank = 0;
      for (cg::Descriptor& config : configs) {
        Listed listed{std::make_shared<const cg::Descriptor>(std::move(config)), {}, mode, rank++};
        const Outcome described =
            guarded([&] { listed.info = cg::describe_config(*listed.config); });
        if (described.status != PointStatus::ok) {
          note(cg::to_string(mode) + " #" + std::to_string(listed.rank) + ": " + described.reason);
          continue;
        }
        const std::string name = listed.info.name();
        const bool seen = std::any_of(listed_.begin(), listed_.end(),
                                      [&](const Listed& l) { return l.info.name() == name; });
        if (!seen) listed_.push_back(std::move(listed));
      }
    }
  }

  // Why the math mode rules a configuration out; empty when it may run.
  std::string exclusion(const cg::ConfigInfo& info) const {
    if (info.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
      return "excluded: CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS (converts inputs to a lower "
             "precision)";
    if (resolved_math(spec_) == MathMode::fma_only && info.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
      return "excluded by math = fma_only: CUDNN_NUMERICAL_NOTE_TENSOR_CORE";
    return "";
  }

  // The first listed configuration the math mode allows that finalizes into a plan.
  void pick_heuristic() {
    for (const Listed& listed : listed_) {
      if (const std::string why = exclusion(listed.info); !why.empty()) {
        note(listed.info.name() + ": " + why);
        continue;
      }
      std::unique_ptr<cg::ExecutionPlan> plan;
      const Outcome built =
          guarded([&] { plan = std::make_unique<cg::ExecutionPlan>(listed.config); });
      if (built.status != PointStatus::ok) {
        note(listed.info.name() + ": " + built.reason);
        continue;
      }
      use(std::move(plan), cg::to_string(listed.mode), listed.rank);
      return;
    }
    throw_none("heuristic");
  }

  // Every listed configuration the math mode allows that finalizes into a plan
  // with a workspace within half the free memory, timed on the operator's own
  // buffers; the finalists are timed again and the fastest is kept with its
  // workspace and variant pack.
  void pick_exhaustive() {
    const auto started = std::chrono::steady_clock::now();
    TR_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    TR_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t budget = free_bytes / 2;
    struct Timed {
      std::unique_ptr<cg::ExecutionPlan> plan;
      DeviceBuffer<std::byte> workspace;
      std::unique_ptr<cg::VariantPack> pack;
      const Listed* listed = nullptr;
    };
    Finalists<Timed> finalists;
    for (const Listed& listed : listed_) {
      if (const std::string why = exclusion(listed.info); !why.empty()) {
        note(listed.info.name() + ": " + why);
        continue;
      }
      // The finalists' workspaces are held: they count against the budget.
      std::size_t left = budget;
      for (const auto& held : finalists.entries())
        left -= std::min(left, held.candidate.workspace.bytes());
      Timed timed;
      timed.listed = &listed;
      double seconds = 0;
      bool over_budget = false;
      const Outcome outcome = guarded([&] {
        timed.plan = std::make_unique<cg::ExecutionPlan>(listed.config);
        const auto bytes = static_cast<std::size_t>(timed.plan->workspace_bytes());
        if (bytes > left) {
          over_budget = true;
          return;
        }
        timed.workspace = DeviceBuffer<std::byte>(bytes);
        timed.pack = std::make_unique<cg::VariantPack>(bindings(output()), timed.workspace.get());
        seconds =
            cg::seconds_per_execute(handle_, stream_, *timed.plan, *timed.pack, kSearchTiming);
      });
      if (outcome.status != PointStatus::ok) {
        (void)cudaGetLastError();  // a failed launch leaves a non-sticky error behind
        note(listed.info.name() + ": " + outcome.reason);
        continue;
      }
      if (over_budget) {
        note(listed.info.name() + ": workspace " + std::to_string(timed.plan->workspace_bytes()) +
             " B is over the search's budget of " + std::to_string(left) + " B");
        continue;
      }
      ++plans_timed_;
      finalists.admit(seconds, std::move(timed));
    }
    if (finalists.empty()) throw_none("exhaustive search");
    finalists_timed_ = static_cast<int>(finalists.decide([&](const Timed& timed) {
      return cg::seconds_per_execute(handle_, stream_, *timed.plan, *timed.pack, kSearchTiming);
    }));
    auto& best = finalists.entries().front();
    plan_ = std::move(best.candidate.plan);
    workspace_ = std::move(best.candidate.workspace);
    pack_ = std::move(best.candidate.pack);
    heuristic_mode_ = cg::to_string(best.candidate.listed->mode);
    heuristic_rank_ = best.candidate.listed->rank;
    search_time_ms_ = best.seconds * 1e3;
    search_duration_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
  }

  // An engine by plan name. Named knobs: the lists' configuration with exactly
  // those (its rank is recorded), else the engine built by index with them.
  // "eng<N>" alone: the first of the engine's listed configurations that
  // finalizes into a plan, else the engine built with its default knobs. The
  // math mode applies as to any other choice.
  void pick_fixed() {
    const cg::PlanName wanted = cg::parse_plan_name(spec_.algorithm);
    const std::int64_t engines = cg::engine_count(*graph_);
    if (wanted.engine >= engines)
      throw GpuError("cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
                     "CUDNN_STATUS_NOT_SUPPORTED: engine " + std::to_string(wanted.engine) +
                         " does not exist for this " + to_string(spec_.direction) +
                         " graph; cuDNN has engines 0 .. " + std::to_string(engines - 1));
    for (const Listed& listed : listed_) {
      if (listed.info.engine != wanted.engine) continue;
      require_allowed(listed.info);  // notes belong to the engine: all its configs alike
      if (!wanted.knobs.empty()) {
        if (listed.info.knobs != wanted.knobs) continue;
        // One configuration is named: cuDNN's reason, if it cannot run, is the answer.
        use(std::make_unique<cg::ExecutionPlan>(listed.config), cg::to_string(listed.mode),
            listed.rank);
        return;
      }
      std::unique_ptr<cg::ExecutionPlan> plan;
      const Outcome built =
          guarded([&] { plan = std::make_unique<cg::ExecutionPlan>(listed.config); });
      if (built.status == PointStatus::ok) {
        use(std::move(plan), cg::to_string(listed.mode), listed.rank);
        return;
      }
      note(listed.info.name() + ": " + built.reason);
    }
    auto engine = std::make_shared<const cg::Descriptor>(cg::make_engine(*graph_, wanted.engine));
    require_knobs(wanted, cg::engine_knobs(*engine));
    auto config =
        std::make_shared<const cg::Descriptor>(cg::make_engine_config(engine, wanted.knobs));
    require_allowed(cg::describe_config(*config));
    use(std::make_unique<cg::ExecutionPlan>(config), "none", -1);
  }

  // Throws NOT_SUPPORTED when the math mode rules the configuration out.
  void require_allowed(const cg::ConfigInfo& info) const {
    if (const std::string why = exclusion(info); !why.empty())
      throw GpuError("cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
                     "CUDNN_STATUS_NOT_SUPPORTED: " + info.name() + " is " + why);
  }

  // Every named knob must be one of the engine's, within its range.
  void require_knobs(const cg::PlanName& wanted, const std::vector<cg::KnobRange>& ranges) const {
    std::string offered;
    for (const cg::KnobRange& range : ranges)
      offered += (offered.empty() ? "" : ", ") + cg::knob_name(range.type) + " " +
                 std::to_string(range.min) + ".." + std::to_string(range.max);
    for (const cg::KnobChoice& knob : wanted.knobs) {
      const auto range = std::find_if(ranges.begin(), ranges.end(),
                                      [&](const cg::KnobRange& r) { return r.type == knob.type; });
      if (range != ranges.end() && knob.value >= range->min && knob.value <= range->max) continue;
      throw GpuError("cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
                     "CUDNN_STATUS_NOT_SUPPORTED: engine " + std::to_string(wanted.engine) +
                         " has no knob " + cg::knob_name(knob.type) + " = " +
                         std::to_string(knob.value) +
                         "; its knobs: " + (offered.empty() ? "none" : offered));
    }
  }

  // Makes `plan` the operator's: its workspace, and the variant pack of the
  // operator's buffers, both built here once.
  void use(std::unique_ptr<cg::ExecutionPlan> plan, std::string mode, int rank) {
    plan_ = std::move(plan);
    heuristic_mode_ = std::move(mode);
    heuristic_rank_ = rank;
    workspace_ = DeviceBuffer<std::byte>(static_cast<std::size_t>(plan_->workspace_bytes()));
    pack_ = std::make_unique<cg::VariantPack>(bindings(output()), workspace_.get());
  }

  void* output() const {
    switch (spec_.direction) {
      case ConvDirection::fwd:
        return buffers_.y;
      case ConvDirection::bwd_data:
        return buffers_.x;
      case ConvDirection::bwd_filter:
        return buffers_.w;
    }
    return nullptr;
  }

  // The operator's buffers by uid, the direction's output at `output`.
  std::array<cg::TensorPointer, 3> bindings(void* out) const {
    const ConvTensor written = conv2d_output_tensor(spec_.direction);
    return {{{kUidX, written == ConvTensor::x ? out : buffers_.x},
             {kUidW, written == ConvTensor::w ? out : buffers_.w},
             {kUidY, written == ConvTensor::y ? out : buffers_.y}}};
  }

  void note(std::string reason) { tried_.push_back(std::move(reason)); }

  [[noreturn]] void throw_none(const char* how) const {
    std::string listed;
    for (std::size_t i = 0; i < tried_.size() && i < kListedReasons; ++i)
      listed += (i ? "; " : "") + tried_[i];
    if (tried_.size() > kListedReasons)
      listed += "; and " + std::to_string(tried_.size() - kListedReasons) + " more";
    throw GpuError("cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
                   std::string("CUDNN_STATUS_NOT_SUPPORTED: no ") + to_string(spec_.direction) +
                       " engine configuration usable with math " + to_string(resolved_math(spec_)) +
                       " (" + how + " over " + std::to_string(listed_.size()) +
                       " listed: " + (listed.empty() ? "none" : listed) + ")");
  }

  const Conv2dSpec& spec_;
  cudnnHandle_t handle_;
  cudaStream_t stream_;  // the prepare() stream: the search and check run on it
  ConvBuffers buffers_;
  // Declared in build order: each is released after everything built from it.
  std::vector<cg::Descriptor> tensors_;  // x, w, y
  std::optional<cg::Descriptor> convolution_;
  std::optional<cg::Descriptor> operation_;
  std::optional<cg::Descriptor> graph_;
  std::vector<Listed> listed_;
  std::unique_ptr<cg::ExecutionPlan> plan_;
  DeviceBuffer<std::byte> workspace_;
  std::unique_ptr<cg::VariantPack> pack_;
  std::vector<std::string> tried_;  // why listed configurations were passed over
  std::string heuristic_mode_ = "none";
  int heuristic_rank_ = -1;
  double search_time_ms_ = -1;
  double search_duration_ms_ = -1;
  int plans_timed_ = 0;
  int finalists_timed_ = 0;  // timed again in interleaved rounds (0: one plan was ahead)
};

}  // namespace

std::unique_ptr<Conv2dPath> prepare_graph(const Conv2dSpec& spec, cudnnHandle_t handle,
                                          cudaStream_t stream, const ConvBuffers& buffers) {
  auto path = std::make_unique<GraphPath>(spec, handle, stream, buffers);
  path->prepare();
  return path;
}

}  // namespace timeroof::conv2d_detail
